// CHandoffSDBus: systemd's sd-bus (libsystemd-dev) as HandoffDBus — and only HandoffDBus — sees it.
//
// Why sd-bus: it is a maintained D-Bus client library already on every systemd system (no new
// runtime dependency), passes Unix file descriptors, and leaves the event loop to its caller
// (sd_bus_get_fd/get_events/get_timeout + sd_bus_process), so one thread of ours can drive it
// (docs/architecture.md, "D-Bus").
//
// Why there are no wrappers: Swift does not import C variadic functions, and sd-bus spells the
// convenient message calls (sd_bus_message_append, sd_bus_call_method, sd_bus_reply_method_return)
// as variadic ones. HandoffDBus uses only the non-variadic calls they are built on
// (sd_bus_message_new_*, append_basic, open_container, read_basic, enter_container, sd_bus_send,
// sd_bus_call_async), so the header imports as it is.
#ifndef C_HANDOFF_SDBUS_H
#define C_HANDOFF_SDBUS_H

#include <systemd/sd-bus.h>

#endif
