#pragma once

#include "Error.h"
#include "Graph.h"

namespace sextant::ir {

/// Checks a graph's structural and type invariants: every value has at most one producer and is
/// defined (graph input, constant or earlier node output) before it is used, in node order; input
/// and output counts match the op table; required inputs are present; each op's own verifier
/// accepts its attributes; and each node's output types agree with re-running shape inference
/// (dtype, rank, and every dim known on both sides). Graph outputs must be defined values of the
/// graph. Subgraph attributes (If branches) are verified recursively: each must take one input
/// per node input after the first, with compatible types, and give one output per node output.
/// Errors are ErrorKind::Verify, name the node and carry it as the subject.
Status verifyGraph(const Graph& graph);

} // namespace sextant::ir
