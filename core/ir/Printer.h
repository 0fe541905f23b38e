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
///
/// A subgraph attribute (If's then_branch / else_branch) prints as a nested graph in the same
/// syntax, its statements two spaces deeper than the line it starts on and its closing brace one
/// step in from them; the node's remaining attributes and its `@name` follow the brace:
///
///       %y: f32[2] = If(%c, %a) {else_branch = graph @else(%a: f32[2]) -> (%n: f32[2]) {
///           %n: f32[2] = Neg(%a) @neg
///           return %n
///         }, then_branch = graph @then(%a: f32[2]) -> (%a: f32[2]) {
///           return %a
///         }} @if0
///
/// A subgraph is isolated from above: it names only its own inputs, constants and node outputs;
/// the outer values it reads are passed as explicit inputs of the node (for If, after the
/// condition, in the order of the branch's inputs).
std::string printGraph(const Graph& graph);

/// One node's text as printGraph writes it, without leading indentation or trailing newline (a
/// node with subgraph attributes spans several lines, indented as at the top level).
std::string printNode(const Node& node);

/// A type as the printer writes it: "f32[1,N,28,28]", with "@NHWC" when a layout is set.
std::string printType(const TensorType& type);

/// Constants with at most this many elements print their data inline.
inline constexpr int64_t kInlineConstantLimit = 16;

} // namespace sextant::ir
