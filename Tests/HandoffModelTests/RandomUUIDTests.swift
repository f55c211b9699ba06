import Foundation
import HandoffModel
import Testing

/// `UUID.random()`: version 4 with the RFC 4122 variant, as `UUID()` makes them, and never twice.
@Suite struct RandomUUIDTests {
    @Test func versionFourWithTheStandardVariant() {
        var seen = Set<UUID>()
        for _ in 0..<2_000 {
            let id = UUID.random()
            let text = id.uuidString
            #expect(Array(text)[14] == "4", "\(text)")
            #expect("89AB".contains(Array(text)[19]), "\(text)")
            #expect(UUID(uuidString: text) == id)
            seen.insert(id)
        }
        #expect(seen.count == 2_000)
    }
}
