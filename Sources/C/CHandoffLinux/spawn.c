// Compiled with _GNU_SOURCE for posix_spawn_file_actions_addclosefrom_np; see the header.
#define _GNU_SOURCE 1
#include <spawn.h>

#include "CHandoffLinux.h"

int handoff_spawn_file_actions_closefrom(posix_spawn_file_actions_t *actions, int lowfd) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowfd);
}

int handoff_spawn_file_actions_chdir(posix_spawn_file_actions_t *actions, const char *path) {
    return posix_spawn_file_actions_addchdir_np(actions, path);
}

int handoff_spawn_setsid_flag(void) {
    return POSIX_SPAWN_SETSID;
}
