// RotaryEmbedding (ONNX opset 23) and ONNX's Attention (opsets 23 to 25), reference kernels on
// the host.
//
// RotaryEmbedding(X, cos_cache, sin_cache[, position_ids]): X is 4-D [batch, heads, sequence,
//   head_size] or 3-D [batch, sequence, heads * head_size] (attribute num_heads says how many).
//   The first rotary_embedding_dim features of each head (0: all) are rotated in pairs, pair i by
//   the angle whose cosine and sine are cache entry i of the token's row: y1 = cos x1 - sin x2,
//   y2 = sin x1 + cos x2. The pairs are (i, i + rotary / 2) (halves) or (2i, 2i + 1) with
//   interleaved 1; the rest of the head is copied. The row is position_ids[b, s] of caches
//   [max_position + 1, >= rotary / 2], or without position_ids row (b, s) of caches
//   [batch, sequence, >= rotary / 2].

#include "OpUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sextant::ir {

using ops::opError;

namespace {

/// "[2,3,4]" for messages.
std::string dimsStr(const std::vector<int64_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i)
        s += (i ? "," : "") + std::to_string(dims[i]);
    return s + "]";
}

// ---- RotaryEmbedding

/// The layout of a RotaryEmbedding input: batch, sequence, heads, head size, and the element
/// strides of the sequence and head dims (4-D [B, H, S, D] or 3-D [B, S, H * D]).
struct RopeLayout {
    int64_t batch = 0, seq = 0, heads = 0, headSize = 0, rotary = 0;
    int64_t seqStride = 0, headStride = 0;
};

Expected<RopeLayout> ropeLayout(const Node& n, const std::vector<int64_t>& x) {
    RopeLayout l;
    const int64_t numHeads = n.attrInt("num_heads", 0);
    if (x.size() == 4) {
        l.batch = x[0];
        l.heads = x[1];
        l.seq = x[2];
        l.headSize = x[3];
        if (numHeads != 0 && numHeads != l.heads)
            return opError(n, "rotary embedding num_heads " + std::to_string(numHeads) + " differs from the input's " +
                                  std::to_string(l.heads) + " heads (dim 1 of [batch, heads, sequence, head_size])");
        l.headStride = l.seq * l.headSize;
        l.seqStride = l.headSize;
    } else if (x.size() == 3) {
        if (numHeads == 0)
            return opError(n, "rotary embedding of a 3-D input [batch, sequence, hidden] needs attribute num_heads");
        if (x[2] % numHeads != 0)
            return opError(n, "rotary embedding hidden size " + std::to_string(x[2]) + " is not a multiple of num_heads " +
                                  std::to_string(numHeads));
        l.batch = x[0];
        l.seq = x[1];
        l.heads = numHeads;
        l.headSize = x[2] / numHeads;
        l.headStride = l.headSize;
        l.seqStride = x[2];
    } else {
        return opError(n, "rotary embedding input must be 4-D [batch, heads, sequence, head_size] or 3-D "
                          "[batch, sequence, hidden], got rank " + std::to_string(x.size()));
    }
    l.rotary = n.attrInt("rotary_embedding_dim", 0);
    if (l.rotary == 0)
        l.rotary = l.headSize;
    if (l.rotary % 2 != 0 || l.rotary > l.headSize)
        return opError(n, "rotary embedding rotary_embedding_dim " + std::to_string(l.rotary) +
                              " must be even and at most the head size " + std::to_string(l.headSize));
    return l;
}

/// Checks the caches (and position_ids) against the layout: [max_position + 1, >= rotary / 2] with
/// position_ids [batch, sequence], else [batch, sequence, >= rotary / 2].
Status checkRopeCaches(const Node& n, const RopeLayout& l, const std::vector<int64_t>& cos,
                       const std::vector<int64_t>& sin, const std::vector<int64_t>* positions) {
    if (cos != sin)
        return opError(n, "rotary embedding cos_cache " + dimsStr(cos) +
                              " and sin_cache " + dimsStr(sin) +
                              " must have one shape");
    const std::string shape = dimsStr(cos);
    if (positions) {
        if (*positions != std::vector<int64_t>{l.batch, l.seq})
            return opError(n, "rotary embedding position_ids must be [batch, sequence] = [" + std::to_string(l.batch) +
                                  "," + std::to_string(l.seq) + "], got " +
                                  dimsStr(*positions));
        if (cos.size() != 2 || cos[1] < l.rotary / 2)
            return opError(n, "rotary embedding caches must be [max_position + 1, " + std::to_string(l.rotary / 2) +
                                  "] with position_ids, got " + shape);
    } else if (cos.size() != 3 || cos[0] != l.batch || cos[1] != l.seq || cos[2] < l.rotary / 2) {
        return opError(n, "rotary embedding caches must be [batch, sequence, rotary_embedding_dim / 2] = [" +
                              std::to_string(l.batch) + "," + std::to_string(l.seq) + "," +
                              std::to_string(l.rotary / 2) + "] without position_ids, got " + shape);
    }
    return {};
}

