// canonicalize and fold-constants: each rule fires, keeps float64 results, and keeps the model's
// output names.
#include "PassTestUtil.h"

#include "core/ir/Printer.h"

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {
ir::Tensor filled(std::vector<int64_t> shape, double v) {
    ir::Tensor t(ir::DType::F64, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i)
        t.set(i, v);
    return t;
}
ir::Tensor shapeTensor(std::vector<int64_t> dims) {
    return ir::Tensor::fromVector<int64_t>({static_cast<int64_t>(dims.size())}, dims);
}
} // namespace

TEST(Canonicalize, RemovesNoOpsAndKeepsOutputName) {
    Builder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* s = b.node(OpKind::Sigmoid, "sig", {x});
    ir::Value* i1 = b.node(OpKind::Identity, "id1", {s});
    ir::Value* d = b.node(OpKind::Dropout, "drop", {i1});
    ir::Value* m = b.node(OpKind::Mul, "mul1", {d, b.constant("one", filled({3}, 1.0))});
    ir::Value* a = b.node(OpKind::Add, "add0", {b.constant("zero", filled({1, 3}, 0.0)), m});
    ir::Value* dv = b.node(OpKind::Div, "div1", {a, b.constant("one2", filled({}, 1.0))});
    ir::Value* out = b.node(OpKind::Identity, "id_out", {dv});
    auto g = b.finish({out});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "remove-identity").applied, 2);
    EXPECT_EQ(stats(r, "remove-dropout").applied, 1);
    EXPECT_EQ(stats(r, "remove-mul-one").applied, 2);
    EXPECT_EQ(stats(r, "remove-add-zero").applied, 1);
    ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
    EXPECT_EQ(r.graph->nodes()[0]->kind(), OpKind::Sigmoid);
    EXPECT_EQ(r.graph->outputs()[0]->name(), "id_out_out");
    EXPECT_TRUE(r.graph->constants().empty()) << "dce should drop the unused constants";
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(Canonicalize, KeepsMulByOneThatBroadcasts) {
    Builder b;
    ir::Value* x = b.input("x", {3});
    ir::Value* m = b.node(OpKind::Mul, "mul", {x, b.constant("ones", filled({2, 3}, 1.0))});
    auto g = b.finish({m});
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "remove-mul-one").applied, 0);
    EXPECT_EQ(stats(r, "remove-mul-one").reasons.count("constant 'ones' broadcasts [3] to [2,3]"),
              1u);
    EXPECT_EQ(r.graph->numNodes(), 1u);
}

TEST(Canonicalize, IdentityFromGraphInputToOutputIsRejected) {
    Builder b;
    ir::Value* x = b.input("x", {3});
    ir::Value* i = b.node(OpKind::Identity, "id", {x});
    auto g = b.finish({i});
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "remove-identity").rejected, 1);
    EXPECT_EQ(r.graph->outputs()[0]->name(), "id_out");
}

