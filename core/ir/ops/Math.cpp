// Elementwise math added for ONNX coverage: unary float functions (trigonometric, hyperbolic,
// rounding, Erf, Reciprocal, the parametric activations Elu/Selu/Celu/ThresholdedRelu/Shrink/
// Softplus/Softsign, Gelu), Abs and Sign on any numeric type, IsNaN/IsInf, the comparisons
// Greater/Less/LessOrEqual, the logical And/Or/Xor, variadic Min and Mean, PRelu, Mod and Where.
// Float inputs arrive in the compute dtype; integer and bool tensors unchanged.

#include "OpUtil.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <type_traits>

namespace sextant::ir {

using ops::opError;

namespace {

Expected<std::vector<TensorType>> inferSame(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (!x)
        return opError(n, "needs an input");
    return std::vector<TensorType>{*x};
}

Expected<std::vector<TensorType>> inferBoolLike(const Node& n) {
    SX_ASSIGN(std::vector<TensorType> t, inferSame(n));
    t[0].dtype = DType::Bool;
    return t;
}

Status requireNumeric(const Node& n, size_t i, const char* what) {
    if (const TensorType* t = ops::inputType(n, i); t && t->dtype == DType::Bool)
        return opError(n, std::string(what) + " must be numeric, got bool");
    return {};
}

Status requireBool(const Node& n, size_t i, const char* what) {
    if (const TensorType* t = ops::inputType(n, i); t && t->dtype != DType::Bool)
        return opError(n, std::string(what) + " must be bool, got " + std::string(dtypeName(t->dtype)));
    return {};
}

/// y = f(x) elementwise on a float tensor; f works in double, the result is rounded to T.
template <typename F>
Expected<std::vector<Tensor>> mapFloat(const Node& n, std::span<const Tensor> inputs, F f) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y = Tensor::uninitialized(dtypeOf<T>(), x.shape()); // every element written below
        const T* src = x.data<T>();
        T* dst = y.mutableData<T>();
        for (int64_t i = 0; i < x.numel(); ++i)
            dst[i] = static_cast<T>(f(static_cast<double>(src[i])));
        return std::vector<Tensor>{y};
    });
}

/// Output shape of a broadcasting binary op whose operands must share a dtype.
Expected<std::vector<int64_t>> binaryShape(const Node& n, const Tensor& a, const Tensor& b) {
    if (a.dtype() != b.dtype())
        return opError(n, "operands have different dtypes " + std::string(dtypeName(a.dtype())) + " and " +
                              std::string(dtypeName(b.dtype())));
    SX_ASSIGN(ops::Shape shape, ops::broadcastShapes(n, ops::shapeOf(a), ops::shapeOf(b)));
    std::vector<int64_t> out = ops::extents(shape);
    SX_TRY(ops::checkAllocation(n, out));
    return out;
}

Expected<std::vector<TensorType>> inferBinarySame(const Node& n, DType* resultDType) {
    const TensorType* a = ops::inputType(n, 0);
    const TensorType* b = ops::inputType(n, 1);
    if (!a || !b)
        return opError(n, "needs two inputs");
    if (a->dtype != b->dtype)
        return opError(n, "operands have different dtypes " + std::string(dtypeName(a->dtype)) + " and " +
                              std::string(dtypeName(b->dtype)));
    TensorType t;
    t.dtype = resultDType ? *resultDType : a->dtype;
    SX_ASSIGN(t.shape, ops::broadcastShapes(n, a->shape, b->shape));
    return std::vector<TensorType>{t};
}

enum class Cmp { Greater, Less, LessOrEqual };

