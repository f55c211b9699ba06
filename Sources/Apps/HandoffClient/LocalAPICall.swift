#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel

/// One local-API request (docs/local-api.md) and, in its type, what the answer decodes to. The
/// method comes from `LocalAPIEndpoints`, as the daemon's router reads it, and so does the path
/// of an endpoint that has a single path. Every request is written once, below; `HandoffClient`
/// sends any of them, blocking (`send`) or from async code (`await send`).
public struct LocalAPICall<Answer: Decodable & Sendable>: Sendable {
    let request: LocalAPIRequest

    init(
        _ endpoint: LocalAPIEndpoints.Endpoint, _ path: String? = nil, body: (any Encodable & Sendable)? = nil, bodyJSON: [UInt8]? = nil,
        patience: Int = 0
    ) {
        request = LocalAPIRequest(endpoint: endpoint, path: path, body: body, bodyJSON: bodyJSON, patience: patience)
    }

    init(_ request: LocalAPIRequest) {
        self.request = request
    }
}

/// A `LocalAPICall` without its answer's type, for a caller that takes the answer undecoded
/// (`HandoffClient.answerBody(of:)`). Not generic on purpose: the Swift runtime builds a generic
/// type's metadata on first use, looking up its `Decodable` conformance through every
/// conformance in the binary — a measurable share of `handoffctl continue --json`
/// (docs/benchmarks.md, "handoffctl's share of continue").
public struct LocalAPIRequest: Sendable {
    let endpoint: LocalAPIEndpoints.Endpoint
    /// The path, when the endpoint has several.
    let path: String?
    let body: (any Encodable & Sendable)?
    /// The body already written as JSON, when its type writes itself (`CompactJSON`).
    let bodyJSON: [UInt8]?
    /// Seconds the answer may take at least, whatever the client's own timeout: for requests
    /// that reach another device.
    let patience: Int

    /// Fetches a peer's current activity (the one this device saw).
    public static func continueActivity(_ request: ContinueRequest) -> Self {
        // Only the JSON: an existential of the request would have the runtime look up its
        // conformance for nothing.
        Self(endpoint: .continue, path: nil, body: nil, bodyJSON: request.compactJSON, patience: 0)
    }
}

/// A request answered with a stream of newline-delimited JSON (`Element` per line), open until
/// one side closes it.
public struct LocalAPISubscription<Element: Decodable & Sendable>: Sendable {
    let endpoint: LocalAPIEndpoints.Endpoint
    let body: (any Encodable & Sendable)?

    init(_ endpoint: LocalAPIEndpoints.Endpoint, body: (any Encodable & Sendable)? = nil) {
        self.endpoint = endpoint
        self.body = body
    }
}

/// A continuation stream to open (the resuming side) or take (the originating side): as a byte
/// pipe on the API socket (`HandoffClient.pipe`) or spliced to a file (`fileStream`).
public struct LocalAPIStream: Sendable {
    let endpoint: LocalAPIEndpoints.Endpoint
    let path: String

    /// (Resuming) Opens a continuation stream to the app the continuation came from.
    public static func openStream(continuationID: UUID) -> Self {
        Self(endpoint: .openContinuationStream, path: LocalAPIRoute.continuationStreams(continuationID))
    }

    /// Pastes form `type` of another device's copy `copyID` (docs/clipboard.md).
    public static func pasteClipboard(_ copyID: UUID, type: String) -> Self {
        Self(endpoint: .pasteClipboard, path: LocalAPIRoute.clipboardPaste(copyID, type: type))
    }

    /// (Originating) Takes a stream announced by `streamRequested`.
    public static func takeStream(_ id: UUID) -> Self {
        Self(endpoint: .takeStream, path: LocalAPIRoute.stream(id))
    }
}

// MARK: The current activity and the device

extension LocalAPICall where Answer == ClipboardState {
    /// The newest copy heard of, and this device's own.
    public static var clipboard: Self { Self(.getClipboard) }

    /// Something was copied here (no items: nothing carried is on the clipboard any more).
    public static func announceClipboard(_ announcement: ClipboardAnnouncement) -> Self { Self(.announceClipboard, body: announcement) }
}

extension LocalAPISubscription where Element == ClipboardHolderEvent {
    /// Holds this device's copies (the desktop agent): the first event names the holder to
    /// announce copies with, then each paste another device asks for arrives. Closing it
    /// withdraws the copy it held.
    public static var holdClipboard: Self { Self(.holdClipboard) }
}

extension LocalAPICall where Answer == DaemonStatus {
    public static var status: Self { Self(.status) }

    /// The status with what apps claim of web domains (for `doctor`: it reads every app's
    /// `.desktop` file).
    public static var statusWithWebDomains: Self { Self(.status, LocalAPIRoute.status + "?webDomains=1") }
}

