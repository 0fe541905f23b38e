// BatchNormalization (inference and training mode), Softmax, LogSoftmax and Hardmax (both axis
// conventions of ONNX).

#include "OpUtil.h"

namespace sextant::ir {

using ops::opError;

// ---- BatchNormalization

Status verifyBatchNormalization(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "epsilon"));
    SX_TRY(ops::checkFloatAttr(n, "momentum"));
    SX_TRY(ops::checkIntAttr(n, "spatial", 1, 1));
    SX_TRY(ops::checkIntAttr(n, "training_mode", 0, 1));
    if (n.attrInt("training_mode", 0) == 0 && n.numOutputs() > 1)
        return opError(n, "running mean and variance outputs need training_mode 1");
    if (n.attrInt("training_mode", 0) != 0 && n.numOutputs() == 2)
        return opError(n, "training-mode batch normalization gives both running mean and variance "
                          "or neither");
    for (size_t i = 0; i < 5; ++i)
        SX_TRY(ops::requireFloatInput(n, i, "batch normalization input"));
    return {};
}

Expected<std::vector<TensorType>> inferBatchNormalization(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (x->rank() < 2)
        return opError(n, "batch normalization input must have rank >= 2, got " + x->str());
    static const char* names[] = {"", "scale", "bias", "mean", "variance"};
    for (size_t i = 1; i < 5; ++i) {
        const TensorType* p = ops::inputType(n, i);
        if (!p)
            return opError(n, std::string("missing ") + names[i]);
        if (p->dtype != x->dtype)
            return opError(n, std::string(names[i]) + " is " + std::string(dtypeName(p->dtype)) +
                                  " but the input is " + std::string(dtypeName(x->dtype)));
        if (p->rank() != 1)
            return opError(n, std::string(names[i]) + " must be 1-D, got " + p->str());
        if (p->shape[0].isKnown() && x->shape[1].isKnown() && p->shape[0].value != x->shape[1].value)
            return opError(n, std::string(names[i]) + " has " + std::to_string(p->shape[0].value) +
                                  " entries but the input has " +
                                  std::to_string(x->shape[1].value) + " channels");
    }
    // Training mode: running_mean and running_var, shaped like the mean input.
    std::vector<TensorType> out{*x};
    out.resize(std::max<size_t>(1, n.numOutputs()), *ops::inputType(n, 3));
    return out;
}

Expected<std::vector<Tensor>> runBatchNormalization(const Node& n, std::span<const Tensor> inputs,
                                                    const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    if (x.rank() < 2)
        return opError(n, "batch normalization input must have rank >= 2");
    const int64_t c = x.shape()[1];
    for (size_t i = 1; i < 5; ++i)
        if (inputs[i].dtype() != x.dtype() || inputs[i].rank() != 1 || inputs[i].numel() != c)
            return opError(n, "batch normalization parameter " + std::to_string(i) +
                                  " must be a 1-D " + std::string(dtypeName(x.dtype())) +
                                  " tensor of " + std::to_string(c) + " entries");
    const double eps = n.attrFloat("epsilon", 1e-5);
    const bool training = n.attrInt("training_mode", 0) != 0;
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        // Uninitialised: the loop at the end writes batch * c * inner = every element.
        Tensor y = Tensor::uninitialized(dtypeOf<T>(), x.shape());
        const T* src = x.data<T>();
        T* dst = y.mutableData<T>();
        const T* scale = inputs[1].data<T>();
        const T* bias = inputs[2].data<T>();
        const T* mean = inputs[3].data<T>();
        const T* var = inputs[4].data<T>();
        const int64_t batch = x.shape()[0];
        const int64_t inner = c == 0 || batch == 0 ? 0 : x.numel() / (batch * c);
        // Training mode normalises with the batch's own statistics (population variance) and
        // blends them into the running ones: running = input * momentum + batch * (1 - momentum).
        std::vector<T> batchMean, batchVar;
        Tensor runMean, runVar;
        if (training) {
            const double count = static_cast<double>(batch * inner);
            if (count == 0)
                return opError(n, "training-mode batch normalization needs a non-empty batch");
            const double momentum = n.attrFloat("momentum", 0.9);
            runMean = Tensor(dtypeOf<T>(), {c});
            runVar = Tensor(dtypeOf<T>(), {c});
            for (int64_t ch = 0; ch < c; ++ch) {
                double sum = 0, sq = 0;
                for (int64_t b = 0; b < batch; ++b)
                    for (int64_t i = 0; i < inner; ++i)
                        sum += static_cast<double>(src[(b * c + ch) * inner + i]);
                const double m = sum / count;
                for (int64_t b = 0; b < batch; ++b)
                    for (int64_t i = 0; i < inner; ++i) {
                        const double d = static_cast<double>(src[(b * c + ch) * inner + i]) - m;
                        sq += d * d;
                    }
                batchMean.push_back(static_cast<T>(m));
                batchVar.push_back(static_cast<T>(sq / count));
                runMean.set(ch, static_cast<double>(mean[ch]) * momentum + m * (1 - momentum));
                runVar.set(ch, static_cast<double>(var[ch]) * momentum + sq / count * (1 - momentum));
            }
            mean = batchMean.data();
            var = batchVar.data();
        }
        for (int64_t b = 0; b < batch; ++b)
            for (int64_t ch = 0; ch < c; ++ch) {
                const T mul = scale[ch] / std::sqrt(var[ch] + static_cast<T>(eps));
                const T add = bias[ch] - mean[ch] * mul;
                const int64_t base = (b * c + ch) * inner;
                for (int64_t i = 0; i < inner; ++i)
                    dst[base + i] = src[base + i] * mul + add;
            }
        std::vector<Tensor> out{y};
        if (training && n.numOutputs() > 1) {
            out.push_back(std::move(runMean));
            out.push_back(std::move(runVar));
        }
        return out;
    });
}

