import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel

struct Streams: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the continuation streams since handoffd started, newest last.",
        discussion: "Each with its direction (originating: this device's app served it; resuming: this device asked), state and bytes."
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Flag(help: "Print the local API's stream list.")
    var json = false

    func run() throws {
        let response = try global.client(root).send(.streams)
        if json { return try Terminal.json(response) }
        if response.streams.isEmpty { Terminal.out("no continuation streams yet") }
        for s in response.streams {
            let error = s.error.map { ": \(safe($0))" } ?? ""
            Terminal.out(
                "\(s.id.lowercasedString)  \(s.role.rawValue) \(s.role == .originating ? "for" : "from") \(safe(s.peerName))  \(s.state.rawValue)\(error)  sent \(s.bytesSent), received \(s.bytesReceived)"
            )
        }
    }
}
