/// What went wrong on the bus: a D-Bus error name (`org.freedesktop.DBus.Error.ServiceUnknown`,
/// or one of ours) and its message, as the other side or sd-bus gave them.
public struct DBusError: Error, Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var message: String

    public init(name: String, message: String) {
        self.name = name
        self.message = message
    }

    public var description: String { "\(name): \(message)" }

    /// The connection is closed or was lost.
    public static let disconnectedName = "org.freedesktop.DBus.Error.Disconnected"
    /// A message did not have the argument types it should.
    public static let invalidArgsName = "org.freedesktop.DBus.Error.InvalidArgs"
    public static let accessDeniedName = "org.freedesktop.DBus.Error.AccessDenied"
    public static let unknownMethodName = "org.freedesktop.DBus.Error.UnknownMethod"
    /// `requestName`: another connection owns the name.
    public static let addressInUseName = "org.freedesktop.DBus.Error.AddressInUse"
    /// An error sd-bus returned as a negative errno.
    public static let failedName = "org.freedesktop.DBus.Error.Failed"

    static func errno(_ code: Int32, _ what: String) -> DBusError {
        DBusError(name: failedName, message: "\(what): \(String(cString: strerror(-code)))")
    }
}

#if canImport(Glibc)
import Glibc
#endif
