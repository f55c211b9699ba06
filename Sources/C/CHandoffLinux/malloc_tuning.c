// mallopt(3) lives in <malloc.h>, which Swift's Glibc module does not import. See the header.
#include <malloc.h>

#include "CHandoffLinux.h"

int handoff_keep_bulk_buffers(size_t mmap_threshold, size_t trim_threshold) {
    int ok = mallopt(M_MMAP_THRESHOLD, (int)mmap_threshold);
    ok &= mallopt(M_TRIM_THRESHOLD, (int)trim_threshold);
    return ok;
}

int handoff_release_free_memory(void) {
    return malloc_trim(0);
}
