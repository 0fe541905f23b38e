#pragma once

// Numeric comparison of a computed tensor against an expected one (onnxruntime output, float64
// reference), with the error statistics accuracy work needs.

#include "core/ir/Graph.h"
#include "core/ir/Tensor.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace sextant::runtime {

/// Error statistics of one tensor against its expected value. All errors are over the flattened
/// tensors, computed in double.
struct TensorComparison {
    std::string name;
    double maxAbs = 0;    ///< max |got - expected|
    double maxRel = 0;    ///< max |got - expected| / max(|expected|, kRelFloor)
    double meanAbs = 0;   ///< mean |got - expected|
    double rmse = 0;      ///< sqrt(mean (got - expected)^2)
    double cosine = 0;    ///< cosine similarity of the finite pairs; 1 when both are all zeros, 0 when
                          ///< no pair is finite and the tensors differ
    int64_t argmaxGot = -1;      ///< index of the largest element of `got` (first on ties)
    int64_t argmaxExpected = -1; ///< same for `expected`
    int64_t mismatches = 0;      ///< elements outside atol + rtol*|expected|
    int64_t firstMismatch = -1;  ///< flat index of the first such element, -1 if none
    bool pass = false;    ///< every element within tolerance and no problem
    std::string problem;  ///< why the tensors could not be compared (shape, dtype); empty if they could
    double expectedMaxAbs = 0;   ///< max |expected| over its finite elements
    bool gotNonFinite = false;   ///< `got` holds an infinity or NaN where `expected` is finite
};

/// Floor of the denominator of the relative error, so exact zeros in `expected` do not divide by 0.
inline constexpr double kRelFloor = 1e-12;

/// Compares `got` with `expected`. An element passes iff |got - expected| <= atol + rtol*|expected|
/// (NaN matches only NaN, infinities only the same infinity). Shapes must be equal; otherwise the
/// comparison fails with `problem` set. Float and integer dtypes may be mixed (values compare as
/// doubles).
TensorComparison compareTensors(const std::string& name, const ir::Tensor& got,
                                const ir::Tensor& expected, double atol, double rtol);

/// Base of the default absolute tolerance against onnxruntime (shared/models/INVENTORY.md).
inline constexpr double kOutputAtol = 1e-4;
/// Default relative tolerance against onnxruntime (shared/models/INVENTORY.md).
inline constexpr double kOutputRtol = 1e-3;
/// Default tolerances of the simulated NPU's outputs against a float reference or onnxruntime:
/// its cube unit reads f16 (11 significant bits), so 1e-3 would fail every real model.
inline constexpr double kNpuAtol = 1e-2;
inline constexpr double kNpuRtol = 1e-2;

/// Whether a graph output is probability-like: computed by an op of CompareClass Probability
/// (Softmax, Sigmoid, HardSigmoid), possibly through Transparent ops that only move data
/// (Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Identity), as the op table says. Such
/// outputs live in [0, 1], so an absolute tolerance needs no scaling.
bool isProbabilityLike(const ir::Value& output);

/// The absolute tolerance a model output is held to against onnxruntime, following
/// shared/models/INVENTORY.md: `base` for a probability-like output, `base` * max|expected| for an
/// unbounded one (a logit of 26 cannot be matched to 1e-4 by any other float32 framework either).
double outputAtol(const ir::Value& output, const ir::Tensor& expected, double base = kOutputAtol);

/// One line: `output 'NAME': max_abs 1.2e-06 max_rel 3.4e-05 cosine 0.999999 argmax 7/7 PASS`
/// (argmax got/expected), or `output 'NAME': FAIL (<problem>)` when the tensors could not be
/// compared. A FAIL line also says how many elements are out of tolerance.
std::string formatComparison(const TensorComparison& comparison);

/// Value-by-value comparison of two runs of one graph (e.g. float32 against float64 reference,
/// or a compiled run's intermediates against the reference), in the order the graph computes them.
struct ValueDrift {
    std::vector<TensorComparison> values; ///< graph inputs, then node outputs in node order
    std::vector<std::string> nodes;       ///< per entry of `values`: the node that computed it ("" for an input)
    int firstFailing = -1;                ///< index into `values` of the first failure, -1 if none
    std::string firstFailingNode;         ///< the node that computed it ("" for a graph input)
    int unmatched = 0; ///< values in `got` with no counterpart of as many elements in `expected`
};

/// The largest finite f16.
inline constexpr double kF16Max = 65504;

/// Where a target computing in f16 ran out of range: the first value of `drift` (in computation
/// order) whose computed tensor holds an infinity or NaN where the float64 reference is finite
/// and reaches past the largest f16. What a user reads when every later value fails for that
/// one reason: "f16 overflows first at 'r43' (node 'n42'): the float64 reference reaches
/// 1.2e+05 there and the computed value holds an infinity or NaN (the largest f16 is 65504)".
/// Empty when no value is like that.
std::string f16OverflowNote(const ValueDrift& drift);

/// Indices into `drift.values`, the lowest cosine similarity first (scale-free, as quantization
/// tools rank layers), in graph order among equals; a value that could not be compared (its
/// `problem` says why) comes last.
std::vector<size_t> lowestCosineFirst(const ValueDrift& drift);

/// How compareValues sets each value's absolute tolerance: `atol` as given, or as outputAtol
/// scales it for a model output (times max|expected| unless the value is probability-like), so
/// large activations are not held to an absolute bound meant for probabilities.
enum class AtolScale { Fixed, LikeOutputs };

/// Compares every value of `graph` present in both maps (keyed by value name, as
/// runReference's `values` fills them) and finds the first, in computation order, outside
/// atol + rtol*|expected|: where the numbers started to drift. Values missing from either map are
/// skipped (counted in `unmatched` when `got` has them); a value whose shape differs but whose
/// element count matches (a rewrite kept the name) is compared in the expected shape.
ValueDrift compareValues(const ir::Graph& graph, const std::map<std::string, ir::Tensor>& got,
                         const std::map<std::string, ir::Tensor>& expected, double atol,
                         double rtol, AtolScale scale = AtolScale::Fixed);

} // namespace sextant::runtime
