/// How long handoffd waits for the others it depends on before it gives up on them: the product's
/// values (docs/apps.md, docs/peer-protocol.md). Tests give their in-process daemons generous ones
/// (`TestDaemon`), so that a loaded machine never races a deadline a test does not mean to meet,
/// and a short one where a test is about that deadline.
public struct Deadlines: Sendable, Equatable {
    /// A running app answers a continuation it was handed; after that it fails, and the app no
    /// longer receives continuations.
    public var appAnswer: Duration
    /// Another device answers a request on its session (its activity, account state).
    public var peerRequest: Duration
    /// … a request a person waits for at the command line (leaving the account, a rename).
    public var membershipRequest: Duration
    /// A local client sends a whole request on the API socket, from connecting or from the end of
    /// the previous answer: one that sends half a request, or idles, is closed (each costs a
    /// descriptor).
    public var localRequest: Duration
    /// … on the file socket, where the request is one line and a file.
    public var fileRequest: Duration
    /// An app that serves an activity's streams takes one another device asked for.
    public var streamTake: Duration
    /// The desktop agent holding this device's copy takes the stream of a paste another device
    /// asked for — the paste rendezvous (docs/clipboard.md, "Who holds a copy"): it holds the
    /// bytes, handoffd does not.
    public var clipboardTake: Duration

    public init(
        appAnswer: Duration = .seconds(5), peerRequest: Duration = .seconds(5), membershipRequest: Duration = .seconds(3),
        localRequest: Duration = .seconds(10), fileRequest: Duration = .seconds(5), streamTake: Duration = .seconds(10), clipboardTake: Duration = .seconds(10)
    ) {
        self.streamTake = streamTake
        self.clipboardTake = clipboardTake
        self.appAnswer = appAnswer
        self.peerRequest = peerRequest
        self.membershipRequest = membershipRequest
        self.localRequest = localRequest
        self.fileRequest = fileRequest
    }
}
