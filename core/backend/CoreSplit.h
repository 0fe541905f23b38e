#pragma once

// The cross-core split: whether a group is worth dividing between AI cores, and how. Lower.cpp
// asks it once per group, after the tile search has priced the whole group; the scheduler then
// places the parts' Tasks (Scheduler.h).

#include "Tiling.h"

#include <optional>
#include <utility>
#include <vector>

namespace sextant::backend {

/// How a group's output is shared out across cores.
struct SplitPlan {
    int axis = -1; ///< -1: one Task does it all
    std::vector<std::pair<int64_t, int64_t>> ranges; ///< [begin, end) along `axis`, one per part
    std::vector<TaskCost> costs;                      ///< per part
};

/// DESIGN §6, scheduling: "do not split work that is cheaper than the event it would need". A
/// group with a single output is split into K parts along one of the two outermost dims its cost
/// model can split (K up to the target's cores; in C0 blocks along a blocked output's channels)
/// when a part plus the cross-core event latency and a dispatch costs less than `whole`; the dim
/// and K that cost least win. Each part's cost is chooseTiling's for its slice: a convolution
/// split by output channels still reads its whole input in every part, and that is in the figure.
/// At most `maxParts` parts.
/// Each part is tiled as `tiles` says.
Expected<SplitPlan> chooseSplit(const Group& group, const Target& target, const TaskCost& whole, int maxParts,
                                TileOptions tiles = {});

/// `group` split along `axis` into `ranges` (a neighbour's split: equal parts but the last), priced
/// per part as chooseSplit prices its candidates. Nothing when the group cannot be split so: not
/// one node, `axis` not one its cost model splits or of another extent, or a part that does not
/// tile.
std::optional<SplitPlan> splitAlong(const Group& group, const Target& target, int axis,
                                    const std::vector<std::pair<int64_t, int64_t>>& ranges,
                                    TileOptions tiles = {});

/// Whether a part of `consumer` that computes a slice of dim `axis` of its output reads only the
/// same slice of `input` (one of its activation inputs): elementwise ops and groups whose input
/// has the output's extent along `axis`, and poolings and depthwise convolutions along the batch
/// or the channels. Then the part depends only on the producer's part that writes that slice,
/// when the producer is split the same way.
bool readsOwnSlice(const ir::Node& consumer, const ir::Value& input, int axis);

/// The rows [begin, end) of dim `axis` (a spatial dim, >= 2) of input 0 that a part of 2-D
/// convolution `conv` (Conv or FusedConv, explicit or VALID padding) computing output rows
/// [outBegin, outEnd) reads: its window, the zero padding left out. Nothing for another op or
/// axis. A pointwise convolution's window is its own slice; a 3x3 one's reaches a row into each
/// neighbour's (its halo). A ConvTranspose / FusedConvTranspose reads the input rows that scatter
/// into the output rows: for kernel == stride, no padding, exactly the input stripe. A MaxPool or
/// AveragePool reads a window of its kernel_shape as a convolution would.
std::optional<std::pair<int64_t, int64_t>> convWindowRows(const ir::Node& conv, int axis, int64_t outBegin,
                                                          int64_t outEnd);

} // namespace sextant::backend