// ---- Softmax

namespace {

/// Softmax before opset 13 flattens to 2-D at `axis` (default 1); from 13 on it works along one
/// axis (default -1). The importer records the opset as attribute "_opset" when it is below 13.
struct SoftmaxPlan {
    int64_t outer, axisLen, inner;
};

Expected<SoftmaxPlan> softmaxPlan(const Node& n, const std::vector<int64_t>& shape) {
    const int64_t opset = n.attrInt("_opset", 13);
    const int64_t rank = static_cast<int64_t>(shape.size());
    const int64_t dflt = opset < 13 ? 1 : -1;
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", dflt), std::max<int64_t>(rank, 1),
                                               "softmax axis"));
    SoftmaxPlan p{1, 1, 1};
    for (int64_t i = 0; i < rank; ++i) {
        if (i < axis)
            p.outer *= shape[static_cast<size_t>(i)];
        else if (opset < 13 || i == axis)
            p.axisLen *= shape[static_cast<size_t>(i)];
        else
            p.inner *= shape[static_cast<size_t>(i)];
    }
    return p;
}

/// Runs `fn(src, dst, base, axisLen, stride)` for every slice along the softmax axis of `x`.
template <typename Fn>
Expected<std::vector<Tensor>> alongSoftmaxAxis(const Node& n, const Tensor& x, Fn fn) {
    SX_ASSIGN(SoftmaxPlan p, softmaxPlan(n, x.shape()));
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y(dtypeOf<T>(), x.shape());
        const T* src = x.data<T>();
        T* dst = y.mutableData<T>();
        for (int64_t o = 0; o < p.outer; ++o)
            for (int64_t i = 0; i < p.inner; ++i)
                fn(src, dst, o * p.axisLen * p.inner + i, p.axisLen, p.inner);
        return std::vector<Tensor>{y};
    });
}

} // namespace

Status verifySoftmax(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "axis", std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max()));
    SX_TRY(ops::checkIntAttr(n, "_opset", 1, 1000));
    SX_TRY(ops::requireFloatInput(n, 0, "softmax input"));
    if (const TensorType* x = ops::inputType(n, 0)) {
        const int64_t rank = static_cast<int64_t>(x->rank());
        const int64_t dflt = n.attrInt("_opset", 13) < 13 ? 1 : -1;
        SX_TRY(ops::normaliseAxis(n, n.attrInt("axis", dflt), std::max<int64_t>(rank, 1),
                                  "softmax axis"));
    }
    return {};
}

Expected<std::vector<TensorType>> inferSoftmax(const Node& n) {
    return std::vector<TensorType>{*ops::inputType(n, 0)};
}

