// Linear quantization, reference kernels on the host (ONNX opsets 10-25):
//   QuantizeLinear      y = saturate(round(x / scale) + zero_point)
//   DequantizeLinear    y = (x - zero_point) * scale
//   DynamicQuantizeLinear  uint8 y, its scale and zero point from x's range (including 0)
//   MatMulInteger, ConvInteger  int32 products of (a - a_zero_point) and (b - b_zero_point)
//   QLinearMatMul, QLinearConv  the int32 product requantised: saturate(round(acc * sa * sb / sy) + zy)
// round is to the nearest, ties to even (std::nearbyint in the default rounding mode); saturate
// clamps to the output type's range. Scales and zero points are per tensor (a scalar, or one
// element), per axis (1-D along `axis`, default 1) or, from opset 21, blocked (the input's rank,
// `block_size` consecutive elements along `axis` sharing one). Division and multiplication run in
// the type ONNX gives them, the scale's (float32 for a float32 model, in the float64 reference too,
// as onnxruntime computes), on integers
// exactly: the integer products are summed in double, exact below 2^53.
// The integer types are int8, uint8, int16, uint16, int4 and uint4 (int32 into
// DequantizeLinear; int4 from opset 21, held one per byte, packed in files); float8 and float4
// types are not IR dtypes: the importer refuses them by name, and an `output_dtype` naming one is
// refused here.

#include "OpUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sextant::ir {

using ops::opError;

