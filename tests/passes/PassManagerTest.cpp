// The pass manager: ids, disabling, bisect limit, snapshots, stop-after, cancel, progress.
#include "PassTestUtil.h"

#include "core/ir/Printer.h"
#include "core/passes/Pass.h"
#include "core/passes/PassContext.h"
#include "core/passes/Passes.h"

#include <set>

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {

/// Three Conv+Relu stages in a row: three applications of fuse-conv-bias-act, in order.
std::unique_ptr<ir::Graph> threeStages() {
    Builder b;
    ir::Value* v = b.input("x", {1, 2, 6, 6});
    for (int i = 1; i <= 3; ++i) {
        std::string s = std::to_string(i);
        v = b.node(OpKind::Conv, "conv" + s,
                   {v, b.constant("w" + s, randomTensor({2, 2, 3, 3}, 100 + i))},
                   {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
        v = b.node(OpKind::Relu, "relu" + s, {v});
    }
    return b.finish({v});
}

} // namespace

TEST(PassManager, ListsPassesInPipelineOrderAndRulesWithUniqueIds) {
    std::vector<std::string> ids;
    for (const PassInfo& p : listPasses())
        ids.push_back(p.id);
    EXPECT_EQ(ids, (std::vector<std::string>{"infer-shapes", "canonicalize", "fold-constants",
                                             "cse", "fuse", "layout", "precision", "dce"}));
    std::set<std::string> all(ids.begin(), ids.end());
    for (const RuleInfo& r : listRules()) {
        EXPECT_FALSE(r.summary.empty()) << r.id;
        EXPECT_TRUE(all.insert(r.id).second) << "duplicate id " << r.id;
    }
    for (const char* required : {"fuse-conv-bn", "fuse-conv-bias-act", "fuse-gemm-bias-act",
                                 "remove-identity", "fold-constant-node"})
        EXPECT_EQ(all.count(required), 1u) << required;
}

TEST(PassManager, UnknownDisabledIdIsAnErrorNamingIt) {
    auto g = threeStages();
    PipelineConfig cfg;
    cfg.disabled = {"fuse-conv-bn", "fuse-conv-typo"};
    auto r = runPipeline(*g, cfg);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().subject, "fuse-conv-typo");
    EXPECT_NE(r.error().message.find("'fuse-conv-typo'"), std::string::npos) << r.error().message;
}

TEST(PassManager, UnknownStopAfterIsAnError) {
    auto g = threeStages();
    PipelineConfig cfg;
    cfg.stopAfter = "fuse-conv-bn"; // a rule, not a pass
    auto r = runPipeline(*g, cfg);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().subject, "fuse-conv-bn");
}

TEST(PassManager, BisectLimitAllowsExactlyTheFirstNApplications) {
    auto g = threeStages();
    auto reference = runF64(*g);
    // layout and precision annotate every node (one application each): off, to count fusions.
    PipelineConfig base;
    base.disabled = {"layout", "precision"};
    PipelineResult full = pipeline(*g, base);
    ASSERT_EQ(full.applications.size(), 3u);
    for (int limit : {0, 1, 2, 3, 10}) {
        PipelineConfig cfg = base;
        cfg.bisectLimit = limit;
        PipelineResult r = pipeline(*g, cfg);
        const size_t expected = static_cast<size_t>(std::min(limit, 3));
        ASSERT_EQ(r.applications.size(), expected) << "limit " << limit;
        EXPECT_EQ(r.skipped.size(), 3u - expected) << "limit " << limit;
        for (size_t i = 0; i < expected; ++i) {
            EXPECT_EQ(r.applications[i].seq, static_cast<int>(i + 1));
            // The same applications as the unlimited run, in the same order.
            EXPECT_EQ(r.applications[i].node, full.applications[i].node);
            EXPECT_EQ(r.applications[i].rule, full.applications[i].rule);
        }
        EXPECT_EQ(countKind(*r.graph, OpKind::FusedConv), static_cast<int>(expected));
        EXPECT_EQ(countKind(*r.graph, OpKind::Relu), 3 - static_cast<int>(expected));
        EXPECT_EQ(stats(r, "fuse-conv-bias-act").skipped, 3 - static_cast<int64_t>(expected));
        expectSameOutputs(reference, runF64(*r.graph));
    }
}

