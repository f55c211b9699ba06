import DaemonCore

// What handing an activity to an app fails with (DaemonError explains codes); `handlerFailed`,
// shared with running apps, is DaemonApps'; `noHandler`, shared with documents, DaemonDocuments';
// `invalidLink`, a link the account's keys do not open, DaemonAccounts'.
extension DaemonError.Code {
    package static let invalidWebpageURL = Self(.invalidWebpageURL)
    /// A link's activity is kept nowhere this device can reach.
    package static let notSaved = Self(.notSaved)
}
