#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffModel
import Synchronization

/// userInfo's typed values, a window's activation conditions and what opening a link answers,
/// for apps that import only HandoffKit.
@_exported import enum HandoffModel.ActivityValue
@_exported import struct HandoffModel.ActivationConditions
@_exported import struct HandoffAPI.OpenLinkResponse

/// What the user is doing in one window of the app, which another device of theirs can continue:
/// `NSUserActivity` for Linux (docs/handoffkit.md has the side-by-side table).
///
/// An activity belongs to a window of a `HandoffApp`. `becomeCurrent()` makes it that window's
/// activity and the window the focused one, so it is what the other devices see; later changes to
/// its properties reach them at once, or — while `needsSave` is set — when one of them is about
/// to receive it (`UserActivityDelegate.userActivityWillSave`). A received activity (in
/// `IncomingContinuation`) has no app: it is a value to read.
public final class UserActivity: Sendable {
    public let activityType: String
    /// The type of a web page handed to the app that claims its site (`HandoffApp`'s
    /// `webDomains`): Apple's `NSUserActivityTypeBrowsingWeb`. Its `webpageURL` is the page.
    public static let browsingWebType = ActivityContent.browsingWebType
    /// The window this activity describes (the app's own name for it).
    public let window: String
    let app: HandoffApp?
    private let state: Mutex<State>

    struct State {
        var content: ActivityContent
        var keywords: Set<String> = []
        var isEligibleForHandoff = true
        var isValid = true
        weak var delegate: (any UserActivityDelegate)?
    }

    /// An activity of `activityType` (reverse-DNS, like `org.example.notes.edit`) for `window`
    /// of `app`.
    public init(activityType: String, app: HandoffApp, window: String = HandoffApp.mainWindow) {
        self.activityType = activityType
        self.window = window
        self.app = app
        state = Mutex(State(content: ActivityContent(type: activityType)))
    }

    /// A new activity for `window` of `app` with everything `other` says: to show a received
    /// or restored activity in a window of this app, and hand it on from there.
    public convenience init(copying other: UserActivity, app: HandoffApp, window: String = HandoffApp.mainWindow) {
        self.init(activityType: other.activityType, app: app, window: window)
        let content = other.content
        state.withLock { $0.content = content }
    }

    /// A received activity, to read.
    init(received content: ActivityContent) {
        activityType = content.type
        window = ""
        app = nil
        state = Mutex(State(content: content))
    }

    // MARK: What it says

    public var title: String {
        get { state.withLock { $0.content.title } }
        set { change { $0.content.title = newValue } }
    }

    /// Typed values: strings, numbers, booleans, bytes, dates, URLs, UUIDs, arrays, dictionaries.
    public var userInfo: [String: ActivityValue] {
        get { state.withLock { $0.content.userInfo } }
        set { change { $0.content.userInfo = newValue } }
    }

    /// Keys `userInfo` must have for the activity to be valid.
    public var requiredUserInfoKeys: Set<String> {
        get { state.withLock { Set($0.content.requiredUserInfoKeys) } }
        set { change { $0.content.requiredUserInfoKeys = newValue.sorted(by: ActivityContent.byteOrder) } }
    }

    /// http or https: where a device without an app for the type continues, in its browser.
    public var webpageURL: URL? {
        get { state.withLock { $0.content.webpageURL.flatMap(URL.init(string:)) } }
        set { change { $0.content.webpageURL = newValue?.absoluteString } }
    }

    /// `webpageURL` as written, for an app that has the address as text (the browser's host):
    /// URL percent-encodes what it does not take as it is (a `[` in a fragment), and a page's
    /// address must reach the other device as the browser showed it.
    package var webpageAddress: String? {
        get { state.withLock { $0.content.webpageURL } }
        set { change { $0.content.webpageURL = newValue } }
    }

    public var expirationDate: Date? {
        get { state.withLock { $0.content.expirationDate.map { Date(timeIntervalSince1970: Double($0.microsecondsSinceEpoch) / 1_000_000) } } }
        set { change { $0.content.expirationDate = newValue.map { Timestamp(microsecondsSinceEpoch: Int64($0.timeIntervalSince1970 * 1_000_000)) } } }
    }

    /// What the window shows: a continuation goes to the window of the receiving app that shows
    /// the same.
    public var targetContentIdentifier: String? {
        get { state.withLock { $0.content.targetContentIdentifier } }
        set { change { $0.content.targetContentIdentifier = newValue } }
    }

