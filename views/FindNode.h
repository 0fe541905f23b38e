#pragma once

// "Find" in the graph view: what a name a user types stands for in one pipeline snapshot. People
// search the names they know — a node of the graph on screen, a tensor, or a node of the ONNX
// model they exported, which fusion may have merged into another node or removed — so the answer
// follows provenance instead of matching node names only.

#include "core/ir/Graph.h"
#include "core/passes/PassManager.h"

#include <string>
#include <vector>

namespace sextant::views {

struct FindResult {
    std::string node;    ///< the node of `graph` to select; empty when there is none
    std::string message; ///< how the name was resolved, for the status bar (empty: a node name)
    bool known = true;   ///< false when the name is nothing of this graph or model at all
};

/// Resolves `name` in `graph` (a snapshot of `pipeline`), trying in turn: a node name; a value
/// name (its producer, or what the value is); an ONNX node name covered by a node's provenance
/// (the first such node in graph order that is not a layout conversion); an ONNX node a pass
/// removed or folded into a constant (no node to select: the message says by which pass/rule and
/// why). Leading and trailing white space is ignored.
FindResult findNode(const ir::Graph& graph, const passes::PipelineResult& pipeline, const std::string& name);

/// The nodes of `graph`, in graph order, whose name, op type (as the IR prints it, "Softmax",
/// "sextant.FusedConv") or an output's type ("f32[1,16,24,160]@NC1HWC0") contains a match of
/// `pattern`: a regular expression (Perl syntax), case-insensitive. The find box falls back to
/// this when the text names nothing, as Netron's find matches names and op types. An invalid
/// pattern is an error saying what is wrong with it.
Expected<std::vector<std::string>> findMatching(const ir::Graph& graph, const std::string& pattern);

/// What find can complete in `graph`: node names, then the ONNX node names their provenance
/// covers, sorted and without duplicates.
std::vector<std::string> findCompletions(const ir::Graph& graph);

} // namespace sextant::views
