#pragma once

#include "Program.h"
#include "core/ir/Graph.h"

#include <vector>

namespace sextant::backend {

/// A fused group: the nodes one Task executes. Fusion already happened in the passes (a fused
/// node such as FusedConv is a group on its own), so today every group holds exactly one node.
struct Group {
    std::vector<const ir::Node*> nodes;
    std::string kernel; ///< kernel id: the op name of the group's main node ("FusedConv")
    UnitKind unit = UnitKind::Vector;
};

/// The unit an op's cost class runs on; fails for host-only ops, which the NPU cannot run.
Expected<UnitKind> unitFor(const ir::Node& node);

/// Forms the groups of a graph in node order (a topological order). Fails, naming the node, when
/// a node cannot run on the NPU or a value it touches has no static shape.
Expected<std::vector<Group>> formGroups(const ir::Graph& graph);

} // namespace sextant::backend
