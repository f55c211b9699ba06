import FoundationEssentials
import Testing

@testable import HandoffModel

@Suite(.timeLimit(.minutes(3))) struct ActivityEncodingTests {
    @Test func fullActivityRoundTripsThroughBinary() throws {
        let bytes = ActivityEncoding.encode(Fixtures.full)
        let decoded = try ActivityEncoding.decode(bytes)
        #expect(decoded == Fixtures.full)
        #expect(ActivityEncoding.encode(decoded) == bytes, "encoding is canonical")
    }

    @Test(arguments: Fixtures.everyValue.keys.sorted())
    func everyValueTypeRoundTripsThroughBinaryAndJSON(key: String) throws {
        let value = Fixtures.everyValue[key]!
        let activity = Fixtures.activity(ActivityContent(type: "com.example.t", userInfo: [key: value]))
        let viaBinary = try ActivityEncoding.decode(ActivityEncoding.encode(activity))
        #expect(viaBinary.userInfo[key] == value)
        #expect(viaBinary.userInfo[key]?.typeName == value.typeName)

        let json = try JSONEncoder().encode(activity)
        let viaJSON = try JSONDecoder().decode(Activity.self, from: json)
        #expect(viaJSON.userInfo[key] == value, "\(String(decoding: json, as: UTF8.self))")
        #expect(viaJSON == activity)
    }

    @Test func jsonFormIsTaggedAndReadable() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let value: ActivityValue = .dictionary([
            "page": .int(3), "ratio": .double(0.25), "draft": .data(Data("hi".utf8)),
            "at": .date(Fixtures.now), "home": .url("https://example.com/"), "ok": .bool(true), "none": .null,
            "tags": .array([.string("a")]),
        ])
        let text = String(decoding: try encoder.encode(value), as: UTF8.self)
        #expect(
            text
                == #"{"dictionary":{"at":{"date":"2026-11-22T10:00:00Z"},"draft":{"data":"aGk="},"home":{"url":"https://example.com/"},"none":{"null":null},"ok":{"bool":true},"page":{"int":3},"ratio":{"double":0.25},"tags":{"array":[{"string":"a"}]}}}"#
        )
    }

    @Test(arguments: [
        (#"{"int":3,"string":"x"}"#, "exactly one key"),
        (#"{}"#, "exactly one key"),
        (#"{"float":1}"#, "unknown value type"),
        (#"{"int":1.5}"#, ""),
        (#"{"int":"3"}"#, ""),
        (#"{"double":"NaN"}"#, "nan"),
        (#"{"data":"not base64!"}"#, "base64"),
        (#"{"uuid":"nope"}"#, "not a UUID"),
        (#"{"date":"yesterday"}"#, "RFC 3339"),
        (#"{"null":0}"#, "null"),
    ])
    func malformedJSONValuesAreRefused(json: String, mention: String) {
        do {
            _ = try JSONDecoder().decode(ActivityValue.self, from: Data(json.utf8))
            Issue.record("accepted \(json)")
        } catch {
            #expect(mention.isEmpty || "\(error)".contains(mention), "\(error)")
        }
    }

    @Test func int64ExtremesSurviveJSON() throws {
        for v: Int64 in [.min, .max, 9_007_199_254_740_993] {
            let json = try JSONEncoder().encode(ActivityValue.int(v))
            #expect(try JSONDecoder().decode(ActivityValue.self, from: json) == .int(v))
        }
    }

    /// The byte-for-byte example in docs/activity-encoding.md: if this changes, the document must too.
    @Test func documentedExampleBytes() throws {
        let activity = Activity(
            id: UUID(uuidString: "00112233-4455-6677-8899-aabbccddeeff")!,
            content: ActivityContent(
                type: "com.example.edit",
                title: "Hi",
                userInfo: ["page": .int(3)],
                webpageURL: "https://e.x/"
            ),
            createdAt: Timestamp(microsecondsSinceEpoch: 1_000_000),
            updatedAt: Timestamp(microsecondsSinceEpoch: 1_000_000)
        )
        let hex = ActivityEncoding.encode(activity).map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined(separator: " ")
        #expect(
            hex
                == "48 4f 01 01 10 00 11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff 02 10 63 6f 6d 2e 65 78 61 6d 70 6c 65 2e 65 64 69 74 03 02 48 69 04 09 0b 01 04 70 61 67 65 03 06 06 0c 68 74 74 70 73 3a 2f 2f 65 2e 78 2f 0b 03 80 89 7a 0c 03 80 89 7a"
        )
    }

    @Test func unknownFieldsAreSkippedAndUnknownVersionsNamed() throws {
        var bytes = ActivityEncoding.encode(Fixtures.full)
        bytes += [0x7F, 0x03, 0xAA, 0xBB, 0xCC]  // field 127, from some future writer
        #expect(try ActivityEncoding.decode(bytes) == Fixtures.full)

        bytes[2] = 2
        #expect(throws: ActivityError.self) { try ActivityEncoding.decode(bytes) }
        do {
            _ = try ActivityEncoding.decode(bytes)
        } catch {
            #expect(error.code == .unsupportedVersion)
            #expect(error.message.contains("version 2"))
        }
    }

    @Test(arguments: [
        ([UInt8](), "bad magic"),
        ([0x48, 0x4F], "bad magic"),
        ([0x00, 0x4F, 0x01], "bad magic"),
        ([0x48, 0x4F, 0x01], "required field"),
        ([0x48, 0x4F, 0x01, 0x02, 0x05, 0x61], "past the end"),
        ([0x48, 0x4F, 0x01, 0x02, 0x01, 0x61, 0x01, 0x10], "out of order"),
        ([0x48, 0x4F, 0x01, 0x80, 0x00], "minimally"),
        ([0x48, 0x4F, 0x01, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F], "overflows"),
        ([0x48, 0x4F, 0x01, 0x02, 0x02, 0xC3, 0x28], "UTF-8"),
        ([0x48, 0x4F, 0x01, 0x04, 0x02, 0x0A, 0x00], "not a dictionary"),
        ([0x48, 0x4F, 0x01, 0x04, 0x04, 0x0B, 0xFF, 0xFF, 0x7F], "more entries"),
        ([0x48, 0x4F, 0x01, 0x04, 0x04, 0x0B, 0x01, 0x05, 0x61], "past the end"),
        ([0x48, 0x4F, 0x01, 0x04, 0x04, 0x0B, 0x01, 0x00, 0x0C], "unknown value type"),
        ([0x48, 0x4F, 0x01, 0x04, 0x08, 0x0B, 0x02, 0x01, 0x62, 0x00, 0x01, 0x61, 0x00], "ascending"),
        ([0x48, 0x4F, 0x01, 0x0B, 0x02, 0x01, 0x00], "trailing"),
        ([0x48, 0x4F, 0x01, 0x0B, 0x0A, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], "0001–9999"),
    ] as [([UInt8], String)])
    func malformedBinaryIsRefusedWithReason(bytes: [UInt8], mention: String) {
        do {
            _ = try ActivityEncoding.decode(bytes)
            Issue.record("accepted \(bytes)")
        } catch {
            #expect(error.code == .malformedEncoding)
            #expect(error.message.contains(mention), "\(error.message)")
        }
    }

    @Test func nestingBeyondTheLimitIsRefused() {
        var value: ActivityValue = .null
        for _ in 0..<(ActivityValue.maximumNestingDepth + 1) { value = .array([value]) }
        let bytes = ActivityEncoding.encode(Fixtures.activity(ActivityContent(type: "a.b", userInfo: ["deep": value])))
        do {
            _ = try ActivityEncoding.decode(bytes)
            Issue.record("accepted")
        } catch {
            #expect(error.message.contains("nest"))
        }
    }

    @Test func decoderRefusesInputOverTheCapBeforeReadingIt() {
        let bytes = [UInt8](repeating: 0, count: 70_000)
        #expect(throws: ActivityError(.payloadTooLarge, "encoded activity is 70000 bytes; the limit is 65536")) {
            try ActivityEncoding.decode(bytes)
        }
    }

    @Test func equivalentButDistinctKeysAreOneKey() {
        // "é" precomposed and decomposed are different bytes but one Swift String.
        var w = ByteWriter()
        w.raw([0x48, 0x4F, 0x01])
        var info = ByteWriter()
        info.byte(0x0B)
        info.varint(2)
        info.lengthPrefixed(Array("e\u{301}".utf8))
        info.byte(0x00)
        info.lengthPrefixed(Array("\u{e9}".utf8))
        info.byte(0x00)
        w.varint(1)
        w.lengthPrefixed([UInt8](repeating: 1, count: 16))
        w.varint(2)
        w.lengthPrefixed(Array("a.b".utf8))
        w.varint(4)
        w.lengthPrefixed(info.bytes)
        do {
            _ = try ActivityEncoding.decode(w.bytes)
            Issue.record("accepted duplicate keys")
        } catch {
            #expect(error.message.contains("same text"))
        }
    }
}
