import CHandoffSDBus

#if canImport(Glibc)
import Glibc
#endif

/// `DBusValue`s into and out of an sd-bus message, through sd-bus's own marshalling (the
/// non-variadic calls: see CHandoffSDBus/shim.h). sd-bus checks every signature, nesting depth
/// and length against the D-Bus specification; this only walks the types.
enum MessageCodec {
    static func append(_ values: [DBusValue], to message: OpaquePointer) throws(DBusError) {
        for value in values { try append(value, to: message) }
    }

    static func append(_ value: DBusValue, to m: OpaquePointer) throws(DBusError) {
        func basic<T>(_ type: UInt8, _ v: T) -> Int32 {
            withUnsafePointer(to: v) { sd_bus_message_append_basic(m, CChar(bitPattern: type), $0) }
        }
        func text(_ type: UInt8, _ s: String) -> Int32 {
            s.withCString { sd_bus_message_append_basic(m, CChar(bitPattern: type), $0) }
        }
        func container(_ type: UInt8, _ contents: String, _ body: () throws(DBusError) -> Void) throws(DBusError) {
            try check(contents.withCString { sd_bus_message_open_container(m, CChar(bitPattern: type), $0) }, "open a container")
            try body()
            try check(sd_bus_message_close_container(m), "close a container")
        }
        let rc: Int32
        switch value {
        case .byte(let v): rc = basic(UInt8(ascii: "y"), v)
        case .bool(let v): rc = basic(UInt8(ascii: "b"), Int32(v ? 1 : 0))
        case .int16(let v): rc = basic(UInt8(ascii: "n"), v)
        case .uint16(let v): rc = basic(UInt8(ascii: "q"), v)
        case .int32(let v): rc = basic(UInt8(ascii: "i"), v)
        case .uint32(let v): rc = basic(UInt8(ascii: "u"), v)
        case .int64(let v): rc = basic(UInt8(ascii: "x"), v)
        case .uint64(let v): rc = basic(UInt8(ascii: "t"), v)
        case .double(let v): rc = basic(UInt8(ascii: "d"), v)
        case .string(let s): rc = text(UInt8(ascii: "s"), s)
        case .objectPath(let s): rc = text(UInt8(ascii: "o"), s)
        case .signature(let s): rc = text(UInt8(ascii: "g"), s)
        case .unixFD(let fd): rc = basic(UInt8(ascii: "h"), fd)
        case .array(let element, let items):
            try container(UInt8(ascii: "a"), element) { () throws(DBusError) in
                for item in items {
                    guard item.signature == element else {
                        throw DBusError(name: DBusError.invalidArgsName, message: "an array of \(element) holds a \(item.signature)")
                    }
                    try append(item, to: m)
                }
            }
            return
        case .structure(let fields):
            try container(UInt8(ascii: "r"), fields.map(\.signature).joined()) { () throws(DBusError) in try append(fields, to: m) }
            return
        case .dictEntry(let key, let value):
            try container(UInt8(ascii: "e"), key.signature + value.signature) { () throws(DBusError) in try append([key, value], to: m) }
            return
        case .variant(let inner):
            try container(UInt8(ascii: "v"), inner.signature) { () throws(DBusError) in try append(inner, to: m) }
            return
        }
        try check(rc, "append a \(value.signature)")
    }

    /// Every argument of `message`, from the start. Descriptors are duplicated (close-on-exec)
    /// and belong to the caller.
    static func read(_ message: OpaquePointer) throws(DBusError) -> [DBusValue] {
        try check(sd_bus_message_rewind(message, 1), "rewind a message")
        return try readSequence(message)
    }

