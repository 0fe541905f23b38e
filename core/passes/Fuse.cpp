// fuse: the fusion pass. The rules live by family in FuseConv.cpp, FuseMatMul.cpp, FuseNorm.cpp
// and FuseGroups.cpp; this file orders them and runs them in two phases.
#include "FuseUtil.h"
#include "PassContext.h"
#include "Passes.h"

namespace sextant::passes {

namespace {

/// Runs the rules in three phases, each to a fixed point (fuse::Phase): decomposed ops recognised,
/// then producer + consumer fusions, then groups of what is left and accuracy trades, so a later
/// rule never takes a chain from which an earlier one would have made a better op.
class FusePass : public PatternRewritePass {
public:
    FusePass(std::vector<std::unique_ptr<RewriteRule>> rules, std::shared_ptr<fuse::Phase> phase)
        : PatternRewritePass("fuse",
                             "merge producers with their elementwise consumers into NPU kernels, "
                             "recognise decomposed ops, group what is left",
                             std::move(rules)),
          m_phase(std::move(phase)) {}

    Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
        // Rules check shapes (broadcast biases, attention batch dims). Folding may have turned
        // a computed Reshape target into a constant since infer-shapes ran, so refresh the types
        // first; a failure leaves the old (less precise) types, which rules then reject.
        (void)graph.inferTypes();
        bool changed = false;
        for (fuse::Phase p : {fuse::Phase::Recognise, fuse::Phase::Main, fuse::Phase::Late}) {
            *m_phase = p;
            auto r = PatternRewritePass::run(graph, ctx);
            if (!r.ok()) {
                *m_phase = fuse::Phase::Main;
                return r.takeError();
            }
            changed |= *r;
        }
        *m_phase = fuse::Phase::Main;
        return changed;
    }

private:
    std::shared_ptr<fuse::Phase> m_phase;
};

} // namespace

std::unique_ptr<Pass> makeFusePass() {
    auto phase = std::make_shared<fuse::Phase>(fuse::Phase::Main);
    std::vector<std::unique_ptr<RewriteRule>> rules;
    auto take = [&](std::vector<std::unique_ptr<fuse::FusionRule>> family) {
        for (auto& r : family) {
            r->attachPhase(phase);
            rules.push_back(std::move(r));
        }
    };
    // The int8 patterns first (fuse-qdq-conv): a float fusion of the same Conv would take its
    // activation. Then decomposed ops (LayerNorm, HardSwish): they are what a producer's activation or a
    // group would otherwise take apart. Then convolutions (BN folding before bias+activation),
    // matrix products, and the attention block; the Late rules come last in each family. The
    // accuracy-trading rules (tradesAccuracy) are in the list too: the pipeline runs them at
    // -O3 only, or where a fusion switch turns them on.
    take(fuse::quantRules());
    take(fuse::normRules());
    take(fuse::convRules());
    take(fuse::matmulRules());
    take(fuse::groupRules());
    take(fuse::splitRules());
    return std::make_unique<FusePass>(std::move(rules), std::move(phase));
}

} // namespace sextant::passes
