// swift-tools-version:6.2
// The module graph is drawn and explained in docs/architecture.md.
import PackageDescription

let strict: [SwiftSetting] = [.swiftLanguageMode(.v6), .treatAllWarnings(as: .error)]

let nioCore: Target.Dependency = .product(name: "NIOCore", package: "swift-nio")
let nioPosix: Target.Dependency = .product(name: "NIOPosix", package: "swift-nio")
let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")
let lifecycle: Target.Dependency = .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")

/// Sources/ in floors, lowest first: each target's folder is Sources/<floor>/<target>, and a
/// target takes only from its own floor or those below. docs/architecture.md draws the floors
/// from here ("Module graph"; ModuleGraphTests compares them).
let floors: KeyValuePairs<String, [String]> = [
    // C importers: each is imported by exactly one Swift module.
    "C": ["CHandoffLinux", "CHandoffOpenSSL", "CHandoffDNSSD", "CHandoffLDNS", "CHandoffSDBus", "CHandoffXCB", "CHandoffWayland", "CHandoffReadGuard"],
    // What every side shares: the model, the local-API contract, system plumbing.
    "Shared": ["HandoffModel", "HandoffAPI", "HandoffSystem"],
    // The daemon: its adapters (TLS, DNS-SD, the peer protocol), then `daemonLine`.
    "Daemon": [
        "HandoffTLS", "HandoffTLSChannel", "HandoffDiscovery", "HandoffWideArea", "HandoffPeer", "DaemonCore", "DaemonAccounts", "DaemonDiscovery", "DaemonSessions",
        "DaemonMembership", "DaemonStreams", "DaemonApps", "DaemonHistory", "DaemonDocuments", "DaemonClipboard", "DaemonContinue", "DaemonLocalAPI", "HandoffDaemon",
    ],
    // The user's side: the client, apps' library, D-Bus, the desktop agent, the browser host.
    "Apps": [
        "HandoffClient", "HandoffKit", "HandoffDBus", "SessionClipboard", "DesktopCore", "DesktopNotifications", "DesktopJoinDialog", "DesktopTray", "DesktopClipboard",
        "DesktopDocuments", "DesktopAgent", "BrowserHost",
    ],
    // The programs that are installed.
    "Programs": ["handoffd", "handoffctl", "handoff-desktop", "handoff-browser-host"],
]

/// Where a target's sources are.
func sources(_ target: String) -> String {
    guard let floor = floors.first(where: { $0.value.contains(target) }) else { fatalError("\(target) is on no floor") }
    return "Sources/\(floor.key)/\(target)"
}

/// The daemon's feature modules, lowest first: each may import only those before it.
let daemonLine = [
    "DaemonCore", "DaemonAccounts", "DaemonDiscovery", "DaemonSessions", "DaemonMembership", "DaemonStreams", "DaemonApps", "DaemonHistory", "DaemonDocuments",
    "DaemonClipboard", "DaemonContinue", "DaemonLocalAPI", "HandoffDaemon",
]

/// A daemon module, declaring exactly what its files import (ModuleGraphTests compares them):
/// with `--explicit-target-dependency-import-check error` the build then refuses a module that
/// reaches further down than it says, and the graph reads from here.
func daemonModule(_ name: String, imports: [Target.Dependency]) -> Target {
    precondition(daemonLine.contains(name), "\(name) is not in daemonLine")
    return .target(name: name, dependencies: imports, path: sources(name), swiftSettings: strict)
}

