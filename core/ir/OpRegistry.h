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
#define SEXTANT_OP(id, domain, name, minIn, maxIn, minOut, maxOut, cost, work, passes, layout, \
                   fusable, grey, compare, f16risk, summary)                                      \
    id,
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

/// Which cost model backend/CostModel.cpp applies to an op: what one output tile reads, writes and
/// computes. Each Cube model uses the cube unit, each Copy/Concat model only the DMA engine.
enum class WorkModel : uint8_t {
    Host,          ///< never lowered to the NPU (CostClass::Host)
    Conv,          ///< im2col product on the cube; OpInfo::passes 1 = unconditional epilogue
    ConvTranspose, ///< transposed convolution on the cube, K from the taps reaching one output
    Gemm,          ///< (batched) matrix product on the cube; OpInfo::passes as for Conv
    Pool,          ///< windowed pooling over the spatial dims
    GlobalPool,    ///< reduction over all spatial dims, which may be split into chunks
    Resize,        ///< resampling: a tile reads the input region it samples
    Attention,     ///< sextant.Attention: two cube products and a softmax between them
    Softmax,       ///< OpInfo::passes vector passes; the dims from "axis" on are not split
    LayerNorm,     ///< OpInfo::passes output passes plus four statistics passes; "axis" as Softmax
    Elementwise,   ///< OpInfo::passes vector passes over every output element
    Group,         ///< sextant.ElementwiseGroup: the sum of its body steps' passes
    Copy,          ///< data movement only; constant i64 operands (shapes) are loaded whole
    Concat,        ///< data movement only; every input supplies its share of the tile
};

/// How passes/Layout.cpp treats an op when it assigns the blocked NC1HWC0 layout.
enum class LayoutClass : uint8_t {
    Plain,   ///< stays NCHW: a blocked value it reads is converted back first
    Conv,    ///< a 2-D convolution starts a blocked region (its plain input is converted in)
    Unary,   ///< stays blocked when its input 0 is blocked
    Binary,  ///< stays blocked when every activation operand is blocked and none is broadcast
    Pooling, ///< stays blocked when its input 0 is blocked (pooling, BatchNormalization)
    Concat,  ///< stays blocked when every activation operand is blocked (broadcast allowed)
    /// stays blocked when its input 0 is blocked and it leaves N and C alone: it resamples only
    /// the spatial dims (Resize of H and W; not a crop-and-resize, whose region may shift C)
    Spatial,
    View,    ///< a reshape: lowered as a view of a plain tensor (rule reshape-as-view)
};

/// Whether an op may be one step of a sextant.ElementwiseGroup: the fuse-elementwise-chain rule
/// (passes/FuseGroups.cpp) and the group's kernel (ops/FusionOps.cpp) both ask this column.
enum class Fusable : uint8_t {
    No,
    Group,
    /// May be a step of a group's pooled prologue only (rule fold-squeeze-excite): it reduces a
    /// map to one value per channel (a global pooling), or mixes the channels of such a vector (a
    /// Conv on [N, C, 1, ...]). Its result has every spatial dim 1 (the group's verifier checks),
    /// and every part of a split group computes it whole, from its inputs read whole.
    Pooled,
};

/// Whether `op` may be a step of a sextant.ElementwiseGroup's body (Fusable Group or Pooled).
bool groupStepOp(OpKind op);

/// Which "grey" op count (passes/GreyOps.h) an op falls in: ops that move or relabel data.
enum class GreyClass : uint8_t {
    NotGrey,
    Transpose,        ///< Transpose
    CopyOrCast,       ///< identities, casts and reshapes
    LayoutConversion, ///< sextant.TransData
};

/// How runtime/Compare.cpp sets the absolute tolerance for a value an op produces.
enum class CompareClass : uint8_t {
    Scaled,      ///< atol scales with the expected tensor's largest magnitude
    Probability, ///< values in [0, 1]: atol is used as given
    Transparent, ///< same values as its input 0, rearranged: the producer of input 0 decides
};

/// Why passes/Precision.cpp keeps an op in f32 on the vector unit (rule keep-f32).
enum class F16Risk : uint8_t {
    Safe,           ///< f16 is fine
    Softmax,        ///< exp and the normalising sum overflow or lose mass
    LayerNorm,      ///< mean and variance reductions
    Reduction,      ///< an f16 accumulator over long axes
    Transcendental, ///< exp/log/pow/sqrt/reciprocal/erf: f16 range and relative error
    Lrn,            ///< sum of squares across channels
    BatchNorm,      ///< raw running statistics and 1/sqrt(var + eps)
};

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
    WorkModel work;
    int passes; ///< vector passes per output element (see OpTable.def)
    LayoutClass layout;
    Fusable fusable;
    GreyClass grey;
    CompareClass compare;
    F16Risk f16Risk;
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
