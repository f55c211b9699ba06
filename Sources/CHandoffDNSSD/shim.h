// CHandoffDNSSD: Avahi's Bonjour-compatible dns_sd.h (libavahi-compat-libdnssd-dev), as
// HandoffDiscovery — and only HandoffDiscovery — sees it.
//
// Why this exists: to give Swift one module for the header pkg-config points at
// (/usr/include/avahi-compat-libdns_sd). Nothing is added: the API imports as it is. What Avahi's
// implementation does and does not support is in FACTS.md (flags must be 0; no GetAddrInfo; TXT
// updates faster than 1/s stall it; every ref is its own client thread and fd).
#ifndef C_HANDOFF_DNSSD_H
#define C_HANDOFF_DNSSD_H

#include <dns_sd.h>

#endif