let package = Package(
    name: "handoff",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "handoffd", targets: ["handoffd"]),
        .executable(name: "handoffctl", targets: ["handoffctl"]),
        .library(name: "HandoffClient", targets: ["HandoffClient"]),
        .library(name: "HandoffKit", targets: ["HandoffKit"]),
        .executable(name: "handoff-desktop", targets: ["handoff-desktop"]),
        .executable(name: "handoff-browser-host", targets: ["handoff-browser-host"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
    ],
    targets: [
        // C importers: each is imported by exactly one Swift module.
        .target(name: "CHandoffLinux", path: sources("CHandoffLinux")),
        .systemLibrary(name: "CHandoffOpenSSL", path: sources("CHandoffOpenSSL"), pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        // No pkg-config here: avahi's .pc file adds -D_REENTRANT (which SwiftPM flags), and the
        // package installs /usr/include/dns_sd.h anyway.
        .systemLibrary(name: "CHandoffDNSSD", path: sources("CHandoffDNSSD"), providers: [.apt(["libavahi-compat-libdnssd-dev"])]),
        .systemLibrary(name: "CHandoffLDNS", path: sources("CHandoffLDNS"), pkgConfig: "ldns", providers: [.apt(["libldns-dev"])]),
        .systemLibrary(name: "CHandoffSDBus", path: sources("CHandoffSDBus"), pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CHandoffXCB", path: sources("CHandoffXCB"), pkgConfig: "xcb-xfixes", providers: [.apt(["libxcb1-dev", "libxcb-xfixes0-dev"])]),
        // libwayland-client, with the wlr data-control protocol's tables written from its
        // specification (CHandoffWayland.h says why).
        .target(name: "CHandoffWayland", path: sources("CHandoffWayland"), linkerSettings: [.linkedLibrary("wayland-client")]),

        // Pure logic: no sockets, no threads, no C.
        .target(name: "HandoffModel", path: sources("HandoffModel"), swiftSettings: strict),
        .target(name: "HandoffAPI", dependencies: ["HandoffModel"], path: sources("HandoffAPI"), swiftSettings: strict),

        // The only importer of CHandoffOpenSSL: keys, certificates, the memory-BIO TLS engine.
        .target(
            name: "HandoffTLS",
            dependencies: [
                "CHandoffOpenSSL", "HandoffModel",
            ],
            path: sources("HandoffTLS"), swiftSettings: strict
        ),

        // The TLS engine on a NIO channel: ciphertext below, plaintext above (`TLSHandler`).
        .target(
            name: "HandoffTLSChannel", dependencies: ["HandoffTLS", "HandoffModel", .product(name: "NIOCore", package: "swift-nio")], path: sources("HandoffTLSChannel"),
            swiftSettings: strict
        ),

        // The only importer of CHandoffDNSSD: advertising, browsing, resolving on the link, the
        // backend protocol every discovery implements, and an in-memory backend so that in-process
        // tests can run several daemons with discovery.
        .target(name: "HandoffDiscovery", dependencies: ["CHandoffDNSSD", "HandoffModel", "HandoffSystem"], path: sources("HandoffDiscovery"), swiftSettings: strict),
        // The only importer of CHandoffLDNS: the same backend in a unicast DNS zone, for devices on
        // other subnets (docs/discovery.md, "Beyond one link") — registering by signed updates,
        // browsing by queries.
        .target(
            name: "HandoffWideArea", dependencies: ["CHandoffLDNS", "HandoffDiscovery", "HandoffModel", "HandoffSystem"], path: sources("HandoffWideArea"),
            swiftSettings: strict
        ),

        // Daemon-to-daemon messages and framing; knows nothing about TLS.
        .target(
            name: "HandoffPeer",
            dependencies: ["HandoffModel", .product(name: "NIOCore", package: "swift-nio")],
            path: sources("HandoffPeer"), swiftSettings: strict
        ),

        // Starting programs the POSIX way; shared by the daemon, handoffctl and the tests.
        .target(name: "HandoffSystem", dependencies: ["CHandoffLinux"], path: sources("HandoffSystem"), swiftSettings: strict),

        // The local-API client used by handoffctl and apps: links neither OpenSSL nor dns_sd.
        .target(name: "HandoffClient", dependencies: ["HandoffAPI", "HandoffModel", "HandoffSystem"], path: sources("HandoffClient"), swiftSettings: strict),
        // NSUserActivity for Linux apps (docs/handoffkit.md), on HandoffClient: no NIO, OpenSSL or dns_sd.
        .target(name: "HandoffKit", dependencies: ["HandoffClient", "HandoffAPI", "HandoffModel", "HandoffSystem"], path: sources("HandoffKit"), swiftSettings: strict),

        // The only importer of CHandoffSDBus: a session-bus connection on a thread of its own
        // (docs/architecture.md, "D-Bus"), for the desktop agent.
        .target(name: "HandoffDBus", dependencies: ["CHandoffSDBus", "HandoffSystem"], path: sources("HandoffDBus"), swiftSettings: strict),
        // The only importer of CHandoffXCB and of CHandoffWayland: the session's clipboard (X11's
        // CLIPBOARD selection, or a Wayland compositor's data-control) on a thread of its own.
        .target(
            name: "SessionClipboard", dependencies: ["CHandoffXCB", "CHandoffWayland", "HandoffModel", "HandoffSystem"], path: sources("SessionClipboard"),
            swiftSettings: strict
        ),
        // The session agent (docs/desktop.md, docs/dbus.md), on HandoffClient and HandoffDBus — no
        // NIO, OpenSSL or dns_sd — as rooms the agent lists: what they share (options, the alarm),
        // notifications, the join dialog, the status icon, the clipboard, recent documents. Their
        // D-Bus interfaces' introspection XML is served as it is in the repository.
        .target(name: "DesktopCore", dependencies: ["HandoffAPI", "HandoffModel", "HandoffSystem"], path: sources("DesktopCore"), swiftSettings: strict),
        .target(name: "DesktopNotifications", dependencies: ["HandoffAPI", "HandoffDBus", "HandoffModel"], path: sources("DesktopNotifications"), swiftSettings: strict),
        .target(name: "DesktopJoinDialog", dependencies: ["HandoffSystem"], path: sources("DesktopJoinDialog"), swiftSettings: strict),
        .target(
            name: "DesktopTray",
            dependencies: ["DesktopCore", "DesktopNotifications", "DesktopJoinDialog", "HandoffAPI", "HandoffClient", "HandoffDBus", "HandoffModel", "HandoffSystem", logging],
            path: sources("DesktopTray"),
            resources: [.embedInCode("Interfaces/org.kde.StatusNotifierItem.xml"), .embedInCode("Interfaces/com.canonical.dbusmenu.xml")], swiftSettings: strict
        ),
        .target(
            name: "DesktopClipboard",
            dependencies: ["DesktopCore", "DesktopNotifications", "HandoffAPI", "HandoffClient", "HandoffModel", "HandoffSystem", "SessionClipboard", logging],
            path: sources("DesktopClipboard"), swiftSettings: strict
        ),
        .target(
            name: "DesktopDocuments", dependencies: ["HandoffAPI", "HandoffClient", "HandoffModel", "HandoffSystem", logging], path: sources("DesktopDocuments"),
            swiftSettings: strict
        ),
        .target(
            name: "DesktopAgent",
            dependencies: [
                "DesktopCore", "DesktopNotifications", "DesktopJoinDialog", "DesktopTray", "DesktopClipboard", "DesktopDocuments", "HandoffDBus", "HandoffClient",
                "HandoffAPI", "HandoffModel", "HandoffSystem", "SessionClipboard", logging,
            ],
            path: sources("DesktopAgent"), resources: [.embedInCode("Interfaces/org.handoff.Desktop1.xml"), .embedInCode("Interfaces/org.handoff.Receiver1.xml")],
            swiftSettings: strict
        ),

        // The browser's native messaging host (docs/browser.md): the extension's messages, checked,
        // as a HandoffKit app. No NIO, OpenSSL, dns_sd or D-Bus.
        .target(name: "BrowserHost", dependencies: ["HandoffKit", "HandoffClient", "HandoffAPI", "HandoffModel", "HandoffSystem"], path: sources("BrowserHost"), swiftSettings: strict),

        // The daemon, as feature modules that only look down (docs/architecture.md), in the
        // order of `daemonLine`; each declares what it imports.
        daemonModule("DaemonCore", imports: ["HandoffAPI", "HandoffModel", "HandoffPeer", "HandoffSystem", nioCore, nioPosix, logging, lifecycle]),
        daemonModule("DaemonAccounts", imports: ["DaemonCore", "HandoffAPI", "HandoffDiscovery", "HandoffModel", "HandoffPeer", "HandoffSystem", "HandoffTLS", logging]),
        daemonModule(
            "DaemonDiscovery",
            imports: ["DaemonAccounts", "DaemonCore", "HandoffAPI", "HandoffDiscovery", "HandoffModel", "HandoffPeer", "HandoffSystem", "HandoffTLS", logging, lifecycle]
        ),
        daemonModule(
            "DaemonSessions",
            imports: [
                "DaemonAccounts", "DaemonCore", "DaemonDiscovery", "HandoffAPI", "HandoffModel", "HandoffPeer", "HandoffSystem", "HandoffTLS", "HandoffTLSChannel",
                nioCore, nioPosix, logging, lifecycle,
            ]
        ),
        daemonModule(
            "DaemonMembership",
            imports: ["DaemonAccounts", "DaemonCore", "DaemonDiscovery", "DaemonSessions", "HandoffAPI", "HandoffModel", "HandoffPeer", "HandoffTLS", logging]
        ),
        daemonModule(
            "DaemonStreams",
            imports: [
                "DaemonAccounts", "DaemonCore", "DaemonDiscovery", "DaemonSessions", "HandoffAPI", "HandoffModel", "HandoffPeer", "HandoffSystem", "HandoffTLS",
                "HandoffTLSChannel", nioCore, nioPosix, logging,
            ]
        ),
        daemonModule("DaemonApps", imports: ["DaemonCore", "DaemonStreams", "HandoffAPI", "HandoffModel", "HandoffSystem", logging]),
        daemonModule(
            "DaemonHistory", imports: ["DaemonApps", "DaemonCore", "DaemonSessions", "HandoffAPI", "HandoffModel", "HandoffPeer", "HandoffSystem", logging, lifecycle]
        ),
        daemonModule(
            "DaemonDocuments",
            imports: ["DaemonCore", "DaemonSessions", "DaemonStreams", "HandoffAPI", "HandoffModel", "HandoffSystem", "HandoffTLS", logging]
        ),
        daemonModule(
            "DaemonClipboard", imports: ["DaemonCore", "DaemonSessions", "DaemonStreams", "HandoffAPI", "HandoffModel", "HandoffPeer", logging]
        ),
        daemonModule(
            "DaemonContinue",
            imports: [
                "DaemonAccounts", "DaemonApps", "DaemonCore", "DaemonDiscovery", "DaemonDocuments", "DaemonHistory", "DaemonSessions", "DaemonStreams", "HandoffAPI",
                "HandoffModel", "HandoffPeer", "HandoffSystem", logging,
            ]
        ),
        daemonModule(
            "DaemonLocalAPI",
            imports: [
                "DaemonAccounts", "DaemonApps", "DaemonClipboard", "DaemonContinue", "DaemonCore", "DaemonDiscovery", "DaemonDocuments", "DaemonHistory", "DaemonMembership",
                "DaemonSessions", "DaemonStreams", "HandoffAPI", "HandoffModel", "HandoffSystem", "HandoffTLS", nioCore, nioPosix, .product(name: "NIOHTTP1", package: "swift-nio"),
                logging, lifecycle,
            ]
        ),
        daemonModule(
            "HandoffDaemon",
            imports: [
                "DaemonAccounts", "DaemonApps", "DaemonClipboard", "DaemonContinue", "DaemonCore", "DaemonDiscovery", "DaemonDocuments", "DaemonHistory",
                "DaemonMembership", "DaemonSessions", "DaemonLocalAPI", "DaemonStreams", "HandoffAPI", "HandoffDiscovery", "HandoffModel", "HandoffSystem", "HandoffWideArea",
                nioCore, nioPosix, logging, lifecycle,
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),

        // Every decoder of outside input under one fuzz harness: `make fuzz` (long runs) and
        // `make fuzz-smoke` (a few seconds each, part of `make test`) build it with libFuzzer.
        .systemLibrary(name: "CHandoffFuzz", path: "fuzz/CHandoffFuzz"),
        .executableTarget(
            name: "handoff-fuzz",
            dependencies: [
                "CHandoffFuzz", "BrowserHost", "HandoffDaemon", "DaemonCore", "DaemonAccounts", "DaemonContinue", "HandoffClient", "HandoffAPI", "HandoffModel", "HandoffPeer",
                "HandoffDiscovery", "HandoffWideArea",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "fuzz/Harness",
            swiftSettings: strict
        ),

        // Every read(2) of handoffd goes through CHandoffReadGuard first (read_guard.c says why;
        // docs/platform.md, "A path that goes dark"): only handoffd is linked this way.
        .target(name: "CHandoffReadGuard", path: sources("CHandoffReadGuard")),
        .executableTarget(
            name: "handoffd",
            dependencies: [
                "HandoffDaemon", "DaemonCore", "HandoffAPI", "HandoffModel", "HandoffSystem", "CHandoffReadGuard", nioCore, nioPosix,
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: sources("handoffd"), swiftSettings: strict,
            linkerSettings: [.unsafeFlags(["-Xlinker", "--wrap=read"])]
        ),
        .executableTarget(
            name: "handoffctl",
            dependencies: [
                "HandoffClient", "HandoffAPI", "HandoffModel", "HandoffSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: sources("handoffctl"), swiftSettings: strict,
            // Position-dependent in release builds (as installed): a PIE's relocations dirty ~130
            // pages of this binary at every start, a quarter of its start-up. An accepted
            // trade-off (docs/benchmarks.md, "Starting handoffctl"; debian/handoff.lintian-overrides).
            // Debug builds, and the test binary that links this target, stay PIEs.
            linkerSettings: [.unsafeFlags(["-Xclang-linker", "-no-pie"], .when(configuration: .release))]
        ),

        .executableTarget(
            name: "handoff-desktop",
            dependencies: [
                "DesktopAgent", "HandoffDBus", "HandoffClient", "HandoffAPI", "HandoffSystem",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: sources("handoff-desktop"), swiftSettings: strict
        ),

        .executableTarget(name: "handoff-browser-host", dependencies: ["BrowserHost", "HandoffAPI", "HandoffKit", "HandoffModel", "HandoffSystem"], path: sources("handoff-browser-host"), swiftSettings: strict),

        // Apps built on HandoffKit (docs/handoffkit.md), run by the tests.
        .executableTarget(name: "handoff-example-notes", dependencies: ["HandoffKit"], path: "Examples/NotesEditor", swiftSettings: strict),
        .executableTarget(name: "handoff-example-viewer", dependencies: ["HandoffKit"], path: "Examples/Viewer", swiftSettings: strict),

        // Test-only: a real daemon in the test process on temp paths, and a subprocess runner.
        .target(
            name: "HandoffTestSupport",
            dependencies: [
                "HandoffDaemon", "DaemonCore", "HandoffClient", "HandoffAPI", "HandoffModel", "HandoffDiscovery", "HandoffSystem",
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/HandoffTestSupport",
            // The fault library is C built at test time for LD_PRELOAD (FaultInjection.swift).
            exclude: ["Faults"],
            swiftSettings: strict
        ),

        .testTarget(name: "HandoffModelTests", dependencies: ["HandoffModel"], swiftSettings: strict),
        .testTarget(name: "HandoffTLSTests", dependencies: ["HandoffTLS", "HandoffModel"], swiftSettings: strict),
        .testTarget(
            name: "HandoffDaemonTests",
            dependencies: [
                "HandoffTestSupport", "HandoffDaemon", "DaemonCore", "DaemonAccounts", "DaemonDiscovery", "DaemonSessions", "DaemonMembership", "DaemonStreams", "DaemonApps",
                "DaemonDocuments", "DaemonHistory", "DaemonClipboard", "DaemonContinue",
                "DaemonLocalAPI",
                "HandoffClient", "HandoffKit", "HandoffAPI", "HandoffModel", "HandoffTLS", "HandoffTLSChannel", "HandoffPeer", "HandoffDiscovery", "HandoffWideArea",
                "HandoffSystem",
                "HandoffDBus", "DesktopAgent", "DesktopCore", "DesktopNotifications", "DesktopTray", "DesktopClipboard", "DesktopDocuments", "SessionClipboard",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HandoffEndToEndTests",
            dependencies: ["HandoffTestSupport", "HandoffAPI", "HandoffModel", "HandoffTLS"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HandoffDesktopTests",
            dependencies: [
                "HandoffDBus", "DesktopAgent", "DesktopCore", "DesktopNotifications", "DesktopJoinDialog", "DesktopTray", "DesktopClipboard", "BrowserHost", "HandoffKit", "HandoffTestSupport",
                "HandoffAPI", "HandoffModel", "HandoffSystem",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "HandoffCLITests",
            dependencies: [
                "handoffctl", "HandoffTestSupport", "HandoffDaemon", "HandoffAPI", "HandoffModel",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            exclude: ["Snapshots"],
            swiftSettings: strict
        ),
    ]
)
