#pragma once

// The reference executor: runs an IR graph with the op table's reference kernels in float64 (the
// accuracy oracle) or float32 (what a plain CPU framework would compute).

#include "core/ir/Error.h"
#include "core/ir/Graph.h"
#include "core/ir/OpRegistry.h"
#include "core/ir/Tensor.h"

#include <map>
#include <span>
#include <string>
#include <vector>

namespace sextant::runtime {

/// Runs `graph` on `inputs` (one per graph input, in order) computing in `compute` (F64 or F32).
/// Float inputs are cast to `compute`; integer and bool inputs must match the declared dtype. Each
/// input's shape must match its declared one (a symbolic dim accepts any extent, but the same
/// symbol must get the same extent everywhere). Returns the graph outputs in order, float outputs
/// in `compute`. If `values` is given it receives every value computed, by name, so accuracy tools
/// can compare intermediate tensors. `onNode`, when set, hears every node as it completes (see
/// ir::KernelContext::onNode); FloatRangeWatch uses it.
Expected<std::vector<ir::Tensor>> runReference(const ir::Graph& graph,
                                               std::span<const ir::Tensor> inputs,
                                               ir::DType compute,
                                               std::map<std::string, ir::Tensor>* values = nullptr,
                                               decltype(ir::KernelContext::onNode) onNode = {});

} // namespace sextant::runtime