Expected<std::vector<Tensor>> runSoftmax(const Node& n, std::span<const Tensor> inputs,
                                         const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    SX_ASSIGN(SoftmaxPlan p, softmaxPlan(n, x.shape()));
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y(dtypeOf<T>(), x.shape());
        const T* src = x.data<T>();
        T* dst = y.mutableData<T>();
        for (int64_t o = 0; o < p.outer; ++o)
            for (int64_t i = 0; i < p.inner; ++i) {
                const int64_t base = o * p.axisLen * p.inner + i;
                T mx = -std::numeric_limits<T>::infinity();
                for (int64_t a = 0; a < p.axisLen; ++a)
                    mx = std::max(mx, src[base + a * p.inner]);
                T sum = 0;
                for (int64_t a = 0; a < p.axisLen; ++a) {
                    T e = std::exp(src[base + a * p.inner] - mx);
                    dst[base + a * p.inner] = e;
                    sum += e;
                }
                for (int64_t a = 0; a < p.axisLen; ++a)
                    dst[base + a * p.inner] /= sum;
            }
        return std::vector<Tensor>{y};
    });
}

// ---- LogSoftmax: x - max - log(sum(exp(x - max))) along the axis

Status verifyLogSoftmax(const Node& n) { return verifySoftmax(n); }

Expected<std::vector<TensorType>> inferLogSoftmax(const Node& n) {
    return std::vector<TensorType>{*ops::inputType(n, 0)};
}

Expected<std::vector<Tensor>> runLogSoftmax(const Node& n, std::span<const Tensor> inputs,
                                            const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    return alongSoftmaxAxis(n, inputs[0], [](const auto* src, auto* dst, int64_t base, int64_t len,
                                             int64_t stride) {
        ops::logSoftmaxSlice(src, dst, base, len, stride);
    });
}

// ---- Hardmax: 1 at the first maximum along the axis, 0 elsewhere

Status verifyHardmax(const Node& n) { return verifySoftmax(n); }

Expected<std::vector<TensorType>> inferHardmax(const Node& n) {
    return std::vector<TensorType>{*ops::inputType(n, 0)};
}

Expected<std::vector<Tensor>> runHardmax(const Node& n, std::span<const Tensor> inputs,
                                         const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    return alongSoftmaxAxis(n, inputs[0], [](const auto* src, auto* dst, int64_t base, int64_t len,
                                             int64_t stride) {
        int64_t best = 0;
        for (int64_t a = 1; a < len; ++a)
            if (src[base + a * stride] > src[base + best * stride])
                best = a;
        for (int64_t a = 0; a < len; ++a)
            dst[base + a * stride] = a == best ? 1 : 0;
    });
}

} // namespace sextant::ir

// ---- LRN: y = x / (bias + alpha / size * sum of x^2 over nearby channels)^beta

namespace sextant::ir {

Status verifyLRN(const Node& n) {
    if (!n.hasAttr("size"))
        return opError(n, "attribute 'size' is required");
    SX_TRY(ops::checkIntAttr(n, "size", 1, std::numeric_limits<int32_t>::max()));
    for (const char* a : {"alpha", "beta", "bias"})
        SX_TRY(ops::checkFloatAttr(n, a));
    return ops::requireFloatInput(n, 0, "lrn input");
}

Expected<std::vector<TensorType>> inferLRN(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (x->rank() < 3)
        return opError(n, "lrn input must have rank >= 3 (N, C, spatial...), got " + x->str());
    return std::vector<TensorType>{*x};
}

Expected<std::vector<Tensor>> runLRN(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    if (x.rank() < 3)
        return opError(n, "lrn input must have rank >= 3 (N, C, spatial...)");
    const int64_t size = n.attrInt("size", 1);
    const double alpha = n.attrFloat("alpha", 1e-4), beta = n.attrFloat("beta", 0.75),
                 bias = n.attrFloat("bias", 1.0);
    const int64_t batch = x.shape()[0], c = x.shape()[1];
    const int64_t inner = batch * c == 0 ? 0 : x.numel() / (batch * c);
    const int64_t before = (size - 1) / 2, after = size - 1 - before;
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y(dtypeOf<T>(), x.shape());
        const T* src = x.data<T>();
        T* dst = y.mutableData<T>();
        for (int64_t b = 0; b < batch; ++b)
            for (int64_t ch = 0; ch < c; ++ch) {
                const int64_t lo = std::max<int64_t>(0, ch - before), hi = std::min<int64_t>(c - 1, ch + after);
                for (int64_t i = 0; i < inner; ++i) {
                    T sum = 0;
                    for (int64_t k = lo; k <= hi; ++k) {
                        T v = src[(b * c + k) * inner + i];
                        sum += v * v;
                    }
                    const int64_t at = (b * c + ch) * inner + i;
                    T scale = static_cast<T>(bias) + static_cast<T>(alpha / static_cast<double>(size)) * sum;
                    dst[at] = src[at] / std::pow(scale, static_cast<T>(beta));
                }
            }
        return std::vector<Tensor>{y};
    });
}

} // namespace sextant::ir
