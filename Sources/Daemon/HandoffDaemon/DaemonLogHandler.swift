import HandoffModel
import Logging
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// handoffd's logs on stderr, one line each. Under systemd (stderr connected to the journal, as
/// `$JOURNAL_STREAM` says) each line starts with its syslog priority (`<6>`) and carries no
/// timestamp — the journal records both; elsewhere, a timestamp and the level in words.
/// The level is shared by every logger and can change while running (SIGHUP).
public struct DaemonLogHandler: LogHandler {
    public enum Format: Sendable {
        case plain
        case journal
    }

    /// The one level of all of handoffd's loggers.
    public final class Level: Sendable {
        private let value: Mutex<Logger.Level>
        public init(_ level: Logger.Level) { value = Mutex(level) }
        public var current: Logger.Level {
            get { value.withLock { $0 } }
            set { value.withLock { $0 = newValue } }
        }
    }

    public let label: String
    public let format: Format
    public let level: Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?

    public init(label: String, format: Format, level: Level) {
        self.label = label
        self.format = format
        self.level = level
    }

    public var logLevel: Logger.Level {
        get { level.current }
        set { level.current = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let extra = event.metadata { all.merge(extra) { _, new in new } }
        var line = Array(Self.line(format: format, level: event.level, label: label, message: "\(event.message)", metadata: all).utf8)
        line.append(0x0A)
        _ = write(2, &line, line.count)
    }

    /// One log line, without its newline.
    public static func line(format: Format, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata, now: Timestamp? = nil) -> String {
        let fields = metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        let text = fields.isEmpty ? message : "\(message) \(fields)"
        switch format {
        case .journal:
            return "<\(syslogPriority(level))>\(text)"
        case .plain:
            return "\((now ?? .now()).rfc3339) \(level) \(label): \(text)"
        }
    }

    /// sd-daemon(3)'s prefixes: the syslog priorities.
    public static func syslogPriority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// `.journal` when stderr is the stream systemd named in `$JOURNAL_STREAM` (`device:inode`).
    public static func detectFormat(journalStream: String? = getenv("JOURNAL_STREAM").map { String(cString: $0) }) -> Format {
        guard let journalStream else { return .plain }
        var st = stat()
        guard fstat(2, &st) == 0 else { return .plain }
        return journalStream == "\(st.st_dev):\(st.st_ino)" ? .journal : .plain
    }
}