Expected<std::vector<Tensor>> runCompare(Cmp op, const Node& n, std::span<const Tensor> inputs) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& a = inputs[0];
    const Tensor& b = inputs[1];
    SX_ASSIGN(std::vector<int64_t> out, binaryShape(n, a, b));
    return ops::dispatchNumeric(n, a.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y(DType::Bool, out);
        const auto sa = ops::broadcastStrides(a.shape(), out);
        const auto sb = ops::broadcastStrides(b.shape(), out);
        uint8_t* dst = y.mutableData<uint8_t>();
        switch (op) {
        case Cmp::Greater:
            ops::broadcastBinary(a.data<T>(), sa, b.data<T>(), sb, out, dst, [](T x, T z) -> uint8_t { return x > z; });
            break;
        case Cmp::Less:
            ops::broadcastBinary(a.data<T>(), sa, b.data<T>(), sb, out, dst, [](T x, T z) -> uint8_t { return x < z; });
            break;
        case Cmp::LessOrEqual:
            ops::broadcastBinary(a.data<T>(), sa, b.data<T>(), sb, out, dst, [](T x, T z) -> uint8_t { return x <= z; });
            break;
        }
        return std::vector<Tensor>{y};
    });
}

enum class Logic { And, Or, Xor };

Expected<std::vector<Tensor>> runLogic(Logic op, const Node& n, std::span<const Tensor> inputs) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& a = inputs[0];
    const Tensor& b = inputs[1];
    if (a.dtype() != DType::Bool || b.dtype() != DType::Bool)
        return opError(n, "logical operands must be bool");
    SX_ASSIGN(std::vector<int64_t> out, binaryShape(n, a, b));
    Tensor y(DType::Bool, out);
    const auto sa = ops::broadcastStrides(a.shape(), out);
    const auto sb = ops::broadcastStrides(b.shape(), out);
    const uint8_t* pa = a.data<uint8_t>();
    const uint8_t* pb = b.data<uint8_t>();
    uint8_t* dst = y.mutableData<uint8_t>();
    switch (op) {
    case Logic::And:
        ops::broadcastBinary(pa, sa, pb, sb, out, dst, [](uint8_t x, uint8_t z) -> uint8_t { return x && z; });
        break;
    case Logic::Or:
        ops::broadcastBinary(pa, sa, pb, sb, out, dst, [](uint8_t x, uint8_t z) -> uint8_t { return x || z; });
        break;
    case Logic::Xor:
        ops::broadcastBinary(pa, sa, pb, sb, out, dst, [](uint8_t x, uint8_t z) -> uint8_t { return (x != 0) != (z != 0); });
        break;
    }
    return std::vector<Tensor>{y};
}

/// min(a, b) that propagates NaN like numpy.minimum.
template <typename T> T minOf(T a, T b) {
    if constexpr (std::is_floating_point_v<T>) {
        if (a != a)
            return a;
        if (b != b)
            return b;
    }
    return a <= b ? a : b;
}

/// Min or Mean of any number of inputs with broadcasting.
Expected<std::vector<Tensor>> runVariadic(const Node& n, std::span<const Tensor> inputs, bool mean) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const char* what = mean ? "mean" : "min";
    if (inputs.empty())
        return opError(n, std::string(what) + " needs at least one input");
    ops::Shape shape = ops::shapeOf(inputs[0]);
    for (size_t i = 1; i < inputs.size(); ++i) {
        if (inputs[i].dtype() != inputs[0].dtype())
            return opError(n, std::string(what) + " inputs have different dtypes " +
                                  std::string(dtypeName(inputs[0].dtype())) + " and " +
                                  std::string(dtypeName(inputs[i].dtype())));
        SX_ASSIGN(shape, ops::broadcastShapes(n, shape, ops::shapeOf(inputs[i])));
    }
    const std::vector<int64_t> out = ops::extents(shape);
    SX_TRY(ops::checkAllocation(n, out));
    auto body = [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y(inputs[0].dtype(), out);
        T* dst = y.mutableData<T>();
        ops::broadcastCopy(inputs[0].data<T>(), inputs[0].shape(), out, dst);
        const std::vector<int64_t> self = ops::broadcastStrides(out, out);
        for (size_t i = 1; i < inputs.size(); ++i) {
            const auto si = ops::broadcastStrides(inputs[i].shape(), out);
            if (mean)
                ops::broadcastBinary(dst, self, inputs[i].data<T>(), si, out, dst, [](T a, T b) { return static_cast<T>(a + b); });
            else
                ops::broadcastBinary(dst, self, inputs[i].data<T>(), si, out, dst, [](T a, T b) { return minOf(a, b); });
        }
        if (mean)
            for (int64_t i = 0; i < y.numel(); ++i)
                dst[i] = static_cast<T>(dst[i] / static_cast<T>(inputs.size()));
        return std::vector<Tensor>{y};
    };
    return mean ? ops::dispatchFloat(n, inputs[0].dtype(), body) : ops::dispatchNumeric(n, inputs[0].dtype(), body);
}