namespace {

bool isQuantType(DType t) {
    return t == DType::I8 || t == DType::U8 || t == DType::I16 || t == DType::U16 || t == DType::I4 || t == DType::U4;
}

/// The range `t` saturates to.
std::pair<double, double> quantRange(DType t) {
    switch (t) {
    case DType::I8: return {-128.0, 127.0};
    case DType::U8: return {0.0, 255.0};
    case DType::I16: return {-32768.0, 32767.0};
    case DType::U16: return {0.0, 65535.0};
    case DType::I32: return {-2147483648.0, 2147483647.0};
    case DType::I4: return {-8.0, 7.0};
    case DType::U4: return {0.0, 15.0};
    default: return {0.0, 0.0};
    }
}

std::string typeList() { return "int8, uint8, int16, uint16, int4 or uint4"; }

/// How a scale (and its zero point) spreads over a tensor of shape `x`: element i uses scale
/// index ((i / (axisLen * inner)) * scaleAxisLen + ((i / inner) % axisLen) / block) * inner + i % inner
/// when blocked; (i / inner) % axisLen per axis; 0 per tensor.
struct Granularity {
    enum class Kind { Tensor, Axis, Blocked } kind = Kind::Tensor;
    int64_t inner = 1, axisLen = 1, block = 1, scaleAxisLen = 1;
    int64_t index(int64_t i) const {
        switch (kind) {
        case Kind::Tensor: return 0;
        case Kind::Axis: return (i / inner) % axisLen;
        case Kind::Blocked:
            return ((i / (axisLen * inner)) * scaleAxisLen + ((i / inner) % axisLen) / block) * inner + i % inner;
        }
        return 0;
    }
};

/// Reads the granularity from the shapes of x and the scale (and zero point, which must match
/// the scale), the node's `axis` and `block_size`. `what` is "scale" or "x_scale" for messages.
Expected<Granularity> granularity(const Node& n, const ops::Shape& x, const ops::Shape& scale, const ops::Shape* zp,
                                  const char* what) {
    if (zp && zp->size() != scale.size())
        return opError(n, std::string("zero point ") + ops::shapeStr(*zp) + " must have the shape of the " + what +
                              " " + ops::shapeStr(scale));
    if (zp)
        for (size_t d = 0; d < scale.size(); ++d)
            if (scale[d].isKnown() && (*zp)[d].isKnown() && scale[d].value != (*zp)[d].value)
                return opError(n, std::string("zero point ") + ops::shapeStr(*zp) + " must have the shape of the " +
                                      what + " " + ops::shapeStr(scale));
    Granularity g;
    const int64_t block = n.attrInt("block_size", 0);
    bool one = true;
    for (const Dim& d : scale)
        one = one && d.isKnown() && d.value == 1;
    if (block == 0 && (scale.empty() || (scale.size() == 1 && one)))
        return g; // per tensor
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", 1), static_cast<int64_t>(x.size()), "axis"));
    for (size_t d = static_cast<size_t>(axis) + 1; d < x.size(); ++d)
        g.inner *= x[d].isKnown() ? x[d].value : 1;
    g.axisLen = x[static_cast<size_t>(axis)].isKnown() ? x[static_cast<size_t>(axis)].value : -1;
    if (block == 0) {
        if (scale.size() != 1)
            return opError(n, std::string(what) + " " + ops::shapeStr(scale) +
                                  " must be a scalar (per tensor) or 1-D (per axis) without block_size");
        if (g.axisLen >= 0 && scale[0].isKnown() && scale[0].value != g.axisLen)
            return opError(n, std::string(what) + " has " + std::to_string(scale[0].value) + " entries but axis " +
                                  std::to_string(axis) + " of the input " + ops::shapeStr(x) + " has " +
                                  std::to_string(g.axisLen));
        g.kind = Granularity::Kind::Axis;
        return g;
    }
    if (scale.size() != x.size())
        return opError(n, std::string(what) + " " + ops::shapeStr(scale) + " must have the input's rank " +
                              std::to_string(x.size()) + " for blocked quantization (block_size " +
                              std::to_string(block) + ")");
    for (size_t d = 0; d < x.size(); ++d) {
        if (!x[d].isKnown() || !scale[d].isKnown())
            continue;
        const int64_t want = static_cast<int64_t>(d) == axis ? (x[d].value + block - 1) / block : x[d].value;
        if (scale[d].value != want)
            return opError(n, std::string(what) + " " + ops::shapeStr(scale) + " does not block the input " +
                                  ops::shapeStr(x) + " by " + std::to_string(block) + " along axis " +
                                  std::to_string(axis) + " (dim " + std::to_string(d) + " should be " +
                                  std::to_string(want) + ")");
    }
    g.kind = Granularity::Kind::Blocked;
    g.block = block;
    g.scaleAxisLen = scale[static_cast<size_t>(axis)].isKnown() ? scale[static_cast<size_t>(axis)].value : 1;
    return g;
}

Status checkCommonAttrs(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "axis", std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
    SX_TRY(ops::checkIntAttr(n, "block_size", 0, std::numeric_limits<int32_t>::max()));
    SX_TRY(ops::checkIntAttr(n, "saturate", 0, 1)); // float8 only: nothing here saturates otherwise
    // opset 25's `precision`: the type the division or multiplication runs in. The compute type
    // is float (or double in the float64 reference); a narrower one is refused.
    if (const int64_t p = n.attrInt("precision", 0); p != 0 && p != 1)
        return opError(n, "precision " + std::to_string(p) + " is not supported (only float, 1)",
                       ErrorKind::Unsupported);
    return {};
}

/// The element type an `output_dtype` attribute names (0: none given).
Expected<std::optional<DType>> outputDtypeAttr(const Node& n) {
    const int64_t code = n.attrInt("output_dtype", 0);
    if (code == 0)
        return std::optional<DType>{};
    std::optional<DType> t = ops::onnxDType(code);
    if (!t)
        return opError(n, "output_dtype " + std::to_string(code) +
                              " is an ONNX type Sextant does not have (float8 and float4 types are not supported)",
                       ErrorKind::Unsupported);
    return t;
}

/// The quantized type QuantizeLinear writes: its zero point's, else output_dtype, else uint8.
Expected<DType> quantizedType(const Node& n) {
    SX_ASSIGN(std::optional<DType> attr, outputDtypeAttr(n));
    const TensorType* zp = ops::inputType(n, 2);
    if (zp && attr && *attr != zp->dtype)
        return opError(n, "output_dtype " + std::string(dtypeName(*attr)) + " differs from the zero point's " +
                              std::string(dtypeName(zp->dtype)));
    const DType t = zp ? zp->dtype : attr ? *attr : DType::U8;
    if (!isQuantType(t))
        return opError(n, "quantizes to " + std::string(dtypeName(t)) + "; supported: " + typeList(),
                       ErrorKind::Unsupported);
    return t;
}

Status requireFloat(const Node& n, size_t i, const char* what) {
    const TensorType* t = ops::inputType(n, i);
    if (!t)
        return opError(n, std::string(what) + " is missing");
    if (!isFloat(t->dtype))
        return opError(n, std::string(what) + " must be a float tensor, got " + std::string(dtypeName(t->dtype)));
    return {};
}

/// Input i's type must be one of the 8-bit integer types (MatMulInteger, ConvInteger, the QLinear
/// ops); its zero point, input `zp` when present, the same.
Status requireInt8(const Node& n, size_t i, size_t zp, const char* what) {
    const TensorType* t = ops::inputType(n, i);
    if (!t)
        return opError(n, std::string(what) + " is missing");
    if (t->dtype != DType::I8 && t->dtype != DType::U8)
        return opError(n, std::string(what) + " must be int8 or uint8, got " + std::string(dtypeName(t->dtype)),
                       ErrorKind::Unsupported);
    if (const TensorType* z = ops::inputType(n, zp); z && z->dtype != t->dtype)
        return opError(n, std::string(what) + "'s zero point is " + std::string(dtypeName(z->dtype)) + ", not " +
                              std::string(dtypeName(t->dtype)));
    return {};
}

double saturate(double v, DType t) {
    const auto [lo, hi] = quantRange(t);
    return std::isnan(v) ? 0.0 : std::clamp(v, lo, hi); // NaN only from a scale already refused
}

/// A scale QuantizeLinear or a requantisation divides by must be finite and not 0.
Status checkDivisorScale(const Node& n, const Tensor& scale, const char* what) {
    for (int64_t i = 0; i < scale.numel(); ++i)
        if (const double v = scale.at(i); v == 0.0 || !std::isfinite(v))
            return opError(n, std::string(what) + " holds " + std::to_string(v) + " at element " + std::to_string(i) +
                                  ": a scale must be finite and not 0");
    return {};
}

/// A zero point per tensor, per row or per column of a matrix product: `len` entries (1 or the
/// extent along the dim it follows); 0 without one.
Expected<std::vector<double>> zeroPoints(const Node& n, const Tensor* zp, int64_t len, const char* what) {
    if (!zp)
        return std::vector<double>(1, 0.0);
    if (zp->numel() != 1 && (zp->rank() != 1 || zp->numel() != len))
        return opError(n, std::string(what) + " zero point " + ops::shapeStr(ops::shapeOf(*zp)) +
                              " must be a scalar or have " + std::to_string(len) + " entries");
    std::vector<double> out(static_cast<size_t>(zp->numel()));
    for (int64_t i = 0; i < zp->numel(); ++i)
        out[static_cast<size_t>(i)] = zp->at(i);
    return out;
}

/// `t` - zero point as doubles; the zero point indexed by `pick(i)` into `zps` (a single one for all).
template <typename Pick>
Tensor shifted(const Tensor& t, const std::vector<double>& zps, Pick pick) {
    Tensor out = Tensor::uninitialized(DType::F64, t.shape());
    double* o = out.mutableData<double>();
    for (int64_t i = 0; i < t.numel(); ++i)
        o[i] = t.at(i) - zps[zps.size() == 1 ? 0 : static_cast<size_t>(pick(i))];
    return out;
}

/// Rows and columns of a matmul operand's last two dims (a 1-D operand: one row, or one column).
std::pair<int64_t, int64_t> matrixDims(const Tensor& t, bool isA) {
    if (t.rank() >= 2)
        return {t.shape()[t.rank() - 2], t.shape()[t.rank() - 1]};
    const int64_t len = t.rank() == 1 ? t.shape()[0] : 1;
    return isA ? std::pair<int64_t, int64_t>{1, len} : std::pair<int64_t, int64_t>{len, 1};
}

Tensor toInt32(const Tensor& acc) {
    Tensor y = Tensor::uninitialized(DType::I32, acc.shape());
    int32_t* o = y.mutableData<int32_t>();
    const double* a = acc.data<double>();
    for (int64_t i = 0; i < acc.numel(); ++i)
        o[i] = static_cast<int32_t>(saturate(a[i], DType::I32)); // exact unless it wraps int32
    return y;
}

/// y = saturate(round(acc * scale(i)) + zp(i)) in the compute type T.
template <typename T, typename Scale, typename Zp>
Tensor requantise(const Tensor& acc, DType out, Scale scale, Zp zp) {
    Tensor y(out, acc.shape());
    const double* a = acc.data<double>();
    for (int64_t i = 0; i < acc.numel(); ++i) {
        const T v = static_cast<T>(a[i]) * scale(i);
        y.set(i, saturate(static_cast<double>(std::nearbyint(v)) + zp(i), out));
    }
    return y;
}

/// The type the arithmetic runs in: the declared type of value `v` (a scale, or DequantizeLinear's
/// output), as ONNX specifies: "the type of y_scale determines the precision of the division".
/// So a float32 model computes in float32 in the float64 reference too, bit for bit as
/// onnxruntime does; only a double scale computes in double. (float16 and bfloat16 scales
/// compute in float32.)
DType arithmeticOf(const Value* v) { return v && v->type().dtype == DType::F64 ? DType::F64 : DType::F32; }

} // namespace

