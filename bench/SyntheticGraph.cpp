#include "SyntheticGraph.h"

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace sextant::bench {

namespace {

using ir::OpKind;
using ir::Tensor;
using ir::Value;

/// Builds nodes with unique names and import-style provenance, counting them.
class Builder {
public:
    explicit Builder(ir::Graph& g) : m_g(g) {}

    int64_t nodeCount() const { return m_nodes; }

    Expected<Value*> node(OpKind kind, const std::string& name, std::vector<Value*> inputs,
                          ir::AttributeMap attrs = {}) {
        SX_ASSIGN(ir::Node * n, m_g.addNode(kind, name, std::move(inputs), {name + "_out"}, std::move(attrs)));
        n->mutableProvenance() = ir::Provenance{{name}, "import"};
        ++m_nodes;
        return n->output(0);
    }

    /// A float constant with deterministic values in [lo, hi): a small linear congruential
    /// sequence, so the graph is the same on every machine.
    Expected<Value*> weight(const std::string& name, std::vector<int64_t> shape, float lo, float hi) {
        Tensor t(ir::DType::F32, shape);
        float* p = t.mutableData<float>();
        for (int64_t i = 0; i < t.numel(); ++i) {
            m_seed = m_seed * 1664525u + 1013904223u;
            p[i] = lo + (hi - lo) * static_cast<float>(m_seed >> 8) / static_cast<float>(1u << 24);
        }
        return m_g.addConstant(name, std::move(t));
    }

    Expected<Value*> scalar(const std::string& name, float v) {
        return m_g.addConstant(name, Tensor::fromVector<float>({}, {v}));
    }

    Expected<Value*> shape(const std::string& name, std::vector<int64_t> dims) {
        const int64_t n = static_cast<int64_t>(dims.size());
        return m_g.addConstant(name, Tensor::fromVector<int64_t>({n}, dims));
    }

private:
    ir::Graph& m_g;
    int64_t m_nodes = 0;
    uint32_t m_seed = 12345;
};

Expected<Value*> residualBlock(Builder& b, Value* x, const std::string& p, int64_t c) {
    const ir::AttributeMap conv{{"kernel_shape", std::vector<int64_t>{3, 3}},
                                {"pads", std::vector<int64_t>{1, 1, 1, 1}}};
    Value* cur = x;
    for (int i = 0; i < 2; ++i) {
        const std::string q = p + "_" + std::to_string(i);
        SX_ASSIGN(Value * w, b.weight(q + "_w", {c, c, 3, 3}, -0.2f, 0.2f));
        SX_ASSIGN(Value * cb, b.weight(q + "_b", {c}, -0.1f, 0.1f));
        SX_ASSIGN(Value * gamma, b.weight(q + "_gamma", {c}, 0.5f, 1.5f));
        SX_ASSIGN(Value * beta, b.weight(q + "_beta", {c}, -0.1f, 0.1f));
        SX_ASSIGN(Value * mean, b.weight(q + "_mean", {c}, -0.1f, 0.1f));
        SX_ASSIGN(Value * var, b.weight(q + "_var", {c}, 0.5f, 1.5f));
        SX_ASSIGN(cur, b.node(OpKind::Conv, q + "_conv", {cur, w, cb}, conv));
        const ir::AttributeMap bn{{"epsilon", 1e-5}};
        SX_ASSIGN(cur, b.node(OpKind::BatchNormalization, q + "_bn", {cur, gamma, beta, mean, var}, bn));
        if (i == 0) {
            SX_ASSIGN(cur, b.node(OpKind::Relu, q + "_relu", {cur}));
        }
    }
    SX_ASSIGN(Value * sum, b.node(OpKind::Add, p + "_add", {cur, x}));
    return b.node(OpKind::Relu, p + "_relu", {sum});
}

Expected<Value*> attentionBlock(Builder& b, Value* t, const std::string& p, int64_t d) {
    SX_ASSIGN(Value * wq, b.weight(p + "_wq", {d, d}, -0.3f, 0.3f));
    SX_ASSIGN(Value * wk, b.weight(p + "_wk", {d, d}, -0.3f, 0.3f));
    SX_ASSIGN(Value * wv, b.weight(p + "_wv", {d, d}, -0.3f, 0.3f));
    SX_ASSIGN(Value * scale, b.scalar(p + "_scale", 1.0f / std::sqrt(static_cast<float>(d))));
    SX_ASSIGN(Value * q, b.node(OpKind::MatMul, p + "_q", {t, wq}));
    SX_ASSIGN(Value * k, b.node(OpKind::MatMul, p + "_k", {t, wk}));
    const ir::AttributeMap swapLast{{"perm", std::vector<int64_t>{0, 2, 1}}};
    SX_ASSIGN(Value * kt, b.node(OpKind::Transpose, p + "_kt", {k}, swapLast));
    SX_ASSIGN(Value * v, b.node(OpKind::MatMul, p + "_v", {t, wv}));
    SX_ASSIGN(Value * s, b.node(OpKind::MatMul, p + "_qk", {q, kt}));
    SX_ASSIGN(Value * ss, b.node(OpKind::Mul, p + "_scaled", {s, scale}));
    SX_ASSIGN(Value * pr, b.node(OpKind::Softmax, p + "_softmax", {ss}, {{"axis", int64_t{-1}}}));
    SX_ASSIGN(Value * o, b.node(OpKind::MatMul, p + "_pv", {pr, v}));
    SX_ASSIGN(Value * r, b.node(OpKind::Add, p + "_residual", {o, t}));
    // LayerNorm over the last axis, decomposed the way PaddleOCR's recogniser exports it.
    const ir::AttributeMap lastAxis{{"axes", std::vector<int64_t>{-1}}, {"keepdims", int64_t{1}}};
    SX_ASSIGN(Value * two, b.scalar(p + "_two", 2.0f));
    SX_ASSIGN(Value * eps, b.scalar(p + "_eps", 1e-5f));
    SX_ASSIGN(Value * gamma, b.weight(p + "_ln_gamma", {d}, 0.5f, 1.5f));
    SX_ASSIGN(Value * beta, b.weight(p + "_ln_beta", {d}, -0.1f, 0.1f));
    SX_ASSIGN(Value * mean, b.node(OpKind::ReduceMean, p + "_ln_mean", {r}, lastAxis));
    SX_ASSIGN(Value * centred, b.node(OpKind::Sub, p + "_ln_sub", {r, mean}));
    SX_ASSIGN(Value * sq, b.node(OpKind::Pow, p + "_ln_pow", {centred, two}));
    SX_ASSIGN(Value * var, b.node(OpKind::ReduceMean, p + "_ln_var", {sq}, lastAxis));
    SX_ASSIGN(Value * ve, b.node(OpKind::Add, p + "_ln_addeps", {var, eps}));
    SX_ASSIGN(Value * sd, b.node(OpKind::Sqrt, p + "_ln_sqrt", {ve}));
    SX_ASSIGN(Value * nrm, b.node(OpKind::Div, p + "_ln_div", {centred, sd}));
    SX_ASSIGN(Value * sc, b.node(OpKind::Mul, p + "_ln_mul", {nrm, gamma}));
    return b.node(OpKind::Add, p + "_ln_add", {sc, beta});
}

/// Digits of the stage number in names (a stage is about 110 nodes: enough for 10^6 nodes).
constexpr size_t kStageDigits = 4;

} // namespace

Expected<std::unique_ptr<ir::Graph>> buildSyntheticGraph(int64_t targetNodes,
                                                          const SyntheticGraphOptions& o) {
    if (targetNodes < 1 || o.channels < 1 || o.height < 1 || o.width < 1 ||
        o.residualPerStage < 0 || o.attentionPerStage < 0 ||
        o.residualPerStage + o.attentionPerStage == 0)
        return makeError(ErrorKind::Invalid, "synthetic graph options must be positive");
    auto g = std::make_unique<ir::Graph>("synthetic_" + std::to_string(targetNodes));
    Builder b(*g);
    const int64_t c = o.channels, h = o.height, w = o.width, s = h * w;
    SX_ASSIGN(Value * x, g->addInput("image", ir::TensorType::of(ir::DType::F32, {1, c, h, w})));
    SX_ASSIGN(Value * toTokens, b.shape("tokens_shape", {1, c, s}));
    SX_ASSIGN(Value * toImage, b.shape("image_shape", {1, c, h, w}));
    const ir::AttributeMap swapLast{{"perm", std::vector<int64_t>{0, 2, 1}}};
    Value* cur = x;
    for (int64_t stage = 0; b.nodeCount() < targetNodes; ++stage) {
        // Stage numbers have a fixed width, so every size gets names of the same lengths: with
        // "s7" next to "s107", the bigger graph would have more names too long for std::string's
        // inline buffer, and each copy of them would cost an allocation that the smaller one
        // does not pay - a difference in the input, not in how the pipeline scales.
        std::string sp = std::to_string(stage);
        sp = "s" + std::string(sp.size() < kStageDigits ? kStageDigits - sp.size() : 0, '0') + sp;
        for (int64_t i = 0; i < o.residualPerStage; ++i) {
            SX_ASSIGN(cur, residualBlock(b, cur, sp + "_res" + std::to_string(i), c));
        }
        if (o.attentionPerStage == 0)
            continue;
        // [1,C,H,W] -> [1,C,S] -> [1,S,C]: tokens of width C.
        SX_ASSIGN(cur, b.node(OpKind::Reshape, sp + "_flatten", {cur, toTokens}));
        SX_ASSIGN(cur, b.node(OpKind::Transpose, sp + "_to_tokens", {cur}, swapLast));
        for (int64_t i = 0; i < o.attentionPerStage; ++i) {
            SX_ASSIGN(cur, attentionBlock(b, cur, sp + "_att" + std::to_string(i), c));
        }
        SX_ASSIGN(cur, b.node(OpKind::Transpose, sp + "_to_channels", {cur}, swapLast));
        SX_ASSIGN(cur, b.node(OpKind::Reshape, sp + "_unflatten", {cur, toImage}));
    }
    g->setOutputs({cur});
    SX_TRY(g->inferTypes());
    return g;
}

const ir::Graph* scaleGraph(int64_t nodes, bool attention, std::string& error) {
    static std::map<std::pair<int64_t, bool>, std::unique_ptr<ir::Graph>> cache;
    std::unique_ptr<ir::Graph>& g = cache[{nodes, attention}];
    if (!g) {
        SyntheticGraphOptions options;
        options.channels = 16;
        options.height = options.width = 16;
        if (!attention)
            options.attentionPerStage = 0;
        auto built = buildSyntheticGraph(nodes, options);
        if (!built.ok()) {
            error = built.error().message;
            return nullptr;
        }
        g = std::move(built).value();
    }
    return g.get();
}

} // namespace sextant::bench
