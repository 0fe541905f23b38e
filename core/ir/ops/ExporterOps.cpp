// Ops today's exporters emit that the compiler has no pattern for (docs/adding-an-op.md):
// CastLike (opset 15, every recent PyTorch export), MeanVarianceNormalization (opset 9/13),
// GatherND (opset 11/12/13) and RMSNormalization (opset 23). Each is checked against values
// computed independently (tests/ir/ExporterOpsTest.cpp; RMSNormalization in
// tests/ir/SelectionOpsTest.cpp) and, where ONNX's node suite has them, its tests (tests/conformance).
#include "OpUtil.h"

#include <cmath>
#include <cstring>

namespace sextant::ir {

using ops::opError;

// ---- CastLike: input 0 converted to the element type of input 1 (whose values are not read)

Status verifyCastLike(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "saturate", 0, 1));
    SX_TRY(ops::checkStringAttr(n, "round_mode", {"up", "down", "nearest"}));
    if (!ops::inputType(n, 1))
        return opError(n, "castlike needs its target_type input");
    return {};
}

Expected<std::vector<TensorType>> inferCastLike(const Node& n) {
    TensorType t = *ops::inputType(n, 0);
    t.dtype = ops::inputType(n, 1)->dtype;
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runCastLike(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    return std::vector<Tensor>{inputs[0].castTo(inputs[1].dtype())};
}

// ---- MeanVarianceNormalization: (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over `axes`
// (default [0, 2, 3]), the function ONNX defines it by.

namespace {

Expected<std::vector<bool>> mvnAxes(const Node& n, size_t rank) {
    std::vector<bool> reduced(rank, false);
    for (int64_t a : n.attrInts("axes", {0, 2, 3})) {
        SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, a, static_cast<int64_t>(rank), "mean variance normalization axis"));
        reduced[static_cast<size_t>(axis)] = true;
    }
    return reduced;
}

} // namespace

Status verifyMeanVarianceNormalization(const Node& n) {
    return ops::requireFloatInput(n, 0, "mean variance normalization input");
}

Expected<std::vector<TensorType>> inferMeanVarianceNormalization(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    SX_TRY(mvnAxes(n, x->rank()));
    return std::vector<TensorType>{*x};
}

Expected<std::vector<Tensor>> runMeanVarianceNormalization(const Node& n, std::span<const Tensor> inputs,
                                                           const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    SX_ASSIGN(std::vector<bool> reduced, mvnAxes(n, x.rank()));
    // Each element's group: its index with the reduced axes set to 0, as a flat index.
    const std::vector<int64_t> strides = ops::stridesOf(x.shape());
    std::vector<int64_t> groupOf(static_cast<size_t>(x.numel()));
    for (int64_t k = 0; k < x.numel(); ++k) {
        int64_t rest = k, group = 0;
        for (size_t i = 0; i < x.rank(); ++i) {
            const int64_t coord = rest / strides[i];
            rest %= strides[i];
            if (!reduced[i])
                group += coord * strides[i];
        }
        groupOf[static_cast<size_t>(k)] = group;
    }
    std::vector<double> sum(static_cast<size_t>(x.numel()), 0.0), sumSq(sum.size(), 0.0), count(sum.size(), 0.0);
    for (int64_t k = 0; k < x.numel(); ++k) {
        const size_t g = static_cast<size_t>(groupOf[static_cast<size_t>(k)]);
        const double v = x.at(k);
        sum[g] += v;
        sumSq[g] += v * v;
        count[g] += 1;
    }
    Tensor y(x.dtype(), x.shape());
    for (int64_t k = 0; k < x.numel(); ++k) {
        const size_t g = static_cast<size_t>(groupOf[static_cast<size_t>(k)]);
        const double mean = sum[g] / count[g];
        const double variance = sumSq[g] / count[g] - mean * mean;
        y.set(k, (x.at(k) - mean) / (std::sqrt(std::max(variance, 0.0)) + 1e-9));
    }
    return std::vector<Tensor>{std::move(y)};
}

// ---- GatherND: slices of data picked by the last dim of indices, after `batch_dims` shared
// leading dims: out = indices.shape[:-1] ++ data.shape[batch_dims + indices.shape[-1]:]

