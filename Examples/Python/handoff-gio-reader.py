#!/usr/bin/python3
"""A GApplication that takes continuations with one action and no handoff library (docs/dbus.md,
"DBusActivatable apps").

Its .desktop file says DBusActivatable=true, asks for continuations through its action, and
lists the activity types it continues:

  [Desktop Entry]
  Type=Application
  Name=Example Reader
  DBusActivatable=true
  X-Handoff-ContinueAction=true
  Exec=/usr/bin/python3 /path/to/handoff-gio-reader.py
  X-Handoff-ActivityTypes=org.handoff.example.article;

handoffd then hands it a continuation through org.freedesktop.Application.ActivateAction
("handoff-continue", the activity file's path): the running instance — this one — takes it,
where GTK or Qt apps would show it in their window. Needs python3-gi.
"""

import json
import os
import sys

from gi.repository import Gio, GLib

APP_ID = "org.handoff.example.Reader"


def main():
    app = Gio.Application(application_id=APP_ID, flags=Gio.ApplicationFlags.FLAGS_NONE)

    def handoff_continue(action, parameter):
        with open(parameter.get_string(), encoding="utf-8") as file:
            activity = json.load(file)
        print(f"continued “{activity.get('title', '')}” in the running instance {os.getpid()}", flush=True)

    action = Gio.SimpleAction.new("handoff-continue", GLib.VariantType.new("s"))
    action.connect("activate", handoff_continue)
    app.add_action(action)
    # A reader without windows in this example: held, it keeps running until SIGTERM.
    app.connect("startup", lambda _: print(f"ready as {APP_ID} (pid {os.getpid()})", flush=True))
    app.connect("activate", lambda _: None)
    app.hold()
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, 15, app.quit)
    sys.exit(app.run(sys.argv))


if __name__ == "__main__":
    main()