std::vector<int64_t> staticDims(const TensorType& t) { return t.isStatic() ? t.dims() : std::vector<int64_t>{}; }

} // namespace

Status verifyRotaryEmbedding(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "interleaved", 0, 1));
    SX_TRY(ops::checkIntAttr(n, "num_heads", 0, std::numeric_limits<int64_t>::max()));
    SX_TRY(ops::checkIntAttr(n, "rotary_embedding_dim", 0, std::numeric_limits<int64_t>::max()));
    for (size_t i = 0; i < 3; ++i)
        SX_TRY(ops::requireFloatInput(n, i, "rotary embedding input"));
    if (const TensorType* p = ops::inputType(n, 3); p && p->dtype != DType::I64)
        return opError(n, "rotary embedding position_ids must be i64, got " + p->str());
    return {};
}

Expected<std::vector<TensorType>> inferRotaryEmbedding(const Node& n) {
    SX_TRY(verifyRotaryEmbedding(n));
    const TensorType& x = *ops::inputType(n, 0);
    if (x.rank() != 3 && x.rank() != 4)
        return opError(n, "rotary embedding input must be 4-D [batch, heads, sequence, head_size] or 3-D "
                          "[batch, sequence, hidden], got rank " + std::to_string(x.rank()));
    // The shapes are checked where they are all static (always at run time).
    const TensorType &cos = *ops::inputType(n, 1), &sin = *ops::inputType(n, 2);
    const TensorType* pos = ops::inputType(n, 3);
    if (x.isStatic() && cos.isStatic() && sin.isStatic() && (!pos || pos->isStatic())) {
        SX_ASSIGN(RopeLayout l, ropeLayout(n, x.dims()));
        const std::vector<int64_t> p = pos ? pos->dims() : std::vector<int64_t>{};
        SX_TRY(checkRopeCaches(n, l, staticDims(cos), staticDims(sin), pos ? &p : nullptr));
    }
    return std::vector<TensorType>{x};
}

Expected<std::vector<Tensor>> runRotaryEmbedding(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor& cos = inputs[1];
    const Tensor& sin = inputs[2];
    const Tensor* pos = inputs.size() > 3 && n.input(3) ? &inputs[3] : nullptr;
    SX_ASSIGN(RopeLayout l, ropeLayout(n, x.shape()));
    SX_TRY(checkRopeCaches(n, l, cos.shape(), sin.shape(), pos ? &pos->shape() : nullptr));
    const bool interleaved = n.attrInt("interleaved", 0) != 0;
    const int64_t half = l.rotary / 2, cacheRow = cos.shape().back();
    Tensor y(x.dtype(), x.shape());
    for (int64_t b = 0; b < l.batch; ++b)
        for (int64_t s = 0; s < l.seq; ++s) {
            int64_t row = b * l.seq + s; // the cache row of this token
            if (pos) {
                const int64_t p = static_cast<int64_t>(pos->at(b * l.seq + s));
                if (p < 0 || p >= cos.shape()[0])
                    return opError(n, "rotary embedding position id " + std::to_string(p) + " is outside the caches' " +
                                          std::to_string(cos.shape()[0]) + " rows");
                row = p;
            }
            for (int64_t h = 0; h < l.heads; ++h) {
                const int64_t base = b * (l.heads * l.seq * l.headSize) + h * l.headStride + s * l.seqStride;
                for (int64_t i = 0; i < half; ++i) {
                    // The pair rotated by angle i: (2i, 2i + 1) interleaved, (i, i + half) in halves.
                    const int64_t a = base + (interleaved ? 2 * i : i), c = base + (interleaved ? 2 * i + 1 : i + half);
                    const double co = cos.at(row * cacheRow + i), si = sin.at(row * cacheRow + i);
                    const double x1 = x.at(a), x2 = x.at(c);
                    y.set(a, co * x1 - si * x2);
                    y.set(c, si * x1 + co * x2);
                }
                for (int64_t i = l.rotary; i < l.headSize; ++i)
                    y.set(base + i, x.at(base + i));
            }
        }
    return std::vector<Tensor>{std::move(y)};
}

Status verifyOnnxAttention(const Node& n) { return ops::opError(n, "OnnxAttention is not implemented yet", ErrorKind::Unsupported); }
Expected<std::vector<TensorType>> inferOnnxAttention(const Node& n) { return ops::opError(n, "OnnxAttention is not implemented yet", ErrorKind::Unsupported); }
Expected<std::vector<Tensor>> runOnnxAttention(const Node& n, std::span<const Tensor>, const KernelContext&) {
    return ops::opError(n, "OnnxAttention is not implemented yet", ErrorKind::Unsupported);
}

} // namespace sextant::ir
