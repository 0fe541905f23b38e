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
    // An arena of 1 GiB of address space, mapped up front (the kernel backs a page only when it
    // is first touched): segments mimalloc frees go back to it and stay mapped, instead of going
    // back to the OS. Without it, the reference executor's large tensors were mapped,
    // faulted in and unmapped again node after node (PaddleOCR det ran about 35 % slower than
    // with glibc's malloc); with it, as fast. Memory beyond the arena comes from the OS as usual.
    if (std::getenv("MIMALLOC_RESERVE_OS_MEMORY") == nullptr)
        (void)mi_reserve_os_memory(size_t{1} << 30, /*commit=*/true, /*allow_large=*/true);
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
