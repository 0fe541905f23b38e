#pragma once

#include "Error.h"
#include "Graph.h"
#include "OpRegistry.h"
#include "Tensor.h"

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace sextant::ir {

/// Runs one node's reference kernel. Float inputs (f16, bf16, f32, f64) are converted to
/// `ctx.compute` first; integer and bool inputs pass unchanged; float outputs come back in
/// `ctx.compute`. `inputs` has one entry per node input (an omitted optional input may be a
/// default-constructed Tensor). The op's verifier runs first, so malformed attributes are
/// reported rather than defaulted. Wrong input counts, missing data, mismatching types or an
/// output too large to allocate give an Error whose message and subject name the node.
Expected<std::vector<Tensor>> evaluateNode(const Node& node, std::span<const Tensor> inputs,
                                           const KernelContext& ctx);

/// Runs a whole graph in node order on `inputs` (one per graph input, checked against the
/// declared dtype and known dims) and returns the graph outputs, float ones in `ctx.compute`.
/// When `values` is given it receives every graph input and every node output by value name;
/// otherwise each intermediate tensor is released after its last use.
Expected<std::vector<Tensor>> interpret(const Graph& graph, std::span<const Tensor> inputs,
                                        const KernelContext& ctx,
                                        std::map<std::string, Tensor>* values = nullptr);

/// The value of `v` when it is known before the graph runs and is a small integer tensor (at most
/// kKnownValueElements elements): a constant's, or one computed from constants and static shapes
/// by shape arithmetic - Shape and Size of a tensor whose shape is static; Cast, Identity,
/// Unsqueeze, Squeeze, Reshape, Flatten, Concat, Gather, Slice, Add, Sub, Mul, Div, Neg, Abs,
/// Min, Max, ReduceProd, ReduceSum and ConstantOfShape of known values, run by their reference
/// kernels. nullopt otherwise. Exporters write shape computations such as "rank minus axis" out as
/// ops; shape inference sees through them with this (ONNX calls it data propagation), and
/// fold-constants folds Shape and Size of static shapes with it.
std::optional<Tensor> knownValue(const Value* v);
/// The output of a Shape or Size node whose input's shape is static; nullopt for any other node.
std::optional<Tensor> staticShapeValue(const Node& n);
constexpr int64_t kKnownValueElements = 64;

} // namespace sextant::ir
