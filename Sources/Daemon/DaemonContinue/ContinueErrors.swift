import DaemonCore

// What handing an activity to an app fails with (DaemonError explains codes); `handlerFailed`,
// shared with running apps, is DaemonApps'; `noHandler`, shared with documents, DaemonDocuments'.
extension DaemonError.Code {
    package static let invalidWebpageURL = Self(.invalidWebpageURL)
}
