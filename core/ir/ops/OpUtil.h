#pragma once

// Helpers shared by the op families in core/ir/ops: error construction, attribute checks, symbolic
// shape arithmetic, window geometry for convolution and pooling, fused activations and the BLAS
// wrapper. Internal to sextant_ir.

#include "core/ir/Graph.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace sextant::ir::ops {

using Shape = DimVector;

/// An error about an op; callers (inferTypes, the interpreter, the verifier) prefix the node name.
inline Error opError(const Node& n, std::string message, ErrorKind kind = ErrorKind::Invalid) {
    return makeError(kind, std::move(message), n.name());
}

/// A dim whose extent is not known and has no name.
inline Dim unknownDim() { return Dim::symbolic("?"); }

/// The type of input i, or nullptr when the input is omitted.
inline const TensorType* inputType(const Node& n, size_t i) {
    Value* v = n.input(i);
    return v ? &v->type() : nullptr;
}

/// The [start, end) range of dims that Shape returns for an input of `rank` (opset 15's start and
/// end attributes, negative ones counting from the end, clamped).
std::pair<int64_t, int64_t> shapeRange(const Node& n, int64_t rank);

/// The shape of a concrete tensor as dims.
Shape shapeOf(const Tensor& t);
/// Concrete extents of a fully known shape.
std::vector<int64_t> extents(const Shape& s);
/// "[1,?,28]" for messages.
std::string shapeStr(const Shape& s);

/// Numpy broadcasting of two shapes; symbolic dims propagate where the result is determined.
Expected<Shape> broadcastShapes(const Node& n, const Shape& a, const Shape& b);
/// Normalises a possibly negative axis into [0, rank) (or [0, rank] when `inclusive`); a
/// negative axis counts from the end either way (-1 is rank - 1).
Expected<int64_t> normaliseAxis(const Node& n, int64_t axis, int64_t rank, const char* what,
                                bool inclusive = false);

/// Checks that attribute `name`, when present, holds integers (a list, or one value when
/// `scalar`); `size` >= 0 demands that many entries; every entry must be >= `minValue`.
/// Row-major strides of `shape`.
std::vector<int64_t> stridesOf(const std::vector<int64_t>& shape);
/// Advances a row-major multi-index over `shape`.
void nextIndex(std::vector<int64_t>& idx, const std::vector<int64_t>& shape);

/// How a scattered update joins the value it lands on, by the node's `reduction` (none, add,
/// mul, max, min: ScatterND and ScatterElements).
Expected<double (*)(double, double)> scatterReduction(const Node& n);

/// The element type an ONNX TensorProto.DataType code names (Cast's `to`, EyeLike's `dtype`, the
/// windows' `output_datatype`);
/// nothing for a type the IR does not have.
std::optional<DType> onnxDType(int64_t code);

Status checkIntsAttr(const Node& n, const std::string& name, int64_t size, int64_t minValue);
Status checkIntAttr(const Node& n, const std::string& name, int64_t minValue, int64_t maxValue);
Status checkFloatAttr(const Node& n, const std::string& name);
Status checkStringAttr(const Node& n, const std::string& name,
                        const std::vector<std::string>& allowed);

/// Requires input i (if present) to be a floating-point tensor.
Status requireFloatInput(const Node& n, size_t i, const char* what);

/// Sliding-window geometry for Conv, MaxPool and AveragePool over the spatial dims.
struct WindowGeometry {
    std::vector<int64_t> kernel, strides, dilations, padsBegin, padsEnd;
    Shape outSpatial;    ///< output extents of the spatial dims
    bool padsKnown = true; ///< false when auto_pad SAME_* meets unknown input extents
};
/// Computes the window geometry from the attributes (kernel_shape, strides, dilations, pads,
/// auto_pad, and ceil_mode when `allowCeil`) for the given input spatial dims and kernel.
Expected<WindowGeometry> windowGeometry(const Node& n, const Shape& inSpatial,
                                        const std::vector<int64_t>& kernel, bool allowCeil);
