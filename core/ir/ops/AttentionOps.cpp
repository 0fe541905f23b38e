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
//
// Attention(Q, K, V[, attn_mask][, past_key][, past_value]) -> Y[, present_key][, present_value]
//   [, qk_matmul_output] (opset 23): softmax(Q K^T * scale + bias) V per head, in double.
//   Q, K, V are 4-D [batch, heads, sequence, head_size] or 3-D [batch, sequence, heads * head_size]
//   (q_num_heads, kv_num_heads); K and V may have fewer heads than Q when these divide them
//   (grouped queries: q head h reads kv head h / (q_heads / kv_heads)). past_key and past_value
//   [batch, kv_heads, past, head_size] go before K and V (present_key / present_value, 4-D).
//   scale defaults to 1 / sqrt(head_size); softcap > 0 maps the scores to softcap * tanh(s /
//   softcap) before the bias. The bias is attn_mask (bool: true attends, false is -inf; float:
//   added), broadcast to [batch, q_heads, q_sequence, total], a mask shorter than the total
//   sequence masking the keys past its end, and with is_causal -inf where key j > query i + past.
//   qk_matmul_output is the scaled scores (mode 0), those plus the bias (1) or the softmax (3).
//   Refused, each with an error naming the node: Attention-24 and -25 (opsets 24 to 28; input 6
//   nonpad_kv_seqlen came with 24), qk_matmul_output_mode 2, and modes 0 and 1 with softcap (the
//   versions of the specification disagree on whether softcap comes before the mask). The
//   softmax is computed in double whatever softmax_precision asks for.

#include "OpUtil.h"
#include "core/ir/DimsText.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sextant::ir {

using ops::opError;

