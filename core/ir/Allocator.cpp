#include "Allocator.h"

#include <cstdlib>

#if defined(SEXTANT_WITH_MIMALLOC)
#include <mimalloc.h>
#elif defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sextant::ir {

void tuneAllocator() {
#if defined(SEXTANT_WITH_MIMALLOC)
    // Large OS pages: mimalloc asks for its 2 MiB-aligned segments to be backed by transparent
    // huge pages (madvise), which the kernel grants where THP is "madvise" or "always". A user's
    // MIMALLOC_LARGE_OS_PAGES still wins.
    if (std::getenv("MIMALLOC_LARGE_OS_PAGES") == nullptr)
        mi_option_enable(mi_option_large_os_pages);
#elif defined(__GLIBC__)
    mallopt(M_MXFAST, 0);
#endif
}

const char* describeAllocator() {
#if defined(SEXTANT_WITH_MIMALLOC)
    return mi_option_is_enabled(mi_option_large_os_pages) ? "mimalloc, huge pages asked for"
                                                          : "mimalloc, 4 KiB pages";
#elif defined(__GLIBC__)
    return "glibc malloc, no fastbins";
#else
    return "the C library's malloc";
#endif
}

} // namespace sextant::ir