// ---- QuantizeLinear: x (float, or int32 before opset 19), y_scale, optional y_zero_point

Status verifyQuantizeLinear(const Node& n) {
    SX_TRY(checkCommonAttrs(n));
    const TensorType* x = ops::inputType(n, 0);
    if (!x || (!isFloat(x->dtype) && x->dtype != DType::I32))
        return opError(n, "quantize input must be a float or int32 tensor");
    SX_TRY(requireFloat(n, 1, "y_scale"));
    SX_TRY(quantizedType(n));
    return {};
}

Expected<std::vector<TensorType>> inferQuantizeLinear(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    const TensorType* scale = ops::inputType(n, 1);
    const TensorType* zp = ops::inputType(n, 2);
    SX_TRY(granularity(n, x->shape, scale->shape, zp ? &zp->shape : nullptr, "y_scale"));
    SX_ASSIGN(DType t, quantizedType(n));
    return std::vector<TensorType>{TensorType{t, x->shape}};
}

Expected<std::vector<Tensor>> runQuantizeLinear(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor& scale = inputs[1];
    const Tensor* zp = n.input(2) ? &inputs[2] : nullptr;
    SX_ASSIGN(DType out, quantizedType(n));
    const ops::Shape zs = zp ? ops::shapeOf(*zp) : ops::Shape{};
    SX_ASSIGN(Granularity g, granularity(n, ops::shapeOf(x), ops::shapeOf(scale), zp ? &zs : nullptr, "y_scale"));
    SX_TRY(checkDivisorScale(n, scale, "y_scale"));
    Tensor y(out, x.shape());
    return ops::dispatchFloat(n, arithmeticOf(n.input(1)), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        for (int64_t i = 0; i < x.numel(); ++i) {
            const int64_t s = g.index(i);
            const T q = std::nearbyint(static_cast<T>(x.at(i)) / static_cast<T>(scale.at(s)));
            y.set(i, saturate(static_cast<double>(q) + (zp ? zp->at(s) : 0.0), out));
        }
        return std::vector<Tensor>{std::move(y)};
    });
}

// ---- DequantizeLinear: x (int8/uint8/int16/uint16/int32), x_scale, optional x_zero_point