    /// The values up to the end of the current container; on a failure, the descriptors already
    /// taken are closed again.
    private static func readSequence(_ m: OpaquePointer) throws(DBusError) -> [DBusValue] {
        var values: [DBusValue] = []
        do throws(DBusError) {
            while true {
                var type: CChar = 0
                var contents: UnsafePointer<CChar>?
                let rc = sd_bus_message_peek_type(m, &type, &contents)
                try check(rc, "read a message")
                if rc == 0 { return values }
                values.append(try readOne(m, type: UInt8(bitPattern: type), contents: contents.map { String(cString: $0) } ?? ""))
            }
        } catch {
            DBusValue.closeDescriptors(in: values)
            throw error
        }
    }

    private static func readOne(_ m: OpaquePointer, type: UInt8, contents: String) throws(DBusError) -> DBusValue {
        func basic<T>(_ initial: T) throws(DBusError) -> T {
            var v = initial
            try check(withUnsafeMutablePointer(to: &v) { sd_bus_message_read_basic(m, CChar(bitPattern: type), $0) }, "read a value")
            return v
        }
        func text() throws(DBusError) -> String {
            var p: UnsafePointer<CChar>?
            try check(sd_bus_message_read_basic(m, CChar(bitPattern: type), &p), "read a string")
            return p.map { String(cString: $0) } ?? ""
        }
        func inside(_ body: () throws(DBusError) -> DBusValue) throws(DBusError) -> DBusValue {
            try check(contents.withCString { sd_bus_message_enter_container(m, CChar(bitPattern: type), $0) }, "enter a container")
            let value = try body()
            try check(sd_bus_message_exit_container(m), "leave a container")
            return value
        }
        switch type {
        case UInt8(ascii: "y"): return .byte(try basic(UInt8(0)))
        case UInt8(ascii: "b"): return .bool(try basic(Int32(0)) != 0)
        case UInt8(ascii: "n"): return .int16(try basic(Int16(0)))
        case UInt8(ascii: "q"): return .uint16(try basic(UInt16(0)))
        case UInt8(ascii: "i"): return .int32(try basic(Int32(0)))
        case UInt8(ascii: "u"): return .uint32(try basic(UInt32(0)))
        case UInt8(ascii: "x"): return .int64(try basic(Int64(0)))
        case UInt8(ascii: "t"): return .uint64(try basic(UInt64(0)))
        case UInt8(ascii: "d"): return .double(try basic(Double(0)))
        case UInt8(ascii: "s"): return .string(try text())
        case UInt8(ascii: "o"): return .objectPath(try text())
        case UInt8(ascii: "g"): return .signature(try text())
        case UInt8(ascii: "h"):
            let borrowed = try basic(Int32(-1))
            let own = fcntl(borrowed, F_DUPFD_CLOEXEC, 3)
            guard own >= 0 else { throw DBusError.errno(-errno, "take a passed descriptor") }
            return .unixFD(own)
        case UInt8(ascii: "a"):
            return try inside { () throws(DBusError) in .array(element: contents, try readSequence(m)) }
        case UInt8(ascii: "r"):
            return try inside { () throws(DBusError) in .structure(try readSequence(m)) }
        case UInt8(ascii: "e"):
            return try inside { () throws(DBusError) in
                let pair = try readSequence(m)
                guard pair.count == 2 else {
                    DBusValue.closeDescriptors(in: pair)
                    throw DBusError(name: DBusError.invalidArgsName, message: "a dictionary entry without two values") }
                return .dictEntry(pair[0], pair[1])
            }
        case UInt8(ascii: "v"):
            return try inside { () throws(DBusError) in
                let inner = try readSequence(m)
                guard inner.count == 1 else {
                    DBusValue.closeDescriptors(in: inner)
                    throw DBusError(name: DBusError.invalidArgsName, message: "a variant without one value") }
                return .variant(inner[0])
            }
        default:
            throw DBusError(name: DBusError.invalidArgsName, message: "unknown D-Bus type \(Character(Unicode.Scalar(type)))")
        }
    }

    @discardableResult
    static func check(_ rc: Int32, _ what: String) throws(DBusError) -> Int32 {
        guard rc >= 0 else { throw DBusError.errno(rc, "cannot \(what)") }
        return rc
    }
}
