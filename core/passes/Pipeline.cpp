#include "Passes.h"

namespace sextant::passes {

std::vector<std::unique_ptr<Pass>> defaultPipeline() {
    std::vector<std::unique_ptr<Pass>> p;
    // First, so that every later pass can rely on known dtypes and shapes (the importer may leave
    // symbolic or not-yet-inferred types; rules that check broadcasting need concrete ones).
    p.push_back(makeInferShapesPass());
    // Before folding and fusion: removing Identity/Dropout and x*1 exposes the Conv->Add->Relu
    // and constant-only chains the later passes look for, and merging Reshape chains lets a
    // constant weight's Reshape fold in one step.
    p.push_back(makeCanonicalizePass());
    // Before fusion: fusion rules need constant operands (biases, BN parameters); a weight that
    // reaches its MatMul through a Reshape only becomes a constant here.
    p.push_back(makeFoldConstantsPass());
    // After the clean-ups; Conv+BN folding runs before Conv+bias+Relu inside this pass.
    p.push_back(makeFusePass());
    // Last: folding and fusion leave unused nodes and constants (the unfolded weights) behind.
    p.push_back(makeDcePass());
    return p;
}

} // namespace sextant::passes
