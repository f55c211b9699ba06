import Dispatch
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import HandoffAPI
import HandoffModel

/// The same calls for async code. The socket I/O is blocking, so it runs on its own dispatch
/// queue: blocking a thread of Swift's small cooperative pool could starve every other task in
/// the process (an app's UI work, or a daemon running in the same process, as in our tests).
extension HandoffClient {
    public func status() async throws(HandoffClientError) -> DaemonStatus {
        try await offloaded { () throws(HandoffClientError) in try self.status() }
    }

    public func settings() async throws(HandoffClientError) -> DeviceSettings {
        try await offloaded { () throws(HandoffClientError) in try self.settings() }
    }

    public func changeSettings(_ change: SettingsChange) async throws(HandoffClientError) -> DeviceSettings {
        try await offloaded { () throws(HandoffClientError) in try self.changeSettings(change) }
    }

    public func currentActivity() async throws(HandoffClientError) -> CurrentActivityResponse {
        try await offloaded { () throws(HandoffClientError) in try self.currentActivity() }
    }

    public func becomeCurrent(_ request: PutCurrentActivityRequest) async throws(HandoffClientError)
        -> CurrentActivityResponse
    {
        try await offloaded { () throws(HandoffClientError) in try self.becomeCurrent(request) }
    }

    public func resignCurrent() async throws(HandoffClientError) -> ResignResponse {
        try await offloaded { () throws(HandoffClientError) in try self.resignCurrent() }
    }

    public func events() async throws(HandoffClientError) -> EventSubscription {
        try await offloaded { () throws(HandoffClientError) in try self.events() }
    }
}

extension HandoffClient {
    public func account() async throws(HandoffClientError) -> AccountInfo {
        try await offloaded { () throws(HandoffClientError) in try self.account() }
    }

    public func createAccount(_ request: CreateAccountRequest) async throws(HandoffClientError) -> AccountInfo {
        try await offloaded { () throws(HandoffClientError) in try self.createAccount(request) }
    }

    public func joinAccount(_ request: JoinAccountRequest) async throws(HandoffClientError) -> AccountInfo {
        try await offloaded { () throws(HandoffClientError) in try self.joinAccount(request) }
    }

    public func invite() async throws(HandoffClientError) -> NDJSONSubscription<InviteUpdate> {
        try await offloaded { () throws(HandoffClientError) in try self.invite() }
    }

    public func sync(_ request: SyncRequest) async throws(HandoffClientError) -> SyncResponse {
        try await offloaded { () throws(HandoffClientError) in try self.sync(request) }
    }

    public func leaveAccount(_ request: LeaveRequest = LeaveRequest()) async throws(HandoffClientError) -> LeaveResponse {
        try await offloaded { () throws(HandoffClientError) in try self.leaveAccount(request) }
    }

    public func devices() async throws(HandoffClientError) -> DevicesResponse {
        try await offloaded { () throws(HandoffClientError) in try self.devices() }
    }

    public func renameDevice(_ request: RenameDeviceRequest) async throws(HandoffClientError) -> DeviceInfo {
        try await offloaded { () throws(HandoffClientError) in try self.renameDevice(request) }
    }

    public func removeDevice(_ id: String) async throws(HandoffClientError) -> RevokedDeviceInfo {
        try await offloaded { () throws(HandoffClientError) in try self.removeDevice(id) }
    }

    public func peers() async throws(HandoffClientError) -> PeersResponse {
        try await offloaded { () throws(HandoffClientError) in try self.peers() }
    }

    public func offers() async throws(HandoffClientError) -> OffersResponse {
        try await offloaded { () throws(HandoffClientError) in try self.offers() }
    }

    public func continueActivity(_ request: ContinueRequest) async throws(HandoffClientError) -> ContinueResponse {
        try await offloaded { () throws(HandoffClientError) in try self.continueActivity(request) }
    }
}

extension HandoffClient {
    public func attach(_ request: AttachRequest) async throws(HandoffClientError) -> NDJSONSubscription<AttachEvent> {
        try await offloaded { () throws(HandoffClientError) in try self.attach(request) }
    }

    public func openStream(continuationID: UUID) async throws(HandoffClientError) -> StreamPipe {
        try await offloaded { () throws(HandoffClientError) in try self.openStream(continuationID: continuationID) }
    }

    public func takeStream(_ id: UUID) async throws(HandoffClientError) -> StreamPipe {
        try await offloaded { () throws(HandoffClientError) in try self.takeStream(id) }
    }

