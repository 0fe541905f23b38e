#pragma once

#include "Error.h"
#include "Tensor.h"
#include "TensorType.h"

#include <functional>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace sextant::ir {

class Graph;
class Node;

/// Every op, in OpTable.def order. The numeric value is not stable across versions; names are.
enum class OpKind : uint16_t {
#define SEXTANT_OP(id, domain, name, minIn, maxIn, minOut, maxOut, cost, summary) id,
#include "OpTable.def"
#undef SEXTANT_OP
};

/// Which NPU unit runs an op; decides its cost model and numeric behaviour on the simulator.
enum class CostClass : uint8_t {
    Cube,    ///< matrix unit: f16 inputs, f32 accumulation
    Vector,  ///< SIMD unit: f32 (or f16) lanes
    DmaOnly, ///< pure data movement
    Host,    ///< runs on the host, never on the NPU (control flow, shape arithmetic)
};
std::string_view costClassName(CostClass c);

/// What a reference kernel computes with. The executor converts float inputs to `compute` before
/// calling a kernel; float outputs come back in `compute`. Integer and bool tensors pass unchanged.
struct KernelContext {
    DType compute = DType::F64; ///< F64 or F32
    /// Runs a subgraph (If/Loop body) with the given values for its formal inputs; set by executors.
    std::function<Expected<std::vector<Tensor>>(const Graph&, std::span<const Tensor>)> runSubgraph;
    /// Called by ir::interpret after each node (subgraph nodes included) with the node's inputs and
    /// outputs, before anything is released: lets a caller watch a run (say, for the first value
    /// float32 cannot hold) without keeping every intermediate. Empty: nothing is called.
    std::function<void(const Node&, std::span<const Tensor> inputs, std::span<const Tensor> outputs)> onNode;
};

using VerifyFn = Status (*)(const Node&);
using InferFn = Expected<std::vector<TensorType>> (*)(const Node&);
using KernelFn = Expected<std::vector<Tensor>> (*)(const Node&, std::span<const Tensor>,
                                                   const KernelContext&);

/// One row of the op table.
struct OpInfo {
    OpKind kind;
    std::string_view domain; ///< "" for ai.onnx
    std::string_view name;
    int minInputs, maxInputs; ///< maxInputs < 0: variadic
    int minOutputs, maxOutputs;
    CostClass cost;
    std::string_view summary;
    VerifyFn verify;
    InferFn infer;
    KernelFn kernel;
};

/// The row for an op.
const OpInfo& opInfo(OpKind kind);
/// All rows, in table order.
std::span<const OpInfo> allOps();
/// Looks an op up by domain ("" or "ai.onnx" for ONNX) and name.
std::optional<OpKind> findOp(std::string_view domain, std::string_view name);
/// "Conv" or "sextant.FusedConv": the name the IR printer uses.
std::string qualifiedOpName(OpKind kind);

} // namespace sextant::ir
