#include "Allocator.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace sextant::ir {

void tuneAllocator() {
#if defined(__GLIBC__)
    mallopt(M_MXFAST, 0);
#endif
}

} // namespace sextant::ir