extension LocalAPICall where Answer == DeviceSettings {
    /// The device's settings (the handoff switch).
    public static var settings: Self { Self(.getSettings) }

    /// Changes the device's settings; answers them as they now are.
    public static func changeSettings(_ change: SettingsChange) -> Self { Self(.putSettings, body: change) }
}

extension LocalAPICall where Answer == CurrentActivityResponse {
    public static var currentActivity: Self { Self(.getCurrent) }

    public static func becomeCurrent(_ request: PutCurrentActivityRequest) -> Self { Self(.putCurrent, body: request) }

    /// A file becomes the current activity, as a document: handoffd describes it and serves it.
    public static func becomeCurrent(document request: DocumentRequest) -> Self { Self(.putDocument, body: request) }
}

extension LocalAPICall where Answer == HistoryResponse {
    /// The recent activities this device saw, newest first.
    public static var history: Self { Self(.history) }

    /// The history's entries of one content (its `persistentIdentifier`), newest first.
    public static func history(persistentIdentifier: String) -> Self {
        Self(.history, LocalAPIRoute.history + "?persistentIdentifier=" + QueryText.encode(persistentIdentifier))
    }
}

extension LocalAPICall where Answer == DeleteSavedResponse {
    /// Deletes saved activities on every device of the account (they hear it now, or when they
    /// next talk to one that knows).
    public static func deleteSaved(_ request: DeleteSavedRequest) -> Self { Self(.deleteSaved, body: request) }
}

extension LocalAPICall where Answer == ResignResponse {
    public static var resignCurrent: Self { Self(.deleteCurrent) }

    /// Withdraws the current activity only if it is still `id`.
    public static func resignCurrent(ifID id: UUID) -> Self { Self(.deleteCurrent, LocalAPIRoute.currentActivity + "?id=" + id.lowercasedString) }
}

extension LocalAPISubscription where Element == LocalEvent {
    /// The daemon's events. Subscribing returns once the daemon has accepted the subscription, so
    /// nothing that happens after is missed.
    public static var events: Self { Self(.events) }
}

// MARK: Account and devices

extension LocalAPICall where Answer == AccountInfo {
    public static var account: Self { Self(.getAccount) }

    public static func createAccount(_ request: CreateAccountRequest) -> Self { Self(.createAccount, body: request) }

    /// Joining talks to another device; it may take a while.
    public static func joinAccount(_ request: JoinAccountRequest) -> Self { Self(.joinAccount, body: request, patience: 90) }
}

extension LocalAPISubscription where Element == InviteUpdate {
    /// Creates an invite: the first update carries the code; then one says who joined, or that it
    /// expired. Closing the subscription cancels the invite.
    public static var invite: Self { Self(.invite) }
}

extension LocalAPICall where Answer == SyncResponse {
    public static func sync(_ request: SyncRequest) -> Self { Self(.sync, body: request, patience: 60) }
}

extension LocalAPICall where Answer == LeaveResponse {
    /// Forgets the account on this device, after telling the devices it has sessions with.
    public static func leaveAccount(_ request: LeaveRequest = LeaveRequest()) -> Self { Self(.leave, body: request, patience: 15) }
}

extension LocalAPICall where Answer == RecoveryCodeResponse {
    /// A new recovery code (on the device holding the account key): its derivation takes a moment.
    public static var makeRecoveryCode: Self { Self(.recoveryCode, patience: 30) }
}

extension LocalAPICall where Answer == AccountInfo {
    /// The account key restored on this device from a recovery code.
    public static func recover(_ request: RecoverRequest) -> Self { Self(.recover, body: request, patience: 30) }

    /// Takes the account key the key holder offered this device: it talks to that device.
    public static var acceptKey: Self { Self(.acceptKey, patience: 30) }

    /// A new account key, on the device holding it.
    public static var rotateKey: Self { Self(.rotateKey, patience: 15) }
}

extension LocalAPISubscription where Element == KeyTransferUpdate {
    /// Offers the account key to another device: the first update says to which and until when,
    /// then one that it holds the key, or that the offer expired. Closing it withdraws the offer.
    public static func transferKey(_ request: KeyTransferRequest) -> Self { Self(.transferKey, body: request) }
}

extension LocalAPICall where Answer == DevicesResponse {
    public static var devices: Self { Self(.devices) }
}

extension LocalAPICall where Answer == DeviceInfo {
    /// Renames a device in the account (this one, unless this device holds the account key).
    public static func renameDevice(_ request: RenameDeviceRequest) -> Self { Self(.renameDevice, body: request, patience: 15) }
}

extension LocalAPICall where Answer == RevokedDeviceInfo {
    /// Removes a device (id, unique id prefix, or exact name) from the account.
    public static func removeDevice(_ id: String) -> Self { Self(.removeDevice, LocalAPIRoute.device(id)) }
}

