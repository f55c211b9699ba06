/// This device's settings that change while handoffd runs (`GET`/`PUT /v1/settings`,
/// `handoffctl config`, the status icon's switch; docs/local-api.md, "Settings"). handoffd keeps
/// them in its state directory: they hold across restarts.
public struct DeviceSettings: Codable, Sendable, Equatable {
    /// Whether handoff runs between this device and the others. Off: nothing is advertised, no
    /// other device is answered or kept a session with, no invite can be made, and no offer is
    /// for a notification; continuing here when the user asks (`handoffctl continue`) still works.
    public var handoff: Bool

    public init(handoff: Bool = true) {
        self.handoff = handoff
    }
}

/// The body of `PUT /v1/settings`: what to change (a field left out stays as it is).
public struct SettingsChange: Codable, Sendable, Equatable {
    public var handoff: Bool?

    public init(handoff: Bool? = nil) {
        self.handoff = handoff
    }
}