TEST(Canonicalize, MergesReshapeChains) {
    Builder b;
    ir::Value* x = b.input("x", {2, 3, 4});
    ir::Value* r1 = b.node(OpKind::Reshape, "r1", {x, b.constant("s1", shapeTensor({6, 4}))});
    ir::Value* r2 = b.node(OpKind::Reshape, "r2", {r1, b.constant("s2", shapeTensor({4, -1}))});
    ir::Value* r3 = b.node(OpKind::Reshape, "r3", {r2, b.constant("s3", shapeTensor({24}))});
    ir::Value* sg = b.node(OpKind::Sigmoid, "sig", {r3});
    auto g = b.finish({sg});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "merge-reshape-chain").applied, 2);
    EXPECT_EQ(countKind(*r.graph, OpKind::Reshape), 1);
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FoldConstants, ReshapedWeightFoldsThenMatMulFuses) {
    // The mnist pattern: a weight reaches MatMul through a Reshape of a constant.
    Builder b;
    ir::Value* x = b.input("x", {1, 12});
    ir::Value* w = b.node(
        OpKind::Reshape, "wshape",
        {b.constant("w", randomTensor({3, 4, 5}, 201)), b.constant("ws", shapeTensor({12, 5}))});
    ir::Value* m = b.node(OpKind::MatMul, "mm", {x, w});
    ir::Value* a = b.node(OpKind::Add, "add", {m, b.constant("bias", randomTensor({1, 5}, 202))});
    auto g = b.finish({a});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "fold-constant-node").applied, 1);
    EXPECT_EQ(stats(r, "fuse-gemm-bias-act").applied, 1);
    ASSERT_EQ(r.graph->numNodes(), 1u) << ir::printGraph(*r.graph);
    const ir::Node* n = r.graph->nodes()[0];
    EXPECT_EQ(n->kind(), OpKind::FusedGemm);
    // The folded constant keeps the folded value's name.
    ASSERT_TRUE(n->input(1)->isConstant());
    EXPECT_EQ(n->input(1)->name(), "wshape_out");
    EXPECT_EQ(n->input(1)->type().dims(), (std::vector<int64_t>{12, 5}));
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FoldConstants, FoldsF32InF32AndKeepsDtype) {
    auto g = std::make_unique<ir::Graph>("f32");
    ir::Value* x = g->addInput("x", ir::TensorType::of(ir::DType::F32, {2})).value();
    ir::Value* c1 = g->addConstant("c1", ir::Tensor::fromVector<float>({2}, {0.1f, 0.2f})).value();
    ir::Value* c2 = g->addConstant("c2", ir::Tensor::fromVector<float>({2}, {0.7f, 0.3f})).value();
    ir::Node* k = g->addNode(OpKind::Mul, "k", {c1, c2}, {"k_out"}).value();
    ir::Node* y = g->addNode(OpKind::Add, "y", {x, k->output(0)}, {"y_out"}).value();
    g->setOutputs({y->output(0)});
    ASSERT_TRUE(g->inferTypes().ok());
    PipelineResult r = pipeline(*g);
    ASSERT_EQ(r.graph->numNodes(), 1u);
    const ir::Value* folded = r.graph->nodes()[0]->input(1);
    ASSERT_TRUE(folded->isConstant());
    EXPECT_EQ(folded->constant()->dtype(), ir::DType::F32);
    EXPECT_EQ(folded->constant()->data<float>()[0], 0.1f * 0.7f);
    EXPECT_EQ(folded->constant()->data<float>()[1], 0.2f * 0.3f);
}

TEST(FoldConstants, DisabledRuleLeavesNodes) {
    Builder b;
    ir::Value* x = b.input("x", {2});
    ir::Value* k = b.node(OpKind::Mul, "k",
                          {b.constant("c1", filled({2}, 3.0)), b.constant("c2", filled({2}, 2.0))});
    ir::Value* y = b.node(OpKind::Add, "y", {x, k});
    auto g = b.finish({y});
    PipelineConfig cfg;
    cfg.disabled = {"fold-constants"};
    PipelineResult r = pipeline(*g, cfg);
    EXPECT_EQ(r.graph->numNodes(), 2u);
    EXPECT_EQ(stats(r, "fold-constant-node").matched, 0);
}

TEST(Dce, RemovesDeadChainsAndConstants) {
    Builder b;
    ir::Value* x = b.input("x", {2});
    ir::Value* dead1 = b.node(OpKind::Mul, "dead1", {x, b.constant("c", filled({2}, 3.0))});
    b.node(OpKind::Sigmoid, "dead2", {dead1});
    ir::Value* live = b.node(OpKind::Relu, "live", {x});
    auto g = b.finish({live});
    PipelineResult r = pipeline(*g);
    ASSERT_EQ(r.graph->numNodes(), 1u);
    EXPECT_EQ(r.graph->nodes()[0]->name(), "live");
    EXPECT_TRUE(r.graph->constants().empty());
    EXPECT_TRUE(r.snapshots.back().changed);
    EXPECT_EQ(r.snapshots.back().passId, "dce");
}

