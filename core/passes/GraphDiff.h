#pragma once

#include "core/ir/Graph.h"

#include <string>
#include <vector>

namespace sextant::passes {

/// One difference between two snapshots of a graph, for the GUI's "what did this pass do" list.
struct NodeChange {
    enum class Kind { Added, Removed, Changed };
    Kind kind = Kind::Changed;
    std::string node; ///< node name (stable across passes), or constant name for constants
    bool isConstant = false;
    std::string before; ///< the printed line before (empty for Added)
    std::string after;  ///< the printed line after (empty for Removed)
    /// For an added node: the removed or changed nodes of `before` whose ONNX origins it covers
    /// (what it replaced, found through provenance), in `before` order.
    std::vector<std::string> replaces;
};

/// Structural diff of two graphs: nodes matched by name (names are stable ids), a node whose
/// printed line differs is Changed; constants matched by name and compared by type and digest.
/// Order: removals in `before` order, then additions and changes in `after` order, then constants.
std::vector<NodeChange> diffGraphs(const ir::Graph& before, const ir::Graph& after);

/// How many nodes and constants diffGraphs found added, removed and changed.
struct ChangeCounts {
    int nodesAdded = 0, nodesRemoved = 0, nodesChanged = 0;
    int constantsAdded = 0, constantsRemoved = 0, constantsChanged = 0;
};
ChangeCounts countChanges(const std::vector<NodeChange>& changes);

/// "+3 -5 ~2 nodes, +1 -4 ~0 constants": a one-line summary of diffGraphs' result.
std::string summarizeChanges(const ChangeCounts& counts);

} // namespace sextant::passes
