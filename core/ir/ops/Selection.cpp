// Ops that select, scatter or generate along index structure, as today's exporters emit them:
// ScatterND (opsets 11, 13, 16, 18: reduction none/add/mul, then max/min), Compress (9, 11),
// ReverseSequence (10) and EyeLike (9, 22). Checked against ONNX's node tests
// (tests/conformance) and values computed independently (tests/ir/SelectionOpsTest.cpp).
#include "OpUtil.h"

#include <algorithm>
#include <cstring>

namespace sextant::ir {

using ops::opError;


// ---- ScatterND: a copy of data with slices replaced (or reduced into) at index tuples.
// data rank r, indices [..., k] with k <= r, updates = indices.shape[:-1] + data.shape[k:].

Status verifyScatterND(const Node& n) {
    SX_TRY(ops::checkStringAttr(n, "reduction", {"none", "add", "mul", "max", "min"}));
    if (const TensorType* q = ops::inputType(n, 1); q && q->dtype != DType::I64)
        return opError(n, "scatternd indices must be i64, got " + q->str());
    return {};
}

Expected<std::vector<TensorType>> inferScatterND(const Node& n) {
    const TensorType& data = *ops::inputType(n, 0);
    const TensorType& indices = *ops::inputType(n, 1);
    const TensorType& updates = *ops::inputType(n, 2);
    if (updates.dtype != data.dtype)
        return opError(n, "updates " + updates.str() + " and data " + data.str() + " must have one dtype");
    if (indices.rank() == 0)
        return opError(n, "scatternd indices must have rank >= 1");
    const Dim& k = indices.shape.back();
    if (k.isKnown() && k.value > static_cast<int64_t>(data.rank()))
        return opError(n, "index tuples of " + std::to_string(k.value) + " entries exceed data " + data.str());
    if (k.isKnown() && updates.rank() != indices.rank() - 1 + data.rank() - static_cast<size_t>(k.value))
        return opError(n, "updates " + updates.str() + " must have rank " +
                              std::to_string(indices.rank() - 1 + data.rank() - static_cast<size_t>(k.value)) +
                              " for indices " + indices.str() + " and data " + data.str());
    return std::vector<TensorType>{data};
}

Expected<std::vector<Tensor>> runScatterND(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& data = inputs[0];
    const Tensor& indices = inputs[1];
    const Tensor& updates = inputs[2];
    SX_ASSIGN(auto reduce, ops::scatterReduction(n));
    if (indices.rank() == 0 || indices.shape().back() > static_cast<int64_t>(data.rank()))
        return opError(n, "indices " + indices.type().str() + " do not index data " + data.type().str());
    const size_t k = static_cast<size_t>(indices.shape().back());
    std::vector<int64_t> want(indices.shape().begin(), indices.shape().end() - 1);
    int64_t slice = 1;
    for (size_t i = k; i < data.rank(); ++i) {
        want.push_back(data.shape()[i]);
        slice *= data.shape()[i];
    }
    if (updates.shape() != want)
        return opError(n, "updates " + updates.type().str() + " must have shape " + ops::shapeStr(ops::shapeOf(Tensor(updates.dtype(), want))) +
                              " for indices " + indices.type().str() + " and data " + data.type().str());
    const std::vector<int64_t> strides = ops::stridesOf(data.shape());
    int64_t tuples = 1; // index tuples; with k = 0 each empty tuple addresses the whole of data
    for (size_t i = 0; i + 1 < indices.rank(); ++i)
        tuples *= indices.shape()[i];
    Tensor y = data.clone();
    for (int64_t t = 0; t < tuples; ++t) {
        int64_t base = 0;
        for (size_t j = 0; j < k; ++j) {
            const int64_t extent = data.shape()[j];
            const int64_t raw = static_cast<int64_t>(indices.at(t * static_cast<int64_t>(k) + static_cast<int64_t>(j)));
            const int64_t at = raw < 0 ? raw + extent : raw;
            if (at < 0 || at >= extent)
                return opError(n, "index " + std::to_string(raw) + " is outside 0.." + std::to_string(extent - 1) +
                                      " on dim " + std::to_string(j));
            base += at * strides[j];
        }
        for (int64_t e = 0; e < slice; ++e)
            y.set(base + e, reduce(y.at(base + e), updates.at(t * slice + e)));
    }
    return std::vector<Tensor>{std::move(y)};
}

// ---- Compress: the slices along `axis` (of the flattened input without it) whose condition
// entry is true; a condition shorter than the axis drops the rest. The output's length along the
// axis is known only from a constant condition.

namespace {

Expected<int64_t> compressedLength(const Node& n, const Tensor& condition, int64_t extent) {
    if (condition.rank() != 1)
        return opError(n, "compress condition must be 1-D, got " + condition.type().str());
    if (condition.numel() > extent)
        return opError(n, "compress condition has " + std::to_string(condition.numel()) +
                              " entries, more than the " + std::to_string(extent) + " it selects from");
    int64_t kept = 0;
    for (int64_t i = 0; i < condition.numel(); ++i)
        kept += condition.at(i) != 0;
    return kept;
}

} // namespace

Status verifyCompress(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "axis", -64, 64));
    if (const TensorType* c = ops::inputType(n, 1); c && c->dtype != DType::Bool)
        return opError(n, "compress condition must be bool, got " + c->str());
    return {};
}

