// The wlr data-control protocol's interface tables and request stubs, written from its
// specification (wlr-data-control-unstable-v1, version 2), as wayland-scanner would generate them;
// and the listeners that hand each event to SessionClipboard's one callback (CHandoffWayland.h).
#include "CHandoffWayland.h"

#include <stddef.h>

extern const struct wl_interface zwlr_data_control_manager_v1_interface;
extern const struct wl_interface zwlr_data_control_device_v1_interface;
extern const struct wl_interface zwlr_data_control_source_v1_interface;
extern const struct wl_interface zwlr_data_control_offer_v1_interface;

// The object types of each message's arguments, in signature order (NULL for non-objects).
static const struct wl_interface *manager_create_source_types[] = {&zwlr_data_control_source_v1_interface};
static const struct wl_interface *manager_get_device_types[] = {&zwlr_data_control_device_v1_interface, &wl_seat_interface};
static const struct wl_interface *device_selection_types[] = {&zwlr_data_control_source_v1_interface};
static const struct wl_interface *device_offer_types[] = {&zwlr_data_control_offer_v1_interface};
static const struct wl_interface *no_types[] = {NULL, NULL};

static const struct wl_message manager_requests[] = {
    {"create_data_source", "n", manager_create_source_types},
    {"get_data_device", "no", manager_get_device_types},
    {"destroy", "", no_types},
};

static const struct wl_message device_requests[] = {
    {"set_selection", "?o", device_selection_types},
    {"destroy", "", no_types},
    {"set_primary_selection", "2?o", device_selection_types},
};

static const struct wl_message device_events[] = {
    {"data_offer", "n", device_offer_types},
    {"selection", "?o", device_offer_types},
    {"finished", "", no_types},
    {"primary_selection", "2?o", device_offer_types},
};

static const struct wl_message source_requests[] = {
    {"offer", "s", no_types},
    {"destroy", "", no_types},
};

static const struct wl_message source_events[] = {
    {"send", "sh", no_types},
    {"cancelled", "", no_types},
};

static const struct wl_message offer_requests[] = {
    {"receive", "sh", no_types},
    {"destroy", "", no_types},
};

static const struct wl_message offer_events[] = {
    {"offer", "s", no_types},
};

const struct wl_interface zwlr_data_control_manager_v1_interface = {"zwlr_data_control_manager_v1", 2, 3, manager_requests, 0, NULL};
const struct wl_interface zwlr_data_control_device_v1_interface = {"zwlr_data_control_device_v1", 2, 3, device_requests, 4, device_events};
const struct wl_interface zwlr_data_control_source_v1_interface = {"zwlr_data_control_source_v1", 1, 2, source_requests, 2, source_events};
const struct wl_interface zwlr_data_control_offer_v1_interface = {"zwlr_data_control_offer_v1", 1, 2, offer_requests, 1, offer_events};

enum { MANAGER_CREATE_SOURCE = 0, MANAGER_GET_DEVICE = 1 };
enum { DEVICE_SET_SELECTION = 0 };
enum { SOURCE_OFFER = 0, SOURCE_DESTROY = 1 };
enum { OFFER_RECEIVE = 0, OFFER_DESTROY = 1 };

static void tell(const handoff_wl_events *events, handoff_wl_event event) {
    events->event(events->context, &event);
}

// Registry

static void registry_global(void *data, struct wl_registry *registry, uint32_t name, const char *interface, uint32_t version) {
    (void)registry;
    tell(data, (handoff_wl_event){.kind = HANDOFF_WL_GLOBAL, .text = interface, .number = name, .version = version, .fd = -1});
}

static void registry_global_remove(void *data, struct wl_registry *registry, uint32_t name) {
    (void)data, (void)registry, (void)name;
}

static const struct wl_registry_listener registry_listener = {registry_global, registry_global_remove};

struct wl_registry *handoff_wl_registry(struct wl_display *display, const handoff_wl_events *events) {
    struct wl_registry *registry = wl_display_get_registry(display);
    if (registry != NULL) wl_registry_add_listener(registry, &registry_listener, (void *)events);
    return registry;
}

struct wl_seat *handoff_wl_bind_seat(struct wl_registry *registry, uint32_t name, uint32_t version) {
    return wl_registry_bind(registry, name, &wl_seat_interface, version < 1 ? version : 1);
}

struct zwlr_data_control_manager_v1 *handoff_wl_bind_data_control(struct wl_registry *registry, uint32_t name, uint32_t version) {
    return wl_registry_bind(registry, name, &zwlr_data_control_manager_v1_interface, version < 2 ? version : 2);
}

// Offers: their types.

static void offer_offer(void *data, struct zwlr_data_control_offer_v1 *offer, const char *type) {
    tell(data, (handoff_wl_event){.kind = HANDOFF_WL_OFFER_TYPE, .text = type, .offer = offer, .fd = -1});
}

static const struct {
    void (*offer)(void *, struct zwlr_data_control_offer_v1 *, const char *);
} offer_listener = {offer_offer};

// The device: new offers, the clipboard's, the primary selection's (ignored), its end.