namespace {

Status checkGatherNd(const Node& n, const TensorType& data, const TensorType& indices) {
    const int64_t b = n.attrInt("batch_dims", 0);
    if (indices.rank() < 1 || data.rank() < 1)
        return opError(n, "gathernd data " + data.str() + " and indices " + indices.str() + " need rank >= 1");
    if (b < 0 || b >= static_cast<int64_t>(std::min(data.rank(), indices.rank())))
        return opError(n, "batch_dims " + std::to_string(b) + " must be below the ranks of data " + data.str() +
                              " and indices " + indices.str());
    const Dim& last = indices.shape[indices.rank() - 1];
    if (last.isKnown() && (last.value < 1 || b + last.value > static_cast<int64_t>(data.rank())))
        return opError(n, "indices " + indices.str() + " index " + std::to_string(last.value) +
                              " dims past batch_dims " + std::to_string(b) + " of data " + data.str());
    for (int64_t i = 0; i < b; ++i) {
        const Dim& d = data.shape[static_cast<size_t>(i)];
        const Dim& q = indices.shape[static_cast<size_t>(i)];
        if (d.isKnown() && q.isKnown() && d.value != q.value)
            return opError(n, "batch dim " + std::to_string(i) + " of data " + data.str() + " and indices " +
                                  indices.str() + " differ");
    }
    return {};
}

} // namespace

Status verifyGatherND(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "batch_dims", 0, 64));
    if (const TensorType* q = ops::inputType(n, 1); q && q->dtype != DType::I64)
        return opError(n, "gathernd indices must be i64, got " + q->str());
    return {};
}

Expected<std::vector<TensorType>> inferGatherND(const Node& n) {
    const TensorType& data = *ops::inputType(n, 0);
    const TensorType& indices = *ops::inputType(n, 1);
    SX_TRY(checkGatherNd(n, data, indices));
    TensorType t;
    t.dtype = data.dtype;
    for (size_t i = 0; i + 1 < indices.rank(); ++i)
        t.shape.push_back(indices.shape[i]);
    const Dim& last = indices.shape[indices.rank() - 1];
    if (!last.isKnown())
        return opError(n, "gathernd indices " + indices.str() + " need a known last dim", ErrorKind::Unsupported);
    for (size_t i = static_cast<size_t>(n.attrInt("batch_dims", 0) + last.value); i < data.rank(); ++i)
        t.shape.push_back(data.shape[i]);
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runGatherND(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& data = inputs[0];
    const Tensor& indices = inputs[1];
    SX_TRY(checkGatherNd(n, data.type(), indices.type()));
    const size_t b = static_cast<size_t>(n.attrInt("batch_dims", 0));
    const size_t depth = static_cast<size_t>(indices.shape().back());
    std::vector<int64_t> outShape(indices.shape().begin(), indices.shape().end() - 1);
    int64_t slice = 1; // elements of one picked slice
    for (size_t i = b + depth; i < data.rank(); ++i) {
        outShape.push_back(data.shape()[i]);
        slice *= data.shape()[i];
    }
    SX_TRY(ops::checkAllocation(n, outShape));
    const std::vector<int64_t> strides = ops::stridesOf(data.shape());
    int64_t batchCount = 1, perBatch = 1; // index tuples in all, and per batch entry
    for (size_t i = 0; i + 1 < indices.rank(); ++i)
        (i < b ? batchCount : perBatch) *= indices.shape()[i];
    Tensor y(data.dtype(), outShape);
    const size_t es = dtypeSize(data.dtype());
    for (int64_t t = 0; t < batchCount * perBatch; ++t) {
        const int64_t batch = perBatch == 0 ? 0 : t / perBatch;
        // The batch entry's flat offset in data: its coordinates over the first b dims.
        int64_t src = 0, rest = batch;
        for (size_t i = b; i-- > 0;) {
            src += (rest % data.shape()[i]) * strides[i];
            rest /= data.shape()[i];
        }
        for (size_t j = 0; j < depth; ++j) {
            const int64_t extent = data.shape()[b + j];
            int64_t at = static_cast<int64_t>(indices.at(t * static_cast<int64_t>(depth) + static_cast<int64_t>(j)));
            if (at < 0)
                at += extent;
            if (at < 0 || at >= extent)
                return opError(n, "index " + std::to_string(static_cast<int64_t>(indices.at(t * static_cast<int64_t>(depth) + static_cast<int64_t>(j)))) +
                                      " is outside 0.." + std::to_string(extent - 1) + " on dim " + std::to_string(b + j));
            src += at * strides[b + j];
        }
        std::memcpy(y.mutableBytes() + t * slice * static_cast<int64_t>(es), data.bytes() + src * static_cast<int64_t>(es),
                    static_cast<size_t>(slice) * es);
    }
    return std::vector<Tensor>{std::move(y)};
}

// ---- RMSNormalization (opset 23): x / sqrt(mean(x^2 over the dims from axis on) + epsilon) * scale,
// scale broadcast to x (numpy rules). The statistics are kept in double: stash_type 1 (float)
// asks for at least float, and double is what the reference computes in.

Status verifyRMSNormalization(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "epsilon"));
    SX_TRY(ops::checkIntAttr(n, "axis", -64, 64));
    SX_TRY(ops::checkIntAttr(n, "stash_type", 1, 1));
    SX_TRY(ops::requireFloatInput(n, 0, "rms normalization input"));
    return ops::requireFloatInput(n, 1, "rms normalization scale");
}

