import DesktopAgent
import Testing

/// The Desktop Entry specification's D-Bus activation names: which desktop file ids are
/// application ids, and the object path each has.
@Suite(.timeLimit(.minutes(1))) struct ApplicationActivationTests {
    @Test(arguments: [
        ("org.example.Editor.desktop", "org.example.Editor", "/org/example/Editor"),
        ("org.example.my-app.desktop", "org.example.my-app", "/org/example/my_app"),
        ("org.example._x9.desktop", "org.example._x9", "/org/example/_x9"),
    ])
    func validIDs(_ file: String, _ id: String, _ path: String) {
        #expect(ApplicationActivation.applicationID(desktopFileID: file) == id)
        #expect(ApplicationActivation.objectPath(applicationID: id) == path)
    }

    @Test(arguments: ["editor.desktop", "org.example.Editor", "org.9example.Editor.desktop", "org..Editor.desktop", "org.example.Édit.desktop", "org/example.Editor.desktop"])
    func notApplicationIDs(_ file: String) {
        #expect(ApplicationActivation.applicationID(desktopFileID: file) == nil)
    }
}
