#pragma once

#include "core/ir/Error.h"
#include "core/ir/Graph.h"
#include "core/ir/Tensor.h"

#include <cstdint>
#include <vector>

namespace sextant::runtime {

/// Deterministic inputs for a graph when the user gives none: float inputs uniform in [-1, 1),
/// integer inputs in [0, 10), bools alternating, from a fixed xorshift stream seeded by `seed` and
/// the input's position. Fails (naming the input) when an input's shape is not static.
Expected<std::vector<ir::Tensor>> generateInputs(const ir::Graph& graph, uint64_t seed = 1);

} // namespace sextant::runtime
