// preadv2/pwritev2 and RWF_NOWAIT are declared only under _GNU_SOURCE; see the header.
#define _GNU_SOURCE 1
#include <sys/uio.h>

#include "CHandoffLinux.h"

long handoff_read_nowait(int fd, void *bytes, size_t length) {
    struct iovec part = {.iov_base = bytes, .iov_len = length};
    return (long)preadv2(fd, &part, 1, -1, RWF_NOWAIT);
}

long handoff_write_nowait(int fd, const void *bytes, size_t length) {
    struct iovec part = {.iov_base = (void *)bytes, .iov_len = length};
    return (long)pwritev2(fd, &part, 1, -1, RWF_NOWAIT);
}
