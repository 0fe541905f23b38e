#pragma once

// Helpers shared by the backend tests.

#include "core/ir/Tensor.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace sextant::backend::test {

/// An f32 tensor of `shape` whose elements ramp from `start` in steps of 0.001, repeating every
/// 97: distinct enough that a value read from the wrong place shows.
inline ir::Tensor filled(std::vector<int64_t> shape, float start) {
    ir::Tensor t(ir::DType::F32, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i)
        t.set(i, start + 0.001 * static_cast<double>(i % 97));
    return t;
}

} // namespace sextant::backend::test
