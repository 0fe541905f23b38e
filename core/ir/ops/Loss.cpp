// The training losses ONNX defines as inference ops: NegativeLogLikelihoodLoss (opsets 12, 13,
// 22) and SoftmaxCrossEntropyLoss (12, 13), on the host.
//
// NegativeLogLikelihoodLoss(input [N, C, d1..dk], target [N, d1..dk] of class indices, optional
// weight [C]): each element's loss is -input[n, target, d...] * weight[target]; an element whose
// target is ignore_index has loss 0 and weighs nothing. reduction "none" keeps the [N, d1..dk]
// losses, "sum" adds them, "mean" (the default) divides the sum by the total weight of the
// elements not ignored (their count without weights).
// SoftmaxCrossEntropyLoss(scores, labels, optional weights) is that loss of log_softmax(scores)
// along the class axis 1, and its second output, when asked for, is that log_softmax.

#include "OpUtil.h"

#include <algorithm>

namespace sextant::ir {

using ops::opError;

namespace {

Status verifyLoss(const Node& n, const char* what) {
    SX_TRY(ops::requireFloatInput(n, 0, what));
    if (const TensorType* t = ops::inputType(n, 1); t && t->dtype != DType::I64 && t->dtype != DType::I32)
        return opError(n, "target must be an i32 or i64 tensor of class indices, got " + std::string(dtypeName(t->dtype)));
    SX_TRY(ops::requireFloatInput(n, 2, "weight"));
    return ops::checkStringAttr(n, "reduction", {"none", "sum", "mean"});
}

/// The loss's type: the target's shape with reduction "none", else a scalar.
Expected<std::vector<TensorType>> inferLoss(const Node& n, bool withLogProb) {
    const TensorType* x = ops::inputType(n, 0);
    const TensorType* t = ops::inputType(n, 1);
    if (x->rank() < 2)
        return opError(n, "input must be [N, C, d1...], got " + x->str());
    if (t->rank() + 1 != x->rank())
        return opError(n, "target " + t->str() + " must have the input " + x->str() + "'s shape without its class dim");
    for (size_t d = 0; d < t->rank(); ++d) {
        const Dim& a = t->shape[d];
        const Dim& b = x->shape[d == 0 ? 0 : d + 1];
        if (a.isKnown() && b.isKnown() && a.value != b.value)
            return opError(n, "target " + t->str() + " must have the input " + x->str() + "'s shape without its class dim");
    }
    if (const TensorType* w = ops::inputType(n, 2))
        if (w->rank() != 1 || (w->shape[0].isKnown() && x->shape[1].isKnown() && w->shape[0].value != x->shape[1].value))
            return opError(n, "weight " + w->str() + " must hold one value per class of " + x->str());
    TensorType loss;
    loss.dtype = x->dtype;
    if (n.attrString("reduction", "mean") == "none")
        loss.shape = t->shape;
    std::vector<TensorType> types{loss};
    if (withLogProb && n.numOutputs() > 1)
        types.push_back(*x);
    return types;
}

/// The loss of `logp` (already log-probabilities, or the input of NegativeLogLikelihoodLoss).
template <typename T>
Expected<Tensor> nllOf(const Node& n, const Tensor& logp, const Tensor& target, const Tensor* weight) {
    const std::vector<int64_t>& xs = logp.shape();
    const int64_t batch = xs[0], classes = xs[1];
    int64_t inner = 1;
    for (size_t d = 2; d < xs.size(); ++d)
        inner *= xs[d];
    const bool hasIgnore = n.hasAttr("ignore_index");
    const int64_t ignore = n.attrInt("ignore_index", 0);
    const std::string reduction = n.attrString("reduction", "mean");
    const std::vector<double> w = weight ? weight->toDoubles() : std::vector<double>();
    const T* x = logp.data<T>();
    std::vector<double> losses(static_cast<size_t>(batch * inner));
    double sum = 0, weights = 0;
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < inner; ++i) {
            const int64_t k = b * inner + i;
            const int64_t c = target.dtype() == DType::I64 ? target.data<int64_t>()[k] : target.data<int32_t>()[k];
            if (hasIgnore && c == ignore) {
                losses[static_cast<size_t>(k)] = 0;
                continue;
            }
            if (c < 0 || c >= classes)
                return opError(n, "target " + std::to_string(c) + " at position " + std::to_string(k) +
                                      " is not a class of the " + std::to_string(classes) +
                                      (hasIgnore ? " nor ignore_index " + std::to_string(ignore) : std::string()));
            const double wc = weight ? w[static_cast<size_t>(c)] : 1.0;
            const double l = -static_cast<double>(x[(b * classes + c) * inner + i]) * wc;
            losses[static_cast<size_t>(k)] = l;
            sum += l;
            weights += wc;
        }
    if (reduction == "none") {
        std::vector<int64_t> shape{batch};
        shape.insert(shape.end(), xs.begin() + 2, xs.end());
        Tensor y = Tensor::uninitialized(dtypeOf<T>(), shape); // one loss per element, all written
        T* dst = y.mutableData<T>();
        for (size_t k = 0; k < losses.size(); ++k)
            dst[k] = static_cast<T>(losses[k]);
        return y;
    }
    // The mean of nothing (every element ignored) is 0/0, NaN, as numpy's reference gives.
    const double value = reduction == "sum" ? sum : sum / weights;
    return Tensor::scalar(value, dtypeOf<T>());
}

Status checkLossInputs(const Node& n, std::span<const Tensor> inputs) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor& t = inputs[1];
    if (x.rank() < 2 || t.rank() + 1 != x.rank() || t.shape()[0] != x.shape()[0] ||
        !std::equal(t.shape().begin() + 1, t.shape().end(), x.shape().begin() + 2))
        return opError(n, "target " + t.type().str() + " must have the input " + x.type().str() +
                              "'s shape without its class dim");
    if (n.numInputs() > 2 && n.input(2) && (inputs[2].rank() != 1 || inputs[2].shape()[0] != x.shape()[1]))
        return opError(n, "weight " + inputs[2].type().str() + " must hold one value per class of " + x.type().str());
    return {};
}

} // namespace

