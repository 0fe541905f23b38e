#pragma once

#include <cstdint>

namespace sextant::ir {

/// ceil(a / b): tiles, cycles and blocks counted whole, and the ops' output extents (SAME
/// padding, ceil_mode pooling, slice lengths, NC1HWC0's C1). A divisor of 0 counts as 1 (the
/// result is `a`), the same rule alignUp applies to an alignment of 0, so "no divisor" means one
/// thing everywhere. Exact for every `a`: no `a + b - 1` that wraps near UINT64_MAX. Callers
/// with signed extents pass non-negative values and cast the result back.
constexpr uint64_t ceilDiv(uint64_t a, uint64_t b) {
    if (b <= 1)
        return a;
    return a / b + (a % b != 0 ? 1 : 0);
}

/// `v` rounded up to a multiple of `align` (buffer offsets, SRAM working sets, descriptors). An
/// alignment of 0 or 1 leaves `v` as it is; 0 stays 0 for every alignment.
constexpr uint64_t alignUp(uint64_t v, uint64_t align) {
    return align <= 1 ? v : ceilDiv(v, align) * align;
}

} // namespace sextant::ir
