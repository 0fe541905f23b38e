// Elementwise ops: Add, Sub, Mul, Div (numpy broadcasting), Relu, Sigmoid.

#include "OpUtil.h"

#include <type_traits>

namespace sextant::ir {
namespace {

using ops::opError;

Status verifyBinary(const Node& n) {
    for (size_t i = 0; i < 2; ++i)
        if (const TensorType* t = ops::inputType(n, i); t && t->dtype == DType::Bool)
            return opError(n, "arithmetic on bool tensors is not supported", ErrorKind::Unsupported);
    return {};
}

Expected<std::vector<TensorType>> inferBinary(const Node& n) {
    const TensorType* a = ops::inputType(n, 0);
    const TensorType* b = ops::inputType(n, 1);
    if (!a || !b)
        return opError(n, "needs two inputs");
    if (a->dtype != b->dtype)
        return opError(n, "operands have different dtypes " + std::string(dtypeName(a->dtype)) +
                              " and " + std::string(dtypeName(b->dtype)));
    SX_ASSIGN(ops::Shape out, ops::broadcastShapes(n, a->shape, b->shape));
    TensorType t;
    t.dtype = a->dtype;
    t.shape = std::move(out);
    return std::vector<TensorType>{t};
}

enum class BinOp { Add, Sub, Mul, Div };

template <typename T> Tensor binaryImpl(BinOp op, const Tensor& at, const Tensor& bt,
                                        const std::vector<int64_t>& out) {
    Tensor yt = Tensor::uninitialized(dtypeOf<T>(), out); // broadcastBinary writes every element
    auto sa = ops::broadcastStrides(at.shape(), out), sb = ops::broadcastStrides(bt.shape(), out);
    const T* a = at.data<T>();
    const T* b = bt.data<T>();
    T* y = yt.mutableData<T>();
    switch (op) {
    case BinOp::Add: ops::broadcastBinary(a, sa, b, sb, out, y, [](T x, T z) { return static_cast<T>(x + z); }); break;
    case BinOp::Sub: ops::broadcastBinary(a, sa, b, sb, out, y, [](T x, T z) { return static_cast<T>(x - z); }); break;
    case BinOp::Mul: ops::broadcastBinary(a, sa, b, sb, out, y, [](T x, T z) { return static_cast<T>(x * z); }); break;
    case BinOp::Div: ops::broadcastBinary(a, sa, b, sb, out, y, [](T x, T z) { return static_cast<T>(x / z); }); break;
    }
    return yt;
}

Expected<std::vector<Tensor>> runBinary(BinOp op, const Node& n, std::span<const Tensor> inputs) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& a = inputs[0];
    const Tensor& b = inputs[1];
    if (a.dtype() != b.dtype())
        return opError(n, "operands have different dtypes " + std::string(dtypeName(a.dtype())) +
                              " and " + std::string(dtypeName(b.dtype())));
    SX_ASSIGN(ops::Shape outShape, ops::broadcastShapes(n, ops::shapeOf(a), ops::shapeOf(b)));
    const std::vector<int64_t> out = ops::extents(outShape);
    SX_TRY(ops::checkAllocation(n, out));
    auto integerDivByZero = [&]() {
        if (op != BinOp::Div)
            return false;
        for (int64_t i = 0; i < b.numel(); ++i)
            if (b.at(i) == 0.0)
                return true;
        return false;
    };
    // Integers wrap (u8 modulo 256, as numpy and onnxruntime do); dividing one by zero is an error.
    if (isInteger(a.dtype()) && integerDivByZero())
        return opError(n, "integer division by zero");
    return ops::dispatchNumeric(n, a.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        return std::vector<Tensor>{binaryImpl<decltype(tag)>(op, a, b, out)};
    });
}

Expected<std::vector<TensorType>> inferUnaryFloat(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (!x)
        return opError(n, "needs an input");
    return std::vector<TensorType>{*x};
}