TEST(PassManager, SnapshotsOnePerPassAndUnchangedTextIsIdentical) {
    auto g = threeStages();
    PipelineResult r = pipeline(*g);
    ASSERT_EQ(r.snapshots.size(), 1u + listPasses().size());
    EXPECT_EQ(r.snapshots[0].passId, "input");
    EXPECT_EQ(r.snapshots[0].text(), ir::printGraph(*g));
    for (size_t i = 1; i < r.snapshots.size(); ++i) {
        const Snapshot& s = r.snapshots[i];
        EXPECT_EQ(s.passId, listPasses()[i - 1].id);
        ASSERT_TRUE(s.graph());
        EXPECT_EQ(ir::printGraph(*s.graph()), s.text()) << s.passId;
        EXPECT_EQ(s.changed, s.text() != r.snapshots[i - 1].text()) << s.passId;
        if (!s.changed) {
            EXPECT_EQ(s.text(), r.snapshots[i - 1].text());
        }
    }
    // Only fusion and the layout/precision annotations change this graph (types are already
    // inferred, nothing to fold or remove).
    for (const Snapshot& s : r.snapshots)
        EXPECT_EQ(s.changed, s.passId == "fuse" || s.passId == "layout" || s.passId == "precision")
            << s.passId;
    // The snapshot of a pass is not changed by later passes.
    EXPECT_EQ(countKind(*r.snapshots[1].graph(), OpKind::Relu), 3);
    EXPECT_EQ(r.snapshots.back().text(), ir::printGraph(*r.graph));
    // The input graph itself is never modified.
    EXPECT_EQ(countKind(*g, OpKind::Relu), 3);
}

TEST(PassManager, StopAfterAndDisabledPass) {
    auto g = threeStages();
    PipelineConfig cfg;
    cfg.stopAfter = "fold-constants";
    PipelineResult r = pipeline(*g, cfg);
    ASSERT_EQ(r.snapshots.size(), 4u);
    EXPECT_EQ(r.snapshots.back().passId, "fold-constants");
    EXPECT_EQ(countKind(*r.graph, OpKind::FusedConv), 0);

    PipelineConfig off;
    off.disabled = {"fuse"};
    PipelineResult r2 = pipeline(*g, off);
    for (const Snapshot& s : r2.snapshots)
        EXPECT_NE(s.passId, "fuse");
    EXPECT_EQ(countKind(*r2.graph, OpKind::FusedConv), 0);
    EXPECT_EQ(stats(r2, "fuse-conv-bias-act").matched, 0);
}

TEST(PassManager, CancelStopsBetweenPassesAndKeepsEarlierSnapshots) {
    auto g = threeStages();
    std::atomic<bool> cancel{false};
    PipelineResult partial;
    Status s = runPipelineInto(*g, {}, partial, &cancel, [&](int done, int, const std::string&) {
        if (done == 2)
            cancel = true;
    });
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().kind, ErrorKind::Cancelled);
    EXPECT_EQ(partial.snapshots.size(), 3u); // input + two passes
}

TEST(PassManager, ProgressReportsEveryPass) {
    auto g = threeStages();
    std::vector<std::string> seen;
    int lastTotal = 0;
    auto r = runPipeline(*g, {}, nullptr, [&](int done, int total, const std::string& id) {
        EXPECT_EQ(done, static_cast<int>(seen.size()) + 1);
        seen.push_back(id);
        lastTotal = total;
    });
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(seen.size(), listPasses().size());
    EXPECT_EQ(lastTotal, static_cast<int>(listPasses().size()));
}

