#pragma once

// The op-specific half of tiling: what one output tile of a group costs (its SRAM pieces, its
// compute cycles and FLOPs), per work model of the op table (ir::WorkModel). TileSearch.cpp
// searches tiles with it; CoreSplit.cpp sizes cross-core parts with it. Internal to backend/.

#include "Grouping.h"
#include "MathUtil.h"
#include "Target.h"

#include <algorithm>

#include <functional>
#include <vector>

namespace sextant::backend {

/// What one tile costs: SRAM pieces and compute.
struct TileWork {
    uint64_t inBytes = 0;      ///< activation input tile(s)
    /// inBytes by input value, when the op reads several activations (an elementwise group, an
    /// attention); empty: all of inBytes is the node's first non-constant input.
    std::vector<std::pair<const ir::Value*, uint64_t>> inputs;
    uint64_t weightBytes = 0;  ///< weights (and bias) tile
    bool weightsSplit = false; ///< the weight tile differs between tiles (reloaded per tile)
    uint64_t outBytes = 0;
    /// The f32 sums of one output tile kept across a chunked reduction (a convolution's input
    /// channels in chunks): its slot holds them, then the result it stores. 0: no such sums.
    uint64_t accBytes = 0;
    uint64_t computeCycles = 0;
    uint64_t flops = 0;
};

/// The op-specific part of the cost model.
struct WorkModel {
    std::vector<int64_t> outDims;
    std::vector<int> splitAxes; ///< outermost first
    /// Extents of the dims the op reduces over, when they may be split too (global pooling):
    /// each chunk of them is accumulated into the output tile, which stays in SRAM until the
    /// last chunk. A tile passed to tileWork lists the output dims, then these.
    std::vector<int64_t> reduceDims;
    std::function<TileWork(const std::vector<int64_t>& tile)> tileWork;
};

/// ceil(a / b) for extents kept signed (tensor dims, tile extents, which are never negative
/// here): ceilDiv's rule, on values clamped to a >= 0 and b >= 1.
inline int64_t ceilDivExtent(int64_t a, int64_t b) {
    return static_cast<int64_t>(ceilDiv(static_cast<uint64_t>(std::max<int64_t>(a, 0)),
                                        static_cast<uint64_t>(std::max<int64_t>(b, 1))));
}

/// The cost model of a group's first node, by its op's work model. Fails for a host-only op
/// (no NPU cost model) and for a pooling without spatial dims, naming the node.
/// `chunkReductions`: a dense convolution may split its input channels (WorkModel::reduceDims).
Expected<WorkModel> workModel(const Group& g, const Target& t, bool chunkReductions = true);

} // namespace sextant::backend
