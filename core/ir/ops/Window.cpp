// HannWindow, HammingWindow and BlackmanWindow (ONNX opset 17): a 1-D window of `size` (a scalar
// integer input) cosine terms, w[k] = a0 - a1 cos(2 pi k / N) + a2 cos(4 pi k / N), k = 0 .. size-1,
// with N = size when periodic (the default) and size - 1 when not (symmetric). Coefficients (the
// ONNX function bodies'): Hann 0.5, 0.5, 0; Hamming 25/46, 21/46, 0; Blackman 0.42, 0.5, 0.08.
// output_datatype is an ONNX TensorProto type code (default 1, float); the values are computed in
// double and converted. The output's length is the value of `size`: known when it is a constant.

#include "OpUtil.h"

#include <cmath>
#include <numbers>

namespace sextant::ir {

using ops::opError;

namespace {

struct Coefficients {
    double a0, a1, a2;
};

Status verifyWindow(const Node& n, const char* what) {
    SX_TRY(ops::checkIntAttr(n, "periodic", 0, 1));
    SX_TRY(ops::checkIntAttr(n, "output_datatype", 0, 1000));
    const int64_t code = n.attrInt("output_datatype", 1);
    const std::optional<DType> dt = ops::onnxDType(code);
    if (!dt || *dt == DType::Bool)
        return opError(n, std::string(what) + " output_datatype " + std::to_string(code) + " is not supported",
                       ErrorKind::Unsupported);
    const TensorType* size = ops::inputType(n, 0);
    if (!size || (size->dtype != DType::I64 && size->dtype != DType::I32))
        return opError(n, std::string(what) + " size must be an i32 or i64 scalar");
    if (size->numel() > 1)
        return opError(n, std::string(what) + " size must hold one value, got " + size->str());
    return {};
}

/// The window length from the size tensor.
Expected<int64_t> windowSize(const Node& n, const Tensor& t, const char* what) {
    if (t.numel() != 1)
        return opError(n, std::string(what) + " size must hold one value, got " + t.type().str());
    const double v = t.at(0);
    if (!(v >= 0 && v <= static_cast<double>(ops::kMaxKernelElements)))
        return opError(n, std::string(what) + " size " + std::to_string(static_cast<int64_t>(v)) + " is out of range");
    return static_cast<int64_t>(v);
}

Expected<std::vector<TensorType>> inferWindow(const Node& n, const char* what) {
    SX_TRY(verifyWindow(n, what));
    TensorType t{*ops::onnxDType(n.attrInt("output_datatype", 1)), {ops::unknownDim()}};
    if (const Tensor* c = n.input(0)->constant()) {
        SX_ASSIGN(int64_t size, windowSize(n, *c, what));
        t.shape[0] = Dim::known(size);
    }
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runWindow(const Node& n, std::span<const Tensor> inputs, const char* what,
                                        Coefficients c) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    SX_TRY(verifyWindow(n, what));
    SX_ASSIGN(int64_t size, windowSize(n, inputs[0], what));
    const bool periodic = n.attrInt("periodic", 1) != 0;
    const double denom = static_cast<double>(periodic ? size : size - 1);
    Tensor y(*ops::onnxDType(n.attrInt("output_datatype", 1)), {size});
    for (int64_t k = 0; k < size; ++k) {
        // A symmetric window of one point has no period: 0 / 0; ONNX's function body gives NaN.
        const double angle = 2 * std::numbers::pi * static_cast<double>(k) / denom;
        y.set(k, c.a0 - c.a1 * std::cos(angle) + c.a2 * std::cos(2 * angle));
    }
    return std::vector<Tensor>{std::move(y)};
}

constexpr Coefficients kHann{0.5, 0.5, 0.0};
constexpr Coefficients kHamming{25.0 / 46.0, 21.0 / 46.0, 0.0};
constexpr Coefficients kBlackman{0.42, 0.5, 0.08};

} // namespace

Status verifyHannWindow(const Node& n) { return verifyWindow(n, "hann window"); }
Expected<std::vector<TensorType>> inferHannWindow(const Node& n) { return inferWindow(n, "hann window"); }
Expected<std::vector<Tensor>> runHannWindow(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    return runWindow(n, inputs, "hann window", kHann);
}

Status verifyHammingWindow(const Node& n) { return verifyWindow(n, "hamming window"); }
Expected<std::vector<TensorType>> inferHammingWindow(const Node& n) { return inferWindow(n, "hamming window"); }
Expected<std::vector<Tensor>> runHammingWindow(const Node& n, std::span<const Tensor> inputs,
                                               const KernelContext&) {
    return runWindow(n, inputs, "hamming window", kHamming);
}

Status verifyBlackmanWindow(const Node& n) { return verifyWindow(n, "blackman window"); }
Expected<std::vector<TensorType>> inferBlackmanWindow(const Node& n) { return inferWindow(n, "blackman window"); }
Expected<std::vector<Tensor>> runBlackmanWindow(const Node& n, std::span<const Tensor> inputs,
                                                const KernelContext&) {
    return runWindow(n, inputs, "blackman window", kBlackman);
}

} // namespace sextant::ir
