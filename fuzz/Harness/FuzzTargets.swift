import BrowserHost
import DaemonAccounts
import DaemonContinue
import DaemonCore
import Foundation
import HandoffAPI
import HandoffClient
import HandoffDaemon
import HandoffDiscovery
import HandoffWideArea
import HandoffModel
import HandoffPeer
import NIOCore
import NIOEmbedded
import NIOHTTP1

/// Every decoder that takes input from outside, one target each (docs/security.md, "Decoders
/// under a fuzzer"). Besides "never crash, never hang, bounded memory" (libFuzzer and
/// AddressSanitizer watch those), each checks what it can: what a decoder accepts re-encodes to
/// the same value.
enum FuzzTargets {
    typealias Target = @Sendable ([UInt8]) -> Void

    /// Set once, before the first input (the harness is single-threaded).
    nonisolated(unsafe) static var selected: Target = { _ in }

    static let all: [String: Target] = [
        "activity-decoder": activityDecoder,
        "advert-decoder": advertDecoder,
        "advert-txt": advertTXT,
        "invite-code": inviteCode,
        "peer-frames": peerFrames,
        "local-api-http": localAPIHTTP,
        "config-file": configFile,
        "desktop-entry": desktopEntry,
        "ndjson-events": ndjsonEvents,
        "browser-messages": browserMessages,
        "zone-answer": zoneAnswer,
    ]

    static func check(_ condition: Bool, _ message: String) {
        if !condition { fatalError(message) }
    }

    /// An activity's binary encoding: peers' `activity` answers, the saved current activity; and a
    /// document's description in it.
    static let activityDecoder: Target = { bytes in
        guard let activity = try? ActivityEncoding.decode(bytes) else { return }
        let reread = try? ActivityEncoding.decode(ActivityEncoding.encode(activity), maximumSize: .max)
        check(reread == activity, "an accepted encoding does not survive re-encoding")
        check((try? JSONEncoder().encode(activity)) != nil, "an accepted activity cannot be shown as JSON")
        // A document another device offers: what it names is read back as it was.
        if let document = try? DocumentActivity(activity.content) {
            check((try? DocumentActivity(document.content)) == document, "an accepted document does not survive re-reading")
            check(!document.place.path.hasPrefix("/") && !document.place.path.split(separator: "/").contains(".."), "a document's path leads out of its folder")
        }
    }

    /// A sealed advert's plaintext: what a member (or a stolen key) could make another decode.
    static let advertDecoder: Target = { bytes in
        guard let advert = Advert(decoding: bytes) else { return }
        check(Advert(decoding: advert.encoded()) == advert, "an accepted advert does not survive re-encoding")
    }

    static let fuzzKeys = [AdvertKeys(accountSecret: [UInt8](repeating: 7, count: 32))]

    /// A TXT record's rdata as anyone on the link can publish it: parsed, recognised, unsealed.
    static let advertTXT: Target = { bytes in
        let txt = TXTRecord(rdata: bytes)
        _ = AdvertSeal.isHandoff(txt)
        _ = AdvertSeal.joinTag(of: txt)
        _ = AdvertSeal.open(txt, keys: fuzzKeys, instanceName: "abcdefghijklmnop")
        if let wire = txt.rdata { check(TXTRecord(rdata: wire) == txt, "a parsed TXT record does not survive re-encoding") }
    }

    /// An invite code as typed or pasted.
    static let inviteCode: Target = { bytes in
        guard let code = try? InviteCode(parsing: String(decoding: bytes, as: UTF8.self)) else { return }
        check((try? InviteCode(parsing: code.text)) == code, "an accepted code does not survive printing")
    }

    /// What a peer sends after the handshake: frames, each any of the peer messages — under the
    /// limit before a hello (8 KiB) and the one after it (1 MiB).
    static let peerFrames: Target = { bytes in
        for limit in [8 * 1024, 1 << 20] {
            var buffer = ByteBuffer(bytes: bytes)
            while let message = try? PeerFrame.read(from: &buffer, maximumPayload: limit) {
                var out = ByteBuffer()
                PeerFrame.write(message, to: &out)
                let again = try? PeerFrame.read(from: &out, maximumPayload: .max)
                check(again == message, "an accepted peer message does not survive re-encoding")
            }
        }
    }

