// pthread_setname_np is declared only under _GNU_SOURCE; see the header.
#define _GNU_SOURCE 1
#include <pthread.h>

#include "CHandoffLinux.h"

int handoff_name_this_thread(const char *name) { return pthread_setname_np(pthread_self(), name); }