namespace {

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
        return opError(n, "rotary embedding cos_cache " + dimsText(cos) +
                              " and sin_cache " + dimsText(sin) +
                              " must have one shape");
    const std::string shape = dimsText(cos);
    if (positions) {
        if (*positions != std::vector<int64_t>{l.batch, l.seq})
            return opError(n, "rotary embedding position_ids must be [batch, sequence] = [" + std::to_string(l.batch) +
                                  "," + std::to_string(l.seq) + "], got " +
                                  dimsText(*positions));
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

// ---- Attention (ONNX's, opset 23)

namespace {

constexpr int64_t kFloat = 1, kFloat16 = 10, kDouble = 11, kBFloat16 = 16;

/// The dims of one Attention call, every tensor seen as 4-D [batch, heads, sequence, head size].
struct AttnDims {
    bool threeD = false;
    int64_t batch = 0, qHeads = 0, kvHeads = 0, qSeq = 0, kvSeq = 0, past = 0, headSize = 0, vHeadSize = 0;
    int64_t total() const { return past + kvSeq; }
};

/// Q, K, V (and past_key, past_value when given) as 4-D, checked against each other and the
/// head-count attributes.
Expected<AttnDims> attnDims(const Node& n, const std::vector<int64_t>& q, const std::vector<int64_t>& k,
                            const std::vector<int64_t>& v, const std::vector<int64_t>* pastK,
                            const std::vector<int64_t>* pastV) {
    AttnDims d;
    const int64_t qHeadsAttr = n.attrInt("q_num_heads", 0), kvHeadsAttr = n.attrInt("kv_num_heads", 0);
    if (q.size() != k.size() || q.size() != v.size() || (q.size() != 3 && q.size() != 4))
        return opError(n, "attention Q, K and V must all be 4-D [batch, heads, sequence, head_size] or all 3-D "
                          "[batch, sequence, hidden], got " + dimsText(q) + ", " + dimsText(k) + ", " + dimsText(v));
    d.batch = q[0];
    if (k[0] != d.batch || v[0] != d.batch)
        return opError(n, "attention Q, K and V differ in batch: " + dimsText(q) + ", " + dimsText(k) + ", " + dimsText(v));
    if (q.size() == 4) {
        d.qHeads = q[1];
        d.qSeq = q[2];
        d.headSize = q[3];
        d.kvHeads = k[1];
        d.kvSeq = k[2];
        d.vHeadSize = v[3];
        if (k[3] != d.headSize || v[1] != d.kvHeads || v[2] != d.kvSeq)
            return opError(n, "attention K " + dimsText(k) + " and V " + dimsText(v) + " do not fit Q " + dimsText(q) +
                                  " (K [batch, kv_heads, kv_sequence, head_size], V [batch, kv_heads, kv_sequence, v_head_size])");
        if ((qHeadsAttr && qHeadsAttr != d.qHeads) || (kvHeadsAttr && kvHeadsAttr != d.kvHeads))
            return opError(n, "attention q_num_heads " + std::to_string(qHeadsAttr) + " / kv_num_heads " +
                                  std::to_string(kvHeadsAttr) + " differ from the heads of Q " + dimsText(q) + " and K " + dimsText(k));
    } else {
        d.threeD = true;
        if (!qHeadsAttr || !kvHeadsAttr)
            return opError(n, "attention with 3-D Q, K and V needs attributes q_num_heads and kv_num_heads");
        d.qHeads = qHeadsAttr;
        d.kvHeads = kvHeadsAttr;
        if (q[2] % d.qHeads || k[2] % d.kvHeads || v[2] % d.kvHeads)
            return opError(n, "attention hidden sizes " + dimsText(q) + ", " + dimsText(k) + ", " + dimsText(v) +
                                  " are not multiples of q_num_heads " + std::to_string(d.qHeads) + " and kv_num_heads " +
                                  std::to_string(d.kvHeads));
        d.qSeq = q[1];
        d.headSize = q[2] / d.qHeads;
        d.kvSeq = k[1];
        d.vHeadSize = v[2] / d.kvHeads;
        if (k[2] / d.kvHeads != d.headSize || v[1] != d.kvSeq)
            return opError(n, "attention K " + dimsText(k) + " and V " + dimsText(v) + " do not fit Q " + dimsText(q));
    }
    if (d.kvHeads < 1 || d.qHeads % d.kvHeads != 0)
        return opError(n, "attention q heads " + std::to_string(d.qHeads) + " are not a multiple of kv heads " +
                              std::to_string(d.kvHeads));
    if ((pastK == nullptr) != (pastV == nullptr))
        return opError(n, "attention needs past_key and past_value together");
    if (pastK) {
        d.past = pastK->size() == 4 ? (*pastK)[2] : -1;
        if (*pastK != std::vector<int64_t>{d.batch, d.kvHeads, d.past, d.headSize} ||
            *pastV != std::vector<int64_t>{d.batch, d.kvHeads, d.past, d.vHeadSize})
            return opError(n, "attention past_key " + dimsText(*pastK) + " and past_value " + dimsText(*pastV) +
                                  " must be [batch, kv_heads, past_sequence, head_size] = [" + std::to_string(d.batch) + "," +
                                  std::to_string(d.kvHeads) + ",P," + std::to_string(d.headSize) + "] and [..., " +
                                  std::to_string(d.vHeadSize) + "]");
    }
    return d;
}

/// The attention mask's shape checked: broadcastable to [batch, q_heads, q_sequence, L] with
/// L <= total sequence (the keys past L are masked out).
Status checkMask(const Node& n, const AttnDims& d, const std::vector<int64_t>& m) {
    const std::vector<int64_t> full{d.batch, d.qHeads, d.qSeq, d.total()};
    bool ok = !m.empty() && m.size() <= 4 && m.back() <= d.total();
    for (size_t i = 0; ok && i + 1 < m.size(); ++i) {
        const int64_t want = full[4 - m.size() + i];
        ok = m[i] == 1 || m[i] == want;
    }
    if (!ok)
        return opError(n, "attention attn_mask " + dimsText(m) + " does not broadcast to [batch, q_heads, q_sequence, " +
                              "total_sequence] = " + dimsText(full));
    return {};
}

/// What the node asks for that the kernel does not do, as an error; success otherwise.
Status checkAttentionSupport(const Node& n) {
    const int64_t opset = n.attrInt("_opset", 23);
    if (opset >= 24)
        return opError(n, "Attention-" + std::to_string(opset >= 25 ? 25 : 24) + " (opset " + std::to_string(opset) +
                              ") is not supported; Sextant implements Attention-23",
                       ErrorKind::Unsupported);
    if (n.input(6))
        return opError(n, "attention input 6 (nonpad_kv_seqlen) came with Attention-24; Attention-23 has 6 inputs");
    const int64_t mode = n.attrInt("qk_matmul_output_mode", 0);
    const double softcap = n.attrFloat("softcap", 0.0);
    if (n.numOutputs() > 3) {
        if (mode == 2)
            return opError(n, "attention qk_matmul_output_mode 2 (the scores after softcap) is not supported",
                           ErrorKind::Unsupported);
        if (softcap > 0 && mode != 3)
            return opError(n, "attention qk_matmul_output_mode " + std::to_string(mode) +
                                  " with softcap is not supported (the versions of the specification disagree on "
                                  "where softcap comes)",
                           ErrorKind::Unsupported);
    }
    return {};
}

} // namespace

Status verifyOnnxAttention(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "_opset", 1, 1000));
    SX_TRY(ops::checkIntAttr(n, "is_causal", 0, 1));
    SX_TRY(ops::checkIntAttr(n, "q_num_heads", 1, std::numeric_limits<int64_t>::max()));
    SX_TRY(ops::checkIntAttr(n, "kv_num_heads", 1, std::numeric_limits<int64_t>::max()));
    SX_TRY(ops::checkIntAttr(n, "qk_matmul_output_mode", 0, 3));
    SX_TRY(ops::checkFloatAttr(n, "scale"));
    SX_TRY(ops::checkFloatAttr(n, "softcap"));
    if (n.attrFloat("softcap", 0.0) < 0)
        return opError(n, "attention softcap must be >= 0, got " + std::to_string(n.attrFloat("softcap", 0.0)));
    if (n.hasAttr("softmax_precision")) {
        SX_TRY(ops::checkIntAttr(n, "softmax_precision", 0, 1000));
        const int64_t p = n.attrInt("softmax_precision", kFloat);
        if (p != kFloat && p != kFloat16 && p != kDouble && p != kBFloat16)
            return opError(n, "attention softmax_precision " + std::to_string(p) +
                                  " is not a floating-point type (1, 10, 11 or 16)");
    }
    SX_TRY(checkAttentionSupport(n));
    for (size_t i : {0, 1, 2, 4, 5})
        SX_TRY(ops::requireFloatInput(n, i, "attention input"));
    if (const TensorType* m = ops::inputType(n, 3); m && m->dtype != DType::Bool && !isFloat(m->dtype))
        return opError(n, "attention attn_mask must be bool or float, got " + m->str());
    return {};
}