Status verifyDequantizeLinear(const Node& n) {
    SX_TRY(checkCommonAttrs(n));
    const TensorType* x = ops::inputType(n, 0);
    if (!x || (!isQuantType(x->dtype) && x->dtype != DType::I32))
        return opError(n, "dequantize input must be " + typeList() + " or int32, got " +
                              (x ? std::string(dtypeName(x->dtype)) : std::string("nothing")),
                       ErrorKind::Unsupported);
    SX_TRY(requireFloat(n, 1, "x_scale"));
    if (const TensorType* zp = ops::inputType(n, 2); zp && zp->dtype != x->dtype)
        return opError(n, "x_zero_point is " + std::string(dtypeName(zp->dtype)) + " but x is " +
                              std::string(dtypeName(x->dtype)));
    SX_ASSIGN(std::optional<DType> attr, outputDtypeAttr(n));
    if (attr && !isFloat(*attr))
        return opError(n, "output_dtype must be a float type, got " + std::string(dtypeName(*attr)));
    return {};
}

Expected<std::vector<TensorType>> inferDequantizeLinear(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    const TensorType* scale = ops::inputType(n, 1);
    const TensorType* zp = ops::inputType(n, 2);
    SX_TRY(granularity(n, x->shape, scale->shape, zp ? &zp->shape : nullptr, "x_scale"));
    SX_ASSIGN(std::optional<DType> attr, outputDtypeAttr(n));
    return std::vector<TensorType>{TensorType{attr ? *attr : scale->dtype, x->shape}};
}

Expected<std::vector<Tensor>> runDequantizeLinear(const Node& n, std::span<const Tensor> inputs,
                                                  const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor& scale = inputs[1];
    const Tensor* zp = n.input(2) ? &inputs[2] : nullptr;
    const ops::Shape zs = zp ? ops::shapeOf(*zp) : ops::Shape{};
    SX_ASSIGN(Granularity g, granularity(n, ops::shapeOf(x), ops::shapeOf(scale), zp ? &zs : nullptr, "x_scale"));
    return ops::dispatchFloat(n, arithmeticOf(n.output(0)), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y = Tensor::uninitialized(dtypeOf<T>(), x.shape());
        T* o = y.mutableData<T>();
        for (int64_t i = 0; i < x.numel(); ++i) {
            const int64_t s = g.index(i);
            o[i] = static_cast<T>(x.at(i) - (zp ? zp->at(s) : 0.0)) * static_cast<T>(scale.at(s));
        }
        return std::vector<Tensor>{std::move(y)};
    });
}

// ---- DynamicQuantizeLinear: x (float) -> y (uint8), y_scale (float scalar), y_zero_point (uint8 scalar)

Status verifyDynamicQuantizeLinear(const Node& n) { return requireFloat(n, 0, "x"); }

Expected<std::vector<TensorType>> inferDynamicQuantizeLinear(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    return std::vector<TensorType>{TensorType{DType::U8, x->shape}, TensorType::of(DType::F32, {}),
                                   TensorType::of(DType::U8, {})};
}

Expected<std::vector<Tensor>> runDynamicQuantizeLinear(const Node& n, std::span<const Tensor> inputs,
                                                       const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    // ONNX defines it in float32 (its y_scale is float32), whatever the executor computes in.
    const Tensor x = inputs[0].castTo(DType::F32);
    return ops::dispatchFloat(n, DType::F32, [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        const T* xs = x.data<T>();
        T lo = 0, hi = 0; // the range always holds 0
        for (int64_t i = 0; i < x.numel(); ++i) {
            if (std::isnan(xs[i]))
                return opError(n, "input holds NaN at element " + std::to_string(i) + ": it has no range to quantize");
            lo = std::min(lo, xs[i]);
            hi = std::max(hi, xs[i]);
        }
        const T scale = (hi - lo) / T(255);
        // All zeros: scale 0; every element quantizes to the zero point, 0.
        const T zpf = scale == T(0) ? T(0) : std::nearbyint(std::clamp(T(0) - lo / scale, T(0), T(255)));
        Tensor y(DType::U8, x.shape());
        uint8_t* o = y.mutableData<uint8_t>();
        for (int64_t i = 0; i < x.numel(); ++i)
            o[i] = scale == T(0) ? 0
                                 : static_cast<uint8_t>(std::clamp(std::nearbyint(xs[i] / scale) + zpf, T(0), T(255)));
        Tensor s = Tensor::scalar(static_cast<double>(scale), dtypeOf<T>());
        Tensor z = Tensor::scalar(static_cast<double>(zpf), DType::U8);
        return std::vector<Tensor>{std::move(y), std::move(s), std::move(z)};
    });
}

// ---- MatMulInteger: A, B (int8/uint8), optional a_zero_point (per tensor or per row of A),
// b_zero_point (per tensor or per column of B) -> int32

Status verifyMatMulInteger(const Node& n) {
    SX_TRY(requireInt8(n, 0, 2, "A"));
    return requireInt8(n, 1, 3, "B");
}

Expected<std::vector<TensorType>> inferMatMulInteger(const Node& n) {
    SX_ASSIGN(ops::Shape out, ops::matmulOutputShape(n, ops::inputType(n, 0)->shape, ops::inputType(n, 1)->shape));
    return std::vector<TensorType>{TensorType{DType::I32, std::move(out)}};
}