/// Copies element `from` of `src` to element `to` of `dst` (same element size, any dtype).
inline void copyElement(const Tensor& src, int64_t from, Tensor& dst, int64_t to) {
    const size_t size = dtypeSize(src.dtype());
    std::memcpy(dst.mutableBytes() + to * static_cast<int64_t>(size), src.bytes() + from * static_cast<int64_t>(size), size);
}

} // namespace

// ---- unary float functions

#define SEXTANT_UNARY_FLOAT(Id, what, expr)                                                        \
    Status verify##Id(const Node& n) { return ops::requireFloatInput(n, 0, what); }                \
    Expected<std::vector<TensorType>> infer##Id(const Node& n) { return inferSame(n); }            \
    Expected<std::vector<Tensor>> run##Id(const Node& n, std::span<const Tensor> inputs,           \
                                          const KernelContext&) {                                  \
        return mapFloat(n, inputs, [](double x) { return (expr); });                               \
    }
SEXTANT_UNARY_FLOAT(Ceil, "ceil input", std::ceil(x))
SEXTANT_UNARY_FLOAT(Floor, "floor input", std::floor(x))
SEXTANT_UNARY_FLOAT(Round, "round input", std::nearbyint(x)) // ties to even (default rounding mode)
SEXTANT_UNARY_FLOAT(Reciprocal, "reciprocal input", 1.0 / x)
SEXTANT_UNARY_FLOAT(Tanh, "tanh input", std::tanh(x))
SEXTANT_UNARY_FLOAT(Sin, "sin input", std::sin(x))
SEXTANT_UNARY_FLOAT(Cos, "cos input", std::cos(x))
SEXTANT_UNARY_FLOAT(Tan, "tan input", std::tan(x))
SEXTANT_UNARY_FLOAT(Asin, "asin input", std::asin(x))
SEXTANT_UNARY_FLOAT(Acos, "acos input", std::acos(x))
SEXTANT_UNARY_FLOAT(Atan, "atan input", std::atan(x))
SEXTANT_UNARY_FLOAT(Sinh, "sinh input", std::sinh(x))
SEXTANT_UNARY_FLOAT(Cosh, "cosh input", std::cosh(x))
SEXTANT_UNARY_FLOAT(Asinh, "asinh input", std::asinh(x))
SEXTANT_UNARY_FLOAT(Acosh, "acosh input", std::acosh(x))
SEXTANT_UNARY_FLOAT(Atanh, "atanh input", std::atanh(x))
SEXTANT_UNARY_FLOAT(Erf, "erf input", std::erf(x))
SEXTANT_UNARY_FLOAT(Softplus, "softplus input", x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)))
SEXTANT_UNARY_FLOAT(Softsign, "softsign input", x / (1.0 + std::abs(x)))
#undef SEXTANT_UNARY_FLOAT

// ---- parametric activations

Status verifyElu(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "alpha"));
    return ops::requireFloatInput(n, 0, "elu input");
}
Expected<std::vector<TensorType>> inferElu(const Node& n) { return inferSame(n); }
Expected<std::vector<Tensor>> runElu(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    const double alpha = n.attrFloat("alpha", 1.0);
    return mapFloat(n, inputs, [alpha](double x) { return x >= 0 ? x : alpha * std::expm1(x); });
}

