#pragma once

// Synthetic graphs for the pass-pipeline scaling benchmark (issue 4 item 9): a chain of stages,
// each a few residual CNN blocks followed by a few transformer-style attention blocks, so that a
// graph of any size exercises the same rules (Conv+BN folding, Conv+Add+Relu fusion, attention,
// decomposed LayerNorm, transpose handling) in the same proportions.

#include "core/ir/Error.h"
#include "core/ir/Graph.h"

#include <cstdint>
#include <memory>
#include <string>

namespace sextant::bench {

/// Shape of the generated graph. Small tensors on purpose: the benchmark measures the compiler's
/// graph algorithms, not the cost of folding big constants.
struct SyntheticGraphOptions {
    int64_t channels = 8;         ///< C of the CNN part; also the attention model width D
    int64_t height = 4, width = 4; ///< spatial extent; the attention part has H*W tokens
    int64_t residualPerStage = 4; ///< residual blocks per stage (7 nodes each)
    int64_t attentionPerStage = 4; ///< attention blocks per stage (18 nodes each)
};

/// Builds a deterministic graph with at least `targetNodes` nodes (it stops after the first stage
/// that reaches the count, so it may exceed it by less than one stage, about 110 nodes).
///
/// Residual block, on x [1,C,H,W]: Conv3x3 -> BatchNormalization -> Relu -> Conv3x3 ->
/// BatchNormalization -> Add(x) -> Relu.
/// Attention block, on t [1,S,D]: q = MatMul(t,Wq); k = Transpose(MatMul(t,Wk)); v = MatMul(t,Wv);
/// p = Softmax(Mul(MatMul(q,k), 1/sqrt(D))); r = Add(MatMul(p,v), t); then LayerNorm written out as
/// ReduceMean, Sub, Pow, ReduceMean, Add(eps), Sqrt, Div, Mul(gamma), Add(beta).
/// Between the two parts a stage converts with Reshape + Transpose (and back).
/// Every node gets provenance {its own name} from "import", as an imported ONNX node would.
Expected<std::unique_ptr<ir::Graph>> buildSyntheticGraph(int64_t targetNodes,
                                                          const SyntheticGraphOptions& options = {});

/// The graph the scale benchmarks share (bench/CompileBench.cpp, bench/GraphViewBench.cpp): at
/// least `nodes` nodes at 16 channels and 16 x 16 (issue 19's sizes), residual blocks only or with
/// attention blocks, built once per process. nullptr, with `error` set, when the generator fails.
const ir::Graph* scaleGraph(int64_t nodes, bool attention, std::string& error);

} // namespace sextant::bench