    public var persistentIdentifier: String? {
        get { state.withLock { $0.content.persistentIdentifier } }
        set { change { $0.content.persistentIdentifier = newValue } }
    }

    /// For the app's own search; not sent to other devices.
    public var keywords: Set<String> {
        get { state.withLock { $0.keywords } }
        set { state.withLock { $0.keywords = newValue } }
    }

    /// The activity's state is stale: ask the app for it (`userActivityWillSave`) before
    /// another device receives it, rather than sending each change. Cleared once saved.
    public var needsSave: Bool {
        get { state.withLock { $0.content.needsSave } }
        set { change { $0.content.needsSave = newValue } }
    }

    /// The receiving app may open byte streams to this one (`userActivity(_:didReceive:)`).
    public var supportsContinuationStreams: Bool {
        get { state.withLock { $0.content.supportsContinuationStreams } }
        set { change { $0.content.supportsContinuationStreams = newValue } }
    }

    /// When false, `becomeCurrent()` shows other devices nothing for this window.
    public var isEligibleForHandoff: Bool {
        get { state.withLock { $0.isEligibleForHandoff } }
        set { change { $0.isEligibleForHandoff = newValue } }
    }

    /// Hears willSave, wasContinued and continuation streams. Held weakly, as on Apple's.
    public var delegate: (any UserActivityDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    public var isValid: Bool { state.withLock { $0.isValid } }

    public func addUserInfoEntries(_ entries: [String: ActivityValue]) {
        change { $0.content.userInfo.merge(entries) { _, new in new } }
    }

    /// What handoffd is given for this activity, and whether it may be shown at all.
    var content: ActivityContent { state.withLock { $0.content } }
    var eligible: Bool { state.withLock { $0.isEligibleForHandoff && $0.isValid } }

    private func change(_ body: (inout State) -> Void) {
        state.withLock { body(&$0) }
        app?.activityChanged(window: window)
    }

    // MARK: Current

    /// Makes this the window's activity and the window the focused one: the device's current
    /// activity, which the user's other devices see. Throws what handoffd said is wrong with the
    /// activity; when handoffd is not running it throws `handoffdNotRunning`, and HandoffKit
    /// makes the activity current once handoffd is back. Returns handoffd's advice, if any (an
    /// activity over 3 KiB: keep it small, move bulk data into a continuation stream).
    @discardableResult
    public func becomeCurrent() async throws(HandoffError) -> [String] {
        guard let app else { throw HandoffError(.invalidated, "a received activity cannot become current; make a new UserActivity") }
        guard isValid else { throw HandoffError(.invalidated, "this activity was invalidated; make a new UserActivity") }
        return try await app.becomeCurrent(self)
    }

    /// This window no longer has an activity: other devices stop seeing it (when it was current).
    public func resignCurrent() async throws(HandoffError) {
        guard let app else { return }
        try await app.resign(self)
    }

    /// Resigns, for good: the activity cannot become current again.
    public func invalidate() async {
        state.withLock { $0.isValid = false }
        try? await resignCurrent()
    }

    /// The window's activity was saved (willSave answered): clear `needsSave` without
    /// counting as a change.
    func saved() -> ActivityContent {
        state.withLock {
            $0.content.needsSave = false
            return $0.content
        }
    }
}

/// What an originating activity hears, as `NSUserActivityDelegate` does. Every method has a
/// default that does nothing.
public protocol UserActivityDelegate: AnyObject, Sendable {
    /// Another device is about to receive the activity and `needsSave` is set: bring its
    /// properties up to date now (within a second); they are sent when this returns.
    func userActivityWillSave(_ userActivity: UserActivity) async
    /// Another device continued it.
    func userActivityWasContinued(_ userActivity: UserActivity) async
    /// The app that continued it opened a byte stream to this one
    /// (`supportsContinuationStreams`). The stream is the delegate's to read, write and close.
    func userActivity(_ userActivity: UserActivity, didReceive stream: ContinuationStream) async
    /// A change made after `becomeCurrent()` was refused by handoffd (the activity became
    /// invalid, or too large): other devices still see it as it was.
    func userActivity(_ userActivity: UserActivity, couldNotUpdate error: HandoffError) async
}

extension UserActivityDelegate {
    public func userActivityWillSave(_ userActivity: UserActivity) async {}
    public func userActivityWasContinued(_ userActivity: UserActivity) async {}
    public func userActivity(_ userActivity: UserActivity, didReceive stream: ContinuationStream) async { stream.close() }
    public func userActivity(_ userActivity: UserActivity, couldNotUpdate error: HandoffError) async {}
}
