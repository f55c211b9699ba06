import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct AccountShow: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show",
        abstract: "Show this device's account.",
        discussion: "Exits with status 20 when the device has no account."
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the local API's account object.")
    var json = false

    func run() throws {
        let info = try global.client(root).send(.account)
        if json { return try Terminal.json(info) }
        AccountShow.describe(info).forEach(Terminal.out)
    }

    static func describe(_ info: AccountInfo) -> [String] {
        var lines = [
            "account \(displayQuoted(info.accountName))  \(info.accountID.text)",
            "  device:      \(safe(info.deviceName))  \(info.deviceID.text)",
            "  devices:     \(info.deviceCount)",
            "  role:        \(info.isAdmin ? "holds the account key (can invite and remove devices)" : "member")",
            "  state:       version \(info.stateVersion)",
            "  certificate: valid until \(info.certificateExpires.rfc3339)"
                + (info.certificateFromRetiredKey == true ? "; from a retired account key (renewed when the key holder is next reached)" : ""),
            "  recovery:    \(info.recoveryCodeMadeAt.map { "a recovery code made \($0.rfc3339)" } ?? "no recovery code (handoffctl account recovery-code)")",
        ]
        if let rotations = info.keyRotations, rotations > 0 { lines.insert("  key:         rotated \(rotations == 1 ? "once" : "\(rotations) times")", at: 4) }
        if let offer = info.keyOffer { lines.append("  key offer:   " + offerLine(offer)) }
        if let to = info.keyHandedTo {
            lines.append("  key offer:   handed to \(to.short)…, which has not said it stored it; nothing is signed here until then (handoffctl account sync, or account transfer-key --cancel)")
        }
        if let offer = info.keyOfferedTo {
            lines.append("  key offer:   offered to \(safe(offer.deviceName)) until \(offer.expiresAt.rfc3339) (handoffctl account accept-key there)")
        }
        return lines
    }

    /// An offer of the account key waiting here.
    static func offerLine(_ offer: KeyOfferInfo) -> String {
        "\(safe(offer.deviceName)) offers this device the account key until \(offer.expiresAt.rfc3339) (handoffctl account accept-key)"
    }
}
