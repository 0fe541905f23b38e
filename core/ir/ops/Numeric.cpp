// Ops over any numeric dtype: Equal and GreaterOrEqual (bool results, numpy broadcasting), Not,
// Neg, Log, Max (variadic, broadcasting) and ReduceMax (axes as an attribute before opset 18, as
// input 1 from 18 on). They share one typed dispatch: float inputs arrive in the compute dtype,
// integer and bool tensors unchanged.

#include "OpUtil.h"

#include <limits>
#include <type_traits>

namespace sextant::ir {

using ops::opError;

namespace {

/// Calls `fn(T{})` with the element type of `dtype` (bool is stored as uint8_t and is only
/// accepted when `allowBool`); f16/bf16 never reach a kernel and are an error.
template <typename Fn>
Expected<std::vector<Tensor>> dispatchNumeric(const Node& n, DType dtype, bool allowBool, Fn&& fn) {
    switch (dtype) {
    case DType::F64: return fn(double{});
    case DType::F32: return fn(float{});
    case DType::I64: return fn(int64_t{});
    case DType::I32: return fn(int32_t{});
    case DType::I8: return fn(int8_t{});
    case DType::U8: return fn(uint8_t{});
    case DType::I16: return fn(int16_t{});
    case DType::U16: return fn(uint16_t{});
    case DType::U32: return fn(uint32_t{});
    case DType::U64: return fn(uint64_t{});
    case DType::Bool:
        if (allowBool)
            return fn(uint8_t{});
        break;
    case DType::F16:
    case DType::BF16:
    case DType::I4: // ONNX computes on int4 only through Cast and the quantization ops
    case DType::U4: break;
    }
    return opError(n, "reference kernel does not handle " + std::string(dtypeName(dtype)),
                   ErrorKind::Unsupported);
}

std::string differentDTypes(DType a, DType b) {
    return "operands have different dtypes " + std::string(dtypeName(a)) + " and " +
           std::string(dtypeName(b));
}

/// max(a, b) that propagates NaN like numpy.maximum.
template <typename T> T maxOf(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
        if (a != a)
            return a;
    }
    return a >= b ? a : b;
}

// ---- Equal, GreaterOrEqual

enum class Cmp { Equal, GreaterOrEqual };

Status verifyCompare(const Node& n, Cmp op) {
    if (op == Cmp::Equal)
        return {};
    for (size_t i = 0; i < 2; ++i)
        if (const TensorType* t = ops::inputType(n, i); t && t->dtype == DType::Bool)
            return opError(n, "greater-or-equal operand " + std::to_string(i) + " must be numeric, got bool");
    return {};
}

Expected<std::vector<TensorType>> inferCompare(const Node& n) {
    const TensorType* a = ops::inputType(n, 0);
    const TensorType* b = ops::inputType(n, 1);
    if (!a || !b)
        return opError(n, "needs two inputs");
    if (a->dtype != b->dtype)
        return opError(n, differentDTypes(a->dtype, b->dtype));
    TensorType t;
    t.dtype = DType::Bool;
    SX_ASSIGN(t.shape, ops::broadcastShapes(n, a->shape, b->shape));
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runCompare(Cmp op, const Node& n, std::span<const Tensor> inputs) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& a = inputs[0];
    const Tensor& b = inputs[1];
    if (a.dtype() != b.dtype())
        return opError(n, differentDTypes(a.dtype(), b.dtype()));
    SX_ASSIGN(ops::Shape shape, ops::broadcastShapes(n, ops::shapeOf(a), ops::shapeOf(b)));
    const std::vector<int64_t> out = ops::extents(shape);
    SX_TRY(ops::checkAllocation(n, out));
    const bool isBool = a.dtype() == DType::Bool;
    return dispatchNumeric(n, a.dtype(), op == Cmp::Equal, [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y(DType::Bool, out);
        const auto sa = ops::broadcastStrides(a.shape(), out);
        const auto sb = ops::broadcastStrides(b.shape(), out);
        uint8_t* dst = y.mutableData<uint8_t>();
        if (op == Cmp::Equal)
            ops::broadcastBinary(a.data<T>(), sa, b.data<T>(), sb, out, dst, [isBool](T x, T z) -> uint8_t {
                return isBool ? ((x != 0) == (z != 0)) : (x == z);
            });
        else
            ops::broadcastBinary(a.data<T>(), sa, b.data<T>(), sb, out, dst,
                                 [](T x, T z) -> uint8_t { return x >= z; });
        return std::vector<Tensor>{y};
    });
}

/// The input's type, unchanged (elementwise unary ops).
Expected<std::vector<TensorType>> inferSameAsInput(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (!x)
        return opError(n, "needs an input");
    return std::vector<TensorType>{*x};
}

} // namespace