Status verifySelu(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "alpha"));
    SX_TRY(ops::checkFloatAttr(n, "gamma"));
    return ops::requireFloatInput(n, 0, "selu input");
}
Expected<std::vector<TensorType>> inferSelu(const Node& n) { return inferSame(n); }
Expected<std::vector<Tensor>> runSelu(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    // ONNX's defaults are these float32 values exactly.
    const double alpha = n.attrFloat("alpha", 1.67326319217681884765625);
    const double gamma = n.attrFloat("gamma", 1.05070102214813232421875);
    return mapFloat(n, inputs, [alpha, gamma](double x) { return x > 0 ? gamma * x : gamma * alpha * std::expm1(x); });
}

Status verifyCelu(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "alpha"));
    if (n.attrFloat("alpha", 1.0) == 0.0)
        return opError(n, "celu alpha must not be 0");
    return ops::requireFloatInput(n, 0, "celu input");
}
Expected<std::vector<TensorType>> inferCelu(const Node& n) { return inferSame(n); }
Expected<std::vector<Tensor>> runCelu(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    const double alpha = n.attrFloat("alpha", 1.0);
    return mapFloat(n, inputs, [alpha](double x) {
        return std::max(0.0, x) + std::min(0.0, alpha * std::expm1(x / alpha));
    });
}

Status verifyThresholdedRelu(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "alpha"));
    return ops::requireFloatInput(n, 0, "thresholded-relu input");
}
Expected<std::vector<TensorType>> inferThresholdedRelu(const Node& n) { return inferSame(n); }
Expected<std::vector<Tensor>> runThresholdedRelu(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    const double alpha = n.attrFloat("alpha", 1.0);
    return mapFloat(n, inputs, [alpha](double x) { return x > alpha ? x : 0.0; });
}

Status verifyShrink(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "bias"));
    SX_TRY(ops::checkFloatAttr(n, "lambd"));
    return ops::requireFloatInput(n, 0, "shrink input");
}
Expected<std::vector<TensorType>> inferShrink(const Node& n) { return inferSame(n); }
Expected<std::vector<Tensor>> runShrink(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    const double bias = n.attrFloat("bias", 0.0), lambd = n.attrFloat("lambd", 0.5);
    return mapFloat(n, inputs, [bias, lambd](double x) {
        return x < -lambd ? x + bias : (x > lambd ? x - bias : 0.0);
    });
}

// ---- Gelu (opset 20): x * Phi(x), Phi the standard normal CDF; approximate "tanh" uses
// 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))). The exact form is computed with erfc,
// so the tiny values far below zero are not lost to 1 + erf(x) cancelling.

Status verifyGelu(const Node& n) {
    SX_TRY(ops::checkStringAttr(n, "approximate", {"none", "tanh"}));
    return ops::requireFloatInput(n, 0, "gelu input");
}
Expected<std::vector<TensorType>> inferGelu(const Node& n) { return inferSame(n); }
Expected<std::vector<Tensor>> runGelu(const Node& n, std::span<const Tensor> inputs,
                                      const KernelContext&) {
    if (n.attrString("approximate", "none") == "tanh") {
        const double k = std::sqrt(2.0 / std::numbers::pi);
        return mapFloat(n, inputs, [k](double x) {
            return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
        });
    }
    return mapFloat(n, inputs,
                    [](double x) { return 0.5 * x * std::erfc(-x / std::numbers::sqrt2); });
}

// ---- Mish (opset 18): x * tanh(softplus(x)); Swish (opset 24): x * sigmoid(alpha * x).
// softplus is log1p(exp(x)) below 20 and x above, where exp would overflow and the two agree.

Status verifyMish(const Node& n) { return ops::requireFloatInput(n, 0, "mish input"); }
Expected<std::vector<TensorType>> inferMish(const Node& n) { return inferSame(n); }
Expected<std::vector<Tensor>> runMish(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    return mapFloat(n, inputs, [](double x) { return x * std::tanh(x > 20.0 ? x : std::log1p(std::exp(x))); });
}

Status verifySwish(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "alpha"));
    return ops::requireFloatInput(n, 0, "swish input");
}
Expected<std::vector<TensorType>> inferSwish(const Node& n) { return inferSame(n); }
Expected<std::vector<Tensor>> runSwish(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    const double alpha = n.attrFloat("alpha", 1.0);
    return mapFloat(n, inputs, [alpha](double x) { return x / (1.0 + std::exp(-alpha * x)); });
}

