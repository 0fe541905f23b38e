#pragma once

#include "Graph.h"

#include <string>
#include <string_view>
#include <utility>
#include <vector>

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

/// The names under which the IR text shows a node's typed fields, as if they were attributes
/// (the syntax they had when they were attributes, so older text still parses).
inline constexpr std::string_view kBodyFieldName = "body";           ///< Node::body()
inline constexpr std::string_view kPrecisionFieldName = "precision"; ///< Node::precision()
inline constexpr std::string_view kViewFieldName = "view";           ///< Node::isView()

/// The node's typed fields that are set, as the attributes they print as, sorted by name:
/// body = ["Mul(i0,i1)", ...] (ElementwiseGroup), precision = "f16", view = 1.
std::vector<std::pair<std::string_view, Attribute>> fieldAttributes(const Node& node);

/// Calls f(std::string_view name, const Attribute& value) for everything printGraph shows
/// between a node's braces, in that order: its attributes with its typed fields
/// (fieldAttributes) merged in by name. The GUI's inspector lists the same rows.
template <typename F> void forEachPrintedAttribute(const Node& node, F&& f) {
    const std::vector<std::pair<std::string_view, Attribute>> fields = fieldAttributes(node);
    size_t k = 0;
    for (const auto& [name, value] : node.attrs()) {
        for (; k < fields.size() && fields[k].first < name; ++k)
            f(fields[k].first, fields[k].second);
        f(std::string_view(name), value);
    }
    for (; k < fields.size(); ++k)
        f(fields[k].first, fields[k].second);
}

/// Constants with at most this many elements print their data inline.
inline constexpr int64_t kInlineConstantLimit = 16;

} // namespace sextant::ir
