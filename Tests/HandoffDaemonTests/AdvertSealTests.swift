import Foundation
import HandoffDiscovery
import HandoffModel
import HandoffTLS
import Testing
@testable import DaemonAccounts
@testable import HandoffDaemon

/// A sealed advert says nothing by its size: padded to a few fixed sizes (docs/security.md).
struct AdvertSealTests {
    let keys = AdvertKeys(accountSecret: Crypto.randomBytes(32))
    let device = DeviceID(digest: Crypto.randomBytes(32))

    func advert(title: String?) -> Advert {
        Advert(
            deviceID: device, sequence: 7,
            activity: title.map { ActivitySummary(id: UUID(), type: "com.example.editor.edit", title: $0, updatedAt: .now()) }
        )
    }

    func size(_ advert: Advert) throws -> Int {
        try #require(try AdvertSeal.txt(advert, keys: keys, salt: Crypto.randomBytes(8), instanceName: "abcdefghijklmnop").rdata).count
    }

    @Test func sizesDoNotTellWhetherThereIsAnActivityOrHowLongItsTitleIs() throws {
        // The adverts a stranger told apart by size before: none, a 17-character title, 3 more.
        let sizes = try [nil, "Quarterly report.", "Quarterly report.abc", String(repeating: "t", count: 60)].map { try size(advert(title: $0)) }
        #expect(Set(sizes).count == 1, "one size for all of them: \(sizes)")
        let long = try size(advert(title: String(repeating: "x", count: 400)))
        let longest = try size(advert(title: String(repeating: "y", count: ActivityLimits.maximumTitleBytes)))
        #expect(Set([sizes[0], long, longest]).count <= AdvertSeal.paddedSizes.count)
        #expect(longest <= AdvertSeal.maximumTXTBytes)
    }

    @Test func paddedAdvertsOpenAsTheyWereAndBadPaddingDoesNot() throws {
        for title in [nil, "", "é", String(repeating: "z", count: 250)] {
            let original = advert(title: title)
            let record = try AdvertSeal.txt(original, keys: keys, salt: Crypto.randomBytes(8), instanceName: "abcdefghijklmnop")
            #expect(AdvertSeal.open(record, keys: [keys], instanceName: "abcdefghijklmnop") == original)
            #expect(AdvertSeal.open(record, keys: [keys], instanceName: "abcdefghijklmnoq") == nil, "a copy under another name does not open")
        }
        #expect(AdvertSeal.unpadded([1, 2, 3]) == nil, "no marker")
        #expect(AdvertSeal.unpadded([1, 0x80, 0, 0]) == [1])
        #expect(AdvertSeal.unpadded([0, 0, 0]) == nil)
        #expect(AdvertSeal.unpadded([]) == nil)
        for length in 0..<900 {
            let plain = [UInt8](repeating: 0x41, count: length)
            let padded = AdvertSeal.padded(plain)
            #expect(AdvertSeal.unpadded(padded) == plain)
            if length < AdvertSeal.paddedSizes.last! { #expect(AdvertSeal.paddedSizes.contains(padded.count)) }
        }
    }
}
