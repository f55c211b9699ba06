import Foundation
import HandoffAPI
import HandoffModel
import Testing
@testable import DaemonAccounts
@testable import DaemonApps
@testable import DaemonContinue
@testable import DaemonCore
@testable import DaemonSessions
@testable import DaemonLocalAPI
@testable import DaemonStreams

/// The one internal error type and the one place it becomes the local API's (DaemonError.swift).
@Suite struct DaemonErrorTests {
    /// Every code a service fails a request with is answered as the API's code of the same name.
    static let requestCodes: [(DaemonError.Code, APIErrorCode)] = [
        (.badRequest, .badRequest), (.internalError, .internalError), (.noCurrentActivity, .noCurrentActivity),
        (.activityChanged, .activityChanged), (.typeImmutable, .typeImmutable), (.expired, .expired),
        (.badPeerAddress, .badPeerAddress),
        (.noAccount, .noAccount), (.accountExists, .accountExists), (.invalidCode, .invalidCode), (.codeRejected, .codeRejected),
        (.inviteExpired, .inviteExpired), (.inviteUsed, .inviteUsed), (.notAccountAdmin, .notAccountAdmin),
        (.unknownDevice, .unknownDevice), (.ambiguousDevice, .ambiguousDevice), (.revoked, .revoked),
        (.unknownPeer, .unknownPeer), (.unreachable, .unreachable), (.refused, .refused), (.rateLimited, .rateLimited),
        (.versionMismatch, .versionMismatch), (.timeout, .timeout),
        (.invalidAppID, .invalidAppID), (.invalidWindowID, .invalidWindowID), (.unknownRegistration, .unknownRegistration),
        (.tooManyApps, .tooManyApps), (.tooManyWindows, .tooManyWindows),
        (.unknownContinuation, .unknownContinuation), (.unknownStream, .unknownStream),
        (.streamsUnsupported, .streamsUnsupported), (.streamRefused, .streamRefused),
        (.noHandler, .noHandler), (.handlerFailed, .handlerFailed), (.invalidWebpageURL, .invalidWebpageURL),
    ]

    @Test(arguments: requestCodes) func aRequestCodeIsTheAPIsCodeOfTheSameName(daemon: DaemonError.Code, api: APIErrorCode) {
        #expect(APIErrorCode(daemon) == api)
        let answer = LocalAPIError(DaemonError(daemon, "what happened; what to do"))
        #expect(answer.code == api)
        #expect(answer.message == "what happened; what to do")
    }

    /// The activity model's codes pass through unchanged.
    @Test(arguments: ActivityError.Code.allCases) func anActivityErrorKeepsItsCode(code: ActivityError.Code) {
        #expect(LocalAPIError(DaemonError(ActivityError(code, "no"))).code == APIErrorCode(code))
    }

    /// A failure of the daemon itself is an internal error to a client, with its cause in words.
    @Test(arguments: [DaemonError.Code.alreadyRunning, .unsafeDirectory, .io, .socket, .configuration, .firstUse])
    func aDaemonFailureIsAnInternalError(code: DaemonError.Code) {
        let answer = LocalAPIError(DaemonError(code, "cannot write the activity", cause: SystemCallError(call: "write", errno: 28)))
        #expect(answer.code == .internalError)
        #expect(answer.message.hasPrefix("cannot write the activity ("))
    }

    /// What a route throws becomes one answer: its own, a service's, or a bug said as one.
    @Test func anythingARouteThrowsIsAnswered() {
        struct Unexpected: Error {}
        #expect(LocalAPIError(answering: LocalAPIError(.notFound, "no")).code == .notFound)
        #expect(LocalAPIError(answering: DaemonError.noAccount).code == .noAccount)
        #expect(LocalAPIError(answering: Unexpected()).code == .internalError)
    }

    /// Advice given in more than one place is written once.
    @Test func sharedAdviceIsTheSameEverywhere() {
        let removal = RemovalInfo(accountName: "Ana's devices", byName: "desk", byID: nil, at: Timestamp(rfc3339: "2026-11-23T10:00:00Z")!, reason: .removed)
        let removed = DaemonError.removed(removal)
        #expect(removed.code == .revoked)
        #expect(removed.message.contains("handoffctl account join CODE (from handoffctl account invite on desk)"))
        #expect(DaemonError.noAccount.message.contains("handoffctl account create"))
    }

    /// A request's failure is made from the local API's code it is answered with, so the compiler
    /// checks its name; only the daemon's own failures (at start or reload) are `internal`, and
    /// they are exactly these.
    @Test func onlyTheDaemonsOwnFailuresAreInternal() throws {
        var own: Set<String> = []
        for module in ModuleGraphTests.modules {
            let directory = ModuleGraphTests.directory(module)
            guard let files = FileManager.default.enumerator(atPath: directory.path) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
                own.formUnion(text.matches(of: /\(internal: "([a-z_]+)"\)/).map { String($0.1) })
                // Other types have codes of their own (TLSError's, PeerFailure's); the daemon's are made
                // in its modules.
                if module.hasPrefix("Daemon") || module == "HandoffDaemon" {
                    #expect(!text.contains("Code(rawValue:"), "\(module)/\(file) makes a code from a name")
                }
            }
        }
        #expect(own == ["already_running", "unsafe_directory", "io", "socket", "configuration", "first_use"])
    }
}
