#ifndef CHANDOFF_READ_GUARD_H
#define CHANDOFF_READ_GUARD_H

#include <sys/types.h>

// read(2) as handoffd's code and SwiftNIO's see it (read_guard.c says why): a socket's EINVAL —
// a connection the kernel ended over a path that drops everything — comes back as ENETUNREACH.
// Nobody calls it by name: handoffd's link (`--wrap=read`) sends every read(2) here.
ssize_t __wrap_read(int fd, void *buffer, size_t count);

#endif