/// Checks the window attributes of Conv-like and pool-like nodes against a spatial rank
/// (-1 when not yet known).
Status verifyWindowAttrs(const Node& n, int64_t spatialRank, bool allowCeil);

/// Which input dims a reduction (ReduceMean, ReduceMax) reduces: axes from input 1 (opset 18+,
/// `axesInput` overrides its constant at run time) or the "axes" attribute; none given means all
/// unless noop_with_empty_axes. nullopt when the axes input is not a constant (inference only).
Expected<std::optional<std::vector<bool>>> reducedAxes(const Node& n, size_t rank,
                                                       const Tensor* axesInput);
/// The shape after reducing `reduced` dims of `in`, keeping them as 1 when keepDims.
Shape reducedShape(const Shape& in, const std::vector<bool>& reduced, bool keepDims);

/// Shape inference of a reduction: the input's dtype over reducedShape of its shape.
Expected<std::vector<TensorType>> inferReduction(const Node& n);
/// Shape inference of a variadic elementwise op (Sum, Max): all inputs one dtype, broadcast
/// shapes. `what` names the op in errors ("sum", "max").
Expected<std::vector<TensorType>> inferVariadicBroadcast(const Node& n, const char* what);

/// A fused elementwise activation (FusedConv, FusedGemm).
struct Activation {
    enum class Kind { None, Relu, LeakyRelu, Clip, Sigmoid, HardSigmoid, HardSwish };
    Kind kind = Kind::None;
    double alpha = 0.0, beta = 0.0; ///< LeakyRelu alpha; HardSigmoid alpha/beta; Clip min/max
    /// "post_affine" [scale, shift]: y = act(x) * scale + shift after the activation (the
    /// learnable affine PP-LCNet puts after each activation); absent: 1, 0.
    bool postAffine = false;
    double postScale = 1.0, postShift = 0.0;
};
/// Reads attribute "activation" and its parameters. Parameters come from the float list
/// "activation_params" (LeakyRelu [alpha], Clip [min, max], HardSigmoid [alpha, beta]); when it is
/// absent the defaults of the ONNX op apply (LeakyRelu 0.01, Clip -inf..inf, HardSigmoid 0.2, 0.5).
/// Also "post_affine" [scale, shift], which only a node with an activation may have.
Expected<Activation> readActivation(const Node& n);

template <typename T> void applyActivationOnly(const Activation& a, T* data, int64_t count);

/// The activation, then the post affine when there is one.
template <typename T> void applyActivation(const Activation& a, T* data, int64_t count) {
    applyActivationOnly(a, data, count);
    if (!a.postAffine)
        return;
    const T scale = static_cast<T>(a.postScale), shift = static_cast<T>(a.postShift);
    for (int64_t i = 0; i < count; ++i)
        data[i] = data[i] * scale + shift;
}

template <typename T> void applyActivationOnly(const Activation& a, T* data, int64_t count) {
    using K = Activation::Kind;
    const T alpha = static_cast<T>(a.alpha), beta = static_cast<T>(a.beta);
    switch (a.kind) {
    case K::None: return;
    case K::Relu:
        for (int64_t i = 0; i < count; ++i)
            data[i] = data[i] > T(0) ? data[i] : T(0);
        return;
    case K::LeakyRelu:
        for (int64_t i = 0; i < count; ++i)
            data[i] = data[i] >= T(0) ? data[i] : data[i] * alpha;
        return;
    case K::Clip:
        for (int64_t i = 0; i < count; ++i)
            data[i] = data[i] < alpha ? alpha : (data[i] > beta ? beta : data[i]);
        return;
    case K::Sigmoid:
        for (int64_t i = 0; i < count; ++i)
            data[i] = T(1) / (T(1) + std::exp(-data[i]));
        return;
    case K::HardSigmoid:
        for (int64_t i = 0; i < count; ++i) {
            T v = alpha * data[i] + beta;
            data[i] = v < T(0) ? T(0) : (v > T(1) ? T(1) : v);
        }
        return;
    case K::HardSwish:
        for (int64_t i = 0; i < count; ++i) {
            T v = data[i] / T(6) + T(0.5);
            v = v < T(0) ? T(0) : (v > T(1) ? T(1) : v);
            data[i] = data[i] * v;
        }
        return;
    }
}

