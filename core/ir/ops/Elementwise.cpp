// Elementwise ops: Add, Sub, Mul, Div (numpy broadcasting), Relu, Sigmoid.

#include "OpUtil.h"

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
    Tensor yt(dtypeOf<T>(), out);
    auto sa = ops::broadcastStrides(at.shape(), out), sb = ops::broadcastStrides(bt.shape(), out);
    const T* a = at.data<T>();
    const T* b = bt.data<T>();
    T* y = yt.mutableData<T>();
    switch (op) {
    case BinOp::Add: ops::broadcastBinary(a, sa, b, sb, out, y, [](T x, T z) { return x + z; }); break;
    case BinOp::Sub: ops::broadcastBinary(a, sa, b, sb, out, y, [](T x, T z) { return x - z; }); break;
    case BinOp::Mul: ops::broadcastBinary(a, sa, b, sb, out, y, [](T x, T z) { return x * z; }); break;
    case BinOp::Div: ops::broadcastBinary(a, sa, b, sb, out, y, [](T x, T z) { return x / z; }); break;
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
    auto integerDivByZero = [&]() {
        if (op != BinOp::Div)
            return false;
        for (int64_t i = 0; i < b.numel(); ++i)
            if (b.at(i) == 0.0)
                return true;
        return false;
    };
    switch (a.dtype()) {
    case DType::F64: return std::vector<Tensor>{binaryImpl<double>(op, a, b, out)};
    case DType::F32: return std::vector<Tensor>{binaryImpl<float>(op, a, b, out)};
    case DType::I64:
        if (integerDivByZero())
            return opError(n, "integer division by zero");
        return std::vector<Tensor>{binaryImpl<int64_t>(op, a, b, out)};
    case DType::I32:
        if (integerDivByZero())
            return opError(n, "integer division by zero");
        return std::vector<Tensor>{binaryImpl<int32_t>(op, a, b, out)};
    case DType::F16:
    case DType::BF16:
    case DType::I8:
    case DType::U8:
    case DType::Bool: break;
    }
    return opError(n, "reference kernel does not handle " + std::string(dtypeName(a.dtype())),
                   ErrorKind::Unsupported);
}

Expected<std::vector<TensorType>> inferUnaryFloat(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (!x)
        return opError(n, "needs an input");
    return std::vector<TensorType>{*x};
}

template <typename F>
Expected<std::vector<Tensor>> runUnaryFloat(const Node& n, std::span<const Tensor> inputs, F f) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y(dtypeOf<T>(), x.shape());
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
