/// Every endpoint of the local API, in one table (docs/local-api.md): each of the daemon's features
/// registers the handlers of its `Endpoint`s (`LocalRoutes`), and the `Allow` header of a 405
/// comes from the same rows.
public enum LocalAPIEndpoints {
    public enum Endpoint: Sendable, CaseIterable {
        case status
        case getSettings, putSettings
        case getCurrent, putCurrent, deleteCurrent, attach
        case putDocument
        case history, deleteSaved
        case events
        case getAccount, createAccount, joinAccount, invite, sync, leave, recoveryCode, recover, transferKey, acceptKey, rotateKey
        case devices, renameDevice, removeDevice
        case peers, offers
        case `continue`
        case makeLink, openLink
        case listStreams, getStream, takeStream
        case openContinuationStream
        case getClipboard, announceClipboard, holdClipboard, pasteClipboard
        case registerApp, putWindow, postWindow, deleteWindow, answerContinuation
    }

    /// A row: an exact path, or every path under a prefix (`/v1/streams/ID`).
    public struct Route: Sendable {
        public enum Path: Sendable {
            case exact(String)
            case under(String)
            /// A window of an app's registration, or one part of it
            /// (`/v1/apps/REGISTRATION/windows/WINDOW[/PART]`).
            case window(LocalAPIRoute.WindowPart)
            /// An app's answer to a continuation (`/v1/apps/REGISTRATION/continuations/ID`).
            case continuationAnswer

            func matches(_ path: Substring) -> Bool {
                switch self {
                case .exact(let p): path == p
                case .under(let p): path.hasPrefix(p + "/")
                case .window(let part): LocalAPIRoute.parseWindow(path)?.part == part
                case .continuationAnswer: LocalAPIRoute.parseContinuationAnswer(path) != nil
                }
            }
        }

        public let method: String
        public let path: Path
        public let endpoint: Endpoint
    }

