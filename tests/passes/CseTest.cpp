// cse: equal constants and equal computations are merged, numerics unchanged, survivor and
// provenance deterministic.
#include "PassTestUtil.h"

#include "core/ir/Printer.h"

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {
PipelineConfig onlyCse() {
    PipelineConfig c;
    c.disabled = {"canonicalize", "fold-constants", "fuse", "layout", "precision"};
    return c;
}
const ir::Node* nodeNamed(const ir::Graph& g, const std::string& name) { return g.findNode(name); }

/// x [2, 4] times one weight by two MatMul twins, mm1 and mm2.
std::pair<ir::Value*, ir::Value*> twinMatMuls(Builder& b) {
    ir::Value* x = b.input("x", {2, 4});
    ir::Value* w = b.constant("w", randomTensor({4, 3}, 1));
    return {b.node(OpKind::MatMul, "mm1", {x, w}), b.node(OpKind::MatMul, "mm2", {x, w})};
}
} // namespace

TEST(Cse, MergesTwinNodesKeepsTheFirstAndUnionsProvenance) {
    Builder b;
    auto [m1, m2] = twinMatMuls(b);
    ir::Value* r1 = b.node(OpKind::Relu, "relu1", {m1});
    ir::Value* r2 = b.node(OpKind::Relu, "relu2", {m2}); // equal only once mm2 is merged
    ir::Value* sum = b.node(OpKind::Add, "sum", {r1, r2});
    auto g = b.finish({sum});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, onlyCse());
    EXPECT_EQ(stats(r, "cse-node").applied, 2);
    EXPECT_EQ(countKind(*r.graph, OpKind::MatMul), 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Relu), 1);
    ASSERT_NE(nodeNamed(*r.graph, "mm1"), nullptr) << "the earliest twin survives";
    EXPECT_EQ(nodeNamed(*r.graph, "mm2"), nullptr);
    EXPECT_EQ(nodeNamed(*r.graph, "mm1")->provenance().origins,
              (std::vector<std::string>{"mm1", "mm2"}));
    expectSameOutputs(before, runF64(*r.graph));
    // Deterministic: the same text twice.
    EXPECT_EQ(pipeline(*g, onlyCse()).snapshots.back().text(), r.snapshots.back().text());
}

TEST(Cse, EqualConstantsMergeByContentThenTheirUsersMerge) {
    Builder b;
    ir::Value* x = b.input("x", {3});
    ir::Tensor t = randomTensor({3}, 9);
    ir::Value* a1 = b.node(OpKind::Add, "add1", {x, b.constant("c1", t)});
    ir::Value* a2 = b.node(OpKind::Add, "add2", {x, b.constant("c2", t.clone())});
    ir::Value* a3 = b.node(OpKind::Add, "add3", {x, b.constant("c3", randomTensor({3}, 10))});
    ir::Value* s = b.node(OpKind::Mul, "mul", {a1, a2});
    ir::Value* out = b.node(OpKind::Mul, "mul2", {s, a3});
    auto g = b.finish({out});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, onlyCse());
    EXPECT_EQ(stats(r, "cse-constant").applied, 1);
    EXPECT_EQ(stats(r, "cse-node").applied, 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Add), 2) << ir::printGraph(*r.graph);
    EXPECT_EQ(r.graph->findValue("c2"), nullptr);
    EXPECT_NE(r.graph->findValue("c3"), nullptr) << "different content stays";
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(Cse, DifferentAttributesOrInputOrderDoNotMerge) {
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 4, 4});
    ir::Value* w = b.constant("w", randomTensor({2, 2, 1, 1}, 3));
    ir::Value* c1 = b.node(OpKind::Conv, "c1", {x, w});
    ir::Value* c2 = b.node(OpKind::Conv, "c2", {x, w}, {{"strides", std::vector<int64_t>{1, 1}}});
    ir::Value* y = b.input("y", {1, 2, 4, 4});
    ir::Value* s1 = b.node(OpKind::Sub, "s1", {x, y});
    ir::Value* s2 = b.node(OpKind::Sub, "s2", {y, x});
    ir::Value* t = b.node(OpKind::Add, "t", {c1, c2});
    ir::Value* u = b.node(OpKind::Add, "u", {s1, s2});
    auto g = b.finish({t, u});
    PipelineResult r = pipeline(*g, onlyCse());
    EXPECT_EQ(stats(r, "cse-node").applied, 0);
    EXPECT_EQ(r.graph->numNodes(), g->numNodes());
}