template <typename F>
Expected<std::vector<Tensor>> runUnaryFloat(const Node& n, std::span<const Tensor> inputs, F f) {
    // Only input 0 is read (Clip passes its bounds separately).
    if (inputs.empty() || !inputs[0].valid())
        return opError(n, "input 0 has no data");
    const Tensor& x = inputs[0];
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y = Tensor::uninitialized(dtypeOf<T>(), x.shape()); // every element written below
        const T* src = x.data<T>();
        T* dst = y.mutableData<T>();
        for (int64_t i = 0; i < x.numel(); ++i)
            dst[i] = f(src[i]);
        return std::vector<Tensor>{y};
    });
}

} // namespace

#define SEXTANT_BINARY(Id)                                                                         \
    Status verify##Id(const Node& n) { return verifyBinary(n); }                                   \
    Expected<std::vector<TensorType>> infer##Id(const Node& n) { return inferBinary(n); }          \
    Expected<std::vector<Tensor>> run##Id(const Node& n, std::span<const Tensor> inputs,           \
                                          const KernelContext&) {                                  \
        return runBinary(BinOp::Id, n, inputs);                                                    \
    }
SEXTANT_BINARY(Add)
SEXTANT_BINARY(Sub)
SEXTANT_BINARY(Mul)
SEXTANT_BINARY(Div)
#undef SEXTANT_BINARY

Status verifyRelu(const Node& n) { return ops::requireFloatInput(n, 0, "relu input"); }
Expected<std::vector<TensorType>> inferRelu(const Node& n) { return inferUnaryFloat(n); }
Expected<std::vector<Tensor>> runRelu(const Node& n, std::span<const Tensor> inputs,
                                      const KernelContext&) {
    return runUnaryFloat(n, inputs, [](auto x) { return x > decltype(x)(0) ? x : decltype(x)(0); });
}

Status verifySigmoid(const Node& n) { return ops::requireFloatInput(n, 0, "sigmoid input"); }
Expected<std::vector<TensorType>> inferSigmoid(const Node& n) { return inferUnaryFloat(n); }
Expected<std::vector<Tensor>> runSigmoid(const Node& n, std::span<const Tensor> inputs,
                                         const KernelContext&) {
    return runUnaryFloat(n, inputs, [](auto x) {
        using T = decltype(x);
        return T(1) / (T(1) + std::exp(-x));
    });
}

} // namespace sextant::ir

// ---- ops added for the model zoo: Sum, Exp, LeakyRelu, Clip, HardSigmoid, Cast

namespace sextant::ir {

Status verifySum(const Node& n) {
    for (size_t i = 0; i < n.numInputs(); ++i)
        SX_TRY(ops::requireFloatInput(n, i, "sum input"));
    return {};
}

Expected<std::vector<TensorType>> inferSum(const Node& n) {
    return ops::inferVariadicBroadcast(n, "sum");
}

Expected<std::vector<Tensor>> runSum(const Node& n, std::span<const Tensor> inputs,
                                     const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    ops::Shape shape = ops::shapeOf(inputs[0]);
    for (size_t i = 1; i < inputs.size(); ++i) {
        if (inputs[i].dtype() != inputs[0].dtype())
            return opError(n, "sum inputs have different dtypes");
        SX_ASSIGN(shape, ops::broadcastShapes(n, shape, ops::shapeOf(inputs[i])));
    }
    const std::vector<int64_t> out = ops::extents(shape);
    SX_TRY(ops::checkAllocation(n, out));
    return ops::dispatchFloat(n, inputs[0].dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y = Tensor::uninitialized(dtypeOf<T>(), out); // broadcastCopy writes every element
        T* dst = y.mutableData<T>();
        ops::broadcastCopy(inputs[0].data<T>(), inputs[0].shape(), out, dst);
        const std::vector<int64_t> self = ops::broadcastStrides(out, out);
        for (size_t i = 1; i < inputs.size(); ++i)
            ops::broadcastBinary(dst, self, inputs[i].data<T>(), ops::broadcastStrides(inputs[i].shape(), out),
                                 out, dst, [](T a, T b) { return a + b; });
        return std::vector<Tensor>{y};
    });
}

Status verifyExp(const Node& n) { return ops::requireFloatInput(n, 0, "exp input"); }
Expected<std::vector<TensorType>> inferExp(const Node& n) { return inferUnaryFloat(n); }
Expected<std::vector<Tensor>> runExp(const Node& n, std::span<const Tensor> inputs,
                                     const KernelContext&) {
    return runUnaryFloat(n, inputs, [](auto x) { return std::exp(x); });
}

