// Compiled with _GNU_SOURCE so that glibc declares struct ucred and SO_PEERCRED; see the header.
#define _GNU_SOURCE 1
#include <stddef.h>
#include <sys/socket.h>

#include "CHandoffLinux.h"

_Static_assert(sizeof(struct ucred) == sizeof(handoff_ucred), "ucred size");
_Static_assert(offsetof(struct ucred, pid) == offsetof(handoff_ucred, pid), "ucred.pid offset");
_Static_assert(offsetof(struct ucred, uid) == offsetof(handoff_ucred, uid), "ucred.uid offset");
_Static_assert(offsetof(struct ucred, gid) == offsetof(handoff_ucred, gid), "ucred.gid offset");

int handoff_so_peercred(void) { return SO_PEERCRED; }

int handoff_get_peer_credentials(int fd, handoff_ucred *out) {
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        return -1;
    }
    out->pid = cred.pid;
    out->uid = cred.uid;
    out->gid = cred.gid;
    return 0;
}
