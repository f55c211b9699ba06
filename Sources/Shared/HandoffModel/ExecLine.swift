/// A command line as `.desktop` `Exec` keys (and handoffd.toml's `browser` and `[handlers]`) write
/// it: arguments separated by spaces, double quotes around arguments with spaces, and inside quotes
/// `\"`, `` \` ``, `\$` and `\\`. Never given to a shell.
package struct ExecLine: Sendable, Equatable {
    package struct SyntaxError: Error, Equatable, CustomStringConvertible {
        package var description: String
    }

    package let arguments: [String]
    /// Which arguments were quoted (some or all of them): the specification leaves a field code
    /// inside quotes undefined, and a quoted argument is what `sh -c "…"` runs, so a web page's
    /// address is never put into one (`expanded`).
    package let quoted: [Bool]
    /// As written (handed on as it is: `HANDOFF_BROWSER`).
    package let text: String

    package init(parsing text: String) throws(SyntaxError) {
        var arguments: [String] = []
        var quotedArguments: [Bool] = []
        var current = ""
        var inArgument = false
        var quoted = false
        var wasQuoted = false
        var escaped = false
        for c in text {
            if escaped {
                current.append(c)
                escaped = false
            } else if quoted {
                if c == "\\" {
                    escaped = true
                } else if c == "\"" {
                    quoted = false
                } else {
                    current.append(c)
                }
            } else if c == " " || c == "\t" {
                if inArgument {
                    arguments.append(current)
                    quotedArguments.append(wasQuoted)
                }
                current = ""
                inArgument = false
                wasQuoted = false
            } else if c == "\"" {
                quoted = true
                wasQuoted = true
                inArgument = true
            } else {
                current.append(c)
                inArgument = true
            }
        }
        guard !quoted, !escaped else { throw SyntaxError(description: "a quoted argument is not closed") }
        if inArgument {
            arguments.append(current)
            quotedArguments.append(wasQuoted)
        }
        guard let program = arguments.first, !program.isEmpty, !program.contains("%") else {
            throw SyntaxError(description: "there is no program to run")
        }
        self.arguments = arguments
        self.quoted = quotedArguments
        self.text = text
    }

    /// What fills the field codes.
    package struct Fields {
        /// `%f %F`: the activity's file; also `%u %U` when there is no `url`.
        package var file: String?
        /// `%u %U`: the web page (for the browser command).
        package var url: String?
        /// `%c`: the application's name.
        package var name: String?
        /// `%i`: `--icon ICON`.
        package var icon: String?
        /// `%k`: the `.desktop` file.
        package var desktopFile: String?
        /// `file`'s name came from another device (a document): like `url`, it never goes into a
        /// quoted argument.
        package var fileNamedElsewhere: Bool

        package init(
            file: String? = nil, url: String? = nil, name: String? = nil, icon: String? = nil, desktopFile: String? = nil, fileNamedElsewhere: Bool = false
        ) {
            self.file = file
            self.url = url
            self.name = name
            self.icon = icon
            self.desktopFile = desktopFile
            self.fileNamedElsewhere = fileNamedElsewhere
        }
    }

    /// The arguments with field codes replaced. A code alone in an argument that has no value
    /// removes the argument; deprecated codes (`%d %D %n %N %v %m`) are dropped as the
    /// specification asks.
    package func expanded(_ fields: Fields) -> [String] {
        var out: [String] = []
        for (index, argument) in arguments.enumerated() {
            // An address from another device never goes into a quoted argument (a shell's
            // script, perhaps): there `%u` is the activity's file, as with no address.
            let url = quoted[index] ? nil : fields.url
            let file = quoted[index] && fields.fileNamedElsewhere ? nil : fields.file
            if argument == "%i" {
                if let icon = fields.icon { out += ["--icon", icon] }
                continue
            }
            var result = ""
            var dropped = false
            var chars = argument.makeIterator()
            while let c = chars.next() {
                guard c == "%" else {
                    result.append(c)
                    continue
                }
                switch chars.next() {
                case "%": result.append("%")
                case "f", "F": if let file { result += file } else { dropped = true }
                case "u", "U": if let target = url ?? file { result += target } else { dropped = true }
                case "c": result += fields.name ?? ""
                case "k": result += fields.desktopFile ?? ""
                case "i": result += fields.icon ?? ""
                case .some, .none: dropped = true  // deprecated or unknown code
                }
            }
            if dropped && result.isEmpty { continue }
            out.append(result)
        }
        return out
    }

    /// Whether a field code that gives a file or an address stands inside a quoted argument
    /// (where a name from another device is never put: the command would run without it).
    package var quotesAFileOrAddress: Bool {
        arguments.indices.contains { index in quoted[index] && ["%f", "%F", "%u", "%U"].contains { arguments[index].contains($0) } }
    }

    /// The browser command opening `url`: in place of `%u`/`%U`, else after the arguments.
    package func opening(_ url: String) -> [String] {
        arguments.contains { $0.contains("%u") || $0.contains("%U") } ? expanded(Fields(url: url)) : arguments + [url]
    }
}
