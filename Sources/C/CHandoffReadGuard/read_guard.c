// handoffd is linked with `--wrap=read` (Package.swift): every read(2) in its own code and in
// SwiftNIO's comes here first. Why: when the kernel ends a TCP connection itself (keepalive or
// TCP_USER_TIMEOUT ran out), read(2) reports the connection's last *soft* error, and over IPv6
// that is EINVAL when a blackhole route or rule dropped the probes (the route's own error, kept
// by the IPv6 transmit path). SwiftNIO takes EINVAL from read(2) for a bug of its own and stops
// the process. On a socket the error says what happened — the network has no way to the peer —
// so it is reported as ENETUNREACH, and the connection fails like any other.
// docs/platform.md, "A path that goes dark".
#include "CHandoffReadGuard.h"

#include <errno.h>
#include <sys/stat.h>

ssize_t __real_read(int fd, void *buffer, size_t count);

ssize_t __wrap_read(int fd, void *buffer, size_t count) {
    ssize_t n = __real_read(fd, buffer, count);
    if (n < 0 && errno == EINVAL) {
        struct stat st;
        int socket = fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode);
        errno = socket ? ENETUNREACH : EINVAL;
    }
    return n;
}