namespace {

/// (a - a_zero_point) @ (b - b_zero_point) in double, exactly.
Expected<Tensor> integerProduct(const Node& n, const Tensor& a, const Tensor* azp, const Tensor& b, const Tensor* bzp) {
    const int64_t m = matrixDims(a, true).first, cols = matrixDims(b, false).second;
    SX_ASSIGN(std::vector<double> za, zeroPoints(n, azp, m, "A"));
    SX_ASSIGN(std::vector<double> zb, zeroPoints(n, bzp, cols, "B"));
    const int64_t rowLen = a.rank() >= 1 ? a.shape().back() : 1;
    const Tensor a64 = shifted(a, za, [&](int64_t i) { return (i / rowLen) % m; });
    const Tensor b64 = shifted(b, zb, [&](int64_t i) { return i % cols; });
    return ops::matmulOf(n, a64, b64);
}

} // namespace

Expected<std::vector<Tensor>> runMatMulInteger(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    SX_ASSIGN(Tensor acc, integerProduct(n, inputs[0], n.input(2) ? &inputs[2] : nullptr, inputs[1],
                                         n.input(3) ? &inputs[3] : nullptr));
    return std::vector<Tensor>{toInt32(acc)};
}

// ---- QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale, y_zero_point

Status verifyQLinearMatMul(const Node& n) {
    SX_TRY(requireInt8(n, 0, 2, "a"));
    SX_TRY(requireInt8(n, 3, 5, "b"));
    SX_TRY(requireInt8(n, 7, 7, "y_zero_point"));
    for (size_t i : {1u, 4u, 6u})
        SX_TRY(requireFloat(n, i, i == 1 ? "a_scale" : i == 4 ? "b_scale" : "y_scale"));
    return {};
}

Expected<std::vector<TensorType>> inferQLinearMatMul(const Node& n) {
    SX_ASSIGN(ops::Shape out, ops::matmulOutputShape(n, ops::inputType(n, 0)->shape, ops::inputType(n, 3)->shape));
    return std::vector<TensorType>{TensorType{ops::inputType(n, 7)->dtype, std::move(out)}};
}

Expected<std::vector<Tensor>> runQLinearMatMul(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor &a = inputs[0], &as = inputs[1], &b = inputs[3], &bs = inputs[4], &ys = inputs[6], &yz = inputs[7];
    SX_ASSIGN(Tensor acc, integerProduct(n, a, &inputs[2], b, &inputs[5]));
    const int64_t m = matrixDims(a, true).first, cols = matrixDims(b, false).second;
    for (const auto& [t, len, what] : {std::tuple{&as, m, "a_scale"}, std::tuple{&bs, cols, "b_scale"}})
        if (t->numel() != 1 && (t->rank() != 1 || t->numel() != len))
            return opError(n, std::string(what) + " " + ops::shapeStr(ops::shapeOf(*t)) + " must be a scalar or have " +
                                  std::to_string(len) + " entries");
    if (ys.numel() != 1 || yz.numel() != 1)
        return opError(n, "y_scale and y_zero_point must be scalars");
    SX_TRY(checkDivisorScale(n, ys, "y_scale"));
    const DType out = yz.dtype();
    const int64_t outCols = b.rank() >= 2 ? cols : 1, outRows = a.rank() >= 2 ? m : 1;
    return ops::dispatchFloat(n, arithmeticOf(n.input(6)), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        const T y = static_cast<T>(ys.at(0));
        auto scale = [&](int64_t i) {
            const T sa = static_cast<T>(as.at(as.numel() == 1 ? 0 : (i / outCols) % outRows));
            const T sb = static_cast<T>(bs.at(bs.numel() == 1 ? 0 : i % outCols));
            return sa * sb / y;
        };
        const double z = yz.at(0);
        return std::vector<Tensor>{requantise<T>(acc, out, scale, [z](int64_t) { return z; })};
    });
}

// ---- ConvInteger: x, w (int8/uint8), optional x_zero_point (per tensor), w_zero_point (per
// tensor or per output channel) -> int32; padding holds x_zero_point (0 after the shift)

namespace {

Status verifyIntegerConvAttrs(const Node& n, size_t w) {
    SX_TRY(ops::checkIntAttr(n, "group", 1, std::numeric_limits<int32_t>::max()));
    int64_t r = -1;
    if (const TensorType* wt = ops::inputType(n, w); wt && wt->rank() >= 3)
        r = static_cast<int64_t>(wt->rank()) - 2;
    return ops::verifyWindowAttrs(n, r, false);
}

/// conv(x - zx, w - zw[m]) (+ bias) in double, exactly: zx one zero point, zw one or one per
/// output channel.
Expected<Tensor> shiftedConv(const Node& n, const Tensor& x, const std::vector<double>& zx, const Tensor& w,
                             const std::vector<double>& zw, const Tensor* bias) {
    const int64_t m = w.shape()[0], perOut = m > 0 ? w.numel() / m : 1;
    const Tensor x64 = shifted(x, zx, [](int64_t) { return 0; });
    const Tensor w64 = shifted(w, zw, [perOut](int64_t i) { return i / perOut; });
    std::optional<Tensor> b64;
    if (bias) {
        if (bias->rank() != 1 || bias->numel() != m)
            return opError(n, "bias " + ops::shapeStr(ops::shapeOf(*bias)) + " must have " + std::to_string(m) +
                                  " entries (one per output channel)");
        b64 = bias->castTo(DType::F64);
    }
    return ops::convOf(n, x64, w64, b64 ? &*b64 : nullptr);
}

/// conv(x - x_zero_point, w - w_zero_point) (+ bias) in double, exactly.
Expected<Tensor> integerConv(const Node& n, const Tensor& x, const Tensor* xzp, const Tensor& w, const Tensor* wzp,
                             const Tensor* bias) {
    if (w.rank() < 3)
        return opError(n, "conv weight must have rank >= 3, got " + ops::shapeStr(ops::shapeOf(w)));
    SX_ASSIGN(std::vector<double> zx, zeroPoints(n, xzp, 1, "x"));
    SX_ASSIGN(std::vector<double> zw, zeroPoints(n, wzp, w.shape()[0], "w"));
    return shiftedConv(n, x, zx, w, zw, bias);
}

Expected<ops::Shape> integerConvShape(const Node& n, size_t xi, size_t wi) {
    return ops::convOutputShape(n, ops::inputType(n, xi)->shape, ops::inputType(n, wi)->shape, nullptr);
}

} // namespace