    public static let routes: [Route] = [
        Route(method: "GET", path: .exact(LocalAPIRoute.status), endpoint: .status),
        Route(method: "GET", path: .exact(LocalAPIRoute.settings), endpoint: .getSettings),
        Route(method: "PUT", path: .exact(LocalAPIRoute.settings), endpoint: .putSettings),
        Route(method: "GET", path: .exact(LocalAPIRoute.currentActivity), endpoint: .getCurrent),
        Route(method: "PUT", path: .exact(LocalAPIRoute.currentActivity), endpoint: .putCurrent),
        Route(method: "DELETE", path: .exact(LocalAPIRoute.currentActivity), endpoint: .deleteCurrent),
        Route(method: "PUT", path: .exact(LocalAPIRoute.currentDocument), endpoint: .putDocument),
        Route(method: "POST", path: .exact(LocalAPIRoute.attach), endpoint: .attach),
        Route(method: "GET", path: .exact(LocalAPIRoute.events), endpoint: .events),
        Route(method: "GET", path: .exact(LocalAPIRoute.history), endpoint: .history),
        Route(method: "POST", path: .exact(LocalAPIRoute.historyDelete), endpoint: .deleteSaved),
        Route(method: "GET", path: .exact(LocalAPIRoute.account), endpoint: .getAccount),
        Route(method: "POST", path: .exact(LocalAPIRoute.account), endpoint: .createAccount),
        Route(method: "POST", path: .exact(LocalAPIRoute.accountJoin), endpoint: .joinAccount),
        Route(method: "POST", path: .exact(LocalAPIRoute.accountInvites), endpoint: .invite),
        Route(method: "POST", path: .exact(LocalAPIRoute.accountSync), endpoint: .sync),
        Route(method: "POST", path: .exact(LocalAPIRoute.accountLeave), endpoint: .leave),
        Route(method: "POST", path: .exact(LocalAPIRoute.accountRecoveryCode), endpoint: .recoveryCode),
        Route(method: "POST", path: .exact(LocalAPIRoute.accountRecover), endpoint: .recover),
        Route(method: "POST", path: .exact(LocalAPIRoute.accountTransferKey), endpoint: .transferKey),
        Route(method: "POST", path: .exact(LocalAPIRoute.accountAcceptKey), endpoint: .acceptKey),
        Route(method: "POST", path: .exact(LocalAPIRoute.accountRotateKey), endpoint: .rotateKey),
        Route(method: "GET", path: .exact(LocalAPIRoute.devices), endpoint: .devices),
        Route(method: "POST", path: .exact(LocalAPIRoute.devicesRename), endpoint: .renameDevice),
        Route(method: "DELETE", path: .under(LocalAPIRoute.devices), endpoint: .removeDevice),
        Route(method: "GET", path: .exact(LocalAPIRoute.peers), endpoint: .peers),
        Route(method: "GET", path: .exact(LocalAPIRoute.offers), endpoint: .offers),
        Route(method: "POST", path: .exact(LocalAPIRoute.continue), endpoint: .continue),
        Route(method: "POST", path: .exact(LocalAPIRoute.links), endpoint: .makeLink),
        Route(method: "POST", path: .exact(LocalAPIRoute.openLink), endpoint: .openLink),
        Route(method: "GET", path: .exact(LocalAPIRoute.streams), endpoint: .listStreams),
        Route(method: "GET", path: .under(LocalAPIRoute.streams), endpoint: .getStream),
        Route(method: "POST", path: .under(LocalAPIRoute.streams), endpoint: .takeStream),
        Route(method: "POST", path: .under(LocalAPIRoute.continuations), endpoint: .openContinuationStream),
        Route(method: "GET", path: .exact(LocalAPIRoute.clipboard), endpoint: .getClipboard),
        Route(method: "POST", path: .exact(LocalAPIRoute.clipboard), endpoint: .announceClipboard),
        Route(method: "POST", path: .exact(LocalAPIRoute.clipboardHolder), endpoint: .holdClipboard),
        Route(method: "POST", path: .under(LocalAPIRoute.clipboard), endpoint: .pasteClipboard),
        Route(method: "POST", path: .exact(LocalAPIRoute.apps), endpoint: .registerApp),
        Route(method: "DELETE", path: .window(.window), endpoint: .deleteWindow),
        Route(method: "PUT", path: .window(.activity), endpoint: .putWindow),
        Route(method: "DELETE", path: .window(.activity), endpoint: .deleteWindow),
        Route(method: "POST", path: .window(.focus), endpoint: .postWindow),
        Route(method: "PUT", path: .window(.restoration), endpoint: .putWindow),
        Route(method: "DELETE", path: .window(.restoration), endpoint: .deleteWindow),
        Route(method: "PUT", path: .window(.conditions), endpoint: .putWindow),
        Route(method: "DELETE", path: .window(.conditions), endpoint: .deleteWindow),
        Route(method: "POST", path: .continuationAnswer, endpoint: .answerContinuation),
    ]

    /// The method of `endpoint`: every row of one endpoint has the same (a test checks).
    public static func method(of endpoint: Endpoint) -> String {
        routes.first { $0.endpoint == endpoint }?.method ?? "GET"
    }

    /// The path of an endpoint that has exactly one; nil for those whose path names something
    /// (a device, a stream, a window): the caller makes it with `LocalAPIRoute`.
    public static func path(of endpoint: Endpoint) -> String? {
        guard let row = routes.first(where: { $0.endpoint == endpoint }), case .exact(let path) = row.path else { return nil }
        return path
    }

    public enum Match: Equatable, Sendable {
        case endpoint(Endpoint)
        /// The path exists, not with this method: these are the ones it has (`Allow`).
        case methodNotAllowed(allowed: String)
        case notFound
    }

    public static func match(method: String, path: Substring) -> Match {
        let rows = routes.filter { $0.path.matches(path) }
        if let row = rows.first(where: { $0.method == method }) { return .endpoint(row.endpoint) }
        if rows.isEmpty { return .notFound }
        return .methodNotAllowed(allowed: rows.map(\.method).joined(separator: ", "))
    }
}
