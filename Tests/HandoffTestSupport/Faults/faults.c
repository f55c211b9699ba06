// An LD_PRELOAD library for fault tests (FaultInjection.swift builds it): it makes chosen system
// calls of a real handoffd fail as the kernel can make them fail — by policy, under load, or for a
// connection that is already gone — so that a test can show one connection's failure stays its own.
//
// Faults are injected only while the file named by HANDOFF_FAULT_ARM exists (a test sets up its
// account first, then arms). While armed:
//   HANDOFF_FAULT_SETSOCKOPT=N:ERRNO    every Nth setsockopt(2) on a connected TCP socket (an
//                                       accepted connection) fails with ERRNO; sockets being set up
//                                       to listen or to connect are spared
//   HANDOFF_FAULT_ACCEPT=N:E1,E2,...    every Nth accept(2)/accept4(2) on a TCP listening socket
//                                       fails with E1, then E2, ... in turn; the connection stays
//                                       queued, as it does when the kernel fails accept
// Every injected failure appends one line to HANDOFF_FAULT_LOG: "setsockopt ERRNO" or
// "accept ERRNO".
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static atomic_long setsockopt_calls;
static atomic_long accept_calls;
static atomic_long accept_failures;

static int armed(void) {
    const char *arm = getenv("HANDOFF_FAULT_ARM");
    struct stat st;
    return arm != NULL && stat(arm, &st) == 0;
}

static void record(const char *call, int error) {
    const char *path = getenv("HANDOFF_FAULT_LOG");
    if (path == NULL) return;
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[64];
    int n = snprintf(line, sizeof line, "%s %d\n", call, error);
    if (n > 0) (void)!write(fd, line, (size_t)n);
    close(fd);
}

static int is_connected(int fd) {
    struct sockaddr_storage peer;
    socklen_t len = sizeof peer;
    return getpeername(fd, (struct sockaddr *)&peer, &len) == 0;
}

static int is_tcp(int fd, int *listening) {
    int domain = 0, type = 0, accepting = 0;
    socklen_t len = sizeof domain;
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) return 0;
    len = sizeof type;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0) return 0;
    len = sizeof accepting;
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &len) != 0) return 0;
    *listening = accepting;
    return (domain == AF_INET || domain == AF_INET6) && type == SOCK_STREAM;
}

// "N:E1,E2,..." → N, and the errno for failure number `k` (0-based).
static long every(const char *spec) { return spec ? strtol(spec, NULL, 10) : 0; }

static int nth_errno(const char *spec, long k) {
    const char *list = strchr(spec, ':');
    if (list == NULL) return EIO;
    list++;
    long count = 1;
    for (const char *p = list; *p; p++) if (*p == ',') count++;
    long want = k % count;
    const char *p = list;
    for (long i = 0; i < want; i++) p = strchr(p, ',') + 1;
    return (int)strtol(p, NULL, 10);
}

int setsockopt(int fd, int level, int name, const void *value, socklen_t length) {
    static int (*real)(int, int, int, const void *, socklen_t);
    if (real == NULL) real = dlsym(RTLD_NEXT, "setsockopt");
    const char *spec = getenv("HANDOFF_FAULT_SETSOCKOPT");
    long n = every(spec);
    int listening = 0;
    if (n > 0 && armed() && is_tcp(fd, &listening) && !listening && is_connected(fd)) {
        if ((atomic_fetch_add(&setsockopt_calls, 1) + 1) % n == 0) {
            int error = nth_errno(spec, 0);
            record("setsockopt", error);
            errno = error;
            return -1;
        }
    }
    return real(fd, level, name, value, length);
}

static int accept_fault(int fd) {
    const char *spec = getenv("HANDOFF_FAULT_ACCEPT");
    long n = every(spec);
    int listening = 0;
    if (n > 0 && armed() && is_tcp(fd, &listening) && listening) {
        if ((atomic_fetch_add(&accept_calls, 1) + 1) % n == 0) {
            int error = nth_errno(spec, atomic_fetch_add(&accept_failures, 1));
            record("accept", error);
            return error;
        }
    }
    return 0;
}

int accept4(int fd, struct sockaddr *address, socklen_t *length, int flags) {
    static int (*real)(int, struct sockaddr *, socklen_t *, int);
    if (real == NULL) real = dlsym(RTLD_NEXT, "accept4");
    int error = accept_fault(fd);
    if (error != 0) {
        errno = error;
        return -1;
    }
    return real(fd, address, length, flags);
}

int accept(int fd, struct sockaddr *address, socklen_t *length) {
    static int (*real)(int, struct sockaddr *, socklen_t *);
    if (real == NULL) real = dlsym(RTLD_NEXT, "accept");
    int error = accept_fault(fd);
    if (error != 0) {
        errno = error;
        return -1;
    }
    return real(fd, address, length);
}