Expected<std::vector<TensorType>> inferCompress(const Node& n) {
    const TensorType& x = *ops::inputType(n, 0);
    const Value* cond = n.input(1);
    TensorType t;
    t.dtype = x.dtype;
    Dim along = ops::unknownDim();
    const bool hasAxis = n.hasAttr("axis");
    int64_t axis = 0;
    if (hasAxis) {
        SX_ASSIGN(axis, ops::normaliseAxis(n, n.attrInt("axis", 0), static_cast<int64_t>(x.rank()), "compress axis"));
    }
    const Dim extent = hasAxis ? x.shape[static_cast<size_t>(axis)]
                               : (x.isStatic() ? Dim::known(x.numel()) : ops::unknownDim());
    if (cond && cond->isConstant() && extent.isKnown()) {
        SX_ASSIGN(int64_t kept, compressedLength(n, *cond->constant(), extent.value));
        along = Dim::known(kept);
    }
    if (!hasAxis) {
        t.shape = {along};
    } else {
        t.shape = x.shape;
        t.shape[static_cast<size_t>(axis)] = along;
    }
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runCompress(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor& cond = inputs[1];
    const bool hasAxis = n.hasAttr("axis");
    int64_t axis = 0, outer = 1, extent = x.numel(), inner = 1;
    if (hasAxis) {
        SX_ASSIGN(axis, ops::normaliseAxis(n, n.attrInt("axis", 0), static_cast<int64_t>(x.rank()), "compress axis"));
        extent = x.shape()[static_cast<size_t>(axis)];
        for (size_t i = 0; i < x.rank(); ++i)
            if (static_cast<int64_t>(i) < axis)
                outer *= x.shape()[i];
            else if (static_cast<int64_t>(i) > axis)
                inner *= x.shape()[i];
    }
    SX_ASSIGN(int64_t kept, compressedLength(n, cond, extent));
    std::vector<int64_t> shape{kept};
    if (hasAxis) {
        shape = x.shape();
        shape[static_cast<size_t>(axis)] = kept;
    }
    Tensor y(x.dtype(), shape);
    const size_t es = dtypeSize(x.dtype());
    int64_t dst = 0;
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < cond.numel(); ++i)
            if (cond.at(i) != 0) {
                std::memcpy(y.mutableBytes() + dst * inner * static_cast<int64_t>(es),
                            x.bytes() + (o * extent + i) * inner * static_cast<int64_t>(es),
                            static_cast<size_t>(inner) * es);
                ++dst;
            }
    return std::vector<Tensor>{std::move(y)};
}

// ---- ReverseSequence: for each batch entry b, its first sequence_lens[b] steps along the time
// axis in reverse order, the rest as they are. time_axis and batch_axis are 0 and 1, either way.

