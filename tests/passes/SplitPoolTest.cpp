// split-global-pool: a global pooling whose channel blocks leave cores idle becomes a pooling over
// whole-row windows and the global pooling of its rows, with the same numbers.
#include "PassTestUtil.h"

#include "core/ir/Printer.h"

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {

/// x [1, C, H, W] -> Relu -> global pooling -> y [1, C, 1, 1].
std::unique_ptr<ir::Graph> globalPool(OpKind kind, int64_t c, int64_t h, int64_t w) {
    Builder b;
    ir::Value* x = b.input("x", {1, c, h, w});
    ir::Value* r = b.node(OpKind::Relu, "relu", {x});
    ir::Value* y = b.node(kind, "gap", {r});
    return b.finish({y});
}

const ir::Node* rowsOf(const ir::Graph& g) {
    const ir::Node* gap = g.findNode("gap");
    return gap && gap->input(0) ? gap->input(0)->producer() : nullptr;
}

} // namespace

TEST(SplitGlobalPool, AFewChannelsOverALargeMapReduceInTwoStepsWithTheSameNumbers) {
    for (OpKind kind : {OpKind::GlobalAveragePool, OpKind::GlobalMaxPool}) {
        // 24 channels are two blocks of 16: two parts for eight cores. 80 rows: eight windows of 10.
        auto g = globalPool(kind, 24, 80, 40);
        auto before = runF64(*g);
        PipelineResult r = pipeline(*g);
        EXPECT_EQ(stats(r, "split-global-pool").applied, 1) << ir::qualifiedOpName(kind);
        // Its second step, a global pooling of eight rows, is not offered to it again.
        EXPECT_EQ(stats(r, "split-global-pool").rejected, 0) << ::testing::PrintToString(stats(r, "split-global-pool").reasons);
        const ir::Node* rows = rowsOf(*r.graph);
        ASSERT_NE(rows, nullptr) << ir::printGraph(*r.graph);
        EXPECT_EQ(rows->kind(), kind == OpKind::GlobalMaxPool ? OpKind::MaxPool : OpKind::AveragePool);
        EXPECT_EQ(rows->attrInts("kernel_shape"), (std::vector<int64_t>{10, 40}));
        EXPECT_EQ(rows->attrInts("strides"), (std::vector<int64_t>{10, 40}));
        EXPECT_EQ(rows->output(0)->type().dims(), (std::vector<int64_t>{1, 24, 8, 1}));
        EXPECT_EQ(rows->provenance().origins, (std::vector<std::string>{"gap"}));
        EXPECT_EQ(rows->provenance().createdBy, "fuse/split-global-pool");
        // The global pooling keeps its name and output; it now reduces eight rows.
        EXPECT_EQ(r.graph->findNode("gap")->kind(), kind);
        expectSameOutputs(before, runF64(*r.graph), 1e-12);
    }
}

TEST(SplitGlobalPool, TheRowsFollowTheTargetsCores) {
    auto g = globalPool(OpKind::GlobalAveragePool, 24, 60, 40);
    auto before = runF64(*g);
    PipelineConfig four;
    four.numCores = 4;
    PipelineResult r = pipeline(*g, four);
    ASSERT_NE(rowsOf(*r.graph), nullptr);
    EXPECT_EQ(rowsOf(*r.graph)->output(0)->type().dims(), (std::vector<int64_t>{1, 24, 4, 1})); // 60 = 4 x 15
    expectSameOutputs(before, runF64(*r.graph), 1e-12);
    PipelineConfig eight; // 60 has no divisor 7 or 8: six windows of 10 rows
    r = pipeline(*g, eight);
    ASSERT_NE(rowsOf(*r.graph), nullptr);
    EXPECT_EQ(rowsOf(*r.graph)->output(0)->type().dims(), (std::vector<int64_t>{1, 24, 6, 1}));
    expectSameOutputs(before, runF64(*r.graph), 1e-12);
}

TEST(SplitGlobalPool, WhereTheChannelsFillTheCoresOrTheMapIsSmallItSaysWhy) {
    struct Case {
        int64_t c, h, w;
        int cores;
        std::string reason;
    };
    const std::vector<Case> cases = {
        {128, 40, 40, 8, "8 channel blocks already give each of the 8 cores a part"},
        {24, 7, 7, 8, "a 7x7 map (49 positions, fewer than 1024) moves faster than a second Task costs"},
        {24, 37, 40, 8, "height 37 has no divisor from 2 to 8"},
        {24, 80, 40, 1, "the target has one core"},
    };
    for (const Case& c : cases) {
        auto g = globalPool(OpKind::GlobalAveragePool, c.c, c.h, c.w);
        PipelineConfig cfg;
        cfg.numCores = c.cores;
        PipelineResult r = pipeline(*g, cfg);
        const RuleStats& s = stats(r, "split-global-pool");
        EXPECT_EQ(s.applied, 0) << c.reason;
        EXPECT_EQ(s.reasons.count(c.reason), 1u) << ::testing::PrintToString(s.reasons);
        EXPECT_EQ(countKind(*r.graph, OpKind::AveragePool), 0);
    }
}

TEST(SplitGlobalPool, SwitchedOffTheGlobalPoolingStaysOneOp) {
    auto g = globalPool(OpKind::GlobalAveragePool, 24, 80, 40);
    PipelineConfig cfg;
    cfg.disabled = {"split-global-pool"};
    PipelineResult r = pipeline(*g, cfg);
    EXPECT_EQ(countKind(*r.graph, OpKind::AveragePool), 0);
    EXPECT_EQ(r.graph->findNode("gap")->input(0)->producer()->kind(), OpKind::Relu);
}
