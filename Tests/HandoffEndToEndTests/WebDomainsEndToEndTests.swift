import Foundation
import HandoffAPI
import HandoffModel
import HandoffTestSupport
import Testing

/// Web pages into the apps that claim their sites (docs/apps.md, "Web pages into apps"), on two
/// simulated hosts as the test user: alpha shows pages, bravo has an app whose `.desktop` file
/// claims example.com and *.example.org, a browser command, and later a running HandoffKit app
/// that claims a site of its own.
@Suite(.heavy, .timeLimit(.minutes(5))) struct WebDomainsEndToEndTests {
    @Test func pagesOfClaimedSitesOpenInTheirApps() async throws {
        await Rig.withHosts(["alpha", "bravo"]) { rig in
            try await run(rig)
        }
    }

    func run(_ rig: Rig) async throws {
        let bravoHome = rig.home("bravo")
        try rig.write(to: bravoHome + "/.local/share/applications/org.example.Shop.desktop", """
            [Desktop Entry]
            Type=Application
            Name=Example Shop
            Exec=\(bravoHome)/shop.sh %u
            X-Handoff-WebDomains=example.com;*.example.org;*.com;
            """)
        // The app records what it was started with: its argument, and the activity's file.
        try rig.write(to: bravoHome + "/shop.sh", """
            #!/bin/sh
            cp "$HANDOFF_ACTIVITY_FILE" \(bravoHome)/shop-activity.json && printf '%s\\n' "$@" > \(bravoHome)/shop.tmp && mv \(bravoHome)/shop.tmp \(bravoHome)/shop-args
            """, executable: true)
        try rig.write(to: bravoHome + "/browser.sh", "#!/bin/sh\nprintf '%s\\n' \"$@\" > \(bravoHome)/browser.tmp && mv \(bravoHome)/browser.tmp \(bravoHome)/browser-args\n", executable: true)
        let config = bravoHome + "/.config/handoff/handoffd.toml"
        try rig.write(to: config, "browser = \"\(bravoHome)/browser.sh\"\n")
        try await EndToEndTests().startPaired(rig)

        /// alpha shows `url` (as the browser extension does); bravo continues it; returns where
        /// it went: the shop's argument or the browser's.
        func continuePage(_ url: String) async throws -> (opener: String, argument: String, stderr: String) {
            for file in ["shop-args", "browser-args"] { try? FileManager.default.removeItem(atPath: bravoHome + "/" + file) }
            let title = "Page \(UUID().uuidString.prefix(6))"
            let made = try await rig.ctl("alpha", ["become-current", "--type", "org.handoff.browser.page", "--title", title, "--webpage-url", url, "--info", "scrollY:int=420"])
            guard made.status == 0 else { throw TestFailure("become-current: \(made)") }
            try await Rig.waitFor("bravo to see \(title)") {
                try await rig.ctlJSON("bravo", PeersResponse.self, ["peers"]).peers.first { $0.reachable }?.activity?.title == title
            }
            let continued = try await rig.ctl("bravo", ["continue", "desk"])
            guard continued.status == 0 else { throw TestFailure("continue \(url): \(continued)") }
            var found: (String, String)?
            try await Rig.waitFor("\(url) to be opened") {
                for opener in ["shop", "browser"] {
                    if let text = try? String(contentsOfFile: bravoHome + "/\(opener)-args", encoding: .utf8) { found = (opener, text) }
                }
                return found != nil
            }
            return (found!.0, found!.1, continued.stderr)
        }

        // 1. A page of a claimed site: the claiming app, started with the page, gets it as
        //    Apple's browsing-web activity — the page and its title, nothing of the browser's.
        let item = try await continuePage("https://example.com/item/7")
        #expect(item.opener == "shop" && item.argument == "https://example.com/item/7\n", "\(item)")
        #expect(item.stderr.contains("org.example.Shop.desktop"), "\(item.stderr)")
        let handed = try LocalAPIJSON.decoder().decode(Activity.self, from: Data(contentsOf: URL(fileURLWithPath: bravoHome + "/shop-activity.json")))
        #expect(handed.type == "org.handoff.browsing-web" && handed.content.webpageURL == "https://example.com/item/7" && handed.content.userInfo.isEmpty, "\(handed)")

        // 2. A wildcard claim covers the hosts below its domain.
        let shop = try await continuePage("https://www.example.org/cart")
        #expect(shop.opener == "shop" && shop.argument == "https://www.example.org/cart\n", "\(shop)")

        // 3. The browser: a site nobody claims, a claimed one over http, another port, a user,
        //    and what a top-level wildcard (*.com, which claims nothing) would have taken.
        for url in ["https://example.net/a", "http://example.com/item/7", "https://example.com:8443/item/7", "https://me@example.com/item/7", "https://shop.com/"] {
            let opened = try await continuePage(url)
            #expect(opened.opener == "browser" && opened.argument == url + "\n", "\(url): \(opened)")
        }

        // 4. doctor names each claim, and the one that claims nothing.
        let doctor = try await rig.ctl("bravo", ["doctor"])
        #expect(doctor.stdout.contains("https pages of example.com (org.example.Shop.desktop) open in the app"), "\(doctor.stdout)")
        #expect(doctor.stdout.contains("*.com (org.example.Shop.desktop) is off: claims nothing"), "\(doctor.stdout)")

        // 5. The user turns example.com's claim off: its pages go to the browser again (a
        //    reload, SIGHUP); the other claim holds.
        try rig.write(to: config, "browser = \"\(bravoHome)/browser.sh\"\n[web_domains]\noff = [\"example.com\"]\n")
        let pid = try await rig.ctlJSON("bravo", DaemonStatus.self, ["status"]).pid
        #expect(try await rig.run("bravo", ["kill", "-HUP", "\(pid)"]).status == 0)
        try await Rig.waitFor("the claim to be off") {
            try await rig.ctl("bravo", ["doctor"]).stdout.contains("example.com (org.example.Shop.desktop) is off: turned off in handoffd.toml")
        }
        let off = try await continuePage("https://example.com/item/8")
        #expect(off.opener == "browser", "\(off)")
        #expect(try await continuePage("https://www.example.org/cart").opener == "shop")

        // 6. A running HandoffKit app that claims a site takes its pages in the app, first.
        let fifo = bravoHome + "/notes.\(UUID().uuidString.prefix(8)).in"
        let notes = try ScriptedApp(
            fifo: fifo, owner: rig.user, [try rig.user.product("handoff-example-notes"), "--dir", bravoHome, "--web-domain", "*.example.org"]
        ) { command in
            (Rig.script, ["exec", rig.name, "bravo"] + rig.user.command(command, environment: rig.environment("bravo")))
        }
        try await notes.expect("ready")
        for file in ["shop-args", "browser-args"] { try? FileManager.default.removeItem(atPath: bravoHome + "/" + file) }
        _ = try await rig.ctl("alpha", ["become-current", "--type", "org.handoff.browser.page", "--title", "News", "--webpage-url", "https://news.example.org/today"])
        try await Rig.waitFor("bravo to see News") {
            try await rig.ctlJSON("bravo", PeersResponse.self, ["peers"]).peers.first { $0.reachable }?.activity?.title == "News"
        }
        let running = try await rig.ctl("bravo", ["continue", "desk"])
        #expect(running.status == 0 && running.stderr.contains("org.handoff.example.Notes"), "\(running)")
        try await notes.expect("opened page https://news.example.org/today News")
        #expect(!FileManager.default.fileExists(atPath: bravoHome + "/shop-args"), "the installed app was not started as well")
        notes.send("quit")
    }
}