TEST(Cse, TwinGraphOutputsAreRejectedWithAReason) {
    Builder b;
    ir::Value* x = b.input("x", {3});
    ir::Value* a = b.node(OpKind::Sigmoid, "a", {x});
    ir::Value* c = b.node(OpKind::Sigmoid, "c", {x});
    ir::Value* d = b.node(OpKind::Sigmoid, "d", {x});
    ir::Value* e = b.node(OpKind::Relu, "e", {d});
    auto g = b.finish({a, c, e});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, onlyCse());
    // c cannot be merged into a (both are graph outputs); d can (it is not an output).
    EXPECT_EQ(stats(r, "cse-node").rejected, 1);
    EXPECT_EQ(stats(r, "cse-node").reasons.count("both 'c_out' and 'a_out' are graph outputs"), 1u);
    EXPECT_EQ(stats(r, "cse-node").applied, 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Sigmoid), 2);
    expectSameOutputs(before, runF64(*r.graph));
    std::vector<std::string> outs;
    for (const ir::Value* v : r.graph->outputs())
        outs.push_back(v->name());
    EXPECT_EQ(outs, (std::vector<std::string>{"a_out", "c_out", "e_out"}));
}

TEST(Cse, BisectLimitCutsCseApplicationsToo) {
    Builder b;
    ir::Value* x = b.input("x", {3});
    std::vector<ir::Value*> outs;
    ir::Value* acc = b.node(OpKind::Exp, "e0", {x});
    for (int i = 1; i <= 3; ++i)
        acc = b.node(OpKind::Add, "add" + std::to_string(i),
                     {acc, b.node(OpKind::Exp, "e" + std::to_string(i), {x})});
    auto g = b.finish({acc});
    auto before = runF64(*g);
    PipelineConfig cfg = onlyCse();
    cfg.bisectLimit = 2;
    PipelineResult r = pipeline(*g, cfg);
    EXPECT_EQ(stats(r, "cse-node").applied, 2);
    EXPECT_EQ(stats(r, "cse-node").skipped, 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Exp), 2);
    ASSERT_EQ(r.skipped.size(), 1u);
    EXPECT_EQ(r.skipped[0].node, "e3");
    expectSameOutputs(before, runF64(*r.graph));
}

// The typed fields are part of what a node computes: twins that differ only in precision or in
// their group body stay apart; groups with equal bodies (built separately) merge.
TEST(Cse, TypedFieldsTellTwinsApart) {
    Builder b;
    auto [m1, m2] = twinMatMuls(b);
    m2->producer()->setPrecision(ir::Precision::F32);
    auto group = [&](const std::string& name, std::vector<std::string> steps) {
        ir::Value* v = b.node(OpKind::ElementwiseGroup, name, {m1});
        v->producer()->setBody(std::make_shared<const ir::FusedBody>(*ir::parseBody(steps)));
        return v;
    };
    ir::Value* g1 = group("g1", {"Neg(i0)", "Relu(t0)"});
    ir::Value* g2 = group("g2", {"Neg(i0)", "Relu(t0)"});
    ir::Value* g3 = group("g3", {"Neg(i0)", "Sigmoid(t0)"});
    ir::Value* sum = b.node(OpKind::Add, "sum", {g1, g2});
    auto g = b.finish({m2, sum, g3});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, onlyCse());
    EXPECT_EQ(countKind(*r.graph, OpKind::MatMul), 2) << "an f32 twin is another computation";
    EXPECT_EQ(countKind(*r.graph, OpKind::ElementwiseGroup), 2) << ir::printGraph(*r.graph);
    EXPECT_EQ(nodeNamed(*r.graph, "g2"), nullptr) << "g2 computes what g1 does";
    EXPECT_NE(nodeNamed(*r.graph, "g3"), nullptr);
    expectSameOutputs(before, runF64(*r.graph));
}
