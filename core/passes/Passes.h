#pragma once

#include "Pass.h"

#include <memory>
#include <vector>

namespace sextant::passes {

/// `canonicalize`: removes Identity and Dropout, x*1 / x/1 / x+0 / x-0 with constants that do not
/// broadcast, and merges Reshape chains. A pattern-rewrite pass (rules below).
std::unique_ptr<Pass> makeCanonicalizePass();
/// `fold-constants`: evaluates nodes whose inputs are all constants (small outputs, shape
/// arithmetic or pure data movement) and replaces them by constants.
std::unique_ptr<Pass> makeFoldConstantsPass();
/// `infer-shapes`: re-runs every op's shape/type inference (Graph::inferTypes).
std::unique_ptr<Pass> makeInferShapesPass();
/// `fuse`: Conv+BatchNormalization folding and Conv/MatMul/Gemm + bias + activation fusion.
std::unique_ptr<Pass> makeFusePass();
/// `cse`: merges equal constants (by content) and nodes with the same op, attributes and inputs
/// (rules cse-constant and cse-node; the earliest survives, provenance is the union).
std::unique_ptr<Pass> makeCsePass();
/// `dce`: removes nodes whose results nobody uses, then unused constants.
std::unique_ptr<Pass> makeDcePass();

/// The default pipeline, in order (the comments in Pipeline.cpp say why each entry is where it is).
std::vector<std::unique_ptr<Pass>> defaultPipeline();

} // namespace sextant::passes