TEST(PassContext, DisabledBeatsEverythingAndRejectionsCountOnce) {
    PipelineConfig cfg;
    cfg.disabled = {"dce"};
    cfg.bisectLimit = 1;
    PassContext ctx(cfg);
    EXPECT_FALSE(ctx.isEnabled("dce"));
    EXPECT_TRUE(ctx.isEnabled("fuse"));
    ctx.setCurrentPass("fuse");
    EXPECT_TRUE(ctx.requestApplication("r", "a"));
    EXPECT_FALSE(ctx.requestApplication("r", "b"));
    EXPECT_FALSE(ctx.requestApplication("r", "b")); // a second sweep meets it again
    ctx.reject("r", "c", "why");
    ctx.reject("r", "c", "why");
    PipelineResult res;
    ctx.exportTo(res, {"r"});
    ASSERT_EQ(res.stats.size(), 1u);
    EXPECT_EQ(res.stats[0].applied, 1);
    EXPECT_EQ(res.stats[0].skipped, 1);
    EXPECT_EQ(res.stats[0].matched, 2);
    EXPECT_EQ(res.stats[0].rejected, 1);
    EXPECT_EQ(res.skipped.size(), 1u);
}

TEST(PassManager, RunTwiceGivesIdenticalSnapshots) {
    auto g = threeStages();
    PipelineResult a = pipeline(*g), b = pipeline(*g);
    ASSERT_EQ(a.snapshots.size(), b.snapshots.size());
    for (size_t i = 0; i < a.snapshots.size(); ++i)
        EXPECT_EQ(a.snapshots[i].text(), b.snapshots[i].text());
}

namespace {
/// A deliberately broken pass: gives the last node's output a wrong shape.
class BreakTypes : public Pass {
public:
    std::string id() const override { return "break-types"; }
    std::string summary() const override { return "test pass that corrupts a type"; }
    Expected<bool> run(ir::Graph& g, PassContext&) override {
        g.nodes().back()->output(0)->setType(ir::TensorType::of(ir::DType::F64, {7}));
        return true;
    }
};
/// A pass that fails outright.
class Fails : public Pass {
public:
    std::string id() const override { return "fails"; }
    std::string summary() const override { return "test pass that returns an error"; }
    Expected<bool> run(ir::Graph&, PassContext&) override {
        return makeError(ErrorKind::Unsupported, "cannot handle node 'relu2'", "relu2");
    }
};
} // namespace

TEST(PassManager, VerifierAfterEachPassNamesTheBreakingPass) {
    auto g = threeStages();
    std::vector<std::unique_ptr<Pass>> passes;
    passes.push_back(makeDcePass());
    passes.push_back(std::make_unique<BreakTypes>());
    passes.push_back(makeFusePass());
    PipelineResult partial;
    Status s = runPassesInto(*g, passes, {}, partial);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().subject, "break-types");
    EXPECT_EQ(s.error().kind, ErrorKind::Verify);
    EXPECT_NE(s.error().message.find("after pass 'break-types'"), std::string::npos)
        << s.error().message;
    EXPECT_EQ(partial.snapshots.size(), 2u); // input + dce

    // Without verification the broken graph goes through (and is the caller's problem).
    PipelineConfig noVerify;
    noVerify.verifyEach = false;
    noVerify.disabled = {"fuse"};
    EXPECT_TRUE(runPassesInto(*g, passes, noVerify, partial).ok());
}

TEST(PassManager, FailingPassIsNamedAndEarlierSnapshotsKept) {
    auto g = threeStages();
    std::vector<std::unique_ptr<Pass>> passes;
    passes.push_back(makeFusePass());
    passes.push_back(std::make_unique<Fails>());
    PipelineResult partial;
    Status s = runPassesInto(*g, passes, {}, partial);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().subject, "fails");
    EXPECT_EQ(s.error().message, "pass 'fails' failed: cannot handle node 'relu2'");
    ASSERT_EQ(partial.snapshots.size(), 2u);
    EXPECT_EQ(partial.snapshots[1].passId, "fuse");
    EXPECT_EQ(partial.applications.size(), 3u);
}

TEST(PassManager, InvalidInputGraphIsReportedAsInput) {
    auto g = threeStages();
    g->nodes()[0]->output(0)->setType(ir::TensorType::of(ir::DType::F64, {1}));
    auto r = runPipeline(*g, {});
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().subject, "input");
}