// ---- Abs, Sign (any numeric type)

Status verifyAbs(const Node& n) { return requireNumeric(n, 0, "abs input"); }
Expected<std::vector<TensorType>> inferAbs(const Node& n) { return inferSame(n); }
Expected<std::vector<Tensor>> runAbs(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    return ops::dispatchNumeric(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y(x.dtype(), x.shape());
        const T* src = x.data<T>();
        T* dst = y.mutableData<T>();
        for (int64_t i = 0; i < x.numel(); ++i) {
            if constexpr (std::is_unsigned_v<T>)
                dst[i] = src[i];
            else
                dst[i] = static_cast<T>(src[i] < 0 ? -src[i] : src[i]);
        }
        return std::vector<Tensor>{y};
    });
}

Status verifySign(const Node& n) { return requireNumeric(n, 0, "sign input"); }
Expected<std::vector<TensorType>> inferSign(const Node& n) { return inferSame(n); }
Expected<std::vector<Tensor>> runSign(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    return ops::dispatchNumeric(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y(x.dtype(), x.shape());
        const T* src = x.data<T>();
        T* dst = y.mutableData<T>();
        for (int64_t i = 0; i < x.numel(); ++i)
            if constexpr (std::is_unsigned_v<T>)
                dst[i] = static_cast<T>(src[i] > 0);
            else
                dst[i] = static_cast<T>((src[i] > T(0)) - (src[i] < T(0)));
        return std::vector<Tensor>{y};
    });
}

// ---- IsNaN, IsInf

Status verifyIsNaN(const Node& n) { return ops::requireFloatInput(n, 0, "is-nan input"); }
Expected<std::vector<TensorType>> inferIsNaN(const Node& n) { return inferBoolLike(n); }
Expected<std::vector<Tensor>> runIsNaN(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    Tensor y(DType::Bool, x.shape());
    uint8_t* dst = y.mutableData<uint8_t>();
    for (int64_t i = 0; i < x.numel(); ++i)
        dst[i] = std::isnan(x.at(i));
    return std::vector<Tensor>{y};
}

Status verifyIsInf(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "detect_negative", 0, 1));
    SX_TRY(ops::checkIntAttr(n, "detect_positive", 0, 1));
    return ops::requireFloatInput(n, 0, "is-inf input");
}
Expected<std::vector<TensorType>> inferIsInf(const Node& n) { return inferBoolLike(n); }
Expected<std::vector<Tensor>> runIsInf(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const bool neg = n.attrInt("detect_negative", 1) != 0, pos = n.attrInt("detect_positive", 1) != 0;
    const Tensor& x = inputs[0];
    Tensor y(DType::Bool, x.shape());
    uint8_t* dst = y.mutableData<uint8_t>();
    for (int64_t i = 0; i < x.numel(); ++i) {
        const double v = x.at(i);
        dst[i] = std::isinf(v) && ((v > 0 && pos) || (v < 0 && neg));
    }
    return std::vector<Tensor>{y};
}

// ---- Greater, Less, LessOrEqual

#define SEXTANT_COMPARE(Id, what)                                                                  \
    Status verify##Id(const Node& n) {                                                             \
        SX_TRY(requireNumeric(n, 0, what " operand 0"));                                           \
        return requireNumeric(n, 1, what " operand 1");                                            \
    }                                                                                              \
    Expected<std::vector<TensorType>> infer##Id(const Node& n) {                                   \
        DType b = DType::Bool;                                                                     \
        return inferBinarySame(n, &b);                                                             \
    }                                                                                              \
    Expected<std::vector<Tensor>> run##Id(const Node& n, std::span<const Tensor> inputs,           \
                                          const KernelContext&) {                                  \
        return runCompare(Cmp::Id, n, inputs);                                                     \
    }
