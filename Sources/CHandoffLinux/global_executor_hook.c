// See handoff_set_global_enqueue_hook in the header.
#include "CHandoffLinux.h"

// Defined by the Swift runtime (libswift_Concurrency), hidden when it is linked in statically.
extern void *swift_task_enqueueGlobal_hook;

void handoff_set_global_enqueue_hook(void *hook) { swift_task_enqueueGlobal_hook = hook; }
