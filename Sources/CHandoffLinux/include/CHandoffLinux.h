// CHandoffLinux: the Linux socket facts Swift's Glibc module does not show us.
//
// Why this exists: `struct ucred` and `SO_PEERCRED` are only declared under _GNU_SOURCE, and the
// Glibc module Swift imports is built without it. The local API must know which user is on the
// other end of every connection (SPEC §6), so we declare a struct with ucred's exact layout here;
// peer_credentials.c, compiled with _GNU_SOURCE, proves the layout matches at build time.
#ifndef C_HANDOFF_LINUX_H
#define C_HANDOFF_LINUX_H

#include <stdint.h>

/// Same size, order and types as glibc's `struct ucred` (pid_t, uid_t, gid_t).
typedef struct handoff_ucred {
    int32_t pid;
    uint32_t uid;
    uint32_t gid;
} handoff_ucred;

/// The value of SO_PEERCRED (level SOL_SOCKET), for getsockopt through a typed wrapper.
int handoff_so_peercred(void);

/// getsockopt(fd, SOL_SOCKET, SO_PEERCRED): 0 on success, else -1 with errno set.
int handoff_get_peer_credentials(int fd, handoff_ucred *out);

#endif
