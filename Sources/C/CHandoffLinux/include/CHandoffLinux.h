// CHandoffLinux: the Linux facts Swift's Glibc module does not show us.
//
// Why this exists: `struct ucred`, `SO_PEERCRED` and posix_spawn_file_actions_addclosefrom_np are
// declared only under _GNU_SOURCE, and the Glibc module Swift imports is built without it. The
// local API must know which user is on the other end of every connection (docs/local-api.md), so we declare
// a struct with ucred's exact layout here; peer_credentials.c, compiled with _GNU_SOURCE, proves
// the layout matches at build time. spawn.c does the same for starting child processes cleanly.
// descriptor_passing.c passes an open file over a Unix socket (SCM_RIGHTS), whose CMSG_* macros
// Swift cannot import.
#ifndef C_HANDOFF_LINUX_H
#define C_HANDOFF_LINUX_H

#include <spawn.h>
#include <stddef.h>
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

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34+, declared only under _GNU_SOURCE):
/// the child closes every descriptor from `lowfd` up. A daemon's sockets (NIO accepts without
/// close-on-exec) must never leak into the programs it starts.
int handoff_spawn_file_actions_closefrom(posix_spawn_file_actions_t *actions, int lowfd);

/// posix_spawn_file_actions_addchdir_np (glibc 2.29+, _GNU_SOURCE only): handlers start in the
/// user's home, not wherever the daemon happens to run.
int handoff_spawn_file_actions_chdir(posix_spawn_file_actions_t *actions, const char *path);

/// POSIX_SPAWN_SETSID (glibc 2.26+, _GNU_SOURCE only): a handler or browser runs in its own session,
/// so a signal aimed at the daemon's process group does not reach the user's applications.
int handoff_spawn_setsid_flag(void);

/// mallopt(M_MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD) (<malloc.h>, not in Swift's Glibc
/// module). Continuation streams allocate and free a 128 KiB buffer per read: at glibc's defaults
/// each one is a fresh mmap (or heap growth after a trim) whose pages fault in zeroed, which
/// halved stream throughput (bench/streams). Returns 1 when both were set.
int handoff_keep_bulk_buffers(size_t mmap_threshold, size_t trim_threshold);

/// malloc_trim(0) (<malloc.h>): gives the free pages of every arena back to the system, from the
/// middle of the heap too. After a burst of connections glibc keeps what they took (its trim at
/// free(3) only shrinks a heap's top, and only above the trim threshold). Returns 1 if any was.
int handoff_release_free_memory(void);

/// sendmsg(2) of `length` bytes with one descriptor attached (SCM_RIGHTS), retrying EINTR, without
/// SIGPIPE. Returns the bytes sent, or -1 with errno set. handoffctl hands handoffd the file a
/// continuation stream reads or writes, so the bytes need not pass through handoffctl.
long handoff_send_with_descriptor(int socket, const void *bytes, size_t length, int descriptor);

/// recvmsg(2) of up to `length` bytes, retrying EINTR; a descriptor that came with them (received
/// close-on-exec) goes to `*descriptor`, else -1 there; -2 if more than one came (all are closed).
/// Returns the bytes received (0 at end of file), or -1 with errno set.
long handoff_receive_with_descriptor(int socket, void *bytes, size_t length, int *descriptor);

/// read(2) / write(2) at the file's offset that never wait (preadv2/pwritev2 with RWF_NOWAIT,
/// _GNU_SOURCE only): -1 with EAGAIN where they would (data not in the page cache), EOPNOTSUPP
/// where the file cannot say. handoffd reads a stream's file on its event loop when the bytes are
/// in memory (they then go to encryption while still in the CPU's cache, with no thread hand-over)
/// and leaves the rest to a thread.
long handoff_read_nowait(int fd, void *bytes, size_t length);
long handoff_write_nowait(int fd, const void *bytes, size_t length);

/// pthread_setname_np for the calling thread (_GNU_SOURCE only): a thread handoffd starts for file
/// I/O would otherwise carry its creator's name, an event loop's, in `top -H`, perf and the tests
/// that count event loops.
int handoff_name_this_thread(const char *name);

/// renameat2(RENAME_NOREPLACE) (_GNU_SOURCE only): a received document takes its name only if
/// nothing has it yet — atomically, never replacing a file — where link(2) cannot (vfat, exFAT,
/// SMB). -1 with EEXIST when the name is taken; EINVAL or ENOSYS where the filesystem or kernel
/// cannot.
int handoff_rename_noreplace(const char *from, const char *to);

#endif
