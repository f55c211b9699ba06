#!/usr/bin/python3
"""Owns the X11 CLIPBOARD selection with several targets at once, as a password manager does
(xclip offers one target only): for the clipboard's tests (docs/clipboard.md, "Privacy").

    clipboard-owner.py TARGET=VALUE [TARGET=VALUE ...]

Each VALUE is the bytes given for TARGET (UTF-8); TARGETS is answered with every target named.
Prints "owned" once it holds the clipboard, and exits when another client takes it, or on
SIGTERM. Uses python3-xlib (Debian), a real X client.
"""
import signal
import sys

from Xlib import X, Xatom, display
from Xlib.protocol import event
from Xlib.support import unix_connect

# libxcb (xclip, handoff-desktop) reaches a local display by its abstract socket first, which
# belongs to the network namespace; python3-xlib takes /tmp/.X11-unix/XN when that file exists,
# and on simulated hosts sharing /tmp it may be another host's server. Abstract first, as xcb.
_exists = unix_connect.os.path.exists
unix_connect.os.path.exists = lambda path: False if path.startswith("/tmp/.X11-unix/X") else _exists(path)


def main():
    pairs = [a.split("=", 1) for a in sys.argv[1:]]
    if not pairs or any(len(p) != 2 for p in pairs):
        sys.exit(__doc__)
    d = display.Display()
    window = d.screen().root.create_window(0, 0, 1, 1, 0, X.CopyFromParent)
    clipboard = d.intern_atom("CLIPBOARD")
    targets_atom = d.intern_atom("TARGETS")
    values = {d.intern_atom(name): value.encode() for name, value in pairs}
    window.set_selection_owner(clipboard, X.CurrentTime)
    d.flush()
    if d.get_selection_owner(clipboard) != window:
        sys.exit("could not take the clipboard")
    print("owned", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        e = d.next_event()
        if e.type == X.SelectionClear:
            return
        if e.type != X.SelectionRequest:
            continue
        prop = e.property or e.target
        if e.target == targets_atom:
            e.requestor.change_property(prop, Xatom.ATOM, 32, [targets_atom] + list(values))
        elif e.target in values:
            e.requestor.change_property(prop, e.target, 8, values[e.target])
        else:
            prop = X.NONE
        e.requestor.send_event(
            event.SelectionNotify(time=e.time, requestor=e.requestor, selection=e.selection, target=e.target, property=prop)
        )
        d.flush()


if __name__ == "__main__":
    main()
