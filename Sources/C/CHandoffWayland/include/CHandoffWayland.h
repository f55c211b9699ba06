// CHandoffWayland: libwayland-client and the wlr data-control protocol, as SessionClipboard — and
// only SessionClipboard — sees them.
//
// Why: on Wayland an app sees the clipboard only while it has keyboard focus, so a background
// agent needs the compositor's data-control protocol (wlr-data-control-unstable-v1: sway and the
// other wlroots compositors, KDE Plasma) to read and set it (docs/clipboard.md, "Wayland").
// libwayland-client is the maintained reference implementation of the wire protocol; what it lacks
// is the protocol's interface tables and request stubs, which wayland-scanner would generate from
// the protocol's XML: data_control.c writes them by hand from the protocol's specification (four
// interfaces, eleven messages), because Swift cannot call the variadic wl_proxy_marshal_flags the
// generated stubs use, nor fill the listener structs of function pointers with closures that carry
// context. Each event is handed to one Swift callback with the connection's context pointer.
#ifndef C_HANDOFF_WAYLAND_H
#define C_HANDOFF_WAYLAND_H

#include <stdint.h>
#include <wayland-client.h>

struct zwlr_data_control_manager_v1;
struct zwlr_data_control_device_v1;
struct zwlr_data_control_source_v1;
struct zwlr_data_control_offer_v1;

/// What the compositor tells, each as one call of `handoff_wl_events.event`.
typedef enum handoff_wl_event_kind {
    /// A global: `text` its interface, `number` its name, `version` its version.
    HANDOFF_WL_GLOBAL = 1,
    /// A new offer (`offer`) whose types follow.
    HANDOFF_WL_OFFER = 2,
    /// `offer` offers MIME type `text`.
    HANDOFF_WL_OFFER_TYPE = 3,
    /// The clipboard now holds `offer` (NULL: nothing).
    HANDOFF_WL_SELECTION = 4,
    /// The device is no longer valid (the seat went away).
    HANDOFF_WL_FINISHED = 5,
    /// An app pastes type `text` of our `source`: write it to `fd` (ours to close).
    HANDOFF_WL_SEND = 6,
    /// Our `source` is no longer the clipboard.
    HANDOFF_WL_CANCELLED = 7,
    /// The primary selection now holds `offer` (never read: destroy it).
    HANDOFF_WL_PRIMARY = 8,
} handoff_wl_event_kind;

typedef struct handoff_wl_event {
    handoff_wl_event_kind kind;
    const char *text;
    uint32_t number;
    uint32_t version;
    struct zwlr_data_control_offer_v1 *offer;
    struct zwlr_data_control_source_v1 *source;
    int32_t fd;
} handoff_wl_event;

typedef struct handoff_wl_events {
    void *context;
    void (*event)(void *context, const handoff_wl_event *event);
} handoff_wl_events;

/// The registry, its globals told to `events` (which must outlive the connection).
struct wl_registry *handoff_wl_registry(struct wl_display *display, const handoff_wl_events *events);

/// Binds the global `name` as a seat, or as the data-control manager (at most version 2).
struct wl_seat *handoff_wl_bind_seat(struct wl_registry *registry, uint32_t name, uint32_t version);
struct zwlr_data_control_manager_v1 *handoff_wl_bind_data_control(struct wl_registry *registry, uint32_t name, uint32_t version);

/// The seat's data-control device; its offers and selections are told to `events`.
struct zwlr_data_control_device_v1 *handoff_wl_get_device(
    struct zwlr_data_control_manager_v1 *manager, struct wl_seat *seat, const handoff_wl_events *events);

/// A source offering `types`, its requests told to `events`; set as the clipboard.
struct zwlr_data_control_source_v1 *handoff_wl_offer(
    struct zwlr_data_control_manager_v1 *manager, struct zwlr_data_control_device_v1 *device,
    const char *const *types, int count, const handoff_wl_events *events);
/// Clears the clipboard if it holds `source`'s offer, and destroys it.
void handoff_wl_source_destroy(struct zwlr_data_control_source_v1 *source);

/// Asks the offer's owner to write type `type` into `fd` (the caller closes its copy).
void handoff_wl_offer_receive(struct zwlr_data_control_offer_v1 *offer, const char *type, int32_t fd);
void handoff_wl_offer_destroy(struct zwlr_data_control_offer_v1 *offer);

#endif
