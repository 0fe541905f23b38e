#pragma once

#include "core/ir/Graph.h"

#include <string>
#include <vector>

namespace sextant::passes {

/// "Grey" ops move or relabel data without computing anything; a good pipeline removes them or
/// folds them into their neighbours. Counted before and after the pipeline in the compile report.
struct GreyOpCounts {
    int transposes = 0;        ///< GreyClass::Transpose: Transpose nodes
    int copyOrCast = 0;        ///< GreyClass::CopyOrCast: Identity, Dropout, Cast, Reshape, ...
    int layoutConversions = 0; ///< GreyClass::LayoutConversion: sextant.TransData
    /// QuantizeLinear and DequantizeLinear nodes of their own: not taken into an int8 cube op,
    /// an int8-in, int8-out group or a cancelled pair (issue 22: what quantization left unfused).
    /// Not in total(), which counts the layout and data-movement ops of a float graph.
    int quantization = 0;
    int total() const { return transposes + copyOrCast + layoutConversions; }
};

/// Counts the grey ops of `graph`, by the op table's GreyClass of each node.
GreyOpCounts countGreyOps(const ir::Graph& graph);

/// Transpose nodes fed directly by a Transpose whose permutation they undo ("inner -> outer"
/// names, in graph order). canonicalize's merge-transposes removes every such pair it may.
std::vector<std::string> inverseTransposePairs(const ir::Graph& graph);

} // namespace sextant::passes