Status verifyEqual(const Node& n) { return verifyCompare(n, Cmp::Equal); }
Expected<std::vector<TensorType>> inferEqual(const Node& n) { return inferCompare(n); }
Expected<std::vector<Tensor>> runEqual(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    return runCompare(Cmp::Equal, n, inputs);
}

Status verifyGreaterOrEqual(const Node& n) { return verifyCompare(n, Cmp::GreaterOrEqual); }
Expected<std::vector<TensorType>> inferGreaterOrEqual(const Node& n) { return inferCompare(n); }
Expected<std::vector<Tensor>> runGreaterOrEqual(const Node& n, std::span<const Tensor> inputs,
                                                const KernelContext&) {
    return runCompare(Cmp::GreaterOrEqual, n, inputs);
}

// ---- Not

Status verifyNot(const Node& n) {
    if (const TensorType* x = ops::inputType(n, 0); x && x->dtype != DType::Bool)
        return opError(n, "not input must be a bool tensor, got " + std::string(dtypeName(x->dtype)));
    return {};
}

Expected<std::vector<TensorType>> inferNot(const Node& n) { return inferSameAsInput(n); }

Expected<std::vector<Tensor>> runNot(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    if (x.dtype() != DType::Bool)
        return opError(n, "not input must be a bool tensor, got " + std::string(dtypeName(x.dtype())));
    Tensor y(DType::Bool, x.shape());
    const uint8_t* src = x.data<uint8_t>();
    uint8_t* dst = y.mutableData<uint8_t>();
    for (int64_t i = 0; i < x.numel(); ++i)
        dst[i] = src[i] ? 0 : 1;
    return std::vector<Tensor>{y};
}

// ---- Neg

namespace {
bool negatable(DType t) {
    return isFloat(t) || t == DType::I64 || t == DType::I32 || t == DType::I16 || t == DType::I8;
}
} // namespace

Status verifyNeg(const Node& n) {
    if (const TensorType* x = ops::inputType(n, 0); x && !negatable(x->dtype))
        return opError(n, "neg input must be a float or signed integer tensor, got " +
                              std::string(dtypeName(x->dtype)));
    return {};
}

Expected<std::vector<TensorType>> inferNeg(const Node& n) { return inferSameAsInput(n); }

Expected<std::vector<Tensor>> runNeg(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    if (!negatable(x.dtype()))
        return opError(n, "neg input must be a float or signed integer tensor, got " +
                              std::string(dtypeName(x.dtype())));
    return dispatchNumeric(n, x.dtype(), false, [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y(x.dtype(), x.shape());
        const T* src = x.data<T>();
        T* dst = y.mutableData<T>();
        for (int64_t i = 0; i < x.numel(); ++i) {
            if constexpr (std::is_floating_point_v<T>)
                dst[i] = -src[i];
            else // two's complement wrap: -INT_MIN stays INT_MIN instead of overflowing
                dst[i] = static_cast<T>(std::make_unsigned_t<T>(0) - static_cast<std::make_unsigned_t<T>>(src[i]));
        }
        return std::vector<Tensor>{y};
    });
}

// ---- Log

Status verifyLog(const Node& n) { return ops::requireFloatInput(n, 0, "log input"); }

Expected<std::vector<TensorType>> inferLog(const Node& n) { return inferSameAsInput(n); }

