#pragma once

// A graph as Graphviz DOT text (docs/graph-export.md), for documents and for the tools that read
// DOT: one box per node (op, name, output type), coloured by the unit its op runs on as the GUI's
// Graph tab colours it, graph inputs and outputs as ovals, edges labelled with the tensor's type.
// Constants (weights) are left out, as in the GUI. Deterministic: the same graph gives the same
// bytes.

#include "Graph.h"

#include <string>

namespace sextant::ir {

/// The DOT text of `graph`; `title` (e.g. "mnist after pass fuse") becomes the graph's label.
std::string graphToDot(const Graph& graph, const std::string& title);

} // namespace sextant::ir