TEST(FoldConstants, LargeGeneratedWeightsFoldOnlyWhenTheyAreWeights) {
    // onnx "light" models build their weights with ConstantOfShape: a 73,728-element weight is
    // folded (it must live in DRAM anyway, and Conv+BN folding needs it constant), a
    // 90,000-element activation-side constant is not.
    Builder b;
    ir::Value* x = b.input("x", {1, 32, 8, 8});
    ir::Value* w =
        b.node(OpKind::ConstantOfShape, "wgen", {b.constant("ws", shapeTensor({64, 32, 6, 6}))},
               {{"value", ir::Tensor::fromVector<double>({1}, {0.01})}});
    ir::Value* c = b.node(OpKind::Conv, "conv", {x, w});
    ir::Value* big =
        b.node(OpKind::ConstantOfShape, "biggen", {b.constant("bs", shapeTensor({1, 64, 3, 3}))},
               {{"value", ir::Tensor::fromVector<double>({1}, {0.5})}});
    ir::Value* huge =
        b.node(OpKind::ConstantOfShape, "hugegen", {b.constant("hs", shapeTensor({300, 300}))},
               {{"value", ir::Tensor::fromVector<double>({1}, {0.5})}});
    ir::Value* a = b.node(OpKind::Add, "add", {c, big});
    ir::Value* h = b.node(OpKind::Add, "hadd", {b.input("y", {300, 300}), huge});
    auto g = b.finish({a, h});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(r.graph->findNode("wgen"), nullptr);
    EXPECT_EQ(r.graph->findNode("biggen"), nullptr) << "small constants always fold";
    ASSERT_NE(r.graph->findNode("hugegen"), nullptr);
    EXPECT_EQ(
        stats(r, "fold-constant-node").reasons.count("output has 90000 elements (more than 65536)"),
        1u);
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FoldConstants, AGeneratedWeightReshapedIntoAGemmFoldsToo) {
    // inception v1 (onnx "light") builds its classifier's weight as ConstantOfShape [1, 1, 1000,
    // 1024] and Reshapes it to the Gemm's [1000, 1024]: still a weight, so it folds, where the
    // same 1,024,000 elements reshaped into an Add stay a node.
    Builder b;
    ir::Value* x = b.input("x", {1, 1024});
    auto generated = [&](const std::string& name, double value) { // values apart: cse keeps both
        return b.node(OpKind::ConstantOfShape, name, {b.constant(name + "_shape", shapeTensor({1, 1, 1000, 1024}))},
                      {{"value", ir::Tensor::fromVector<double>({1}, {value})}});
    };
    ir::Value* w = b.node(OpKind::Reshape, "wshape", {generated("wgen", 0.01), b.constant("dims", shapeTensor({1000, 1024}))});
    ir::Value* y = b.node(OpKind::Gemm, "fc", {x, w}, {{"transB", int64_t{1}}});
    ir::Value* a = b.node(OpKind::Reshape, "ashape", {generated("agen", 0.02), b.constant("adims", shapeTensor({1000, 1024}))});
    ir::Value* z = b.node(OpKind::Add, "add", {b.input("u", {1000, 1024}), a});
    auto g = b.finish({y, z});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(r.graph->findNode("wgen"), nullptr) << ir::printGraph(*r.graph);
    ASSERT_NE(r.graph->findNode("fc"), nullptr);
    EXPECT_TRUE(r.graph->findNode("fc")->input(1)->isConstant()) << ir::printGraph(*r.graph);
    EXPECT_NE(r.graph->findNode("agen"), nullptr) << ir::printGraph(*r.graph);
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FoldConstants, ProvenanceOfAConstantFoldedTwiceNamesBothNodes) {
    Builder b;
    ir::Value* x = b.input("x", {4});
    ir::Value* k1 =
        b.node(OpKind::Mul, "k1",
               {b.constant("c1", filled({4}, 3.0)), b.constant("c2", filled({4}, 2.0))});
    ir::Value* k2 = b.node(OpKind::Add, "k2", {k1, b.constant("c3", filled({4}, 1.0))});
    ir::Value* y = b.node(OpKind::Add, "y", {x, k2});
    auto g = b.finish({y});
    PipelineResult r = pipeline(*g);
    ASSERT_EQ(r.graph->numNodes(), 1u);
    ASSERT_EQ(r.constantProvenance.count("k2_out"), 1u);
    EXPECT_EQ(r.constantProvenance["k2_out"].origins, (std::vector<std::string>{"k1", "k2"}));
    EXPECT_EQ(r.graph->nodes()[0]->input(1)->constant()->at(0), 7.0);
}

