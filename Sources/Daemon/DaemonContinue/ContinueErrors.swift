import DaemonCore

// What handing an activity to an app fails with (DaemonError explains codes); `handlerFailed`,
// shared with running apps, is DaemonApps'.
extension DaemonError.Code {
    /// No app here declares the activity's type, and it has no web page.
    package static let noHandler = Self(.noHandler)
    package static let invalidWebpageURL = Self(.invalidWebpageURL)
}