Status verifyLeakyRelu(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "alpha"));
    return ops::requireFloatInput(n, 0, "leaky relu input");
}
Expected<std::vector<TensorType>> inferLeakyRelu(const Node& n) { return inferUnaryFloat(n); }
Expected<std::vector<Tensor>> runLeakyRelu(const Node& n, std::span<const Tensor> inputs,
                                           const KernelContext&) {
    const double alpha = n.attrFloat("alpha", 0.01);
    return runUnaryFloat(n, inputs, [alpha](auto x) {
        using T = decltype(x);
        return x >= T(0) ? x : x * static_cast<T>(alpha);
    });
}

Status verifyHardSigmoid(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "alpha"));
    SX_TRY(ops::checkFloatAttr(n, "beta"));
    return ops::requireFloatInput(n, 0, "hard sigmoid input");
}
Expected<std::vector<TensorType>> inferHardSigmoid(const Node& n) { return inferUnaryFloat(n); }
Expected<std::vector<Tensor>> runHardSigmoid(const Node& n, std::span<const Tensor> inputs,
                                             const KernelContext&) {
    const double alpha = n.attrFloat("alpha", 0.2), beta = n.attrFloat("beta", 0.5);
    return runUnaryFloat(n, inputs, [alpha, beta](auto x) {
        using T = decltype(x);
        T v = static_cast<T>(alpha) * x + static_cast<T>(beta);
        return v < T(0) ? T(0) : (v > T(1) ? T(1) : v);
    });
}

// Clip: before opset 11 the bounds are attributes "min"/"max"; from 11 on optional inputs 1, 2.
Status verifyClip(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "min"));
    SX_TRY(ops::checkFloatAttr(n, "max"));
    if (const TensorType* x = ops::inputType(n, 0); x && x->dtype == DType::Bool)
        return opError(n, "clip input must be numeric, got bool");
    for (size_t i = 1; i < 3; ++i)
        if (const TensorType* b = ops::inputType(n, i); b && b->numel() != 1 && b->isStatic())
            return opError(n, "clip bound " + std::to_string(i) + " must be a scalar, got " + b->str());
    return {};
}
Expected<std::vector<TensorType>> inferClip(const Node& n) { return inferUnaryFloat(n); }
Expected<std::vector<Tensor>> runClip(const Node& n, std::span<const Tensor> inputs,
                                      const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    double lo = n.attrFloat("min", -std::numeric_limits<double>::infinity());
    double hi = n.attrFloat("max", std::numeric_limits<double>::infinity());
    for (size_t i = 1; i < inputs.size(); ++i) {
        if (!n.input(i))
            continue;
        if (inputs[i].numel() != 1)
            return opError(n, "clip bound " + std::to_string(i) + " must be a scalar");
        (i == 1 ? lo : hi) = inputs[i].at(0);
    }
    const Tensor& x = inputs[0];
    return ops::dispatchNumeric(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        // Integer bounds beyond T's range (the infinite defaults) do not clamp; float bounds are
        // used as they are, so infinite inputs stay infinite under the default bounds.
        T low, high;
        if constexpr (std::is_floating_point_v<T>) {
            low = static_cast<T>(lo);
            high = static_cast<T>(hi);
        } else {
            const double tLow = static_cast<double>(std::numeric_limits<T>::lowest());
            const double tHigh = static_cast<double>(std::numeric_limits<T>::max());
            low = lo <= tLow ? std::numeric_limits<T>::lowest() : static_cast<T>(lo);
            high = hi >= tHigh ? std::numeric_limits<T>::max() : static_cast<T>(hi);
        }
        Tensor y = Tensor::uninitialized(dtypeOf<T>(), x.shape()); // every element written below
        const T* src = x.data<T>();
        T* dst = y.mutableData<T>();
        for (int64_t i = 0; i < x.numel(); ++i)
            dst[i] = src[i] < low ? low : (src[i] > high ? high : src[i]);
        return std::vector<Tensor>{y};
    });
}


