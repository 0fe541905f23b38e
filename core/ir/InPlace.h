#pragma once

#include "Graph.h"

#include <string>

namespace sextant::ir {

/// Why Concat `node`'s inputs cannot be written straight into their parts of its output (rule
/// concat-in-place, and the backend's lowersInPlace, which rechecks) with a channel block of
/// `c0`; empty if they can. Each input must be a contiguous part of the output: every dim before
/// the axis 1, and either a plain layout or NC1HWC0 joined along whole channel blocks. Each must
/// be written by a node (not a constant, a graph input or a view of another buffer), be no graph
/// output, and be joined once, by this Concat alone of those written in place: a tensor has one
/// place. The output must not be a graph output.
std::string concatInPlaceReason(const Node& node, int c0);

} // namespace sextant::ir