Status verifyNegativeLogLikelihoodLoss(const Node& n) { return verifyLoss(n, "input"); }

Expected<std::vector<TensorType>> inferNegativeLogLikelihoodLoss(const Node& n) { return inferLoss(n, false); }

Expected<std::vector<Tensor>> runNegativeLogLikelihoodLoss(const Node& n, std::span<const Tensor> inputs,
                                                           const KernelContext&) {
    SX_TRY(checkLossInputs(n, inputs));
    const Tensor* weight = n.numInputs() > 2 && n.input(2) ? &inputs[2] : nullptr;
    return ops::dispatchFloat(n, inputs[0].dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        SX_ASSIGN(Tensor loss, nllOf<decltype(tag)>(n, inputs[0], inputs[1], weight));
        return std::vector<Tensor>{loss};
    });
}

Status verifySoftmaxCrossEntropyLoss(const Node& n) { return verifyLoss(n, "scores"); }

Expected<std::vector<TensorType>> inferSoftmaxCrossEntropyLoss(const Node& n) { return inferLoss(n, true); }

Expected<std::vector<Tensor>> runSoftmaxCrossEntropyLoss(const Node& n, std::span<const Tensor> inputs,
                                                         const KernelContext&) {
    SX_TRY(checkLossInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor* weight = n.numInputs() > 2 && n.input(2) ? &inputs[2] : nullptr;
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        // log_softmax along the class axis, at every position.
        const std::vector<int64_t>& xs = x.shape();
        const int64_t batch = xs[0], classes = xs[1];
        int64_t inner = 1;
        for (size_t d = 2; d < xs.size(); ++d)
            inner *= xs[d];
        Tensor logp = Tensor::uninitialized(dtypeOf<T>(), xs); // every element written below
        const T* src = x.data<T>();
        T* dst = logp.mutableData<T>();
        for (int64_t b = 0; b < batch; ++b)
            for (int64_t i = 0; i < inner; ++i)
                ops::logSoftmaxSlice(src, dst, b * classes * inner + i, classes, inner);
        SX_ASSIGN(Tensor loss, nllOf<T>(n, logp, inputs[1], weight));
        std::vector<Tensor> out{loss};
        if (n.numOutputs() > 1)
            out.push_back(logp);
        return out;
    });
}

} // namespace sextant::ir
