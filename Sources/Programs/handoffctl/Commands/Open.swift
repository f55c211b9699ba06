#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct Open: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Reopen the activity a handoff: link names.",
        discussion: """
            From the device it was current on, if that device is reachable and it is still \
            current there (its latest state); else as this device's history kept it; else its \
            web page. It goes to an app here as a continuation does (handoffctl continue). The \
            handler of handoff: links, so a link clicked in any app opens this way.
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Argument(help: "The link (handoff:v1.…).")
    var link: String

    @Flag(help: "Print the local API's answer (and start no app).")
    var json = false

    func run() throws {
        let request = OpenLinkRequest(
            link: link, delivery: json ? .returnToCaller : .dispatch, environment: SessionEnvironment.pick(ProcessInfo.processInfo.environment)
        )
        let response = try global.client(root).send(.openLink(request))
        if json { return try Terminal.json(response) }
        switch response.source {
        case .device: break
        case .history: Terminal.diagnostic("handoffctl: from this device's history (\(safe(response.reason ?? "")))\n")
        case .webpage: Terminal.diagnostic("handoffctl: only its web page (\(safe(response.reason ?? "")); not in this device's history)\n")
        }
        Continue.describe(response.continued)
    }
}
