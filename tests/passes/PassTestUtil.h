#pragma once
// Helpers for pass tests: small graphs built with the ir API, and a float64 before/after check.

#include "core/ir/Graph.h"
#include "core/ir/Interpreter.h"
#include "core/passes/PassManager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace sextant::passes::test {

/// Deterministic pseudo-random doubles in [lo, hi).
inline std::vector<double> randomValues(size_t n, unsigned seed, double lo = -1.0,
                                        double hi = 1.0) {
    std::mt19937 gen(seed);
    std::vector<double> v(n);
    for (double& x : v)
        x = lo + (hi - lo) * (static_cast<double>(gen()) / 4294967296.0);
    return v;
}

inline ir::Tensor randomTensor(std::vector<int64_t> shape, unsigned seed, double lo = -1.0,
                               double hi = 1.0) {
    size_t n = static_cast<size_t>(ir::product(shape));
    return ir::Tensor::fromVector<double>(std::move(shape), randomValues(n, seed, lo, hi));
}

/// Builds graphs tersely; nodes get provenance origins = {their name}, createdBy "import".
struct Builder {
    std::unique_ptr<ir::Graph> g = std::make_unique<ir::Graph>("test");

    ir::Value* input(const std::string& name, std::vector<int64_t> dims) {
        return g->addInput(name, ir::TensorType::of(ir::DType::F64, dims)).value();
    }
    ir::Value* constant(const std::string& name, ir::Tensor t) {
        return g->addConstant(name, std::move(t)).value();
    }
    ir::Value* node(ir::OpKind kind, const std::string& name, std::vector<ir::Value*> inputs,
                    ir::AttributeMap attrs = {}) {
        ir::Node* n =
            g->addNode(kind, name, std::move(inputs), {name + "_out"}, std::move(attrs)).value();
        n->mutableProvenance() = ir::Provenance{{name}, "import"};
        return n->output(0);
    }
    /// Sets outputs and infers types; fails the test if inference fails.
    std::unique_ptr<ir::Graph> finish(std::vector<ir::Value*> outputs) {
        g->setOutputs(std::move(outputs));
        Status s = g->inferTypes();
        EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().message);
        return std::move(g);
    }
};

/// Runs `g` in float64 on deterministic random inputs (seeded by input index).
inline std::vector<ir::Tensor> runF64(const ir::Graph& g, unsigned seed = 7) {
    std::vector<ir::Tensor> inputs;
    unsigned s = seed;
    for (const ir::Value* in : g.inputs())
        inputs.push_back(randomTensor(in->type().dims(), s++, -2.0, 2.0));
    ir::KernelContext ctx;
    ctx.compute = ir::DType::F64;
    auto out = ir::interpret(g, inputs, ctx);
    EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
    return out.ok() ? *out : std::vector<ir::Tensor>{};
}

/// Expects two output lists to agree within `rtol` relative to the largest magnitude.
inline void expectSameOutputs(const std::vector<ir::Tensor>& a, const std::vector<ir::Tensor>& b,
                              double rtol = 1e-9) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(a[i].shape(), b[i].shape()) << "output " << i;
        double scale = 0;
        for (int64_t j = 0; j < a[i].numel(); ++j)
            scale = std::max(scale, std::abs(a[i].at(j)));
        for (int64_t j = 0; j < a[i].numel(); ++j)
            ASSERT_NEAR(a[i].at(j), b[i].at(j), rtol * std::max(scale, 1e-30))
                << "output " << i << " element " << j;
    }
}

/// Runs the default pipeline; fails the test on an error.
inline PipelineResult pipeline(const ir::Graph& g, PipelineConfig cfg = {}) {
    auto r = runPipeline(g, cfg);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? std::move(*r) : PipelineResult{};
}

inline const RuleStats& stats(const PipelineResult& r, const std::string& rule) {
    for (const RuleStats& s : r.stats)
        if (s.rule == rule)
            return s;
    static RuleStats none;
    ADD_FAILURE() << "no stats for rule " << rule;
    return none;
}

/// Number of nodes of `kind` in `g`.
inline int countKind(const ir::Graph& g, ir::OpKind kind) {
    int n = 0;
    for (const ir::Node* node : g.nodes())
        n += node->kind() == kind;
    return n;
}

/// A float64 scalar constant.
inline ir::Value* scalar(Builder& b, const std::string& name, double v) {
    return b.constant(name, ir::Tensor::fromVector<double>({}, {v}));
}

/// An inference BatchNormalization of `x` over `channels` channels, its parameters random from
/// `seed` on (gamma in [0.5, 1.5], beta and mean in [-1, 1], var in [0.2, 2] unless `var` is
/// given), named "<name>_gamma" and so on.
inline ir::Value* batchNorm(Builder& b, const std::string& name, ir::Value* x, int64_t channels, unsigned seed,
                            std::optional<ir::Tensor> var = std::nullopt) {
    return b.node(ir::OpKind::BatchNormalization, name,
                  {x, b.constant(name + "_gamma", randomTensor({channels}, seed, 0.5, 1.5)),
                   b.constant(name + "_beta", randomTensor({channels}, seed + 1)),
                   b.constant(name + "_mean", randomTensor({channels}, seed + 2)),
                   b.constant(name + "_var", var ? *var : randomTensor({channels}, seed + 3, 0.2, 2.0))},
                  {{"epsilon", 1e-5}});
}

} // namespace sextant::passes::test
