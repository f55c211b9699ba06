#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffClient
import HandoffModel

/// What a running app that continues activities hears (the app delegate's
/// `willContinueUserActivityWithType`, `continueUserActivity` and
/// `didFailToContinueUserActivityWithType`). Give it to `HandoffApp.run(receiver:)`.
public protocol ContinuationReceiver: Sendable {
    /// The user asked, on this device, to continue an activity of `type` from `device`: show
    /// that it is coming. `continueUserActivity` or `didFailToContinue…` follows.
    func willContinueUserActivity(withType type: String, from device: String) async
    /// The same, naming the window that will take it when that is known already (a scene's
    /// `willContinueUserActivityWithType`): by default, the call above.
    func willContinueUserActivity(withType type: String, from device: String, window: String?) async
    /// Take the activity: show it in `continuation.window` (the window showing its target,
    /// when one does) or a window of your choice, and return that window's id. Throw to
    /// refuse; your error's description is what the user is told. Return within 4 seconds
    /// (`HandoffApp.continueDeadline`): for a call still running then, HandoffKit refuses the
    /// continuation, and the app receives none until the call returns.
    func continueUserActivity(_ continuation: IncomingContinuation) async throws -> String
    /// A continuation announced by `willContinue…` will not come: why.
    func didFailToContinueUserActivity(withType type: String, error: HandoffError) async
}

extension ContinuationReceiver {
    public func willContinueUserActivity(withType type: String, from device: String) async {}
    public func willContinueUserActivity(withType type: String, from device: String, window: String?) async {
        await willContinueUserActivity(withType: type, from: device)
    }
    public func didFailToContinueUserActivity(withType type: String, error: HandoffError) async {}
}

/// An activity from another device, handed to this app: the activity, where it came from, the
/// window it belongs in, and continuation streams back to the app it came from.
public struct IncomingContinuation: Sendable {
    public let id: UUID
    public let userActivity: UserActivity
    /// The other device's name.
    public let device: String
    /// The window of this app showing the activity's `targetContentIdentifier`, if one does.
    public let window: String?
    let client: HandoffClient

    init(id: UUID, activity: ActivityContent, device: String, window: String?, client: HandoffClient) {
        self.id = id
        userActivity = UserActivity(received: activity)
        self.device = device
        self.window = window
        self.client = client
    }

    /// Opens a byte stream to the app the activity came from (it must
    /// `supportsContinuationStreams`); several may be open at once.
    public func openStream() async throws(HandoffError) -> ContinuationStream {
        do {
            return ContinuationStream(try await client.pipe(.openStream(continuationID: id)), client: client)
        } catch {
            throw HandoffError(error)
        }
    }

    /// The continuation this process was started for, when handoffd started it (no app of its
    /// kind was running): read from the environment handoffd gave it. Nil when it was not.
    /// `maximumSize` bounds the activity file (an app expecting small activities may say less).
    public static func launched(
        environment: [String: String] = ProcessInfo.processInfo.environment, maximumSize: Int = 4 * 1024 * 1024
    ) throws(HandoffError) -> IncomingContinuation? {
        guard let file = environment[HandlerEnvironment.activityFile], let idText = environment[HandlerEnvironment.continuationID] else { return nil }
        guard let id = UUID(uuidString: idText) else { throw HandoffError(.versionMismatch, "\(HandlerEnvironment.continuationID) is not a continuation id") }
        let activity: Activity
        do {
            let bytes = try Data(contentsOf: URL(fileURLWithPath: file))
            guard bytes.count <= maximumSize else { throw HandoffError(.invalidActivity(.payloadTooLarge), "the activity file is too large") }
            activity = try LocalAPIJSON.decoder().decode(Activity.self, from: bytes)
        } catch let error as HandoffError {
            throw error
        } catch {
            throw HandoffError(.versionMismatch, "cannot read the activity handoffd gave (\(file)): \(error)")
        }
        let socket = environment[HandlerEnvironment.socket] ?? HandoffPaths.defaultSocketPath(environment: environment)
        return IncomingContinuation(
            id: id, activity: activity.content, device: environment[HandlerEnvironment.peerName] ?? "", window: nil,
            client: HandoffClient(socketPath: socket)
        )
    }
}
