#pragma once

#include "core/ir/Graph.h"

#include <string>
#include <vector>

namespace sextant::passes {

/// "Grey" ops move or relabel data without computing anything; a good pipeline removes them or
/// folds them into their neighbours. Counted before and after the pipeline in the compile report.
struct GreyOpCounts {
    int transposes = 0;        ///< Transpose nodes
    int copyOrCast = 0;        ///< Identity, Dropout, Cast, Reshape, Flatten, Squeeze, Unsqueeze
    int layoutConversions = 0; ///< sextant.TransData nodes (NCHW <-> NC1HWC0 conversions)
    int total() const { return transposes + copyOrCast + layoutConversions; }
};

/// Counts the grey ops of `graph`.
GreyOpCounts countGreyOps(const ir::Graph& graph);

/// Transpose nodes fed directly by a Transpose whose permutation they undo ("inner -> outer"
/// names, in graph order). canonicalize's merge-transposes removes every such pair it may.
std::vector<std::string> inverseTransposePairs(const ir::Graph& graph);

} // namespace sextant::passes