Status verifyReverseSequence(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "time_axis", 0, 1));
    SX_TRY(ops::checkIntAttr(n, "batch_axis", 0, 1));
    if (n.attrInt("time_axis", 0) == n.attrInt("batch_axis", 1))
        return opError(n, "time_axis and batch_axis must differ");
    if (const TensorType* l = ops::inputType(n, 1); l && l->dtype != DType::I64)
        return opError(n, "sequence_lens must be i64, got " + l->str());
    if (const TensorType* x = ops::inputType(n, 0); x && x->rank() < 2)
        return opError(n, "reversesequence input must have rank >= 2, got " + x->str());
    return {};
}

Expected<std::vector<TensorType>> inferReverseSequence(const Node& n) {
    return std::vector<TensorType>{*ops::inputType(n, 0)};
}

Expected<std::vector<Tensor>> runReverseSequence(const Node& n, std::span<const Tensor> inputs,
                                                 const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor& lens = inputs[1];
    const size_t timeAxis = static_cast<size_t>(n.attrInt("time_axis", 0));
    const size_t batchAxis = static_cast<size_t>(n.attrInt("batch_axis", 1));
    if (x.rank() < 2)
        return opError(n, "reversesequence input must have rank >= 2, got " + x.type().str());
    const int64_t steps = x.shape()[timeAxis], batch = x.shape()[batchAxis];
    if (lens.rank() != 1 || lens.numel() != batch)
        return opError(n, "sequence_lens " + lens.type().str() + " must hold one length per batch entry (" +
                              std::to_string(batch) + ")");
    const std::vector<int64_t> strides = ops::stridesOf(x.shape());
    int64_t inner = 1;
    for (size_t i = 2; i < x.rank(); ++i)
        inner *= x.shape()[i];
    const size_t es = dtypeSize(x.dtype());
    Tensor y = x.clone();
    for (int64_t b = 0; b < batch; ++b) {
        const int64_t len = static_cast<int64_t>(lens.at(b));
        if (len < 0 || len > steps)
            return opError(n, "sequence length " + std::to_string(len) + " of batch entry " + std::to_string(b) +
                                  " is outside 0.." + std::to_string(steps));
        for (int64_t t = 0; t < len; ++t) {
            const int64_t src = t * strides[timeAxis] + b * strides[batchAxis];
            const int64_t dst = (len - 1 - t) * strides[timeAxis] + b * strides[batchAxis];
            std::memcpy(y.mutableBytes() + dst * static_cast<int64_t>(es), x.bytes() + src * static_cast<int64_t>(es),
                        static_cast<size_t>(inner) * es);
        }
    }
    return std::vector<Tensor>{std::move(y)};
}

// ---- EyeLike: a 2-D tensor of input's shape with ones on diagonal k (k > 0 above the main
// one), zeros elsewhere; in `dtype` when given, else input's type.

Status verifyEyeLike(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "k", INT32_MIN, INT32_MAX));
    if (n.hasAttr("dtype") && !ops::onnxDType(n.attrInt("dtype", 1)))
        return opError(n, "eyelike dtype " + std::to_string(n.attrInt("dtype", 1)) + " is not supported",
                       ErrorKind::Unsupported);
    if (const TensorType* x = ops::inputType(n, 0); x && x->rank() != 2)
        return opError(n, "eyelike input must be 2-D, got " + x->str());
    return {};
}

Expected<std::vector<TensorType>> inferEyeLike(const Node& n) {
    TensorType t = *ops::inputType(n, 0);
    if (n.hasAttr("dtype"))
        t.dtype = *ops::onnxDType(n.attrInt("dtype", 1));
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runEyeLike(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    if (x.rank() != 2)
        return opError(n, "eyelike input must be 2-D, got " + x.type().str());
    Tensor y(n.hasAttr("dtype") ? *ops::onnxDType(n.attrInt("dtype", 1)) : x.dtype(), x.shape());
    const int64_t k = n.attrInt("k", 0);
    for (int64_t r = 0; r < x.shape()[0]; ++r)
        if (const int64_t c = r + k; c >= 0 && c < x.shape()[1])
            y.set(r * x.shape()[1] + c, 1.0);
    return std::vector<Tensor>{std::move(y)};
}

} // namespace sextant::ir