SEXTANT_COMPARE(Greater, "greater")
SEXTANT_COMPARE(Less, "less")
SEXTANT_COMPARE(LessOrEqual, "less-or-equal")
#undef SEXTANT_COMPARE

// ---- And, Or, Xor

#define SEXTANT_LOGIC(Id, what)                                                                    \
    Status verify##Id(const Node& n) {                                                             \
        SX_TRY(requireBool(n, 0, what " operand 0"));                                              \
        return requireBool(n, 1, what " operand 1");                                               \
    }                                                                                              \
    Expected<std::vector<TensorType>> infer##Id(const Node& n) { return inferBinarySame(n, nullptr); } \
    Expected<std::vector<Tensor>> run##Id(const Node& n, std::span<const Tensor> inputs,           \
                                          const KernelContext&) {                                  \
        return runLogic(Logic::Id, n, inputs);                                                     \
    }
SEXTANT_LOGIC(And, "and")
SEXTANT_LOGIC(Or, "or")
SEXTANT_LOGIC(Xor, "xor")
#undef SEXTANT_LOGIC

// ---- BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot (opset 18) and BitShift (opset 11), on
// the integer types (BitShift: unsigned ones, as ONNX defines it), with broadcasting.

namespace {

enum class Bits { And, Or, Xor, Left, Right };

Status requireInteger(const Node& n, size_t i, const char* what, bool unsignedOnly) {
    const TensorType* t = ops::inputType(n, i);
    if (!t)
        return {};
    const bool isUnsigned = t->dtype == DType::U8 || t->dtype == DType::U16 || t->dtype == DType::U32 || t->dtype == DType::U64;
    if (!isInteger(t->dtype) || (unsignedOnly && !isUnsigned))
        return opError(n, std::string(what) + " must be " + (unsignedOnly ? "an unsigned" : "an") +
                              " integer tensor, got " + std::string(dtypeName(t->dtype)));
    return {};
}

Expected<std::vector<Tensor>> runBits(Bits op, const Node& n, std::span<const Tensor> inputs) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& a = inputs[0];
    const Tensor& b = inputs[1];
    if (a.dtype() != b.dtype() || !isInteger(a.dtype()))
        return opError(n, "operands must be integers of one type, got " + a.type().str() + " and " + b.type().str());
    SX_ASSIGN(std::vector<int64_t> out, binaryShape(n, a, b));
    const bool left = n.attrString("direction", "LEFT") == "LEFT";
    return ops::dispatchNumeric(n, a.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        if constexpr (std::is_integral_v<T>) {
            using U = std::make_unsigned_t<T>;
            Tensor y(a.dtype(), out);
            const auto sa = ops::broadcastStrides(a.shape(), out);
            const auto sb = ops::broadcastStrides(b.shape(), out);
            ops::broadcastBinary(a.data<T>(), sa, b.data<T>(), sb, out, y.mutableData<T>(), [op, left](T x, T z) -> T {
                switch (op) {
                case Bits::And: return static_cast<T>(x & z);
                case Bits::Or: return static_cast<T>(x | z);
                case Bits::Xor: return static_cast<T>(x ^ z);
                case Bits::Left:
                case Bits::Right: break;
                }
                // A shift by the width or more gives 0 (C++ leaves it undefined).
                const U ux = static_cast<U>(x), uz = static_cast<U>(z);
                if (uz >= sizeof(T) * 8)
                    return T{0};
                return static_cast<T>(left ? static_cast<U>(ux << uz) : static_cast<U>(ux >> uz));
            });
            return std::vector<Tensor>{y};
        } else {
            return opError(n, "operands must be integers");
        }
    });
}

} // namespace

#define SEXTANT_BITS(Id, op, what)                                                                 \
    Status verify##Id(const Node& n) {                                                             \
        SX_TRY(requireInteger(n, 0, what " operand 0", false));                                    \
        return requireInteger(n, 1, what " operand 1", false);                                     \
    }                                                                                              \
    Expected<std::vector<TensorType>> infer##Id(const Node& n) { return inferBinarySame(n, nullptr); } \
    Expected<std::vector<Tensor>> run##Id(const Node& n, std::span<const Tensor> inputs,           \
                                          const KernelContext&) {                                  \
        return runBits(op, n, inputs);                                                             \
    }
