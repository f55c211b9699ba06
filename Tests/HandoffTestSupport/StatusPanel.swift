import Foundation

/// A real panel that shows status icons, in a `DesktopSession`: Debian's xfce4-panel with only its
/// status tray (which owns `org.kde.StatusNotifierWatcher` and shows StatusNotifierItems with
/// their dbusmenu menus), at the top of the screen, with its settings daemon (xfconfd, which a
/// desktop's bus would start on demand; the test bus starts nothing). Run by `session`'s `wrap`,
/// as the test user; `home` is that user's, with a fresh `.config`.
public final class StatusPanel: @unchecked Sendable {
    let session: DesktopSession
    let xfconfd: RunningProcess
    let panel: RunningProcess
    /// Height of the panel, at the top of the screen.
    public static let height = 32

    /// `write(path, text)` writes a file as the user who runs the panel.
    public init(session: DesktopSession, home: String, base: [String: String], write: (String, String) throws -> Void) async throws {
        self.session = session
        let config = home + "/.config"
        try write(config + "/xfce4/xfconf/xfce-perchannel-xml/xfce4-panel.xml", Self.settings)
        // NO_AT_BRIDGE: no accessibility bus to look for on the test's bus.
        let env = session.environment(base).merging(["XDG_CONFIG_HOME": config, "NO_AT_BRIDGE": "1"]) { _, new in new }
        let prefix = ["/usr/bin/env", "-i"] + env.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }
        let x = try session.wrap(prefix + ["/usr/lib/x86_64-linux-gnu/xfce4/xfconf/xfconfd"])
        xfconfd = try RunningProcess(x[0], Array(x.dropFirst()))
        // --disable-wm-check: there is no window manager to wait for.
        let p = try session.wrap(prefix + ["/usr/bin/xfce4-panel", "--disable-wm-check", "--sm-client-disable"])
        panel = try RunningProcess(p[0], Array(p.dropFirst()))
        let deadline = ContinuousClock.now + .seconds(60)
        while try await !watcherRuns() {
            guard ContinuousClock.now < deadline else { throw TestFailure("xfce4-panel's status tray never took org.kde.StatusNotifierWatcher: \(panel.stderr.suffix(2000))") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    func watcherRuns() async throws -> Bool {
        let command = try session.wrap([
            "/usr/bin/dbus-send", "--bus=" + session.bus.address, "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus",
            "org.freedesktop.DBus.NameHasOwner", "string:org.kde.StatusNotifierWatcher",
        ])
        return try await Subprocess.run(command[0], Array(command.dropFirst())).stdout.contains("boolean true")
    }

    /// The panel: one, at the top, with the status tray alone.
    static let settings = """
        <?xml version="1.0" encoding="UTF-8"?>
        <channel name="xfce4-panel" version="1.0">
          <property name="configver" type="int" value="2"/>
          <property name="panels" type="array">
            <value type="int" value="1"/>
            <property name="panel-1" type="empty">
              <property name="position" type="string" value="p=6;x=0;y=0"/>
              <property name="length" type="uint" value="100"/>
              <property name="position-locked" type="bool" value="true"/>
              <property name="size" type="uint" value="\(height)"/>
              <property name="plugin-ids" type="array">
                <value type="int" value="1"/>
              </property>
            </property>
          </property>
          <property name="plugins" type="empty">
            <property name="plugin-1" type="string" value="systray">
              <property name="square-icons" type="bool" value="true"/>
            </property>
          </property>
        </channel>
        """

    /// The centre of what the panel shows that is not its background (the status icon), from a
    /// screenshot saved at `shot`; nil while the panel shows nothing.
    public func iconCentre(shot: String) async throws -> (x: Int, y: Int)? {
        try await session.screenshot(to: shot)
        let strip = try await Self.pixels(shot, crop: "\(400)x\(Self.height)+0+0")
        // The background is the most common colour of the strip.
        var counts: [[Int]: Int] = [:]
        for p in strip { counts[p.rgb, default: 0] += 1 }
        guard let background = counts.max(by: { $0.value < $1.value })?.key else { return nil }
        let painted = strip.filter { p in zip(p.rgb, background).map { abs($0 - $1) }.reduce(0, +) > 120 }
        guard !painted.isEmpty else { return nil }
        let xs = painted.map(\.x)
        let ys = painted.map(\.y)
        return ((xs.min()! + xs.max()!) / 2, (ys.min()! + ys.max()!) / 2)
    }

    /// Whether something (an open menu) is drawn just below the panel, from a screenshot at `shot`.
    public func menuOpen(shot: String) async throws -> Bool {
        try await session.screenshot(to: shot)
        // The screen is black where no window is.
        return try await Self.pixels(shot, crop: "1x1+12+\(Self.height + 12)").contains { $0.rgb.reduce(0, +) > 200 }
    }

    struct Pixel {
        var x: Int
        var y: Int
        var rgb: [Int]
    }

    /// ImageMagick's text dump of a part of an image: `x,y: (r,g,b…)  #RRGGBB  …` per pixel.
    static func pixels(_ image: String, crop: String) async throws -> [Pixel] {
        let result = try await Subprocess.run("/usr/bin/convert", [image, "-crop", crop, "+repage", "-depth", "8", "txt:-"])
        guard result.status == 0 else { throw TestFailure("convert: \(result)") }
        return result.stdout.split(separator: "\n").compactMap { line -> Pixel? in
            guard let colon = line.firstIndex(of: ":"), let open = line.firstIndex(of: "("), let close = line.firstIndex(of: ")") else { return nil }
            let at = line[..<colon].split(separator: ",").compactMap { Int($0) }
            let rgb = line[line.index(after: open)..<close].split(separator: ",").prefix(3).compactMap { Int(Double($0) ?? -1) }
            guard at.count == 2, rgb.count == 3 else { return nil }
            return Pixel(x: at[0], y: at[1], rgb: rgb)
        }
    }

    public func stop() async {
        _ = try? await panel.stop()
        _ = try? await xfconfd.stop()
    }
}
