// CHandoffXCB: the X protocol C binding (libxcb, with its XFixes extension) as X11Clipboard — and
// only X11Clipboard — sees it.
//
// Why XCB and not Xlib: XCB is the maintained binding Xlib itself is built on; it never calls
// exit() on a broken connection (Xlib's default I/O error handler does), gives the connection's
// descriptor for our own poll(2) loop, and sends a request without waiting for its reply, so one
// thread of ours can serve selection requests while it reads another app's clipboard
// (docs/clipboard.md, "X11"). XFixes tells us when the CLIPBOARD selection changes hands, without
// polling.
//
// Why the shims: the extension's first event number is read through a global
// (`xcb_xfixes_id`) that Swift would have to take the address of; and an event's type is its
// response_type without the bit that marks events sent by other clients (SendEvent), a macro-
// level detail kept here in one place.
#ifndef C_HANDOFF_XCB_H
#define C_HANDOFF_XCB_H

#include <stdint.h>
#include <xcb/xcb.h>
#include <xcb/xfixes.h>

/// The event number of XFixes' SelectionNotify on `c`, or -1 when the server lacks XFixes.
static inline int handoff_xfixes_selection_notify(xcb_connection_t *c) {
    const xcb_query_extension_reply_t *ext = xcb_get_extension_data(c, &xcb_xfixes_id);
    if (ext == NULL || !ext->present) return -1;
    return ext->first_event + XCB_XFIXES_SELECTION_NOTIFY;
}

/// An event's type, whoever sent it.
static inline uint8_t handoff_event_type(const xcb_generic_event_t *event) {
    return event->response_type & 0x7f;
}

#endif
