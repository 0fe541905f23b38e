// canonicalize additions: same-dtype Cast, Squeeze/Unsqueeze/Reshape/Flatten chains, Transpose
// pairs. Each keeps float64 results and the model's output names.
#include "PassTestUtil.h"

#include "core/ir/Printer.h"
#include "core/passes/GreyOps.h"

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace {
PipelineConfig onlyCanonicalize() {
    PipelineConfig c;
    c.disabled = {"fold-constants", "cse", "fuse"};
    return c;
}
ir::AttributeMap perm(std::vector<int64_t> p) { return {{"perm", std::move(p)}}; }
ir::Tensor i64(std::vector<int64_t> v) {
    return ir::Tensor::fromVector<int64_t>({static_cast<int64_t>(v.size())}, v);
}
} // namespace

TEST(CanonicalizeCast, SameDtypeCastIsRemovedOtherCastsStay) {
    Builder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* c1 = b.node(OpKind::Cast, "same", {x}, {{"to", int64_t{11}}}); // f64 -> f64
    ir::Value* c2 = b.node(OpKind::Cast, "to_f32", {c1}, {{"to", int64_t{1}}});
    ir::Value* e = b.node(OpKind::Exp, "exp", {c2});
    auto g = b.finish({e});
    ASSERT_EQ(g->findValue("same_out")->type().dtype, ir::DType::F64);
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, onlyCanonicalize());
    EXPECT_EQ(stats(r, "remove-noop-cast").applied, 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Cast), 1);
    expectSameOutputs(before, runF64(*r.graph), 1e-6);
}

TEST(CanonicalizeShapeChain, SqueezeUnsqueezeFlattenChainBecomesOneReshape) {
    Builder b;
    ir::Value* x = b.input("x", {1, 3, 1, 4});
    ir::Value* sq = b.node(OpKind::Squeeze, "sq", {x, b.constant("ax", i64({2}))});
    ir::Value* us = b.node(OpKind::Unsqueeze, "us", {sq, b.constant("ax0", i64({0}))});
    ir::Value* fl = b.node(OpKind::Flatten, "fl", {us}, {{"axis", int64_t{2}}});
    ir::Value* e = b.node(OpKind::Sigmoid, "sig", {fl});
    auto g = b.finish({e});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, onlyCanonicalize());
    EXPECT_EQ(stats(r, "merge-shape-chain").applied, 2);
    EXPECT_EQ(countKind(*r.graph, OpKind::Reshape), 1) << ir::printGraph(*r.graph);
    EXPECT_EQ(countKind(*r.graph, OpKind::Squeeze) + countKind(*r.graph, OpKind::Unsqueeze) +
                  countKind(*r.graph, OpKind::Flatten),
              0);
    const ir::Node* reshape = r.graph->findNode("sq");
    ASSERT_NE(reshape, nullptr) << "the chain's first name is kept";
    EXPECT_EQ(reshape->provenance().origins, (std::vector<std::string>{"fl", "sq", "us"}));
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(CanonicalizeShapeChain, InnerNodeWithAnotherUserStays) {
    Builder b;
    ir::Value* x = b.input("x", {2, 1, 3});
    ir::Value* sq = b.node(OpKind::Squeeze, "sq", {x, b.constant("ax", i64({1}))});
    ir::Value* fl = b.node(OpKind::Flatten, "fl", {sq}, {{"axis", int64_t{0}}});
    ir::Value* other = b.node(OpKind::Relu, "other", {sq});
    auto g = b.finish({fl, other});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, onlyCanonicalize());
    EXPECT_EQ(stats(r, "merge-shape-chain").applied, 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Squeeze), 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Reshape), 1);
    EXPECT_EQ(r.graph->outputs()[0]->name(), "fl_out");
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(CanonicalizeTranspose, InversePairCancelsAndComposedPairBecomesOne) {
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 3, 4});
    // NCHW -> NHWC -> NCHW: cancels.
    ir::Value* t1 = b.node(OpKind::Transpose, "to_nhwc", {x}, perm({0, 2, 3, 1}));
    ir::Value* t2 = b.node(OpKind::Transpose, "to_nchw", {t1}, perm({0, 3, 1, 2}));
    ir::Value* e = b.node(OpKind::Exp, "exp", {t2});
    // Two non-inverse permutations: one Transpose with the composition.
    ir::Value* t3 = b.node(OpKind::Transpose, "ta", {e}, perm({1, 0, 2, 3}));
    ir::Value* t4 = b.node(OpKind::Transpose, "tb", {t3}, perm({0, 1, 3, 2}));
    ir::Value* y = b.node(OpKind::Relu, "relu", {t4});
    // Default perm (reverse) twice is the identity too.
    ir::Value* t5 = b.node(OpKind::Transpose, "rev1", {y});
    ir::Value* t6 = b.node(OpKind::Transpose, "rev2", {t5});
    auto g = b.finish({t6});
    EXPECT_EQ(inverseTransposePairs(*g).size(), 2u);
    EXPECT_EQ(countGreyOps(*g).transposes, 6);
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, onlyCanonicalize());
    EXPECT_EQ(stats(r, "merge-transposes").applied, 3);
    EXPECT_EQ(countKind(*r.graph, OpKind::Transpose), 1) << ir::printGraph(*r.graph);
    EXPECT_TRUE(inverseTransposePairs(*r.graph).empty());
    EXPECT_EQ(r.graph->outputs()[0]->name(), "rev2_out");
    const ir::Node* merged = r.graph->findNode("ta");
    ASSERT_NE(merged, nullptr);
    EXPECT_EQ(merged->attrInts("perm"), (std::vector<int64_t>{1, 0, 3, 2}));
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(CanonicalizeTranspose, IdentityPermutationIsRemovedSharedInnerStays) {
    Builder b;
    ir::Value* x = b.input("x", {2, 3});
    ir::Value* id = b.node(OpKind::Transpose, "idt", {x}, perm({0, 1}));
    ir::Value* t1 = b.node(OpKind::Transpose, "t1", {id}, perm({1, 0}));
    ir::Value* t2 = b.node(OpKind::Transpose, "t2", {t1}, perm({1, 0}));
    ir::Value* other = b.node(OpKind::Exp, "other", {t1}); // t1 has two users
    ir::Value* s = b.node(OpKind::Sigmoid, "sig", {t2});
    auto g = b.finish({s, other});
    auto before = runF64(*g);
    PipelineResult r = pipeline(*g, onlyCanonicalize());
    EXPECT_EQ(stats(r, "remove-identity-transpose").applied, 1);
    EXPECT_EQ(stats(r, "merge-transposes").applied, 1);
    EXPECT_EQ(countKind(*r.graph, OpKind::Transpose), 1) << "t1 stays for its other user";
    expectSameOutputs(before, runF64(*r.graph));
}