SEXTANT_BITS(BitwiseAnd, Bits::And, "bitwise and")
SEXTANT_BITS(BitwiseOr, Bits::Or, "bitwise or")
SEXTANT_BITS(BitwiseXor, Bits::Xor, "bitwise xor")
#undef SEXTANT_BITS

Status verifyBitShift(const Node& n) {
    SX_TRY(ops::checkStringAttr(n, "direction", {"LEFT", "RIGHT"}));
    if (!n.hasAttr("direction"))
        return opError(n, "bitshift needs its direction attribute (LEFT or RIGHT)");
    SX_TRY(requireInteger(n, 0, "bitshift operand 0", true));
    return requireInteger(n, 1, "bitshift operand 1", true);
}
Expected<std::vector<TensorType>> inferBitShift(const Node& n) { return inferBinarySame(n, nullptr); }
Expected<std::vector<Tensor>> runBitShift(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    return runBits(n.attrString("direction", "LEFT") == "LEFT" ? Bits::Left : Bits::Right, n, inputs);
}

Status verifyBitwiseNot(const Node& n) { return requireInteger(n, 0, "bitwise not operand", false); }
Expected<std::vector<TensorType>> inferBitwiseNot(const Node& n) { return inferSame(n); }
Expected<std::vector<Tensor>> runBitwiseNot(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    return ops::dispatchNumeric(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        if constexpr (std::is_integral_v<T>) {
            Tensor y(x.dtype(), x.shape());
            for (int64_t i = 0; i < x.numel(); ++i)
                y.mutableData<T>()[i] = static_cast<T>(~x.data<T>()[i]);
            return std::vector<Tensor>{y};
        } else {
            return opError(n, "bitwise not needs an integer tensor");
        }
    });
}

// ---- Min, Mean

Status verifyMin(const Node& n) {
    for (size_t i = 0; i < n.numInputs(); ++i)
        SX_TRY(requireNumeric(n, i, "min input"));
    return {};
}
Expected<std::vector<TensorType>> inferMin(const Node& n) { return ops::inferVariadicBroadcast(n, "min"); }
Expected<std::vector<Tensor>> runMin(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    return runVariadic(n, inputs, false);
}

Status verifyMean(const Node& n) {
    for (size_t i = 0; i < n.numInputs(); ++i)
        SX_TRY(ops::requireFloatInput(n, i, "mean input"));
    return {};
}
Expected<std::vector<TensorType>> inferMean(const Node& n) { return ops::inferVariadicBroadcast(n, "mean"); }
Expected<std::vector<Tensor>> runMean(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    return runVariadic(n, inputs, true);
}

// ---- PRelu: x < 0 ? slope * x : x, slope broadcast to x

Status verifyPRelu(const Node& n) { return ops::requireFloatInput(n, 0, "prelu input"); }
Expected<std::vector<TensorType>> inferPRelu(const Node& n) { return inferBinarySame(n, nullptr); }
Expected<std::vector<Tensor>> runPRelu(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor& slope = inputs[1];
    SX_ASSIGN(std::vector<int64_t> out, binaryShape(n, x, slope));
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y = Tensor::uninitialized(dtypeOf<T>(), out); // broadcastBinary writes every element
        ops::broadcastBinary(x.data<T>(), ops::broadcastStrides(x.shape(), out), slope.data<T>(),
                             ops::broadcastStrides(slope.shape(), out), out, y.mutableData<T>(),
                             [](T v, T s) { return v < 0 ? static_cast<T>(s * v) : v; });
        return std::vector<Tensor>{y};
    });
}

// ---- Mod: fmod = 0 takes the divisor's sign (integers only), fmod = 1 the dividend's (C fmod)