/// Applies the node's fused activation to a freshly computed f64 or f32 output and wraps it as the
/// kernel's result (FusedConv, FusedGemm).
inline Expected<std::vector<Tensor>> withActivation(const Node& n, Tensor y) {
    SX_ASSIGN(Activation act, readActivation(n));
    if (y.dtype() == DType::F64)
        applyActivation(act, y.mutableData<double>(), y.numel());
    else
        applyActivation(act, y.mutableData<float>(), y.numel());
    return std::vector<Tensor>{std::move(y)};
}

/// Row-major C = alpha * op(A) * op(B) + beta * C through OpenBLAS.
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

/// Calls `fn(T{})` with T = double or float according to `dtype`; other dtypes are an error.
template <typename Fn>
Expected<std::vector<Tensor>> dispatchFloat(const Node& n, DType dtype, Fn&& fn) {
    if (dtype == DType::F64)
        return fn(double{});
    if (dtype == DType::F32)
        return fn(float{});
    return opError(n, "reference kernel needs f32 or f64 data, got " + std::string(dtypeName(dtype)),
                   ErrorKind::Unsupported);
}

/// Calls `fn(T{})` with T = double, float or the integer type of `dtype` (int64_t, int32_t,
/// int16_t, int8_t, uint64_t, uint32_t, uint16_t, uint8_t) according to
/// `dtype` (the numeric dtypes kernels compute on directly); f16/bf16/bool are an error.
template <typename Fn>
Expected<std::vector<Tensor>> dispatchNumeric(const Node& n, DType dtype, Fn&& fn) {
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
    default: break;
    }
    return opError(n, "reference kernel does not handle " + std::string(dtypeName(dtype)),
                   ErrorKind::Unsupported);
}

/// Per-output-dim element strides of a tensor of shape `src` broadcast (numpy rules) to `dst`;
/// broadcast dims get stride 0. `src` must be broadcastable to `dst`.
inline std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& src,
                                             const std::vector<int64_t>& dst) {
    std::vector<int64_t> strides(dst.size(), 0);
    int64_t s = 1;
    for (size_t i = 0; i < src.size(); ++i) {
        size_t si = src.size() - 1 - i, di = dst.size() - 1 - i;
        strides[di] = src[si] == 1 ? 0 : s;
        s *= src[si];
    }
    return strides;
}

// The inner loops of broadcastBinary, as functions of their own: inlined into the odometer, GCC
// left some of them scalar (the float Div by a scalar of PaddleOCR's HardSwish, for one); alone
// each is a plain loop it vectorises.
/// Calls visit(i, o) for every element i of `x` in order, with o its output cell: `strides`
/// are x's strides into the cells, 0 along the reduced dims (walked in input order).
template <typename F> void forEachElement(const Tensor& x, const std::vector<int64_t>& strides, F&& visit) {
    const size_t r = x.rank();
    std::vector<int64_t> idx(r, 0);
    int64_t off = 0;
    for (int64_t i = 0; i < x.numel(); ++i) {
        visit(i, off);
        for (size_t d = r; d-- > 0;) {
            ++idx[d];
            off += strides[d];
            if (idx[d] < x.shape()[d])
                break;
            off -= strides[d] * x.shape()[d];
            idx[d] = 0;
        }
    }
}

/// The reduce ops' axes: attribute "axes" or input 1 (i64), not both; keepdims and
/// noop_with_empty_axes 0 or 1.
inline Status checkReduceAxes(const Node& n) {
    SX_TRY(checkIntsAttr(n, "axes", -1, std::numeric_limits<int64_t>::min()));
    SX_TRY(checkIntAttr(n, "keepdims", 0, 1));
    SX_TRY(checkIntAttr(n, "noop_with_empty_axes", 0, 1));
    if (n.input(1) && n.hasAttr("axes"))
        return opError(n, "reduce axes are given both as attribute and as input 1");
    if (const TensorType* a = inputType(n, 1); a && a->dtype != DType::I64)
        return opError(n, "reduce axes must be i64, got " + std::string(dtypeName(a->dtype)));
    return {};
}