namespace {
/// The shape arithmetic ONNX's expanded LayerNormalization writes: the reduced shape
/// [d0..d(axis-1), 1, ..., 1] as Concat(Slice(Shape(x), 0, axis), ConstantOfShape(Size(Shape(x))
/// - axis)), used by a Reshape. With `dims` static, every one of those values is known before the
/// graph runs.
std::unique_ptr<ir::Graph> reducedShapeGraph(Builder& b, std::vector<int64_t> dims, int64_t axis) {
    ir::Value* x = b.input("x", dims);
    ir::Value* shape = b.node(OpKind::Shape, "shape", {x});
    ir::Value* rank = b.node(OpKind::Size, "rank", {shape});
    ir::Value* axis1 = b.constant("axis1", shapeTensor({axis}));
    ir::Value* prefix =
        b.node(OpKind::Slice, "prefix", {shape, b.constant("zero1", shapeTensor({0})), axis1});
    ir::Value* count = b.node(OpKind::Sub, "count", {rank, axis1});
    ir::Value* ones = b.node(OpKind::ConstantOfShape, "ones", {count},
                             {{"value", ir::Tensor::fromVector<int64_t>({1}, {1})}});
    ir::Value* reduced = b.node(OpKind::Concat, "reduced", {prefix, ones}, {{"axis", int64_t{0}}});
    std::vector<int64_t> axes;
    for (int64_t a = axis; a < static_cast<int64_t>(dims.size()); ++a)
        axes.push_back(a);
    ir::Value* mean = b.node(OpKind::ReduceMean, "mean", {x}, {{"axes", axes}});
    ir::Value* flat = b.node(OpKind::Flatten, "flat", {mean}, {{"axis", axis}});
    ir::Value* back = b.node(OpKind::Reshape, "back", {flat, reduced});
    ir::Value* y = b.node(OpKind::Sub, "y", {x, back});
    return b.finish({y});
}
} // namespace

TEST(FoldConstants, ShapeArithmeticOnStaticShapesFoldsAwayAndKeepsResults) {
    Builder b;
    auto g = reducedShapeGraph(b, {2, 3, 4}, 1);
    // Inference already sees through the arithmetic: the Reshape's result has its real shape.
    EXPECT_EQ(g->findValue("back_out")->type().dims(), (std::vector<int64_t>{2, 1, 1}));
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g);
    // Shape and Size fold from the static shape; Slice, Sub, ConstantOfShape and Concat then
    // fold as ordinary constant nodes.
    EXPECT_EQ(stats(r, "fold-constant-node").applied, 6) << ir::printGraph(*r.graph);
    for (OpKind k : {OpKind::Shape, OpKind::Size, OpKind::Slice, OpKind::ConstantOfShape,
                     OpKind::Concat})
        EXPECT_EQ(countKind(*r.graph, k), 0) << ir::printGraph(*r.graph);
    // The folded reduced shape, as fold-constants left it: [2, 1, 1].
    const Snapshot* folded = nullptr;
    for (const Snapshot& s : r.snapshots)
        if (s.passId == "fold-constants")
            folded = &s;
    ASSERT_NE(folded, nullptr);
    auto afterFold = folded->graph();
    ASSERT_NE(afterFold, nullptr);
    const ir::Value* reduced = afterFold->findValue("reduced_out");
    ASSERT_NE(reduced, nullptr);
    ASSERT_TRUE(reduced->isConstant());
    EXPECT_EQ(reduced->constant()->shape(), (std::vector<int64_t>{3}));
    EXPECT_EQ(reduced->constant()->data<int64_t>()[0], 2);
    EXPECT_EQ(reduced->constant()->data<int64_t>()[1], 1);
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(FoldConstants, ShapeOfADynamicInputStaysAndTheGraphStillCompiles) {
    // A symbolic batch dim: Shape cannot fold, inference keeps what it can (the Reshape's rank).
    Builder b;
    ir::Value* x = b.g->addInput("x", [] {
                          ir::TensorType t = ir::TensorType::of(ir::DType::F64, {1, 3});
                          t.shape[0] = ir::Dim::symbolic("batch");
                          return t;
                      }())
                       .value();
    ir::Value* shape = b.node(OpKind::Shape, "shape", {x});
    ir::Value* y = b.node(OpKind::Reshape, "y", {b.node(OpKind::Relu, "relu", {x}), shape});
    auto g = b.finish({y});
    EXPECT_EQ(g->findValue("y_out")->type().rank(), 2u);
    PipelineResult r = pipeline(*g);
    EXPECT_EQ(stats(r, "fold-constant-node").applied, 0);
    EXPECT_EQ(countKind(*r.graph, OpKind::Shape), 1);
}