Expected<std::vector<TensorType>> inferRMSNormalization(const Node& n) {
    const TensorType& x = *ops::inputType(n, 0);
    const TensorType& scale = *ops::inputType(n, 1);
    if (x.rank() == 0)
        return opError(n, "rms normalization input must have rank >= 1");
    SX_TRY(ops::normaliseAxis(n, n.attrInt("axis", -1), static_cast<int64_t>(x.rank()), "rms normalization axis"));
    SX_ASSIGN(ops::Shape both, ops::broadcastShapes(n, x.shape, scale.shape));
    if (both.size() != x.rank())
        return opError(n, "scale " + scale.str() + " does not broadcast to the input " + x.str());
    TensorType y = x;
    y.dtype = scale.dtype;
    return std::vector<TensorType>{y};
}

Expected<std::vector<Tensor>> runRMSNormalization(const Node& n, std::span<const Tensor> inputs,
                                                  const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor& scale = inputs[1];
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", -1), static_cast<int64_t>(x.rank()),
                                               "rms normalization axis"));
    if (scale.rank() > x.rank())
        return opError(n, "scale " + scale.type().str() + " does not broadcast to the input " + x.type().str());
    for (size_t i = 0; i < scale.rank(); ++i) {
        const int64_t s = scale.shape()[i], d = x.shape()[x.rank() - scale.rank() + i];
        if (s != 1 && s != d)
            return opError(n, "scale " + scale.type().str() + " does not broadcast to the input " + x.type().str());
    }
    int64_t inner = 1;
    for (size_t i = static_cast<size_t>(axis); i < x.rank(); ++i)
        inner *= x.shape()[i];
    const int64_t outer = inner == 0 ? 0 : x.numel() / inner;
    const std::vector<int64_t> scaleStrides = ops::broadcastStrides(scale.shape(), x.shape());
    const std::vector<int64_t> xStrides = ops::stridesOf(x.shape());
    const double eps = n.attrFloat("epsilon", 1e-5);
    Tensor y(scale.dtype(), x.shape());
    for (int64_t o = 0; o < outer; ++o) {
        double squares = 0;
        for (int64_t i = 0; i < inner; ++i) {
            const double v = x.at(o * inner + i);
            squares += v * v;
        }
        const double rms = std::sqrt(squares / static_cast<double>(inner) + eps);
        for (int64_t i = 0; i < inner; ++i) {
            const int64_t flat = o * inner + i;
            int64_t at = 0, rest = flat;
            for (size_t d = 0; d < x.rank(); ++d) {
                at += rest / xStrides[d] * scaleStrides[d];
                rest %= xStrides[d];
            }
            y.set(flat, x.at(flat) / rms * scale.at(at));
        }
    }
    return std::vector<Tensor>{std::move(y)};
}

} // namespace sextant::ir
