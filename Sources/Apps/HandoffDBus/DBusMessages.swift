/// A method call to make: where it goes and what it carries.
public struct DBusMethodCall: Sendable, Equatable {
    public var destination: String
    public var path: String
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]

    public init(destination: String, path: String, interface: String, member: String, arguments: [DBusValue] = []) {
        self.destination = destination
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}

/// A signal: one we emit (to `destination` only, when set — a unicast signal other clients do not
/// see), or one a match delivered to us (`sender` set).
public struct DBusSignal: Sendable, Equatable {
    public var sender: String
    public var destination: String?
    public var path: String
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]

    public init(sender: String = "", destination: String? = nil, path: String, interface: String, member: String, arguments: [DBusValue] = []) {
        self.sender = sender
        self.destination = destination
        self.path = path
        self.interface = interface
        self.member = member
        self.arguments = arguments
    }
}

/// A method call another client made to an object we export; answered exactly once with
/// `DBusConnection.reply(to:…)`.
public struct DBusIncomingCall: Sendable {
    /// The caller's unique bus name (`:1.42`), which the bus daemon vouches for.
    public var sender: String
    public var path: String
    public var interface: String
    public var member: String
    public var arguments: [DBusValue]
    /// Which held message the reply answers.
    let token: UInt64
}