Status verifyCast(const Node& n) {
    if (!n.hasAttr("to"))
        return opError(n, "attribute 'to' is required");
    SX_TRY(ops::checkIntAttr(n, "to", 0, 1000));
    // Cast-19 and Cast-24 added how float8 results saturate and round; they change nothing for
    // the dtypes Sextant casts to, but a value ONNX does not define is still an error.
    SX_TRY(ops::checkIntAttr(n, "saturate", 0, 1));
    SX_TRY(ops::checkStringAttr(n, "round_mode", {"up", "down", "nearest"}));
    if (!ops::onnxDType(n.attrInt("to", 0)))
        return opError(n, "cast to ONNX dtype " + std::to_string(n.attrInt("to", 0)) + " is not supported",
                       ErrorKind::Unsupported);
    return {};
}

Expected<std::vector<TensorType>> inferCast(const Node& n) {
    auto to = ops::onnxDType(n.attrInt("to", 0));
    if (!to)
        return opError(n, "cast target dtype is not supported", ErrorKind::Unsupported);
    TensorType t = *ops::inputType(n, 0);
    t.dtype = *to;
    return std::vector<TensorType>{t};
}

/// Float targets are rounded through the target type (an f16 cast loses precision even in an f64
/// reference run); the executor then widens float results back to its compute dtype.
Expected<std::vector<Tensor>> runCast(const Node& n, std::span<const Tensor> inputs,
                                      const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    auto to = ops::onnxDType(n.attrInt("to", 0));
    if (!to)
        return opError(n, "cast target dtype is not supported", ErrorKind::Unsupported);
    return std::vector<Tensor>{inputs[0].castTo(*to)};
}

} // namespace sextant::ir

// ---- Pow, Sqrt

namespace sextant::ir {

Status verifyPow(const Node& n) {
    for (size_t i = 0; i < 2; ++i)
        if (const TensorType* t = ops::inputType(n, i); t && t->dtype == DType::Bool)
            return opError(n, std::string(i == 0 ? "pow base" : "pow exponent") + " must be numeric, got bool");
    return {};
}

Expected<std::vector<TensorType>> inferPow(const Node& n) {
    const TensorType* a = ops::inputType(n, 0);
    const TensorType* b = ops::inputType(n, 1);
    TensorType t;
    t.dtype = a->dtype;
    SX_ASSIGN(t.shape, ops::broadcastShapes(n, a->shape, b->shape));
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runPow(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& a = inputs[0];
    SX_ASSIGN(ops::Shape shape, ops::broadcastShapes(n, ops::shapeOf(a), ops::shapeOf(inputs[1])));
    const std::vector<int64_t> out = ops::extents(shape);
    SX_TRY(ops::checkAllocation(n, out));
    if (isInteger(a.dtype())) {
        // Integer base: computed in double, truncated back to the base's type (numpy's
        // power(x, y).astype(x.dtype), which onnx's expected values use); any exponent type.
        const Tensor ad = a.castTo(DType::F64), bd = inputs[1].castTo(DType::F64);
        Tensor yd = Tensor::uninitialized(DType::F64, out); // broadcastBinary writes every element
        ops::broadcastBinary(ad.data<double>(), ops::broadcastStrides(a.shape(), out), bd.data<double>(),
                             ops::broadcastStrides(bd.shape(), out), out, yd.mutableData<double>(),
                             [](double x, double e) { return std::trunc(std::pow(x, e)); });
        return std::vector<Tensor>{yd.castTo(a.dtype())};
    }
    const Tensor b = inputs[1].castTo(a.dtype()); // ONNX allows an integer exponent
    return ops::dispatchFloat(n, a.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y = Tensor::uninitialized(dtypeOf<T>(), out); // broadcastBinary writes every element
        ops::broadcastBinary(a.data<T>(), ops::broadcastStrides(a.shape(), out), b.data<T>(),
                             ops::broadcastStrides(b.shape(), out), out, y.mutableData<T>(),
                             [](T x, T e) { return std::pow(x, e); });
        return std::vector<Tensor>{y};
    });
}

Status verifySqrt(const Node& n) { return ops::requireFloatInput(n, 0, "sqrt input"); }
Expected<std::vector<TensorType>> inferSqrt(const Node& n) { return inferUnaryFloat(n); }
Expected<std::vector<Tensor>> runSqrt(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    return runUnaryFloat(n, inputs, [](auto x) { return std::sqrt(x); });
}

} // namespace sextant::ir