template <typename TA, typename TB, typename TO, typename F>
[[gnu::noinline]] void binaryRowVV(const TA* pa, const TB* pb, TO* po, int64_t n, F f) {
    for (int64_t i = 0; i < n; ++i)
        po[i] = f(pa[i], pb[i]);
}
template <typename TA, typename TB, typename TO, typename F>
[[gnu::noinline]] void binaryRowVS(const TA* pa, TB vb, TO* po, int64_t n, F f) {
    for (int64_t i = 0; i < n; ++i)
        po[i] = f(pa[i], vb);
}
template <typename TA, typename TB, typename TO, typename F>
[[gnu::noinline]] void binaryRowSV(TA va, const TB* pb, TO* po, int64_t n, F f) {
    for (int64_t i = 0; i < n; ++i)
        po[i] = f(va, pb[i]);
}

/// out[i] = f(a[..], b[..]) over `dst` with both operands broadcast by their strides; `out` is
/// contiguous and every element of it is written.
template <typename TA, typename TB, typename TO, typename F>
void broadcastBinary(const TA* a, const std::vector<int64_t>& strideA, const TB* b,
                     const std::vector<int64_t>& strideB, const std::vector<int64_t>& dst, TO* out,
                     F f) {
    const int64_t total = product(dst);
    if (total == 0)
        return;
    // Coalesce the dims: drop extents of 1 and merge a dim into the one before it wherever both
    // operands step through the pair as through one dim (same shape, a scalar, a per-channel
    // operand over H and W...). The elements and their order stay the same; the inner loop gets
    // long, so the odometer below runs once per row of the merged shape, not per row of W.
    std::vector<int64_t> shape, sA, sB;
    shape.reserve(dst.size());
    sA.reserve(dst.size());
    sB.reserve(dst.size());
    for (size_t d = 0; d < dst.size(); ++d) {
        if (dst[d] == 1)
            continue;
        if (!shape.empty() && sA.back() == strideA[d] * dst[d] && sB.back() == strideB[d] * dst[d]) {
            shape.back() *= dst[d];
            sA.back() = strideA[d];
            sB.back() = strideB[d];
            continue;
        }
        shape.push_back(dst[d]);
        sA.push_back(strideA[d]);
        sB.push_back(strideB[d]);
    }
    if (shape.empty()) {
        out[0] = f(a[0], b[0]);
        return;
    }
    const size_t r = shape.size();
    const int64_t last = shape[r - 1], la = sA[r - 1], lb = sB[r - 1];
    std::vector<int64_t> idx(r, 0);
    int64_t offA = 0, offB = 0;
    for (int64_t o = 0; o < total; o += last) {
        // The common layouts get loops the compiler can vectorise (same operations, same order).
        const TA* pa = a + offA;
        const TB* pb = b + offB;
        TO* po = out + o;
        if (la == 1 && lb == 1) {
            binaryRowVV(pa, pb, po, last, f);
        } else if (la == 1 && lb == 0) {
            binaryRowVS(pa, pb[0], po, last, f);
        } else if (la == 0 && lb == 1) {
            binaryRowSV(pa[0], pb, po, last, f);
        } else {
            for (int64_t i = 0; i < last; ++i)
                po[i] = f(pa[i * la], pb[i * lb]);
        }
        // Advance the odometer over all but the last dim.
        for (size_t d = r - 1; d-- > 0;) {
            ++idx[d];
            offA += sA[d];
            offB += sB[d];
            if (idx[d] < shape[d])
                break;
            offA -= sA[d] * shape[d];
            offB -= sB[d] * shape[d];
            idx[d] = 0;
        }
    }
}

/// Copies `src` (shape srcShape) broadcast to dstShape into `dst`.
template <typename T>
void broadcastCopy(const T* src, const std::vector<int64_t>& srcShape,
                   const std::vector<int64_t>& dstShape, T* dst) {
    std::vector<int64_t> s = broadcastStrides(srcShape, dstShape);
    broadcastBinary(src, s, src, s, dstShape, dst, [](T x, T) { return x; });
}

