import Foundation

/// Records a file in the desktop's recently-used list as GTK apps do: Debian's python3-gi and
/// gir1.2-gtk-3.0, `Gtk.RecentManager.add_full`, with the app's name and the MIME type — the real
/// writer, not a file of ours (docs/apps.md, "Documents from any app"). No display is needed.
public enum RecentlyUsedWriter {
    public static let script = """
        import gi, sys
        gi.require_version('Gtk', '3.0')
        from gi.repository import Gtk, GLib
        manager = Gtk.RecentManager.get_default()
        data = Gtk.RecentData()
        data.mime_type = sys.argv[2]
        data.app_name = sys.argv[3]
        data.app_exec = sys.argv[3] + " %u"
        loop = GLib.MainLoop()
        manager.connect("changed", lambda *a: loop.quit())
        if not manager.add_full(GLib.filename_to_uri(sys.argv[1], None), data):
            sys.exit(1)
        loop.run()
        """

    /// Records `path` for the user whose `HOME` and `XDG_DATA_HOME` are in `environment`; returns
    /// once GTK wrote the list.
    public static func record(_ path: String, mimeType: String, application: String, environment: [String: String]) async throws {
        // Debian's python3: python3-gi is installed for it, not for another python3 on PATH.
        let result = try await Subprocess.run("/usr/bin/python3", ["-c", script, path, mimeType, application], environment: environment)
        guard result.status == 0 else { throw TestFailure("GTK did not record \(path): \(result.stderr)") }
    }
}
