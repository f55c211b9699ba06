// renameat2 and RENAME_NOREPLACE are declared only under _GNU_SOURCE; see the header.
#define _GNU_SOURCE 1
#include <fcntl.h>
#include <stdio.h>

#include "CHandoffLinux.h"

int handoff_rename_noreplace(const char *from, const char *to) { return renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE); }
