#!/usr/bin/python3
"""A note in Python over D-Bus (docs/dbus.md): handoff without a line of Swift.

The note is the window "main"'s activity: org.handoff.example.pynote, its first line as the
title, its text in userInfo, needsSave (the text is sent when another device is about to take
it, not at each keystroke) and an attachment served over a continuation stream. On the other
device the same program receives the note (org.handoff.Receiver1.Continue), then fetches the
attachment through a stream the agent hands over as a file descriptor.

Headless: one command per line on stdin —

  write TEXT    the note's text (makes it current)
  attach PATH   the file a device continuing the note receives
  save-to PATH  where a received attachment goes
  quit

Needs python3-dbus and python3-gi, handoffd and handoff-desktop in the session.
"""

import hashlib
import os
import socket
import sys
import threading

import dbus
import dbus.service
from dbus.mainloop.glib import DBusGMainLoop
from gi.repository import GLib

NOTE_TYPE = "org.handoff.example.pynote"
APP_ID = "org.handoff.example.PyNotes"
RECEIVER_PATH = "/org/handoff/example/PyNotes"
WINDOW = "main"


def say(line):
    print(line, flush=True)


class Notes(dbus.service.Object):
    """The app: its note, and org.handoff.Receiver1 for the notes other devices hand over."""

    def __init__(self, bus):
        super().__init__(bus, RECEIVER_PATH)
        desktop = bus.get_object("org.handoff.Desktop", "/org/handoff/Desktop")
        self.desktop = dbus.Interface(desktop, "org.handoff.Desktop1")
        self.text = ""
        self.attachment = None
        self.save_to = None
        for member, handler in [
            ("WillSave", self.will_save),
            ("WasContinued", self.was_continued),
            ("StreamRequested", self.stream_requested),
            ("ContinueFailed", self.continue_failed),
        ]:
            # From the agent only (the bus matches the name's owner): nobody else can ask to save or stream.
            bus.add_signal_receiver(
                handler, signal_name=member, dbus_interface="org.handoff.Desktop1", path="/org/handoff/Desktop", bus_name="org.handoff.Desktop"
            )
        restored = self.desktop.Register(APP_ID, [NOTE_TYPE], dbus.ObjectPath(RECEIVER_PATH))
        if WINDOW in restored:
            self.text = str(restored[WINDOW].get("userInfo", {}).get("text", ""))

    def activity(self, needs_save):
        title = self.text.splitlines()[0] if self.text else "Empty note"
        return dbus.Dictionary(
            {
                "type": NOTE_TYPE,
                "title": title[:200],
                "userInfo": dbus.Dictionary({"text": self.text}, signature="sv"),
                "needsSave": dbus.Boolean(needs_save),
                "supportsContinuationStreams": dbus.Boolean(self.attachment is not None),
            },
            signature="sv",
        )

    # Commands

    def write(self, text):
        self.text = text
        activity_id, warnings = self.desktop.BecomeCurrent(WINDOW, self.activity(needs_save=True))
        for warning in warnings:
            print("handoffd advises:", warning, flush=True)
        say(f"note is current as {activity_id}")

    def attach(self, path):
        self.attachment = path
        if self.text:
            self.desktop.Update(WINDOW, self.activity(needs_save=True))
        say(f"attachment {os.path.basename(path)}")

    # Originating: what the agent tells this app

    def will_save(self, window, activity_id, peer):
        self.desktop.Update(window, self.activity(needs_save=False))
        say(f"saved for {peer}")

    def was_continued(self, window, activity_id, peer):
        say(f"continued on {peer}")

    def stream_requested(self, window, activity_id, stream_id, peer):
        stream = self.desktop.TakeStream(stream_id).take()
        threading.Thread(target=self.send, args=(stream,), daemon=True).start()

    # A stream ends in order: each side shuts down its sending half when done, and reads until
    # the other's end-of-file before closing (closing early fails the stream on both devices).
    def send(self, stream):
        sent = 0
        with socket.socket(fileno=stream) as connection:
            if self.attachment:
                with open(self.attachment, "rb") as source:
                    while chunk := source.read(65536):
                        connection.sendall(chunk)
                        sent += len(chunk)
            connection.shutdown(socket.SHUT_WR)
            while connection.recv(65536):
                pass
        say(f"sent {sent} bytes")

    def continue_failed(self, continuation_id, activity_type, code, reason):
        say(f"a continuation failed: {code}: {reason}")

    # Receiving: another device's note

    @dbus.service.method("org.handoff.Receiver1", in_signature="sa{sv}ss", out_signature="bss", sender_keyword="sender")
    def Continue(self, continuation_id, activity, peer, window, sender=None):
        if sender != self.connection.get_name_owner("org.handoff.Desktop"):
            return (False, "", "only handoff-desktop hands notes over")
        self.text = str(activity.get("userInfo", {}).get("text", ""))
        say(f"continued “{activity.get('title', '')}” from {peer}: {self.text}")
        if activity.get("supportsContinuationStreams") and self.save_to:
            GLib.idle_add(self.fetch, str(continuation_id))
        return (True, WINDOW, "")

    def fetch(self, continuation_id):
        try:
            stream = self.desktop.OpenStream(continuation_id).take()
        except dbus.DBusException as error:
            say(f"no stream: {error.get_dbus_name()}: {error.get_dbus_message()}")
            return False
        threading.Thread(target=self.receive, args=(stream,), daemon=True).start()
        return False

    def receive(self, stream):
        digest = hashlib.sha256()
        received = 0
        with socket.socket(fileno=stream) as connection, open(self.save_to, "wb") as out:
            connection.shutdown(socket.SHUT_WR)  # this side sends nothing
            while chunk := connection.recv(65536):
                out.write(chunk)
                digest.update(chunk)
                received += len(chunk)
        say(f"received {received} bytes sha256 {digest.hexdigest()}")


def main():
    DBusGMainLoop(set_as_default=True)
    loop = GLib.MainLoop()
    try:
        notes = Notes(dbus.SessionBus())
    except dbus.DBusException as error:
        print(f"handoff-notes: {error.get_dbus_message()} ({error.get_dbus_name()}); is handoff-desktop running?", file=sys.stderr)
        sys.exit(1)

    pending = b""

    def perform(line):
        verb, _, argument = line.partition(" ")
        try:
            if verb == "write":
                notes.write(argument)
            elif verb == "attach":
                notes.attach(argument)
            elif verb == "save-to":
                notes.save_to = argument
                say(f"attachments go to {argument}")
            else:
                say(f"error: unknown command {verb}; use write, attach, save-to or quit")
        except dbus.DBusException as error:
            say(f"error: {error.get_dbus_name()}: {error.get_dbus_message()}")

    # Unbuffered: several lines may arrive in one read, and each is a command.
    def commands(fd, condition):
        nonlocal pending
        data = os.read(fd, 65536)
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            if line.decode() == "quit":
                data = b""
                break
            perform(line.decode())
        if not data:
            loop.quit()
            return False
        return True

    GLib.io_add_watch(0, GLib.PRIORITY_DEFAULT, GLib.IO_IN | GLib.IO_HUP, commands)
    say("ready")
    loop.run()


if __name__ == "__main__":
    main()
