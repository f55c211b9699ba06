// CHandoffDNSSD: Avahi's Bonjour-compatible dns_sd.h (libavahi-compat-libdnssd-dev), as
// HandoffDiscovery — and only HandoffDiscovery — sees it.
//
// Why this exists: to give Swift one module for the header pkg-config points at
// (/usr/include/avahi-compat-libdns_sd). The API imports as it is. What Avahi's implementation
// does and does not support is in docs/platform.md (flags must be 0; no GetAddrInfo; TXT updates faster
// than 1/s stall it; every ref is its own client thread and fd).
//
// One addition, `handoff_dnssd_zero_allocations`: the compat layer allocates each ref without
// clearing it and sets only the callback of the call that made it, and when avahi-daemon goes
// away it calls the *browse* callback of a resolve or query ref if that field is not NULL — heap
// garbage, so handoffd jumped to a random address when avahi-daemon restarted (docs/discovery.md,
// "When avahi-daemon restarts"). Avahi lets a program choose its allocator; ours clears what it
// allocates, so unset callbacks are NULL and the right one is called.
#ifndef C_HANDOFF_DNSSD_H
#define C_HANDOFF_DNSSD_H

#include <dns_sd.h>
#include <avahi-common/malloc.h>
#include <stdlib.h>

static void *handoff_dnssd_zeroed_malloc(size_t size) {
    return calloc(1, size == 0 ? 1 : size);
}

/// Must run before any other avahi call in the process (avahi_set_allocator is not thread-safe).
static inline void handoff_dnssd_zero_allocations(void) {
    static const AvahiAllocator allocator = { handoff_dnssd_zeroed_malloc, free, realloc, calloc };
    avahi_set_allocator(&allocator);
}

#endif