Status verifyConvInteger(const Node& n) {
    SX_TRY(verifyIntegerConvAttrs(n, 1));
    SX_TRY(requireInt8(n, 0, 2, "x"));
    return requireInt8(n, 1, 3, "w");
}

Expected<std::vector<TensorType>> inferConvInteger(const Node& n) {
    SX_ASSIGN(ops::Shape out, integerConvShape(n, 0, 1));
    return std::vector<TensorType>{TensorType{DType::I32, std::move(out)}};
}

Expected<std::vector<Tensor>> runConvInteger(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    SX_ASSIGN(Tensor acc, integerConv(n, inputs[0], n.input(2) ? &inputs[2] : nullptr, inputs[1],
                                      n.input(3) ? &inputs[3] : nullptr, nullptr));
    return std::vector<Tensor>{toInt32(acc)};
}

// ---- QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, optional B (int32)

Status verifyQLinearConv(const Node& n) {
    SX_TRY(verifyIntegerConvAttrs(n, 3));
    SX_TRY(requireInt8(n, 0, 2, "x"));
    SX_TRY(requireInt8(n, 3, 5, "w"));
    SX_TRY(requireInt8(n, 7, 7, "y_zero_point"));
    for (size_t i : {1u, 4u, 6u})
        SX_TRY(requireFloat(n, i, i == 1 ? "x_scale" : i == 4 ? "w_scale" : "y_scale"));
    if (const TensorType* b = ops::inputType(n, 8); b && b->dtype != DType::I32)
        return opError(n, "bias must be int32, got " + std::string(dtypeName(b->dtype)));
    return {};
}

Expected<std::vector<TensorType>> inferQLinearConv(const Node& n) {
    SX_ASSIGN(ops::Shape out, integerConvShape(n, 0, 3));
    return std::vector<TensorType>{TensorType{ops::inputType(n, 7)->dtype, std::move(out)}};
}

Expected<std::vector<Tensor>> runQLinearConv(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor &xs = inputs[1], &w = inputs[3], &ws = inputs[4], &ys = inputs[6], &yz = inputs[7];
    const Tensor* bias = inputs.size() > 8 && n.input(8) ? &inputs[8] : nullptr;
    SX_ASSIGN(Tensor acc, integerConv(n, inputs[0], &inputs[2], w, &inputs[5], bias));
    const int64_t m = w.shape()[0];
    if (xs.numel() != 1 || ys.numel() != 1 || yz.numel() != 1)
        return opError(n, "x_scale, y_scale and y_zero_point must be scalars");
    SX_TRY(checkDivisorScale(n, ys, "y_scale"));
    if (ws.numel() != 1 && (ws.rank() != 1 || ws.numel() != m))
        return opError(n, "w_scale " + ops::shapeStr(ops::shapeOf(ws)) + " must be a scalar or have " +
                              std::to_string(m) + " entries (one per output channel)");
    const int64_t plane = acc.rank() > 2 ? acc.numel() / std::max<int64_t>(1, acc.shape()[0] * m) : 1;
    const DType out = yz.dtype();
    return ops::dispatchFloat(n, arithmeticOf(n.input(6)), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        const T sx = static_cast<T>(xs.at(0)), sy = static_cast<T>(ys.at(0));
        auto scale = [&](int64_t i) {
            const T sw = static_cast<T>(ws.at(ws.numel() == 1 ? 0 : (i / plane) % m));
            return sx * sw / sy;
        };
        const double z = yz.at(0);
        return std::vector<Tensor>{requantise<T>(acc, out, scale, [z](int64_t) { return z; })};
    });
}

} // namespace sextant::ir

