import ArgumentParser
import HandoffAPI
import HandoffClient
import HandoffModel
import HandoffSystem

#if canImport(Glibc)
import Glibc
#endif

struct BecomeCurrent: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "become-current",
        abstract: "Make an activity this device's current one, for your other devices to continue.",
        discussion: """
            Typed userInfo values: --info KEY[:TYPE]=VALUE, where TYPE is string (the default), int, \
            double, bool, data, date, url, uuid or null. Data is @FILE, @- or base64:…; dates are \
            RFC 3339. Arrays and dictionaries go in --info-json, whose format is what \
            `handoffctl current --json` prints under "userInfo".

            Examples:
              handoffctl become-current --type com.example.editor.edit \\
                  --title Report --info page:int=3 --info draft:data=@draft.txt \\
                  --webpage-url https://example.com/r
              handoffctl become-current --type org.example.reader.read \\
                  --info-json state.json --expires-in 1h

            Staying attached (--wait, implied by the options after it): prints willSave, \
            wasContinued and stream requests as they happen, until the activity is replaced or \
            withdrawn (exit 0). --save-exec CMD answers willSave: CMD prints the userInfo to send \
            (the --info-json format), which updates the activity first. --stream-file F and \
            --stream-exec CMD serve continuation streams: each device that continues gets F, or a \
            run of `sh -c CMD` with the stream on its standard input and output.
            """
    )

    @OptionGroup var global: GlobalOptions
    @ParentCommand var root: Handoffctl

    @Option(help: ArgumentHelp("Reverse-DNS activity type, e.g. com.example.editor.edit.", valueName: "type"))
    var type: String

    @Option(help: "Human-readable title.")
    var title: String = ""

    @Option(name: .customLong("info"), help: ArgumentHelp("A typed userInfo entry (repeatable).", valueName: "key[:type]=value"))
    var info: [String] = []

    @Option(name: .customLong("info-json"), help: ArgumentHelp("userInfo entries as typed JSON.", valueName: "file|-"))
    var infoJSON: String?

    @Option(name: .customLong("webpage-url"), help: ArgumentHelp("http(s) URL for devices without a handler.", valueName: "url"))
    var webpageURL: String?

    @Option(name: .customLong("required-keys"), help: ArgumentHelp("userInfo keys that must be present.", valueName: "a,b"))
    var requiredKeys: String?

    @Option(name: .customLong("target-content-id"), help: ArgumentHelp("Opaque id for the receiving app.", valueName: "id"))
    var targetContentIdentifier: String?

    @Option(name: .customLong("persistent-id"), help: ArgumentHelp("Opaque persistent id.", valueName: "id"))
    var persistentIdentifier: String?

    @Option(name: .customLong("expires-in"), help: ArgumentHelp("Withdraw it after this long: 90s, 10m, 2h, 1d.", valueName: "duration"))
    var expiresIn: String?

    @Flag(name: .customLong("supports-streams"), help: "The originator will serve continuation streams.")
    var supportsStreams = false

    @Flag(name: .customLong("needs-save"), help: "Ask this app for its latest state (willSave) before another device gets it.")
    var needsSave = false

    @Flag(help: "Stay attached and print what happens to the activity, until it is replaced or withdrawn.")
    var wait = false

    @Flag(name: .customLong("resign-on-exit"), help: "Withdraw the activity when this command ends (implies --wait).")
    var resignOnExit = false

    @Option(name: .customLong("save-exec"), help: ArgumentHelp("At willSave, run this; its output is the userInfo to send (implies --needs-save).", valueName: "command"))
    var saveExec: String?

    @Option(name: .customLong("stream-file"), help: ArgumentHelp("Serve this file on each continuation stream (implies --supports-streams).", valueName: "file"))
    var streamFile: String?

    @Option(name: .customLong("stream-exec"), help: ArgumentHelp("Serve each continuation stream with `sh -c` this command.", valueName: "command"))
    var streamExec: String?

    @Flag(help: "Print the API's answer as JSON instead of the activity id (with --wait, then each event as a JSON line).")
    var json = false

    var staysAttached: Bool { wait || resignOnExit || saveExec != nil || streamFile != nil || streamExec != nil }
    var servesStreams: Bool { streamFile != nil || streamExec != nil }

    func validate() throws {
        if streamFile != nil, streamExec != nil {
            throw ValidationError("--stream-file and --stream-exec cannot be used together")
        }
        if let streamFile, access(streamFile, R_OK) != 0 {
            throw ValidationError("--stream-file \(streamFile): \(SystemCall.describe(errno))")
        }
    }

    func run() throws {
        let now = Timestamp.now()
        let content = try makeContent(now: now)
        // Check here first so a typo fails at once and offline; the daemon checks again.
        do {
            try content.validate(now: now)
        } catch {
            throw CLIError(ExitStatus(APIErrorCode(error.code)), error.message)
        }
        let client = global.client(root)
        let response = try client.send(.becomeCurrent(PutCurrentActivityRequest(content: content)))
        for warning in response.warnings { Terminal.warning(warning) }
        if json {
            try Terminal.json(response, pretty: !staysAttached)
        } else {
            Terminal.out(response.activity.id.lowercasedString)
        }
        guard staysAttached else { return }
        Terminal.flush()
        try AttachedActivity(command: self, client: client, activity: response.activity).run()
    }

    func makeContent(now: Timestamp) throws -> ActivityContent {
        var userInfo: [String: ActivityValue] = [:]
        if let infoJSON {
            userInfo = try InfoArguments.parseJSON(infoJSON)
        }
        for argument in info {
            let (key, value) = try InfoArguments.parse(argument)
            guard userInfo[key] == nil else {
                throw CLIError(.badValueSyntax, "userInfo key \(displayQuoted(key)) is given twice")
            }
            userInfo[key] = value
        }
        let required = (requiredKeys ?? "").split(separator: ",").map { String($0.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()) }.filter { !$0.isEmpty }
        let expiry = try expiresIn.map { now.adding(seconds: try DurationArgument.seconds($0)) }
        return ActivityContent(
            type: type,
            title: title,
            userInfo: userInfo,
            requiredUserInfoKeys: required,
            webpageURL: webpageURL,
            targetContentIdentifier: targetContentIdentifier,
            persistentIdentifier: persistentIdentifier,
            expirationDate: expiry,
            supportsContinuationStreams: supportsStreams || servesStreams,
            needsSave: needsSave || saveExec != nil
        )
    }
}
