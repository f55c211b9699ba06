import Foundation
import HandoffKit
import HandoffModel

/// A web page as an activity, both ways (docs/browser.md, "The activity"): its type, the page's
/// address as `webpageURL` (so a device without the extension still opens it), its title, and
/// where the user is on it in `userInfo`.
public enum PageActivity {
    public static let type = "org.handoff.browser.page"

    enum Key {
        static let scrollX = "scrollX"
        static let scrollY = "scrollY"
        static let scrollFraction = "scrollFraction"
        static let viewportWidth = "viewportWidth"
        static let textFragment = "textFragment"
    }

    /// `content` showing `page`, at `position` when known (the position of another page is dropped).
    public static func content(
        _ page: ExtensionMessage.Page, position: ExtensionMessage.PagePosition?, keeping previous: ActivityContent? = nil
    ) -> ActivityContent {
        var content = ActivityContent(type: type, title: page.title.isEmpty ? hostName(page.url) : page.title, webpageURL: page.url)
        content.targetContentIdentifier = page.url
        if let position {
            content.userInfo = [
                Key.scrollX: .int(Int64(position.scrollX)),
                Key.scrollY: .int(Int64(position.scrollY)),
                Key.scrollFraction: .double(position.scrollFraction),
                Key.viewportWidth: .int(Int64(position.viewportWidth)),
            ]
            if !position.textFragment.isEmpty { content.userInfo[Key.textFragment] = .string(position.textFragment) }
        } else if let previous, previous.webpageURL == page.url {
            content.userInfo = previous.userInfo
        }
        return content
    }

    /// What `activity` says that a page needs: its type, title, position and address.
    package static func content(of activity: UserActivity) -> ActivityContent {
        var content = ActivityContent(type: activity.activityType, title: activity.title, userInfo: activity.userInfo)
        content.webpageURL = activity.webpageAddress
        return content
    }

    /// Where to open a received page: its address and position, or nil when it has no http(s) page.
    public static func opening(_ content: ActivityContent) -> (url: String, title: String, position: ExtensionMessage.PagePosition)? {
        guard let text = content.webpageURL, let url = try? ExtensionMessage.checkedURL(text) else { return nil }
        func int(_ key: String) -> Int {
            guard case .int(let value) = content.userInfo[key] else { return 0 }
            return Int(clamping: max(0, min(value, Int64(ExtensionMessage.maximumScroll))))
        }
        var fraction = 0.0
        if case .double(let value) = content.userInfo[Key.scrollFraction], value.isFinite { fraction = max(0, min(value, 1)) }
        var fragment = ""
        if case .string(let value) = content.userInfo[Key.textFragment] { fragment = ExtensionMessage.cleaned(value, limit: ExtensionMessage.maximumTextFragmentBytes) }
        let position = ExtensionMessage.PagePosition(
            scrollX: int(Key.scrollX), scrollY: int(Key.scrollY), scrollFraction: fraction, viewportWidth: int(Key.viewportWidth), textFragment: fragment
        )
        return (url, content.title, position)
    }

    /// The address to start a browser with: the page, scrolled by the browser itself to the
    /// words that were at the top (a text fragment, `#:~:text=`), which Chromium and Firefox follow.
    public static func launchURL(_ url: String, position: ExtensionMessage.PagePosition) -> String {
        guard !position.textFragment.isEmpty, position.scrollY > 0 else { return url }
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "_.!~*'()")
        guard let words = position.textFragment.addingPercentEncoding(withAllowedCharacters: allowed) else { return url }
        let separator = url.contains("#") ? ":~:" : "#:~:"
        return url + separator + "text=" + words
    }

    private static func hostName(_ url: String) -> String {
        URLComponents(string: url)?.host ?? url
    }
}