static void device_data_offer(void *data, struct zwlr_data_control_device_v1 *device, struct zwlr_data_control_offer_v1 *offer) {
    (void)device;
    wl_proxy_add_listener((struct wl_proxy *)offer, (void (**)(void))&offer_listener, data);
    tell(data, (handoff_wl_event){.kind = HANDOFF_WL_OFFER, .offer = offer, .fd = -1});
}

static void device_selection(void *data, struct zwlr_data_control_device_v1 *device, struct zwlr_data_control_offer_v1 *offer) {
    (void)device;
    tell(data, (handoff_wl_event){.kind = HANDOFF_WL_SELECTION, .offer = offer, .fd = -1});
}

static void device_finished(void *data, struct zwlr_data_control_device_v1 *device) {
    (void)device;
    tell(data, (handoff_wl_event){.kind = HANDOFF_WL_FINISHED, .fd = -1});
}

static void device_primary_selection(void *data, struct zwlr_data_control_device_v1 *device, struct zwlr_data_control_offer_v1 *offer) {
    (void)device;
    tell(data, (handoff_wl_event){.kind = HANDOFF_WL_PRIMARY, .offer = offer, .fd = -1});
}

static const struct {
    void (*data_offer)(void *, struct zwlr_data_control_device_v1 *, struct zwlr_data_control_offer_v1 *);
    void (*selection)(void *, struct zwlr_data_control_device_v1 *, struct zwlr_data_control_offer_v1 *);
    void (*finished)(void *, struct zwlr_data_control_device_v1 *);
    void (*primary_selection)(void *, struct zwlr_data_control_device_v1 *, struct zwlr_data_control_offer_v1 *);
} device_listener = {device_data_offer, device_selection, device_finished, device_primary_selection};

struct zwlr_data_control_device_v1 *handoff_wl_get_device(
    struct zwlr_data_control_manager_v1 *manager, struct wl_seat *seat, const handoff_wl_events *events) {
    struct wl_proxy *device = wl_proxy_marshal_flags(
        (struct wl_proxy *)manager, MANAGER_GET_DEVICE, &zwlr_data_control_device_v1_interface,
        wl_proxy_get_version((struct wl_proxy *)manager), 0, NULL, seat);
    if (device != NULL) wl_proxy_add_listener(device, (void (**)(void))&device_listener, (void *)events);
    return (struct zwlr_data_control_device_v1 *)device;
}

// Sources: what an app pastes from ours, and its end.

static void source_send(void *data, struct zwlr_data_control_source_v1 *source, const char *type, int32_t fd) {
    tell(data, (handoff_wl_event){.kind = HANDOFF_WL_SEND, .text = type, .source = source, .fd = fd});
}

static void source_cancelled(void *data, struct zwlr_data_control_source_v1 *source) {
    tell(data, (handoff_wl_event){.kind = HANDOFF_WL_CANCELLED, .source = source, .fd = -1});
}

static const struct {
    void (*send)(void *, struct zwlr_data_control_source_v1 *, const char *, int32_t);
    void (*cancelled)(void *, struct zwlr_data_control_source_v1 *);
} source_listener = {source_send, source_cancelled};

struct zwlr_data_control_source_v1 *handoff_wl_offer(
    struct zwlr_data_control_manager_v1 *manager, struct zwlr_data_control_device_v1 *device,
    const char *const *types, int count, const handoff_wl_events *events) {
    struct wl_proxy *source = wl_proxy_marshal_flags(
        (struct wl_proxy *)manager, MANAGER_CREATE_SOURCE, &zwlr_data_control_source_v1_interface,
        wl_proxy_get_version((struct wl_proxy *)manager), 0, NULL);
    if (source == NULL) return NULL;
    wl_proxy_add_listener(source, (void (**)(void))&source_listener, (void *)events);
    for (int i = 0; i < count; i++) {
        wl_proxy_marshal_flags(source, SOURCE_OFFER, NULL, wl_proxy_get_version(source), 0, types[i]);
    }
    wl_proxy_marshal_flags(
        (struct wl_proxy *)device, DEVICE_SET_SELECTION, NULL, wl_proxy_get_version((struct wl_proxy *)device), 0, source);
    return (struct zwlr_data_control_source_v1 *)source;
}

void handoff_wl_source_destroy(struct zwlr_data_control_source_v1 *source) {
    struct wl_proxy *proxy = (struct wl_proxy *)source;
    wl_proxy_marshal_flags(proxy, SOURCE_DESTROY, NULL, wl_proxy_get_version(proxy), WL_MARSHAL_FLAG_DESTROY);
}

void handoff_wl_offer_receive(struct zwlr_data_control_offer_v1 *offer, const char *type, int32_t fd) {
    struct wl_proxy *proxy = (struct wl_proxy *)offer;
    wl_proxy_marshal_flags(proxy, OFFER_RECEIVE, NULL, wl_proxy_get_version(proxy), 0, type, fd);
}

void handoff_wl_offer_destroy(struct zwlr_data_control_offer_v1 *offer) {
    struct wl_proxy *proxy = (struct wl_proxy *)offer;
    wl_proxy_marshal_flags(proxy, OFFER_DESTROY, NULL, wl_proxy_get_version(proxy), WL_MARSHAL_FLAG_DESTROY);
}