    /// A local API request as a client sends it: HTTP/1.1 through NIO's parser, as the server's
    /// pipeline has it, then the body as every request type the API reads.
    static let localAPIHTTP: Target = { bytes in
        let channel = EmbeddedChannel()
        defer { _ = try? channel.finish() }
        guard (try? channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: false)) != nil else { return }
        _ = try? channel.writeInbound(ByteBuffer(bytes: bytes))
        var body: [UInt8] = []
        var uri = ""
        while let part = try? channel.readInbound(as: HTTPServerRequestPart.self) {
            switch part {
            case .head(let head):
                uri = head.uri
                body = []
            case .body(let chunk):
                body += chunk.readableBytesView.prefix(64 * 1024)
            case .end:
                _ = uri.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
                decodeRequestBodies(body)
            }
        }
    }

    static func decodeRequestBodies(_ body: [UInt8]) {
        let data = Data(body)
        func decode<T: Decodable>(_ type: T.Type) {
            do {
                _ = try LocalAPIJSON.decoder().decode(type, from: data)
            } catch let e as DecodingError {
                _ = DecodingErrorText.describe(e)
            } catch {}
        }
        decode(PutCurrentActivityRequest.self)
        decode(CreateAccountRequest.self)
        decode(JoinAccountRequest.self)
        decode(SyncRequest.self)
        decode(LeaveRequest.self)
        decode(RenameDeviceRequest.self)
        decode(ContinueRequest.self)
        decode(AttachRequest.self)
        if let put = try? LocalAPIJSON.decoder().decode(PutCurrentActivityRequest.self, from: data) {
            _ = try? put.content.validate(now: .now())
        }
    }

    /// handoffd.toml, as a user (or a package) writes it.
    static let configFile: Target = { bytes in
        guard let file = try? ConfigFile(path: "fuzz.toml", text: String(decoding: bytes, as: UTF8.self)) else { return }
        var settings = DaemonSettings()
        _ = try? settings.apply(file)
    }

    /// What a unicast zone's server (or anyone who can write to the zone) answers a browse with
    /// (docs/discovery.md, "Beyond one link"): read by ldns, then by us as `WideAreaDiscovery`
    /// reads a PTR listing, an SRV, a TXT and addresses.
    static let zoneAnswer: Target = { bytes in
        let domain = "handoff.example.net."
        for type: UInt16 in [12, 33, 16, 1, 28] {
            guard let records = UnicastDNS.records(inAnswer: bytes, type: type) else { return }
            for fields in records {
                for field in fields {
                    if let labels = UnicastDNS.labels(field) { check(labels.allSatisfy { $0.count < 64 }, "a label over 63 bytes") }
                    if let name = UnicastDNS.hostName(field) { check(name.hasSuffix("."), "a host name not fully qualified") }
                    _ = UnicastDNS.address(field)
                    _ = UnicastDNS.number(field)
                    if let instance = WideAreaDiscovery.instance(named: field, domain: domain) {
                        check(!instance.name.isEmpty && instance.domain == domain, "an instance elsewhere")
                    }
                }
                if type == 16 { _ = AdvertSeal.open(TXTRecord(rdata: fields.flatMap { $0 }), keys: fuzzKeys, instanceName: "abcdefghijklmnop") }
            }
        }
    }

    /// A `.desktop` file any installed package can bring, and its Exec line.
    static let desktopEntry: Target = { bytes in
        guard let entry = DesktopEntry(id: "fuzz.desktop", path: "/fuzz.desktop", text: String(decoding: bytes, as: UTF8.self)) else { return }
        if let exec = entry.exec { _ = try? ExecLine(parsing: exec) }
    }

    /// What the browser writes to handoff-browser-host (docs/browser.md): native messaging frames,
    /// each one of the extension's messages. A page taken is an http(s) address and a title
    /// within the limits, and always makes an activity handoffd takes.
    static let browserMessages: Target = { bytes in
        var reader = NativeMessaging.Reader()
        guard let messages = try? reader.feed(bytes) else { return }
        for message in messages {
            guard let decoded = try? ExtensionMessage.decode(message) else { continue }
            switch decoded {
            case .page(_, let page, _), .saved(_, _, let page, _):
                check((try? ExtensionMessage.checkedURL(page.url)) == page.url, "an accepted page address is not one")
                check(page.title.utf8.count <= ActivityLimits.maximumTitleBytes, "an accepted title is over the limit")
                check((try? PageActivity.content(page, position: nil).validate(now: .now())) != nil, "an accepted page makes an activity handoffd refuses")
            default: break
            }
        }
    }

    /// What handoffctl reads from the socket while it watches events: an HTTP answer head, then
    /// NDJSON lines, chunked or not.
    static let ndjsonEvents: Target = { bytes in
        var pair: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { return }
        let written = bytes.withUnsafeBytes { send(pair[0], $0.baseAddress, $0.count, 0) }
        close(pair[0])
        guard written == bytes.count else {
            close(pair[1])
            return
        }
        _ = HandoffClient.readEventStream(connected: pair[1], maximumEvents: 10_000)
    }
}