TEST(CanonicalizeTranspose, TransposeSinksThroughElementwiseOpsToItsInverseAndCancels) {
    Builder b;
    ir::Value* x = b.input("x", {1, 2, 3, 4});
    ir::Value* t1 = b.node(OpKind::Transpose, "to_nhwc", {x}, perm({0, 2, 3, 1}));
    ir::Value* r = b.node(OpKind::Relu, "relu", {t1});
    ir::Value* s = b.node(OpKind::Sigmoid, "sig", {r});
    ir::Value* t2 = b.node(OpKind::Transpose, "to_nchw", {s}, perm({0, 3, 1, 2}));
    ir::Value* e = b.node(OpKind::Exp, "exp", {t2});
    // No inverse partner: this Transpose stays where it is.
    ir::Value* t3 = b.node(OpKind::Transpose, "lonely", {e}, perm({1, 0, 2, 3}));
    ir::Value* n = b.node(OpKind::Neg, "neg", {t3});
    auto g = b.finish({n});
    auto before = runF64(*g);
    PipelineResult res = pipeline(*g, onlyCanonicalize());
    EXPECT_EQ(stats(res, "sink-transpose").applied, 2);
    EXPECT_EQ(stats(res, "merge-transposes").applied, 1);
    EXPECT_EQ(countKind(*res.graph, OpKind::Transpose), 1) << ir::printGraph(*res.graph);
    ASSERT_NE(res.graph->findNode("lonely"), nullptr) << ir::printGraph(*res.graph);
    EXPECT_EQ(res.graph->findNode("neg")->input(0)->producer()->name(), "lonely");
    EXPECT_EQ(res.graph->outputs()[0]->name(), "neg_out");
    expectSameOutputs(before, runF64(*res.graph));
}