// MARK: Other devices

extension LocalAPICall where Answer == PeersResponse {
    public static var peers: Self { Self(.peers) }
}

extension LocalAPICall where Answer == OffersResponse {
    /// What this device can continue from the others now, and with what.
    public static var offers: Self { Self(.offers) }
}

extension LocalAPICall where Answer == ContinueResponse {
    /// Fetches a peer's current activity (the one this device saw).
    public static func continueActivity(_ request: ContinueRequest) -> Self { Self(.continueActivity(request)) }
}

extension LocalAPICall where Answer == LinkResponse {
    /// A `handoff:` link to an activity (docs/apps.md, "Links").
    public static func link(_ request: LinkRequest) -> Self { Self(.makeLink, body: request) }
}

extension LocalAPICall where Answer == OpenLinkResponse {
    /// Reopens what a link names: from its device, else the history, else its web page.
    public static func openLink(_ request: OpenLinkRequest) -> Self { Self(.openLink, body: request) }
}

// MARK: Originating apps and continuation streams

extension LocalAPISubscription where Element == AttachEvent {
    /// Stays attached to the current activity (`request.activityID`): `willSave`, `wasContinued`
    /// and, with `serveStreams`, `streamRequested` arrive as they happen; the subscription ends
    /// when the activity is no longer current. Closing it detaches.
    public static func attach(_ request: AttachRequest) -> Self { Self(.attach, body: request) }
}

extension LocalAPICall where Answer == StreamInfo {
    /// A stream's state and byte counts; with `waitForOutcome`, once it completed or failed (or
    /// after 10 seconds, whatever it is then).
    public static func stream(_ id: UUID, waitForOutcome: Bool = false) -> Self {
        Self(.getStream, LocalAPIRoute.stream(id) + (waitForOutcome ? "?wait=1" : ""), patience: 15)
    }
}

extension LocalAPICall where Answer == StreamsResponse {
    public static var streams: Self { Self(.listStreams) }
}

// MARK: Apps and windows (docs/apps.md)

extension LocalAPISubscription where Element == AppEvent {
    /// Registers a running app: the first event names its registration and hands back its
    /// windows' restoration activities. Closing the subscription is the app quitting.
    public static func registerApp(_ request: AppRegistration) -> Self { Self(.registerApp, body: request) }
}

extension LocalAPICall where Answer == WindowResponse {
    /// Sets a window's activity (the device's current one while the window has focus).
    public static func setWindowActivity(_ content: ActivityContent, window: String, registration: UUID) -> Self {
        Self(.putWindow, LocalAPIRoute.window(window, of: registration, .activity), body: PutCurrentActivityRequest(content: content))
    }

    public static func withdrawWindowActivity(window: String, registration: UUID) -> Self {
        Self(.deleteWindow, LocalAPIRoute.window(window, of: registration, .activity))
    }

    /// The user focused the window.
    public static func focusWindow(_ window: String, registration: UUID) -> Self {
        Self(.postWindow, LocalAPIRoute.window(window, of: registration, .focus))
    }

    /// The user closed the window: its activity goes, and its restoration activity — unless
    /// `keepingRestoration` (the one the app saved for it stays).
    public static func closeWindow(_ window: String, registration: UUID, keepingRestoration: Bool = false) -> Self {
        Self(.deleteWindow, LocalAPIRoute.window(window, of: registration) + (keepingRestoration ? "?keepRestoration=1" : ""))
    }

    /// What the window declares it takes (nil: anything, after the windows that declared).
    public static func setActivationConditions(_ conditions: ActivationConditions?, window: String, registration: UUID) -> Self {
        guard let conditions else { return Self(.deleteWindow, LocalAPIRoute.window(window, of: registration, .conditions)) }
        return Self(.putWindow, LocalAPIRoute.window(window, of: registration, .conditions), body: conditions)
    }

    /// Keeps the window's state-restoration activity for the app's next registration.
    public static func saveRestoration(_ content: ActivityContent, window: String, registration: UUID) -> Self {
        Self(.putWindow, LocalAPIRoute.window(window, of: registration, .restoration), body: PutCurrentActivityRequest(content: content))
    }

    public static func removeRestoration(window: String, registration: UUID) -> Self {
        Self(.deleteWindow, LocalAPIRoute.window(window, of: registration, .restoration))
    }
}

extension LocalAPICall where Answer == ContinuationAnswer {
    /// Answers a `continue` event: the app took the activity (in `window`), or not.
    public static func answerContinuation(_ continuationID: UUID, registration: UUID, _ answer: ContinuationAnswer) -> Self {
        Self(.answerContinuation, LocalAPIRoute.continuationAnswer(continuationID, of: registration), body: answer)
    }
}
