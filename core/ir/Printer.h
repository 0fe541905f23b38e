#pragma once

#include "Graph.h"

#include <string>

namespace sextant::ir {

/// The stable textual form of a graph, one node per line so that text diffs between pass
/// snapshots show real changes:
///
///     graph @mnist(%Input3: f32[1,1,28,28]) -> (%out: f32[1,10]) {
///       %W = const f32[8,1,5,5] digest("9c0d3e5a1b2f4c6d")
///       %shape = const i64[2] [1, 256]
///       %y: f32[1,8,28,28] = Conv(%Input3, %W) {auto_pad = "SAME_UPPER"} @conv1 origins=["conv1"] by="import"
///       return %out
///     }
///
/// Constants of more than 16 elements print as a content digest (Tensor::digest), smaller ones
/// inline. Attributes are sorted by name, floats print in shortest round-trip form, an omitted
/// optional input prints as `none`, and names that are not [A-Za-z0-9_.]+ are quoted and escaped.
/// parseGraph (Parser.h) reads this back exactly.
std::string printGraph(const Graph& graph);

/// One node's line (without indentation or newline), as printGraph writes it.
std::string printNode(const Node& node);

/// A type as the printer writes it: "f32[1,N,28,28]", with "@NHWC" when a layout is set.
std::string printType(const TensorType& type);

/// Constants with at most this many elements print their data inline.
inline constexpr int64_t kInlineConstantLimit = 16;

} // namespace sextant::ir
