#include "Layout.h"
#include "Passes.h"
#include "Precision.h"

namespace sextant::passes {

namespace {
std::unique_ptr<Pass> at(int level, std::unique_ptr<Pass> pass) {
    pass->setMinLevel(level);
    return pass;
}
} // namespace

std::vector<std::unique_ptr<Pass>> defaultPipeline() {
    std::vector<std::unique_ptr<Pass>> p;
    // First and at every level (O0 included), so that every later pass, the lowering and the
    // verifier can rely on known dtypes and shapes (the importer may leave symbolic or
    // not-yet-inferred types; rules that check broadcasting need concrete ones).
    p.push_back(at(0, makeInferShapesPass()));
    // O1. Before folding and fusion: removing Identity/Dropout and x*1 exposes the Conv->Add->Relu
    // and constant-only chains the later passes look for, and merging Reshape chains lets a
    // constant weight's Reshape fold in one step.
    p.push_back(at(1, makeCanonicalizePass()));
    // O1. Before fusion: fusion rules need constant operands (biases, BN parameters); a weight
    // that reaches its MatMul through a Reshape only becomes a constant here.
    p.push_back(at(1, makeFoldConstantsPass()));
    // O2. After canonicalize and folding, which make equal subexpressions look equal (same
    // constants by digest, no Identity in between); before fusion, so a shared producer is fused
    // once instead of being rejected for having "2 users" that are really one computation.
    p.push_back(at(2, makeCsePass()));
    // O2. After the clean-ups; Conv+BN folding runs before Conv+bias+Relu inside this pass.
    p.push_back(at(2, makeFusePass()));
    // O2. After fusion, so FusedConv anchors the NC1HWC0 region and fused groups are one node.
    p.push_back(at(2, makeLayoutPass()));
    // O2. Last of the rewrites: marks the nodes fusion and layout leave behind.
    p.push_back(at(2, makePrecisionPass()));
    // O1. Last: folding and fusion leave unused nodes and constants (the unfolded weights) behind.
    p.push_back(at(1, makeDcePass()));
    return p;
}

} // namespace sextant::passes