Expected<std::vector<Tensor>> runLog(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y(dtypeOf<T>(), x.shape());
        const T* src = x.data<T>();
        T* dst = y.mutableData<T>();
        for (int64_t i = 0; i < x.numel(); ++i)
            dst[i] = std::log(src[i]);
        return std::vector<Tensor>{y};
    });
}

// ---- Max

Status verifyMax(const Node& n) {
    for (size_t i = 0; i < n.numInputs(); ++i)
        if (const TensorType* t = ops::inputType(n, i); t && t->dtype == DType::Bool)
            return opError(n, "max input " + std::to_string(i) + " must be numeric, got bool");
    return {};
}

Expected<std::vector<TensorType>> inferMax(const Node& n) {
    return ops::inferVariadicBroadcast(n, "max");
}

Expected<std::vector<Tensor>> runMax(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    if (inputs.empty())
        return opError(n, "max needs at least one input");
    for (size_t i = 0; i < inputs.size(); ++i)
        if (!n.input(i))
            return opError(n, "max input " + std::to_string(i) + " is missing");
    ops::Shape shape = ops::shapeOf(inputs[0]);
    for (size_t i = 1; i < inputs.size(); ++i) {
        if (inputs[i].dtype() != inputs[0].dtype())
            return opError(n, "max inputs have different dtypes " + std::string(dtypeName(inputs[0].dtype())) +
                                  " and " + std::string(dtypeName(inputs[i].dtype())));
        SX_ASSIGN(shape, ops::broadcastShapes(n, shape, ops::shapeOf(inputs[i])));
    }
    const std::vector<int64_t> out = ops::extents(shape);
    SX_TRY(ops::checkAllocation(n, out));
    return dispatchNumeric(n, inputs[0].dtype(), false, [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y(inputs[0].dtype(), out);
        T* dst = y.mutableData<T>();
        ops::broadcastCopy(inputs[0].data<T>(), inputs[0].shape(), out, dst);
        const std::vector<int64_t> self = ops::broadcastStrides(out, out);
        for (size_t i = 1; i < inputs.size(); ++i)
            ops::broadcastBinary(dst, self, inputs[i].data<T>(), ops::broadcastStrides(inputs[i].shape(), out),
                                 out, dst, [](T a, T b) { return maxOf(a, b); });
        return std::vector<Tensor>{y};
    });
}

// ---- ReduceMax

Status verifyReduceMax(const Node& n) {
    SX_TRY(ops::checkReduceAxes(n));
    return {};
}

Expected<std::vector<TensorType>> inferReduceMax(const Node& n) { return ops::inferReduction(n); }

/// An empty reduction gives the lowest value of the type (-inf for floats), as ONNX opset 18 says.
Expected<std::vector<Tensor>> runReduceMax(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    SX_ASSIGN(auto reduced, ops::reducedAxes(n, x.rank(), n.input(1) ? &inputs[1] : nullptr));
    if (!reduced)
        return opError(n, "reduce axes have no data");
    const std::vector<int64_t> keep = ops::extents(ops::reducedShape(ops::shapeOf(x), *reduced, true));
    const std::vector<int64_t> out =
        ops::extents(ops::reducedShape(ops::shapeOf(x), *reduced, n.attrInt("keepdims", 1) != 0));
    SX_TRY(ops::checkAllocation(n, out));
    return dispatchNumeric(n, x.dtype(), true, [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y(x.dtype(), out);
        T* dst = y.mutableData<T>();
        const T lowest = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                              : std::numeric_limits<T>::lowest();
        for (int64_t i = 0; i < y.numel(); ++i)
            dst[i] = lowest;
        const T* src = x.data<T>();
        // Walk the input in order; each element folds into its output cell (reduced dims stride 0).
        const std::vector<int64_t> strides = ops::broadcastStrides(keep, x.shape());
        ops::forEachElement(x, strides, [&](int64_t i, int64_t off) { dst[off] = maxOf(dst[off], src[i]); });
        return std::vector<Tensor>{y};
    });
}

} // namespace sextant::ir
