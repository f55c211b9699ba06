// SCM_RIGHTS needs the CMSG_* macros, which Swift cannot import (they are function-like macros over
// a variable-length control buffer). See the header.
#define _GNU_SOURCE 1
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "CHandoffLinux.h"

long handoff_send_with_descriptor(int socket, const void *bytes, size_t length, int descriptor) {
    struct iovec part = {.iov_base = (void *)bytes, .iov_len = length};
    union {
        char space[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof(control));
    struct msghdr message = {.msg_iov = &part, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof(control.space)};
    struct cmsghdr *header = CMSG_FIRSTHDR(&message);
    header->cmsg_level = SOL_SOCKET;
    header->cmsg_type = SCM_RIGHTS;
    header->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(header), &descriptor, sizeof(int));
    ssize_t sent;
    do {
        sent = sendmsg(socket, &message, MSG_NOSIGNAL);
    } while (sent < 0 && errno == EINTR);
    return (long)sent;
}

long handoff_receive_with_descriptor(int socket, void *bytes, size_t length, int *descriptor) {
    *descriptor = -1;
    struct iovec part = {.iov_base = bytes, .iov_len = length};
    // Room for a few, so that a sender passing more than one is noticed and none of them leaks.
    union {
        char space[CMSG_SPACE(4 * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr message = {.msg_iov = &part, .msg_iovlen = 1, .msg_control = control.space, .msg_controllen = sizeof(control.space)};
    ssize_t received;
    do {
        received = recvmsg(socket, &message, MSG_CMSG_CLOEXEC);
    } while (received < 0 && errno == EINTR);
    if (received < 0) {
        return -1;
    }
    int count = 0;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header != NULL; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        size_t n = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(header) + i * sizeof(int), sizeof(int));
            if (count++ == 0) {
                *descriptor = fd;
            } else {
                close(fd);
            }
        }
    }
    if (count > 1 || (message.msg_flags & MSG_CTRUNC)) {
        if (*descriptor >= 0) {
            close(*descriptor);
        }
        *descriptor = -2;
    }
    return (long)received;
}