namespace sextant::ir {

// ---- sextant.Int8Conv: the int8 cube op fuse-qdq-conv makes of DequantizeLinear -> Conv
// [-> Relu | Clip] -> QuantizeLinear. Inputs x (int8/uint8), w (int8/uint8, output channels
// first), optional bias (int32, at scale x_scale * w_scale[m]); the quantization parameters are
// attributes, fixed at compile time: x_scale, x_zero_point, w_scale and w_zero_point (one entry,
// or one per output channel), y_scale, y_zero_point, output_dtype (ONNX code: 2 uint8, 3 int8),
// activation ("" | "Relu" | "Clip" with activation_params [min, max], in real units).
//   acc = sum (x - x_zero_point) * (w - w_zero_point) + bias     (exact)
//   y   = saturate(round(float(acc) * (x_scale * w_scale[m] / y_scale)) + y_zero_point)
// in float32, the requantisation QLinearConv (and onnxruntime's int8 kernels) compute. The
// activation clamps y in the quantized domain, where Relu is y >= y_zero_point and Clip keeps
// [quantize(min), quantize(max)]: what QuantizeLinear of the activation's result gives, as
// rounding and saturation are monotonic.

namespace {

struct Int8Params {
    float xScale = 1, yScale = 1;
    double xZero = 0, yZero = 0;
    std::vector<float> wScale;
    std::vector<double> wZero;
    DType out = DType::U8;
    double lo = 0, hi = 0; ///< the activation's clamp, in the output's integers
};

Expected<Int8Params> int8Params(const Node& n, int64_t channels) {
    Int8Params p;
    const std::optional<DType> out = ops::onnxDType(n.attrInt("output_dtype", 2));
    if (!out || (*out != DType::I8 && *out != DType::U8))
        return opError(n, "output_dtype " + std::to_string(n.attrInt("output_dtype", 2)) + " is not int8 (3) or uint8 (2)");
    p.out = *out;
    auto finiteScale = [&](const char* what, double v) -> Status {
        if (!(v > 0.0) || !std::isfinite(static_cast<float>(v)))
            return opError(n, std::string(what) + " " + std::to_string(v) + " must be finite and above 0");
        return {};
    };
    if (!n.attr("x_scale") || !n.attr("y_scale") || !n.attr("w_scale"))
        return opError(n, "x_scale, w_scale and y_scale are required");
    SX_TRY(finiteScale("x_scale", n.attrFloat("x_scale", 1)));
    SX_TRY(finiteScale("y_scale", n.attrFloat("y_scale", 1)));
    p.xScale = static_cast<float>(n.attrFloat("x_scale", 1));
    p.yScale = static_cast<float>(n.attrFloat("y_scale", 1));
    p.xZero = static_cast<double>(n.attrInt("x_zero_point", 0));
    p.yZero = static_cast<double>(n.attrInt("y_zero_point", 0));
    const auto [ylo, yhi] = quantRange(p.out);
    if (p.yZero < ylo || p.yZero > yhi)
        return opError(n, "y_zero_point " + std::to_string(n.attrInt("y_zero_point", 0)) + " is outside " +
                              std::string(dtypeName(p.out)));
    const std::vector<double> ws = n.attrFloats("w_scale");
    const std::vector<int64_t> wz = n.attrInts("w_zero_point", {0});
    auto perChannel = [&](size_t len) { return len == 1 || (channels >= 0 && static_cast<int64_t>(len) == channels); };
    if (ws.empty() || !perChannel(ws.size()))
        return opError(n, "w_scale has " + std::to_string(ws.size()) + " entries; it needs 1 or one per output channel (" +
                              std::to_string(channels) + ")");
    if (wz.empty() || !perChannel(wz.size()))
        return opError(n, "w_zero_point has " + std::to_string(wz.size()) + " entries; it needs 1 or one per output channel");
    for (double s : ws) {
        SX_TRY(finiteScale("w_scale", s));
        p.wScale.push_back(static_cast<float>(s));
    }
    for (int64_t z : wz)
        p.wZero.push_back(static_cast<double>(z));
    p.lo = ylo;
    p.hi = yhi;
    const std::string act = n.attrString("activation", "");
    if (act == "Relu") {
        p.lo = p.yZero;
    } else if (act == "Clip") {
        const std::vector<double> b = n.attrFloats("activation_params");
        if (b.size() != 2 || !(b[0] <= b[1]))
            return opError(n, "Clip needs activation_params [min, max] with min <= max");
        auto q = [&](double v) {
            return saturate(static_cast<double>(std::nearbyint(static_cast<float>(v) / p.yScale)) + p.yZero, p.out);
        };
        p.lo = q(b[0]);
        p.hi = q(b[1]);
    } else if (!act.empty()) {
        return opError(n, "activation '" + act + "' is not one the int8 epilogue applies (Relu, Clip)",
                       ErrorKind::Unsupported);
    }
    return p;
}

/// QLinearConv's and QLinearMatMul's requantisation of int32 accumulator `acc` (requantise, in
/// float32), then the activation's clamp; `channel(i)` is element i's output channel or column.
template <typename Channel>
Tensor requantiseInt8(const Tensor& acc, const Int8Params& p, Channel channel) {
    auto scale = [&](int64_t i) {
        const size_t c = p.wScale.size() == 1 ? 0 : static_cast<size_t>(channel(i));
        return p.xScale * p.wScale[c] / p.yScale;
    };
    Tensor y = requantise<float>(acc, p.out, scale, [&p](int64_t) { return p.yZero; });
    if (p.lo > quantRange(p.out).first || p.hi < quantRange(p.out).second)
        for (int64_t i = 0; i < y.numel(); ++i)
            y.set(i, std::clamp(y.at(i), p.lo, p.hi));
    return y;
}

} // namespace

Status verifyInt8Conv(const Node& n) {
    SX_TRY(verifyIntegerConvAttrs(n, 1));
    SX_TRY(requireInt8(n, 0, 0, "x"));
    SX_TRY(requireInt8(n, 1, 1, "w"));
    if (const TensorType* b = ops::inputType(n, 2); b && b->dtype != DType::I32)
        return opError(n, "bias must be int32, got " + std::string(dtypeName(b->dtype)));
    int64_t channels = -1;
    if (const TensorType* w = ops::inputType(n, 1); w && w->rank() >= 1 && w->shape[0].isKnown())
        channels = w->shape[0].value;
    SX_TRY(int8Params(n, channels));
    return {};
}

Expected<std::vector<TensorType>> inferInt8Conv(const Node& n) {
    SX_ASSIGN(ops::Shape out, integerConvShape(n, 0, 1));
    const DType t = ops::onnxDType(n.attrInt("output_dtype", 2)).value_or(DType::U8);
    return std::vector<TensorType>{TensorType{t, std::move(out)}};
}

Expected<std::vector<Tensor>> runInt8Conv(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor& w = inputs[1];
    if (w.rank() < 3)
        return opError(n, "conv weight must have rank >= 3, got " + ops::shapeStr(ops::shapeOf(w)));
    const int64_t m = w.shape()[0];
    SX_ASSIGN(Int8Params p, int8Params(n, m));
    const Tensor* bias = inputs.size() > 2 && n.input(2) ? &inputs[2] : nullptr;
    SX_ASSIGN(Tensor acc, shiftedConv(n, x, std::vector<double>{p.xZero}, w, p.wZero, bias));
    const int64_t plane = acc.rank() > 2 ? acc.numel() / std::max<int64_t>(1, acc.shape()[0] * m) : 1;
    return std::vector<Tensor>{requantiseInt8(acc, p, [&](int64_t i) { return (i / plane) % m; })};
}

// ---- sextant.Int8Gemm: the int8 cube op fuse-qdq-matmul makes of DequantizeLinear -> MatMul or
// Gemm [-> Relu | Clip] -> QuantizeLinear. Inputs x (int8/uint8, [..., M, K]), w (int8/uint8,
// [K, N], a Gemm's transB already applied), optional bias (int32 [N], at scale x_scale *
// w_scale[n]); the attributes are Int8Conv's, with w_scale and w_zero_point one entry or one per
// output column.
//   acc = (x - x_zero_point) @ (w - w_zero_point) + bias     (exact)
//   y   = saturate(round(float(acc) * (x_scale * w_scale[n] / y_scale)) + y_zero_point)
// clamped by the activation as Int8Conv's is: QLinearMatMul's arithmetic.

Status verifyInt8Gemm(const Node& n) {
    SX_TRY(requireInt8(n, 0, 0, "x"));
    SX_TRY(requireInt8(n, 1, 1, "w"));
    const TensorType* x = ops::inputType(n, 0);
    const TensorType* w = ops::inputType(n, 1);
    if (x->rank() < 2 || w->rank() != 2)
        return opError(n, "x must have rank >= 2 and w rank 2, got " + std::to_string(x->rank()) + " and " +
                              std::to_string(w->rank()));
    const int64_t cols = w->shape[1].isKnown() ? w->shape[1].value : -1;
    if (const TensorType* b = ops::inputType(n, 2)) {
        if (b->dtype != DType::I32)
            return opError(n, "bias must be int32, got " + std::string(dtypeName(b->dtype)));
        if (b->rank() != 1 || (cols >= 0 && b->shape[0].isKnown() && b->shape[0].value != cols))
            return opError(n, "bias must have one entry per output column (" + std::to_string(cols) + ")");
    }
    SX_TRY(int8Params(n, cols));
    return {};
}

Expected<std::vector<TensorType>> inferInt8Gemm(const Node& n) {
    SX_ASSIGN(ops::Shape out, ops::matmulOutputShape(n, ops::inputType(n, 0)->shape, ops::inputType(n, 1)->shape));
    const DType t = ops::onnxDType(n.attrInt("output_dtype", 2)).value_or(DType::U8);
    return std::vector<TensorType>{TensorType{t, std::move(out)}};
}

Expected<std::vector<Tensor>> runInt8Gemm(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor& w = inputs[1];
    if (x.rank() < 2 || w.rank() != 2)
        return opError(n, "x must have rank >= 2 and w rank 2, got " + std::to_string(x.rank()) + " and " +
                              std::to_string(w.rank()));
    const int64_t cols = w.shape()[1];
    SX_ASSIGN(Int8Params p, int8Params(n, cols));
    const Tensor x64 = shifted(x, std::vector<double>{p.xZero}, [](int64_t) { return 0; });
    const Tensor w64 = shifted(w, p.wZero, [cols](int64_t i) { return i % cols; });
    SX_ASSIGN(Tensor acc, ops::matmulOf(n, x64, w64));
    if (inputs.size() > 2 && n.input(2)) {
        const Tensor& b = inputs[2];
        if (b.rank() != 1 || b.numel() != cols)
            return opError(n, "bias " + ops::shapeStr(ops::shapeOf(b)) + " must have " + std::to_string(cols) +
                                  " entries (one per output column)");
        double* a = acc.mutableData<double>();
        for (int64_t i = 0; i < acc.numel(); ++i)
            a[i] += b.at(i % cols);
    }
    return std::vector<Tensor>{requantiseInt8(acc, p, [cols](int64_t i) { return i % cols; })};
}

} // namespace sextant::ir