    public func stream(_ id: UUID, waitForOutcome: Bool = false) async throws(HandoffClientError) -> StreamInfo {
        try await offloaded { () throws(HandoffClientError) in try self.stream(id, waitForOutcome: waitForOutcome) }
    }

    public func streams() async throws(HandoffClientError) -> StreamsResponse {
        try await offloaded { () throws(HandoffClientError) in try self.streams() }
    }

    public func openStream(continuationID: UUID, file: Int32, role: FileStreamRequest.Role) async throws(HandoffClientError) -> FileStream {
        try await offloaded { () throws(HandoffClientError) in try self.openStream(continuationID: continuationID, file: file, role: role) }
    }

    public func takeStream(_ id: UUID, file: Int32, role: FileStreamRequest.Role) async throws(HandoffClientError) -> FileStream {
        try await offloaded { () throws(HandoffClientError) in try self.takeStream(id, file: file, role: role) }
    }
}

extension FileStream {
    public func outcome() async throws(HandoffClientError) -> StreamInfo {
        try await offloaded { () throws(HandoffClientError) in try self.outcome() }
    }
}

extension StreamPipe {
    /// Everything until the other app finishes, waiting on a dispatch queue.
    public func readToEnd(limit: Int = 1 << 30) async throws(HandoffClientError) -> [UInt8] {
        try await offloaded { () throws(HandoffClientError) in
            var all: [UInt8] = []
            while all.count <= limit {
                let chunk = try self.read(maximum: 256 * 1024)
                if chunk.isEmpty { break }
                all += chunk
            }
            return all
        }
    }

    /// Up to `maximum` bytes as they arrive (empty at the end), waiting on a dispatch queue.
    public func read(maximum: Int) async throws(HandoffClientError) -> [UInt8] {
        try await offloaded { () throws(HandoffClientError) in try self.read(maximum: maximum) }
    }

    public func write(_ bytes: [UInt8]) async throws(HandoffClientError) {
        try await offloaded { () throws(HandoffClientError) in try self.write(bytes) }
    }
}

extension HandoffClient {
    public func registerApp(_ request: AppRegistration) async throws(HandoffClientError) -> NDJSONSubscription<AppEvent> {
        try await offloaded { () throws(HandoffClientError) in try self.registerApp(request) }
    }

    public func setWindowActivity(_ content: ActivityContent, window: String, registration: UUID) async throws(HandoffClientError) -> WindowResponse {
        try await offloaded { () throws(HandoffClientError) in try self.setWindowActivity(content, window: window, registration: registration) }
    }

    public func withdrawWindowActivity(window: String, registration: UUID) async throws(HandoffClientError) -> WindowResponse {
        try await offloaded { () throws(HandoffClientError) in try self.withdrawWindowActivity(window: window, registration: registration) }
    }

    public func focusWindow(_ window: String, registration: UUID) async throws(HandoffClientError) -> WindowResponse {
        try await offloaded { () throws(HandoffClientError) in try self.focusWindow(window, registration: registration) }
    }

    public func closeWindow(_ window: String, registration: UUID) async throws(HandoffClientError) -> WindowResponse {
        try await offloaded { () throws(HandoffClientError) in try self.closeWindow(window, registration: registration) }
    }

    public func saveRestoration(_ content: ActivityContent, window: String, registration: UUID) async throws(HandoffClientError) -> WindowResponse {
        try await offloaded { () throws(HandoffClientError) in try self.saveRestoration(content, window: window, registration: registration) }
    }

    public func removeRestoration(window: String, registration: UUID) async throws(HandoffClientError) -> WindowResponse {
        try await offloaded { () throws(HandoffClientError) in try self.removeRestoration(window: window, registration: registration) }
    }

    public func answerContinuation(_ continuationID: UUID, registration: UUID, _ answer: ContinuationAnswer) async throws(HandoffClientError)
        -> ContinuationAnswer
    {
        try await offloaded { () throws(HandoffClientError) in try self.answerContinuation(continuationID, registration: registration, answer) }
    }
}

extension NDJSONSubscription {
    /// The next element, waiting on a dispatch queue rather than a cooperative thread.
    public func next() async throws(HandoffClientError) -> Element? {
        try await offloaded { () throws(HandoffClientError) in try self.next() }
    }
}

func offloaded<T: Sendable>(_ body: @escaping @Sendable () throws(HandoffClientError) -> T) async throws(HandoffClientError) -> T {
    let result: Result<T, HandoffClientError> = await withCheckedContinuation { continuation in
        DispatchQueue(label: "handoff.client").async {
            continuation.resume(returning: Result { () throws(HandoffClientError) in try body() })
        }
    }
    return try result.get()
}
