#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension UUID {
    /// A random (version 4) UUID from the system's generator (getrandom(2)). FoundationEssentials'
    /// `UUID()` opens, reads and closes /dev/urandom for each one: three system calls on the path
    /// of every `continue` (docs/benchmarks.md).
    public static func random() -> UUID {
        var generator = SystemRandomNumberGenerator()
        var bytes = unsafeBitCast((generator.next() as UInt64, generator.next() as UInt64), to: uuid_t.self)
        bytes.6 = bytes.6 & 0x0F | 0x40  // version 4
        bytes.8 = bytes.8 & 0x3F | 0x80  // the variant of RFC 4122 UUIDs
        return UUID(uuid: bytes)
    }
}
