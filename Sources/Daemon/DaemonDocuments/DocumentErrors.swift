import DaemonCore

// What offering and receiving documents fail with (DaemonError explains codes).
extension DaemonError.Code {
    /// The file may not be offered: outside the folders, hidden, temporary, too large, not a file.
    package static let notOffered = Self(.notOffered)
    /// What came is not the document offered; it was discarded.
    package static let documentMismatch = Self(.documentMismatch)
    /// No app here takes the activity (no app for its type, and no web page), or opens the
    /// document; shared with DaemonContinue.
    package static let noHandler = Self(.noHandler)
}
