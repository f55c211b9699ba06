/// This device's settings that change while handoffd runs (`GET`/`PUT /v1/settings`,
/// `handoffctl config`, the status icon's switch; docs/local-api.md, "Settings"). handoffd keeps
/// them in its state directory: they hold across restarts.
public struct DeviceSettings: Codable, Sendable, Equatable {
    /// Whether handoff runs between this device and the others. Off: nothing is advertised, no
    /// other device is answered or kept a session with, no invite can be made, and no offer is
    /// for a notification; continuing here when the user asks (`handoffctl continue`) still works.
    public var handoff: Bool
    /// Whether copies are shared with the account's other devices (docs/clipboard.md). Off:
    /// nothing copied here is announced, and what other devices copy is not offered here.
    public var clipboard: Bool

    public init(handoff: Bool = true, clipboard: Bool = true) {
        self.handoff = handoff
        self.clipboard = clipboard
    }

    enum CodingKeys: String, CodingKey { case handoff, clipboard }

    /// A settings file kept before the clipboard existed has no `clipboard`: it is on.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        handoff = try c.decode(Bool.self, forKey: .handoff)
        clipboard = try c.decodeIfPresent(Bool.self, forKey: .clipboard) ?? true
    }
}

/// The body of `PUT /v1/settings`: what to change (a field left out stays as it is).
public struct SettingsChange: Codable, Sendable, Equatable {
    public var handoff: Bool?
    public var clipboard: Bool?

    public init(handoff: Bool? = nil, clipboard: Bool? = nil) {
        self.handoff = handoff
        self.clipboard = clipboard
    }
}
