#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel

/// What the extension (browser/background.js) tells the host, checked: every message is
/// decoded into one of these or refused with a reason, so nothing the browser sends reaches
/// handoffd unchecked (docs/browser.md, "Privacy"). The extension sends only what the browser's
/// tabs API says of its own tabs; a page has no way to write here.
public enum ExtensionMessage: Sendable, Equatable {
    /// The first message: which browser this is (it names the app to handoffd).
    case hello(browser: Browser)
    /// `window`'s active tab shows `page`; `focused` when the window is the focused one.
    case page(window: String, page: Page, focused: Bool)
    /// `window` shows nothing to hand over (a page that is not http(s), or its switch is off).
    case clear(window: String)
    /// The user focused `window`, a normal window of this browser.
    case focus(window: String)
    case close(window: String)
    /// The answer to `save` number `request`: where the user is on the page now.
    case saved(window: String, request: Int, page: Page, position: PagePosition)
    /// The answer to `open`: the page is open in `window`, or why not.
    case opened(id: UUID, window: String?, error: String?)
    /// The popup asks what the other devices are doing.
    case offers(request: Int)
    /// The popup continues what `peer` is doing.
    case `continue`(request: Int, peer: String)

    public enum Browser: String, Sendable, Equatable, CaseIterable {
        case chromium, chrome, firefox

        /// The app id the extension registers as with handoffd: one per browser, so that both may run.
        public var appID: String { "org.handoff.browser.\(rawValue)" }
    }

    /// A web page as the browser names it.
    public struct Page: Sendable, Equatable {
        public var url: String
        public var title: String

        public init(url: String, title: String) {
            self.url = url
            self.title = title
        }
    }

    /// Where on the page the user is: what `userInfo` carries (docs/browser.md, "The activity").
    public struct PagePosition: Sendable, Equatable {
        public var scrollX: Int
        public var scrollY: Int
        /// scrollY as a share of how far the page scrolls: for a window of another width.
        public var scrollFraction: Double
        /// The width the page was laid out for: scrollY holds for the same width.
        public var viewportWidth: Int
        /// Words at the top of the view, for a browser that opens the page by itself
        /// (a text fragment, `#:~:text=`).
        public var textFragment: String

        public init(scrollX: Int = 0, scrollY: Int = 0, scrollFraction: Double = 0, viewportWidth: Int = 0, textFragment: String = "") {
            self.scrollX = scrollX
            self.scrollY = scrollY
            self.scrollFraction = scrollFraction
            self.viewportWidth = viewportWidth
            self.textFragment = textFragment
        }
    }

    /// Why a message was refused; the host answers with it and carries on.
    public struct Refusal: Error, Equatable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// Longest page address the host hands over: longer ones are rarely pages worth continuing
    /// and would crowd the 64 KiB activity.
    public static let maximumURLBytes = 4096
    public static let maximumTextFragmentBytes = 200
    static let maximumPeerBytes = 256
    static let maximumErrorBytes = 512
    static let maximumScroll = 100_000_000

