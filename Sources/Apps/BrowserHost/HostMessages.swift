#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI

/// What the host tells the extension (browser/background.js reads these).
public enum HostMessage: Sendable, Equatable {
    /// Registered with handoffd: pages can be handed over and received.
    case ready
    /// handoffd is not running (or refused the registration): why; the host keeps trying.
    case offline(reason: String)
    /// Another device is about to take `window`'s page: answer with `saved` (where the user is),
    /// with the same `request` (an answer to a question given up on answers no other).
    case save(window: String, request: Int)
    /// Open this page from `device` in a new tab and scroll to `position`; answer with `opened`.
    case open(id: UUID, url: String, title: String, position: ExtensionMessage.PagePosition, device: String)
    case offers(request: Int, offers: [OfferItem])
    /// The popup's continue: done (`handler` took it), or the error to show.
    case continued(request: Int, handler: String?, error: String?)
    /// A message was refused: why (for the extension's console; nothing else changes).
    case refused(reason: String)

    /// One line of the popup.
    public struct OfferItem: Codable, Sendable, Equatable {
        public var peer: String
        public var device: String
        public var title: String
        public var type: String
        /// What would take it here, as a person names it.
        public var target: String

        public init(peer: String, device: String, title: String, type: String, target: String) {
            self.peer = peer
            self.device = device
            self.title = title
            self.type = type
            self.target = target
        }
    }

    /// The message as the extension reads it: JSON.
    public func encoded() -> [UInt8] {
        var wire = Wire(type: "")
        switch self {
        case .ready: wire.type = "ready"
        case .offline(let reason):
            wire.type = "offline"
            wire.reason = reason
        case .save(let window, let request):
            wire.type = "save"
            wire.window = window
            wire.request = request
        case .open(let id, let url, let title, let position, let device):
            wire.type = "open"
            wire.id = id.uuidString.lowercased()
            wire.url = url
            wire.title = title
            wire.device = device
            wire.scrollX = position.scrollX
            wire.scrollY = position.scrollY
            wire.scrollFraction = position.scrollFraction
            wire.viewportWidth = position.viewportWidth
            wire.textFragment = position.textFragment
        case .offers(let request, let offers):
            wire.type = "offers"
            wire.request = request
            wire.offers = offers
        case .continued(let request, let handler, let error):
            wire.type = "continued"
            wire.request = request
            wire.handler = handler
            wire.error = error
        case .refused(let reason):
            wire.type = "refused"
            wire.reason = reason
        }
        // Every field is a string, number or array of those: encoding cannot fail.
        return (try? Array(LocalAPIJSON.encoder().encode(wire))) ?? Array(#"{"type":"refused","reason":"unencodable"}"#.utf8)
    }

    private struct Wire: Encodable {
        var type: String
        var reason: String?
        var window: String?
        var id: String?
        var url: String?
        var title: String?
        var device: String?
        var scrollX: Int?
        var scrollY: Int?
        var scrollFraction: Double?
        var viewportWidth: Int?
        var textFragment: String?
        var request: Int?
        var offers: [OfferItem]?
        var handler: String?
        var error: String?
    }
}