/// Largest tensor a reference kernel will allocate, in elements; bigger requests are an error
/// (a corrupt model asking for 10^12 elements must not abort the process with bad_alloc).
inline constexpr int64_t kMaxKernelElements = int64_t{1} << 31;
/// Checks that `dims` are non-negative and their product fits kMaxKernelElements.
Status checkAllocation(const Node& n, const std::vector<int64_t>& dims);

/// Checks that a kernel got the input tensors its node declares (omitted optionals may be invalid).
Status checkKernelInputs(const Node& n, std::span<const Tensor> inputs);

/// log_softmax of one slice: dst[base + a * stride] = src[...] - max - log(sum(exp(src - max)))
/// for a < len (LogSoftmax along its axis, SoftmaxCrossEntropyLoss along the classes).
template <typename T> void logSoftmaxSlice(const T* src, T* dst, int64_t base, int64_t len, int64_t stride) {
    T mx = -std::numeric_limits<T>::infinity();
    for (int64_t a = 0; a < len; ++a)
        mx = std::max(mx, src[base + a * stride]);
    T sum = 0;
    for (int64_t a = 0; a < len; ++a)
        sum += std::exp(src[base + a * stride] - mx);
    const T logSum = std::log(sum);
    for (int64_t a = 0; a < len; ++a)
        dst[base + a * stride] = src[base + a * stride] - mx - logSum;
}

/// The values of a 1-D i64 (or i32) tensor such as a shape input; an error naming `what` else.
Expected<std::vector<int64_t>> integerValues(const Node& n, const Tensor& t, const char* what);

} // namespace sextant::ir::ops

namespace sextant::ir::ops {

// ---- shared by Conv and FusedConv (defined in Conv.cpp)

/// Checks Conv attributes: group, window attributes against the weight's spatial rank.
Status verifyConvAttrs(const Node& n);
/// Output shape of a convolution of `x` by `w` (bias `b` optional); fills `geom` when given.
Expected<Shape> convOutputShape(const Node& n, const Shape& x, const Shape& w, const Shape* b,
                                WindowGeometry* geom = nullptr);
/// Infers the output type of a Conv-like node from its input types.
Expected<std::vector<TensorType>> inferConvLike(const Node& n);
/// Runs convolution + optional bias (inputs X, W[, B]) in the inputs' float dtype.
Expected<Tensor> convForward(const Node& n, std::span<const Tensor> inputs);
/// The same on tensors picked by the caller (ConvInteger, QLinearConv: a node whose inputs are
/// not X, W, B): `n`'s window attributes, `x` and `w` (and `b`) of one float dtype.
Expected<Tensor> convOf(const Node& n, const Tensor& x, const Tensor& w, const Tensor* b);

// ---- shared by MatMul and the integer products (defined in MatMul.cpp)

/// numpy matmul's output shape of `a` by `b`.
Expected<Shape> matmulOutputShape(const Node& n, const Shape& a, const Shape& b);
/// numpy matmul of `a` by `b`, both of one float dtype.
Expected<Tensor> matmulOf(const Node& n, const Tensor& a, const Tensor& b);

// ---- shared by Gemm and FusedGemm (defined in MatMul.cpp)

/// Checks Gemm attributes (transA, transB, alpha, beta).
Status verifyGemmAttrs(const Node& n);
/// Output shape of Gemm-like A, B[, C]. A may have rank > 2 when transA = 0 (leading dims are
/// rows), so MatMul + bias with a 2-D weight can fuse into FusedGemm.
Expected<Shape> gemmOutputShape(const Node& n, const Shape& a, const Shape& b, const Shape* c);
/// Infers the output type of a Gemm-like node.
Expected<std::vector<TensorType>> inferGemmLike(const Node& n);
/// Runs alpha*op(A)*op(B) + beta*C in the inputs' float dtype.
Expected<Tensor> gemmForward(const Node& n, std::span<const Tensor> inputs);

} // namespace sextant::ir::ops