    /// Decodes and checks one message.
    public static func decode(_ bytes: [UInt8]) throws(Refusal) -> ExtensionMessage {
        let wire: Wire
        do {
            wire = try JSONDecoder().decode(Wire.self, from: Data(bytes))
        } catch {
            throw Refusal("a message is a JSON object with a type, and fields of the right types")
        }
        switch wire.type {
        case "hello":
            let name = try wire.required(wire.browser, "browser")
            guard let browser = Browser(rawValue: name) else { throw Refusal("unknown browser \"\(name.prefix(32))\" (chromium, chrome or firefox)") }
            return .hello(browser: browser)
        case "page": return .page(window: try wire.windowID(), page: try wire.checkedPage(), focused: try wire.required(wire.focused, "focused"))
        case "clear": return .clear(window: try wire.windowID())
        case "focus": return .focus(window: try wire.windowID())
        case "close": return .close(window: try wire.windowID())
        case "saved":
            let position = PagePosition(
                scrollX: try wire.bounded(wire.scrollX, "scrollX", maximum: maximumScroll),
                scrollY: try wire.bounded(wire.scrollY, "scrollY", maximum: maximumScroll),
                scrollFraction: try wire.fraction(),
                viewportWidth: try wire.bounded(wire.viewportWidth, "viewportWidth", maximum: maximumScroll),
                textFragment: Self.cleaned(wire.textFragment ?? "", limit: maximumTextFragmentBytes)
            )
            return .saved(window: try wire.windowID(), request: try wire.bounded(wire.request, "request", maximum: Int(Int32.max)), page: try wire.checkedPage(), position: position)
        case "opened":
            guard let id = UUID(uuidString: try wire.required(wire.id, "id")) else { throw Refusal("opened: id is not a continuation id") }
            let window = try wire.optionalWindowID()
            let error = wire.error.map { Self.cleaned($0, limit: maximumErrorBytes) }
            guard (window == nil) != (error == nil) else { throw Refusal("opened: either a window or an error") }
            return .opened(id: id, window: window, error: error)
        case "offers": return .offers(request: try wire.bounded(wire.request, "request", maximum: Int(Int32.max)))
        case "continue":
            let peer = try wire.required(wire.peer, "peer")
            guard !peer.isEmpty, peer.utf8.count <= maximumPeerBytes else { throw Refusal("peer is 1 to \(maximumPeerBytes) bytes") }
            return .continue(request: try wire.bounded(wire.request, "request", maximum: Int(Int32.max)), peer: peer)
        case let other: throw Refusal("unknown message type \"\(other.prefix(32))\"")
        }
    }

    /// An http(s) address with a host, or the reason it is not one to hand over.
    public static func checkedURL(_ text: String) throws(Refusal) -> String {
        guard text.utf8.count <= maximumURLBytes else { throw Refusal("the page address is over \(maximumURLBytes) bytes") }
        // handoffd's own rule for webpageURL (what it would refuse is refused here, with a reason).
        guard URIRules.isWebURL(text) else { throw Refusal("only http and https pages, written as URIs, are handed over") }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let host = components.host, !host.isEmpty
        else { throw Refusal("only http and https pages are handed over") }
        return text
    }

    /// `text` without control characters, cut to `limit` bytes at a character's end.
    static func cleaned(_ text: String, limit: Int) -> String {
        var result = ""
        var bytes = 0
        for character in text where !character.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            bytes += character.utf8.count
            guard bytes <= limit else { break }
            result.append(character)
        }
        return result
    }

    /// A message as JSON has it: every field any message has, each checked by the message that uses it.
    private struct Wire: Decodable {
        var type: String
        var browser: String?
        var window: String?
        var url: String?
        var title: String?
        var focused: Bool?
        var scrollX: Int?
        var scrollY: Int?
        var scrollFraction: Double?
        var viewportWidth: Int?
        var textFragment: String?
        var id: String?
        var error: String?
        var request: Int?
        var peer: String?

        func required<T>(_ value: T?, _ name: String) throws(Refusal) -> T {
            guard let value else { throw Refusal("\(type.prefix(32)): \(name) is missing") }
            return value
        }

        func bounded(_ value: Int?, _ name: String, maximum: Int) throws(Refusal) -> Int {
            let value = try required(value, name)
            guard (0...maximum).contains(value) else { throw Refusal("\(name) is not from 0 to \(maximum)") }
            return value
        }

        func fraction() throws(Refusal) -> Double {
            let value = try required(scrollFraction, "scrollFraction")
            guard (0...1).contains(value) else { throw Refusal("scrollFraction is not from 0 to 1") }
            return value
        }

        /// Browser window ids are numbers; the extension sends them as decimal text.
        func windowID() throws(Refusal) -> String {
            try required(try optionalWindowID(), "window")
        }

        func optionalWindowID() throws(Refusal) -> String? {
            guard let window else { return nil }
            guard (1...12).contains(window.utf8.count), window.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
                throw Refusal("window is not a browser window id")
            }
            return window
        }

        func checkedPage() throws(Refusal) -> Page {
            let url = try ExtensionMessage.checkedURL(try required(self.url, "url"))
            // Page titles may be long; handoff's are at most 256 bytes (docs/activity-encoding.md).
            let title = ExtensionMessage.cleaned(try required(self.title, "title"), limit: ActivityLimits.maximumTitleBytes)
            return Page(url: url, title: title)
        }
    }
}
