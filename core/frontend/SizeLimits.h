#pragma once

// The largest tensor Sextant accepts. A model may declare any extent (an ONNX dim is an int64), but
// nothing downstream — the reference executor, the simulator, input generation — can allocate a
// tensor of terabytes; the importer rejects such a model up front with the value named, instead of
// letting a later stage try the allocation.

#include "core/ir/Error.h"
#include "core/ir/Graph.h"

#include <cstdint>

namespace sextant::frontend {

/// 4 GiB: far above any tensor of the models Sextant targets, far below what would exhaust memory.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 32;

/// The byte size of `type` counting only its known dims (a symbolic dim counts as 1, so this is a
/// lower bound of the size once specialised); -1 when that overflows int64. 0 if a dim is 0.
int64_t knownByteSize(const ir::TensorType& type);

/// Fails, naming the value and its type, when a graph input or a node output has a known size over
/// kMaxTensorBytes, also inside subgraphs (If branches; the error then names the outer node and
/// the attribute). Called by importOnnx after type inference.
Status checkTensorSizes(const ir::Graph& graph);

} // namespace sextant::frontend
