#if !FUZZING
import BrowserHost
import Foundation
import HandoffAPI
import HandoffModel
import HandoffPeer
import NIOCore

/// `handoff-fuzz seeds DIR`: writes a seed corpus for the targets whose inputs have a shape a
/// fuzzer would take long to find, made by the real encoders (committed under `fuzz/`).
enum Seeds {
    static func write(to directory: String) throws {
        let activity = Activity(
            content: ActivityContent(
                type: "org.example.editor.document", title: "Chapter 9",
                userInfo: ["page": .int(42), "tags": .array([.string("a"), .null]), "when": .date(.now()), "id": .uuid(UUID()), "path": .string("/home/ana/book.md"), "ratio": .double(0.5), "draft": .bool(true)],
                requiredUserInfoKeys: ["page"], webpageURL: "https://example.org/book#9", supportsContinuationStreams: true),
            createdAt: .now(), originDevice: String(repeating: "a", count: 52))
        let device = DeviceID(digest: [UInt8](repeating: 3, count: 32))
        let put = try LocalAPIJSON.encoder().encode(PutCurrentActivityRequest(content: activity.content))
        let sync = try LocalAPIJSON.encoder().encode(SyncRequest(peer: "desk"))
        func http(_ method: String, _ path: String, _ body: Data) -> [UInt8] {
            Array("\(method) \(path) HTTP/1.1\r\nHost: handoff\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        }
        var frames = ByteBuffer()
        for message: PeerMessage in [
            .hello(PeerHello(deviceID: device, deviceName: "desk", accountStateVersion: 3, clock: .now())),
            .getActivity(requestID: 7, seenID: activity.id),
            .activity(requestID: 7, encoded: ActivityEncoding.encode(activity)),
            .activityContinued(activityID: activity.id),
            .openStream(activityID: activity.id),
            .failure(PeerFailure(.internalError, "something failed")),
        ] {
            PeerFrame.write(message, to: &frames)
        }
        var events = ""
        for event in [
            LocalEvent(at: .now(), .currentActivityChanged(activity)),
            LocalEvent(at: .now(), .peerGone(device)),
            LocalEvent(at: .now(), .wasContinued(activityID: activity.id, peer: .init(id: device, name: "desk"))),
        ] {
            events += String(decoding: try LocalAPIJSON.encoder().encode(event), as: UTF8.self) + "\n"
        }
        let chunked = events.split(separator: "\n").map { line in String(line.utf8.count + 1, radix: 16) + "\r\n" + line + "\n\r\n" }.joined()

        func framed(_ messages: [String]) -> [UInt8] { messages.flatMap { NativeMessaging.frame(Array($0.utf8)) ?? [] } }

        let document = Activity(
            content: DocumentActivity(
                place: DocumentPlace(folder: "Sync", path: "plans/Q3 report.odt")!, mimeType: "application/vnd.oasis.opendocument.text", size: 48_213,
                modified: .now(), sha256: String(repeating: "0f", count: 32), app: "org.libreoffice.LibreOffice.writer.desktop"
            ).content,
            createdAt: .now(), originDevice: String(repeating: "b", count: 52))
        let seeds: [String: [String: [UInt8]]] = [
            "corpus-activity-decoder": ["document": ActivityEncoding.encode(document)],
            "corpus-browser-messages": [
                "session": framed([
                    #"{"type":"hello","browser":"firefox"}"#,
                    #"{"type":"page","window":"3","url":"https://example.org/story#part-2","title":"Story","focused":true}"#,
                    #"{"type":"saved","window":"3","request":1,"url":"https://example.org/story","title":"Story","scrollX":0,"scrollY":5000,"scrollFraction":0.25,"viewportWidth":1200,"textFragment":"Paragraph 12"}"#,
                    #"{"type":"opened","id":"6f1c2d9e-8f1a-4c55-9d43-0c7a3c1f2b10","window":"4"}"#,
                    #"{"type":"continue","request":3,"peer":"desk"}"#,
                    #"{"type":"focus","window":"3"}"#,
                    #"{"type":"clear","window":"3"}"#,
                ]),
            ],
            "corpus-peer-frames": ["session": Array(frames.readableBytesView)],
            "corpus-local-api-http": [
                "put-current": http("PUT", "/v1/activity/current", put),
                "sync": http("POST", "/v1/account/sync", sync),
                "get-peers": http("GET", "/v1/peers?x=%20y", Data()),
            ],
            "corpus-ndjson-events": [
                "chunked": Array("HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n\(chunked)0\r\n\r\n".utf8),
                "plain": Array("HTTP/1.1 200 OK\r\ncontent-type: application/x-ndjson\r\n\r\n\(events)".utf8),
            ],
            "corpus-advert-txt": [
                "member": TXTSeed.rdata([("v", "1"), ("t", "AAECAwQFBgcICQoLDA0ODw"), ("s0", String(repeating: "A", count: 200)), ("s1", "Zm9v")]),
                "invite": TXTSeed.rdata([("v", "1"), ("t", "AAECAwQFBgcICQoLDA0ODw"), ("j", "AAECAwQFBgcICQoL"), ("s0", "QUJD")]),
            ],
            "corpus-desktop-entry": [
                "editor": Array("[Desktop Entry]\nType=Application\nName=Quill Editor\nName[fr]=Éditeur\nExec=quill --open %u \"a b\" 'c'\\s%%\nIcon=quill\nTryExec=quill\nX-Handoff-ActivityTypes=org.quillsoft.edit;org.quillsoft.view;\n\n[Desktop Action new]\nExec=quill --new\n".utf8)
            ],
        ]
        for (corpus, files) in seeds {
            let path = directory + "/" + corpus
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            for (name, bytes) in files { try Data(bytes).write(to: URL(fileURLWithPath: path + "/" + name)) }
        }
    }
}

enum TXTSeed {
    static func rdata(_ entries: [(String, String)]) -> [UInt8] {
        entries.flatMap { key, value -> [UInt8] in
            let item = Array("\(key)=\(value)".utf8)
            return [UInt8(item.count)] + item
        }
    }
}
#endif
