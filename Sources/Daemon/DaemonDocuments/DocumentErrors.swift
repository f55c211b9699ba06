import DaemonCore

// What offering and receiving documents fail with (DaemonError explains codes).
extension DaemonError.Code {
    /// The file may not be offered: outside the folders, hidden, temporary, too large, not a file.
    package static let notOffered = Self(.notOffered)
    /// What came is not the document offered; it was discarded.
    package static let documentMismatch = Self(.documentMismatch)
}
