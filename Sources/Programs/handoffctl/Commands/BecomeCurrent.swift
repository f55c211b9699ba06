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

            A document: --document FILE makes the file the current activity, for any app to \
            continue (docs/apps.md, "Documents from any app"). handoffd reads its name, type, size \
            and hash, and sends it to the device that continues it; FILE must be under your home \
            or a folder of [documents] folders in handoffd.toml, not hidden, not temporary.

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
    var type: String?

    @Option(help: ArgumentHelp("Make this file the current activity, as a document (instead of --type…).", valueName: "file"))
    var document: String?

    @Option(help: ArgumentHelp("With --document: the app that has it open (a desktop file id).", valueName: "id.desktop"))
    var app: String?

    @Option(name: .customLong("mime-type"), help: ArgumentHelp("With --document: its MIME type (else guessed from its name).", valueName: "type/subtype"))
    var mimeType: String?

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
        if document != nil {
            let activityOptions = [
                type.map { _ in "--type" }, title.isEmpty ? nil : "--title", info.isEmpty ? nil : "--info", infoJSON.map { _ in "--info-json" },
                webpageURL.map { _ in "--webpage-url" }, requiredKeys.map { _ in "--required-keys" }, targetContentIdentifier.map { _ in "--target-content-id" },
                persistentIdentifier.map { _ in "--persistent-id" }, expiresIn.map { _ in "--expires-in" }, supportsStreams ? "--supports-streams" : nil,
                needsSave ? "--needs-save" : nil, saveExec.map { _ in "--save-exec" }, streamFile.map { _ in "--stream-file" },
                streamExec.map { _ in "--stream-exec" },
            ].compactMap { $0 }
            if let first = activityOptions.first {
                throw ValidationError("--document makes the activity from the file: \(first) does not go with it")
            }
        } else {
            if type == nil { throw ValidationError("give --type TYPE (or --document FILE)") }
            if app != nil || mimeType != nil { throw ValidationError("--app and --mime-type go with --document FILE") }
        }
        if streamFile != nil, streamExec != nil {
            throw ValidationError("--stream-file and --stream-exec cannot be used together")
        }
        if let streamFile, access(streamFile, R_OK) != 0 {
            throw ValidationError("--stream-file \(streamFile): \(SystemCall.describe(errno))")
        }
    }

    func run() throws {
        let client = global.client(root)
        let response: CurrentActivityResponse
        if let document {
            response = try client.send(.becomeCurrent(document: DocumentRequest(path: Self.absolute(document), app: app, mimeType: mimeType)))
        } else {
            let now = Timestamp.now()
            let content = try makeContent(now: now)
            // Check here first so a typo fails at once and offline; the daemon checks again.
            do {
                try content.validate(now: now)
            } catch {
                throw CLIError(ExitStatus(APIErrorCode(error.code)), error.message)
            }
            response = try client.send(.becomeCurrent(PutCurrentActivityRequest(content: content)))
        }
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
            type: type ?? "",
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

    /// `path` from the current directory, as handoffd (which runs elsewhere) needs it.
    static func absolute(_ path: String) -> String {
        guard !path.hasPrefix("/"), let cwd = getcwd(nil, 0) else { return path }
        defer { free(cwd) }
        return String(cString: cwd) + "/" + path
    }
}