Expected<std::vector<TensorType>> inferOnnxAttention(const Node& n) {
    SX_TRY(verifyOnnxAttention(n));
    const TensorType &q = *ops::inputType(n, 0), &k = *ops::inputType(n, 1), &v = *ops::inputType(n, 2);
    const TensorType *pk = ops::inputType(n, 4), *pv = ops::inputType(n, 5), *mask = ops::inputType(n, 3);
    std::vector<TensorType> out(n.numOutputs(), TensorType{q.dtype, {}});
    const bool known = q.isStatic() && k.isStatic() && v.isStatic() && (!pk || pk->isStatic()) && (!pv || pv->isStatic());
    if (!known) { // ranks only
        const size_t r = q.rank();
        out[0].shape = ops::Shape(r, ops::unknownDim());
        for (size_t i = 1; i < out.size(); ++i)
            out[i].shape = ops::Shape(4, ops::unknownDim());
        if (out.size() > 1) out[1].dtype = k.dtype;
        if (out.size() > 2) out[2].dtype = v.dtype;
        return out;
    }
    const std::vector<int64_t> pkd = pk ? pk->dims() : std::vector<int64_t>{}, pvd = pv ? pv->dims() : std::vector<int64_t>{};
    SX_ASSIGN(AttnDims d, attnDims(n, q.dims(), k.dims(), v.dims(), pk ? &pkd : nullptr, pv ? &pvd : nullptr));
    if (mask && mask->isStatic())
        SX_TRY(checkMask(n, d, mask->dims()));
    const auto known4 = [](const std::vector<int64_t>& dims) {
        ops::Shape shape;
        for (int64_t x : dims)
            shape.push_back(Dim::known(x));
        return shape;
    };
    out[0].shape = d.threeD ? known4({d.batch, d.qSeq, d.qHeads * d.vHeadSize}) : known4({d.batch, d.qHeads, d.qSeq, d.vHeadSize});
    if (out.size() > 1)
        out[1] = TensorType{k.dtype, known4({d.batch, d.kvHeads, d.total(), d.headSize})};
    if (out.size() > 2)
        out[2] = TensorType{v.dtype, known4({d.batch, d.kvHeads, d.total(), d.vHeadSize})};
    if (out.size() > 3)
        out[3] = TensorType{q.dtype, known4({d.batch, d.qHeads, d.qSeq, d.total()})};
    return out;
}

