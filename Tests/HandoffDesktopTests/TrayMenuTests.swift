import DesktopAgent
import DesktopJoinDialog
import DesktopTray
import Foundation
import HandoffAPI
import HandoffDBus
import HandoffModel
import HandoffTestSupport
import Testing

/// The status icon's menu as a value (`TrayMenu` from `TrayFacts`), the numbers and D-Bus values
/// the panel reads (`DBusMenuLayout`), and the icon's pixels (`TrayIcon`).
@Suite(.timeLimit(.minutes(1))) struct TrayMenuTests {
    static let desk = DeviceID(digest: [UInt8](repeating: 1, count: DeviceID.digestLength))
    static let laptop = DeviceID(digest: [UInt8](repeating: 2, count: DeviceID.digestLength))
    static let me = DeviceID(digest: [UInt8](repeating: 3, count: DeviceID.digestLength))
    static let t0 = Timestamp(secondsSinceEpoch: 1_800_000_000)
    static let clock: @Sendable (Timestamp) -> String = { _ in "14:05" }

    static func account(admin: Bool = true, recoverable: Bool = true) -> AccountInfo {
        AccountInfo(
            accountID: me, accountName: "Ana's devices", deviceID: me, deviceName: "tablet", isAdmin: admin, stateVersion: 1, deviceCount: 3,
            certificateExpires: t0.adding(seconds: 86_400), recoveryCodeMadeAt: recoverable ? t0 : nil
        )
    }

    static func peer(_ id: DeviceID, _ name: String, reachable: Bool = true, activity: ActivitySummary? = nil) -> PeerInfo {
        PeerInfo(id: id, name: name, reachable: reachable, foundVia: [], addresses: [], activity: activity, lastSeen: nil, lastAdvert: nil, unreachableSince: nil)
    }

    static func activity(_ title: String, id: UUID = UUID()) -> ActivitySummary {
        ActivitySummary(id: id, type: "org.example.editor.edit", title: title, updatedAt: t0, expirationDate: nil)
    }

    static func offer(_ device: DeviceID, _ name: String, _ activity: ActivitySummary) -> Offer {
        Offer(
            peer: LocalEvent.PeerRef(id: device, name: name), activity: activity,
            target: ContinueTarget(kind: .handler, handler: "org.example.Editor.desktop", name: "Editor", icon: "accessories-text-editor"), notify: true
        )
    }

    static func running(_ change: (inout TrayFacts) -> Void = { _ in }) -> TrayFacts {
        var facts = TrayFacts()
        facts.daemon = .running
        facts.account = account()
        change(&facts)
        return facts
    }

    /// Labels, with `*` before each item that can be chosen.
    static func lines(_ menu: TrayMenu) -> [String] {
        menu.items.map { $0.isSeparator ? "---" : ($0.enabled ? "* " : "  ") + $0.label }
    }

    @Test func eachDeviceWithItsActivityAndContinueWhereThisDeviceCan() {
        let report = Self.activity("Report")
        let photo = Self.activity("Photo")
        let menu = TrayMenu(
            Self.running { f in
                f.peers = [
                    Self.peer(Self.laptop, "laptop", reachable: false), Self.peer(Self.desk, "desk", activity: report),
                    Self.peer(DeviceID(digest: [UInt8](repeating: 4, count: DeviceID.digestLength)), "phone", activity: photo),
                ]
                f.offers = [Self.offer(Self.desk, "desk", report)]
            },
            clock: Self.clock
        )
        #expect(
            Self.lines(menu) == [
                "  desk — “Report”", "* Continue in Editor", "  phone — “Photo”", "  No app here opens it", "  laptop — not reachable", "---",
                "* Add a device…", "---", "* Handoff on this device", "* Share the clipboard with your devices",
            ]
        )
        #expect(menu.items[1].key == .continueFrom(Self.desk, activityID: report.id))
        #expect(menu.items[1].icon == "accessories-text-editor")
        #expect(Self.item(.handoffSwitch(turnOn: false), in: menu)?.checked == true)
        #expect(menu.active && menu.detail == "Continue “Report” from desk")
    }

    @Test func anOfferForAnOlderActivityIsNotContinuedFromTheMenu() {
        let now = Self.activity("Now")
        let menu = TrayMenu(Self.running { f in
            f.peers = [Self.peer(Self.desk, "desk", activity: now)]
            f.offers = [Self.offer(Self.desk, "desk", Self.activity("Before"))]
        }, clock: Self.clock)
        #expect(Self.lines(menu).prefix(2) == ["  desk — “Now”", "  No app here opens it"])
    }

    @Test func offOnThisDeviceSaysSoAndGreysTheIcon() {
        let menu = TrayMenu(Self.running { f in
            f.handoffOn = false
            f.peers = [Self.peer(Self.desk, "desk", reachable: false, activity: Self.activity("Report"))]
        }, clock: Self.clock)
        #expect(Self.lines(menu) == [
            "  desk — “Report”", "  Not reachable: handoff is off on this device", "---", "  Add a device… (turn handoff on first)", "---", "* Handoff on this device",
            "* Share the clipboard with your devices",
        ])
        #expect(Self.item(.handoffSwitch(turnOn: true), in: menu)?.checked == false, "choosing it turns handoff on, as the user saw")
        #expect(!menu.active && menu.detail == "Off on this device")
    }

    @Test func anOpenInviteShowsItsCodeAndCanBeCancelled() {
        let menu = TrayMenu(Self.running { f in f.invite = TrayFacts.Invite(code: "ABCD-EFGH", expiresAt: Self.t0) }, clock: Self.clock)
        #expect(Self.lines(menu) == [
            "  No other device yet: add one below", "---", "  Code for the new device: ABCD-EFGH (until 14:05)", "* Cancel the invite", "---", "* Handoff on this device",
            "* Share the clipboard with your devices",
        ])
    }

    /// The clipboard has its own switch (docs/clipboard.md), beside handoff's; each says what
    /// choosing it does, as the user saw it.
    @Test func theClipboardHasItsOwnSwitch() {
        let on = TrayMenu(Self.running(), clock: Self.clock)
        #expect(Self.item(.clipboardSwitch(turnOn: false), in: on)?.checked == true)
        let off = TrayMenu(Self.running { f in f.clipboardOn = false }, clock: Self.clock)
        let item = Self.item(.clipboardSwitch(turnOn: true), in: off)
        #expect(item?.checked == false && item?.enabled == true && item?.label == "Share the clipboard with your devices")
        #expect(off.active, "handoff itself is still on")
        let noAccount = TrayMenu(Self.running { f in f.account = nil }, clock: Self.clock)
        #expect(!noAccount.items.contains { if case .clipboardSwitch = $0.key { true } else { false } }, "without an account there is no one to share with")
    }

    static func item(_ key: TrayMenu.Key, in menu: TrayMenu) -> TrayMenu.Item? {
        menu.items.first { $0.key == key }
    }

    /// Until a recovery code is made, the menu says what losing the key holder would cost.
    @Test func withoutARecoveryCodeTheMenuSaysSo() {
        let holder = TrayMenu(Self.running { f in f.account = Self.account(admin: true, recoverable: false) }, clock: Self.clock)
        #expect(Self.lines(holder).contains("  No recovery code: losing this device loses the account"))
        #expect(Self.lines(holder).contains("  Make one: handoffctl account recovery-code"))
        let member = TrayMenu(Self.running { f in f.account = Self.account(admin: false, recoverable: false) }, clock: Self.clock)
        #expect(Self.lines(member).contains("  No recovery code: losing the key holder loses the account"))
        #expect(!Self.lines(TrayMenu(Self.running(), clock: Self.clock)).contains { $0.contains("recovery code") })
    }

    /// Another device offers this one the account key (docs/security.md, "Handing the key over"):
    /// one click takes it.
    @Test func anOfferOfTheAccountKeyIsTakenFromTheMenu() {
        let menu = TrayMenu(Self.running { f in
            var account = Self.account(admin: false)
            account.keyOffer = KeyOfferInfo(deviceID: DeviceID(digest: Array(repeating: 7, count: 32)), deviceName: "desk", expiresAt: Timestamp(secondsSinceEpoch: 1_800_000_000))
            f.account = account
        }, clock: Self.clock)
        let item = menu.items.first { $0.key == .acceptKey }
        #expect(item?.enabled == true && item?.label.hasPrefix("Take the account key from desk (until ") == true, "\(Self.lines(menu))")
        #expect(!TrayMenu(Self.running(), clock: Self.clock).items.contains { $0.key == .acceptKey })
    }

    @Test func onlyTheDeviceThatStartedTheAccountAddsDevices() {
        let menu = TrayMenu(Self.running { f in f.account = Self.account(admin: false) }, clock: Self.clock)
        #expect(Self.lines(menu).contains("  Add a device… (on the device holding the account key)"))
    }

    @Test func withoutAnAccountTheMenuOffersToJoinAndSaysWhoIsInviting() {
        var facts = Self.running { f in f.account = nil }
        #expect(Self.lines(TrayMenu(facts, clock: Self.clock)) == [
            "  This device is in no handoff account yet", "---", "* Join another device’s account…", "* Start an account here and add a device…", "---",
            "* Handoff on this device",
        ])
        facts.invitingNearby = 1
        #expect(Self.lines(TrayMenu(facts, clock: Self.clock))[2] == "* Join another device’s account… (a device nearby is inviting)")
        facts.invitingNearby = 2
        #expect(Self.lines(TrayMenu(facts, clock: Self.clock))[2] == "* Join another device’s account… (2 devices nearby are inviting)")
        facts.joining = true
        #expect(Self.lines(TrayMenu(facts, clock: Self.clock))[2...3] == ["  Joining…", "  Start an account here and add a device…"])
    }

    @Test func handoffdNotRunningOrRemovedSaysWhatToDo() {
        var facts = TrayFacts()
        #expect(Self.lines(TrayMenu(facts, clock: Self.clock)) == ["  Asking handoffd…"])
        facts.daemon = .notRunning
        let down = TrayMenu(facts, clock: Self.clock)
        #expect(Self.lines(down) == ["  handoffd is not running", "  Start it: systemctl --user start handoffd"])
        #expect(!down.active)
    }

    // MARK: DBusMenuLayout

    @Test func itemsKeepTheirNumbersWhileTheMenuChanges() throws {
        var layout = DBusMenuLayout()
        let report = Self.activity("Report")
        let before = TrayMenu(Self.running { f in
            f.peers = [Self.peer(Self.desk, "desk", activity: report)]
            f.offers = [Self.offer(Self.desk, "desk", report)]
        }, clock: Self.clock)
        let changed = layout.update(before.items)
        #expect(changed)
        let revision = layout.revision
        let again = layout.update(before.items)
        #expect(!again, "the same menu is no change")
        #expect(layout.revision == revision)
        let continueID = try #require(Self.id(of: .continueFrom(Self.desk, activityID: report.id), in: layout))
        let switchID = try #require(Self.id(of: .handoffSwitch(turnOn: false), in: layout))

        // The activity changed: its Continue is another item (a click on the old number names
        // nothing), the switch keeps its number.
        let newer = Self.activity("Report v2")
        let after = TrayMenu(Self.running { f in
            f.peers = [Self.peer(Self.desk, "desk", activity: newer)]
            f.offers = [Self.offer(Self.desk, "desk", newer)]
        }, clock: Self.clock)
        let changedAgain = layout.update(after.items)
        #expect(changedAgain)
        #expect(layout.revision > revision)
        #expect(layout.key(for: continueID) == nil)
        #expect(layout.key(for: switchID) == .handoffSwitch(turnOn: false))
        let newContinue = try #require(Self.id(of: .continueFrom(Self.desk, activityID: newer.id), in: layout))
        #expect(newContinue != continueID, "a number is never given to another item")
    }

    static func id(of key: TrayMenu.Key, in layout: DBusMenuLayout) -> Int32? {
        (1..<100).first { layout.key(for: $0) == key }
    }

    @Test func theLayoutIsWhatDBusMenuClientsRead() throws {
        var layout = DBusMenuLayout()
        _ = layout.update(TrayMenu(Self.running { f in f.account = Self.account(admin: true) }, clock: Self.clock).items)
        let root = try #require(layout.layout(parent: 0))
        #expect(root.signature == "(ia{sv}av)")
        guard case .structure(let fields) = root, case .array("v", let children) = fields[2] else { throw TestFailure("not a layout: \(root)") }
        #expect(fields[0] == .int32(0))
        #expect(fields[1].dictionary?["children-display"] == .string("submenu"))
        #expect(children.count == layout.items.count)
        for child in children { #expect(child.signature == "v") }
        #expect(layout.layout(parent: 999) == nil)

        // Every id asked for, 0 included, has a row; only the properties asked for.
        let rows = layout.properties(of: [0, 1, 999], names: ["label"])
        #expect(rows.signature == "a(ia{sv})")
        #expect(rows.arrayItems?.count == 2)
        let first = try #require(rows.arrayItems?.last)
        guard case .structure(let row) = first else { throw TestFailure("\(first)") }
        #expect(row[1].dictionary?.keys.sorted() == ["label"])
        #expect(layout.property("label", of: 1) == .string("No other device yet: add one below"))
        #expect(layout.property("toggle-state", of: Int32(layout.items.count)) == .int32(1))
    }

    @Test func underscoresInNamesAreNotMnemonics() {
        #expect(DBusMenuLayout.mnemonicSafe("my_laptop — “a_b”") == "my__laptop — “a__b”")
    }

    // MARK: TrayIcon

    @Test func theIconIsDrawnAtEachSizeBlueWhenOnGreyWhenOff() throws {
        for active in [true, false] {
            let sizes = try #require(TrayIcon.pixmaps(active: active).arrayItems)
            #expect(sizes.count == TrayIcon.sizes.count)
            for entry in sizes {
                guard case .structure(let f) = entry, case .int32(let w) = f[0], case .int32(let h) = f[1], case .array("y", let bytes) = f[2] else {
                    throw TestFailure("not (iiay): \(entry)")
                }
                #expect(bytes.count == Int(w) * Int(h) * 4)
                let pixels = stride(from: 0, to: bytes.count, by: 4).map { i -> [UInt8] in bytes[i..<i + 4].map { if case .byte(let b) = $0 { b } else { 0 } } }
                let opaque = pixels.filter { $0[0] == 255 }
                #expect(!opaque.isEmpty && pixels.contains { $0[0] == 0 }, "both painted and clear pixels")
                let color = active ? TrayIcon.activeColor : TrayIcon.inactiveColor
                #expect(opaque.allSatisfy { $0[1] == color.0 && $0[2] == color.1 && $0[3] == color.2 })
            }
        }
    }

    // MARK: JoinDialog

    @Test func theDialogShowsHandoffdsWordsLiterallyAndWrapped() {
        #expect(JoinDialog.label("a_b c\\t") == "a__b c\\\\t")
        let long = JoinDialog.label(String(repeating: "word ", count: 40), width: 20)
        #expect(long.split(separator: "\n").allSatisfy { $0.count <= 20 })
        #expect(long.split(separator: "\n").count == 10)
        let arguments = JoinDialog.arguments(refused: "the invite code has a typo")
        #expect(arguments.prefix(3) == ["--entry", "--title", "Join a handoff account"])
        #expect(arguments.contains { $0.hasPrefix("That code did not work: the invite code has a typo\n") })
    }
}