Status verifyMod(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "fmod", 0, 1));
    SX_TRY(requireNumeric(n, 0, "mod operand 0"));
    if (const TensorType* a = ops::inputType(n, 0); a && isFloat(a->dtype) && n.attrInt("fmod", 0) == 0)
        return opError(n, "mod of float tensors needs fmod = 1");
    return {};
}
Expected<std::vector<TensorType>> inferMod(const Node& n) { return inferBinarySame(n, nullptr); }
Expected<std::vector<Tensor>> runMod(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& a = inputs[0];
    const Tensor& b = inputs[1];
    SX_ASSIGN(std::vector<int64_t> out, binaryShape(n, a, b));
    const bool cStyle = n.attrInt("fmod", 0) != 0;
    for (int64_t i = 0; i < b.numel() && !isFloat(b.dtype()); ++i)
        if (b.at(i) == 0.0)
            return opError(n, "integer modulo by zero");
    return ops::dispatchNumeric(n, a.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y(a.dtype(), out);
        ops::broadcastBinary(a.data<T>(), ops::broadcastStrides(a.shape(), out), b.data<T>(),
                             ops::broadcastStrides(b.shape(), out), out, y.mutableData<T>(), [cStyle](T x, T z) -> T {
                                 if constexpr (std::is_floating_point_v<T>) {
                                     return static_cast<T>(std::fmod(x, z));
                                 } else {
                                     T r = static_cast<T>(x % z);
                                     if (!cStyle && r != 0 && ((r < 0) != (z < 0)))
                                         r = static_cast<T>(r + z);
                                     return r;
                                 }
                             });
        return std::vector<Tensor>{y};
    });
}

// ---- Where(cond, x, y) with three-way broadcasting

Status verifyWhere(const Node& n) { return requireBool(n, 0, "where condition"); }
Expected<std::vector<TensorType>> inferWhere(const Node& n) {
    const TensorType* c = ops::inputType(n, 0);
    const TensorType* x = ops::inputType(n, 1);
    const TensorType* y = ops::inputType(n, 2);
    if (!c || !x || !y)
        return opError(n, "where needs three inputs");
    if (x->dtype != y->dtype)
        return opError(n, "where branches have different dtypes " + std::string(dtypeName(x->dtype)) + " and " +
                              std::string(dtypeName(y->dtype)));
    TensorType t;
    t.dtype = x->dtype;
    SX_ASSIGN(t.shape, ops::broadcastShapes(n, c->shape, x->shape));
    SX_ASSIGN(t.shape, ops::broadcastShapes(n, t.shape, y->shape));
    return std::vector<TensorType>{t};
}
Expected<std::vector<Tensor>> runWhere(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& c = inputs[0];
    const Tensor& x = inputs[1];
    const Tensor& y = inputs[2];
    if (x.dtype() != y.dtype())
        return opError(n, "where branches have different dtypes");
    SX_ASSIGN(ops::Shape shape, ops::broadcastShapes(n, ops::shapeOf(c), ops::shapeOf(x)));
    SX_ASSIGN(shape, ops::broadcastShapes(n, shape, ops::shapeOf(y)));
    const std::vector<int64_t> out = ops::extents(shape);
    SX_TRY(ops::checkAllocation(n, out));
    Tensor result(x.dtype(), out);
    const auto sc = ops::broadcastStrides(c.shape(), out);
    const auto sx = ops::broadcastStrides(x.shape(), out);
    const auto sy = ops::broadcastStrides(y.shape(), out);
    const uint8_t* cond = c.data<uint8_t>();
    std::vector<int64_t> idx(out.size(), 0);
    for (int64_t o = 0; o < result.numel(); ++o) {
        int64_t oc = 0, ox = 0, oy = 0;
        for (size_t d = 0; d < out.size(); ++d) {
            oc += idx[d] * sc[d];
            ox += idx[d] * sx[d];
            oy += idx[d] * sy[d];
        }
        if (cond[oc])
            copyElement(x, ox, result, o);
        else
            copyElement(y, oy, result, o);
        for (size_t d = out.size(); d-- > 0;) {
            if (++idx[d] < out[d])
                break;
            idx[d] = 0;
        }
    }
    return std::vector<Tensor>{result};
}

} // namespace sextant::ir