Expected<std::vector<Tensor>> runOnnxAttention(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const auto present = [&](size_t i) { return inputs.size() > i && n.input(i) ? &inputs[i] : nullptr; };
    const Tensor &q = inputs[0], &k = inputs[1], &v = inputs[2];
    const Tensor *mask = present(3), *pk = present(4), *pv = present(5);
    SX_ASSIGN(AttnDims d, attnDims(n, q.shape(), k.shape(), v.shape(), pk ? &pk->shape() : nullptr,
                                   pv ? &pv->shape() : nullptr));
    if (mask)
        SX_TRY(checkMask(n, d, mask->shape()));
    const int64_t B = d.batch, Hq = d.qHeads, Hk = d.kvHeads, Sq = d.qSeq, S = d.kvSeq, P = d.past, T = d.total();
    const int64_t D = d.headSize, Dv = d.vHeadSize, group = Hq / Hk;
    // Element offsets of Q[b, h, i, x], K[b, h, j, x] and V[b, h, j, x] in either layout.
    const auto q4 = [&](int64_t b, int64_t h, int64_t i) {
        return d.threeD ? (b * Sq + i) * Hq * D + h * D : ((b * Hq + h) * Sq + i) * D;
    };
    const auto kv4 = [&](int64_t b, int64_t h, int64_t j, int64_t size) {
        return d.threeD ? (b * S + j) * Hk * size + h * size : ((b * Hk + h) * S + j) * size;
    };
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{B, Hk, T, D}, std::vector<int64_t>{B, Hk, T, Dv},
                                             std::vector<int64_t>{B, Hq, Sq, std::max(T, Dv)}})
        SX_TRY(ops::checkAllocation(n, dims));
    // present_key and present_value: the past followed by this call's K and V, 4-D.
    Tensor presentK(k.dtype(), {B, Hk, T, D}), presentV(v.dtype(), {B, Hk, T, Dv});
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hk; ++h)
            for (int64_t j = 0; j < T; ++j) {
                const int64_t row = (b * Hk + h) * T + j;
                for (int64_t x = 0; x < D; ++x)
                    presentK.set(row * D + x, j < P ? pk->at(((b * Hk + h) * P + j) * D + x) : k.at(kv4(b, h, j - P, D) + x));
                for (int64_t x = 0; x < Dv; ++x)
                    presentV.set(row * Dv + x, j < P ? pv->at(((b * Hk + h) * P + j) * Dv + x) : v.at(kv4(b, h, j - P, Dv) + x));
            }
    const double scale = n.hasAttr("scale") ? n.attrFloat("scale", 1.0) : 1.0 / std::sqrt(static_cast<double>(D));
    const double softcap = n.attrFloat("softcap", 0.0);
    const bool causal = n.attrInt("is_causal", 0) != 0;
    const int64_t mode = n.attrInt("qk_matmul_output_mode", 0);
    const bool wantScores = n.numOutputs() > 3;
    std::vector<int64_t> maskStrides;
    int64_t maskLen = 0;
    if (mask) {
        std::vector<int64_t> ms = mask->shape();
        maskLen = ms.back();
        maskStrides = ops::broadcastStrides(ms, {B, Hq, Sq, maskLen});
    }
    Tensor y(q.dtype(), d.threeD ? std::vector<int64_t>{B, Sq, Hq * Dv} : std::vector<int64_t>{B, Hq, Sq, Dv});
    Tensor scores = wantScores ? Tensor(q.dtype(), {B, Hq, Sq, T}) : Tensor();
    std::vector<double> s(static_cast<size_t>(T));
    constexpr double kInf = std::numeric_limits<double>::infinity();
    for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < Hq; ++h) {
            const int64_t kh = h / group; // grouped query attention: q heads share kv heads in runs
            for (int64_t i = 0; i < Sq; ++i) {
                const int64_t qa = q4(b, h, i);
                const int64_t scoreRow = ((b * Hq + h) * Sq + i) * T;
                for (int64_t j = 0; j < T; ++j) {
                    double dot = 0;
                    const int64_t ka = ((b * Hk + kh) * T + j) * D;
                    for (int64_t x = 0; x < D; ++x)
                        dot += q.at(qa + x) * presentK.at(ka + x);
                    double v0 = dot * scale;
                    if (softcap > 0)
                        v0 = softcap * std::tanh(v0 / softcap);
                    if (wantScores && mode == 0)
                        scores.set(scoreRow + j, v0);
                    double bias = 0;
                    if (mask) {
                        if (j >= maskLen) {
                            bias = -kInf;
                        } else {
                            const int64_t at = b * maskStrides[0] + h * maskStrides[1] + i * maskStrides[2] + j * maskStrides[3];
                            bias = mask->dtype() == DType::Bool ? (mask->at(at) != 0 ? 0.0 : -kInf) : mask->at(at);
                        }
                    }
                    if (causal && j > i + P)
                        bias = -kInf;
                    s[static_cast<size_t>(j)] = v0 + bias;
                    if (wantScores && mode == 1)
                        scores.set(scoreRow + j, s[static_cast<size_t>(j)]);
                }
                double top = -kInf, sum = 0;
                for (double x : s)
                    top = std::max(top, x);
                for (double& x : s) {
                    x = std::exp(x - top);
                    sum += x;
                }
                for (int64_t j = 0; j < T; ++j) {
                    s[static_cast<size_t>(j)] /= sum;
                    if (wantScores && mode == 3)
                        scores.set(scoreRow + j, s[static_cast<size_t>(j)]);
                }
                const int64_t ya = d.threeD ? (b * Sq + i) * Hq * Dv + h * Dv : ((b * Hq + h) * Sq + i) * Dv;
                for (int64_t x = 0; x < Dv; ++x) {
                    double acc = 0;
                    for (int64_t j = 0; j < T; ++j)
                        acc += s[static_cast<size_t>(j)] * presentV.at(((b * Hk + kh) * T + j) * Dv + x);
                    y.set(ya + x, acc);
                }
            }
        }
    std::vector<Tensor> out;
    out.push_back(std::move(y));
    out.push_back(std::move(presentK));
    out.push_back(std::move(presentV));
    out.push_back(std::move(scores));
    return out;
}

} // namespace sextant::ir
