// storedDType: which tensors lowering keeps in f16 between Tasks. A tensor goes to f16 only when
// every reader rounds it to f16 anyway (by its precision, or through data movement whose
// outputs are all rounded), so the choice can never change a number; everything the host
// writes or reads, every weight and every tensor some reader takes in f32 stays as it is.
#include "BackendTestUtil.h"

#include "core/backend/Grouping.h"
#include "core/backend/Lower.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace sextant;
using namespace sextant::backend;
using backend::test::filled;
using ir::DType;
using ir::OpKind;
using ir::Precision;
using ir::TensorType;

namespace {

ir::Node* node(ir::Graph& g, OpKind k, const std::string& name, std::vector<ir::Value*> in, Precision p,
               ir::AttributeMap attrs = {}) {
    ir::Node* n = *g.addNode(k, name, std::move(in), {name + "_out"}, std::move(attrs));
    n->setPrecision(p);
    return n;
}

} // namespace

TEST(Storage, OnlyWhatEveryReaderRoundsIsKeptInF16) {
    auto g = std::make_shared<ir::Graph>("storage");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 4, 4, 4}));
    ir::Value* w = *g->addConstant("w", filled({4, 4, 1, 1}, 0.1f));
    ir::Value* b = *g->addConstant("b", filled({4}, 0.2f));
    // a: read by an f16 op only.
    ir::Node* a = node(*g, OpKind::Relu, "a", {x}, Precision::F16);
    ir::Node* r1 = node(*g, OpKind::Relu, "r1", {a->output()}, Precision::F16);
    // c: the data of one convolution (rounded) and the bias-free input of an f32 one.
    ir::Node* c = node(*g, OpKind::Relu, "c", {r1->output()}, Precision::F16);
    ir::Node* conv16 = node(*g, OpKind::Conv, "conv16", {c->output(), w, b}, Precision::F16AccF32);
    ir::Node* conv32 = node(*g, OpKind::Conv, "conv32", {c->output(), w}, Precision::F32);
    // d: through a Transpose (data movement) into an f16 op: rounded by its only reader's reader.
    ir::Node* d = node(*g, OpKind::Relu, "d", {conv16->output()}, Precision::F16);
    ir::Node* tr = node(*g, OpKind::Transpose, "tr", {d->output()}, Precision::Unset,
                        {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
    ir::Node* after = node(*g, OpKind::Relu, "after", {tr->output()}, Precision::F16);
    // e: through a Transpose into an f32 Softmax: kept in f32, and so is the Transpose's output.
    ir::Node* e = node(*g, OpKind::Relu, "e", {conv32->output()}, Precision::F16);
    ir::Node* tr32 = node(*g, OpKind::Transpose, "tr32", {e->output()}, Precision::Unset,
                          {{"perm", std::vector<int64_t>{0, 1, 3, 2}}});
    ir::Node* sm = node(*g, OpKind::Softmax, "sm", {tr32->output()}, Precision::F32, {{"axis", int64_t{-1}}});
    // f: a FusedConv's residual is read in f16 (its bias is not), and so is its data, even
    // when an f32 op wrote it.
    ir::Node* f = node(*g, OpKind::Relu, "f", {after->output()}, Precision::F16);
    ir::Node* fused = node(*g, OpKind::FusedConv, "fused", {sm->output(), w, b, f->output()},
                           Precision::F16AccF32);
    g->setOutputs({fused->output(), a->output()});
    ASSERT_TRUE(g->inferTypes().ok());

    EXPECT_EQ(storedDType(*x), DType::F32) << "graph input: as the host writes it";
    EXPECT_EQ(storedDType(*a->output()), DType::F32) << "graph output: as the host reads it";
    EXPECT_EQ(storedDType(*w), DType::F32) << "weights stay as the artifact holds them";
    EXPECT_EQ(storedDType(*r1->output()), DType::F16);
    EXPECT_EQ(storedDType(*c->output()), DType::F32) << "an f32 convolution reads it";
    EXPECT_EQ(storedDType(*conv16->output()), DType::F16);
    EXPECT_EQ(storedDType(*d->output()), DType::F16) << "the Transpose's one reader rounds";
    EXPECT_EQ(storedDType(*tr->output()), DType::F16);
    EXPECT_EQ(storedDType(*e->output()), DType::F32) << "through the Transpose, the f32 Softmax reads it";
    EXPECT_EQ(storedDType(*tr32->output()), DType::F32);
    EXPECT_EQ(storedDType(*sm->output()), DType::F16) << "the FusedConv's data, rounded as it is read";
    EXPECT_EQ(storedDType(*f->output()), DType::F16) << "the FusedConv's residual, rounded as it is read";
    EXPECT_EQ(storedType(*r1->output()).dims(), r1->output()->type().dims());

    EXPECT_TRUE(readsInF16(*fused, 0));
    EXPECT_TRUE(readsInF16(*fused, 1));
    EXPECT_FALSE(readsInF16(*fused, 2)) << "the bias joins the f32 accumulator";
    EXPECT_TRUE(readsInF16(*fused, 3));
    EXPECT_FALSE(readsInF16(*conv32, 0));
    EXPECT_FALSE(readsInF16(*tr, 0)) << "data movement computes nothing";
}

TEST(Storage, AReshapesOutputIsKeptAsItsInput) {
    auto g = std::make_shared<ir::Graph>("view");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {2, 8}));
    ir::Node* a = node(*g, OpKind::Relu, "a", {x}, Precision::F16);
    ir::Value* shape = *g->addConstant("shape", ir::Tensor::fromVector<int64_t>({2}, {4, 4}));
    ir::Node* re = node(*g, OpKind::Reshape, "re", {a->output(), shape}, Precision::Unset);
    ir::Node* b = node(*g, OpKind::Relu, "b", {re->output()}, Precision::F16);
    g->setOutputs({b->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    EXPECT_EQ(storedDType(*a->output()), DType::F16);
    EXPECT_EQ(storedDType(*re->output()), DType::F16);
    EXPECT_EQ(storedDType(*shape), DType::I64) << "not a float: untouched";
    // Lowered: a's buffer is an f16 buffer of half the bytes.
    Expected<Program> p = lower(g, defaultTarget());
    ASSERT_TRUE(p.ok()) << p.error().message;
    auto it = std::find_if(p->buffers.begin(), p->buffers.end(), [](const Buffer& buf) { return buf.value == "a_out"; });
    ASSERT_NE(it, p->buffers.end());
    EXPECT_EQ(it->type.dtype, DType::F16);
    EXPECT_EQ(storedBytes(it->type, 1), 16u * 2);
    // Lowered without the pipeline, the Reshape is not marked a view: a copy Task, whose
    // output is kept in f16 as well (its reader rounds).
    auto copy = std::find_if(p->buffers.begin(), p->buffers.end(), [](const Buffer& buf) { return buf.value == "re_out"; });
    ASSERT_NE(copy, p->buffers.end());
    EXPECT_EQ(copy->type.dtype, DType::F16);
}

TEST(Storage, ALongChainOfDataMovementIsWalkedABoundedWay) {
    // 2,000 Transposes between an f16 producer and an f16 reader: the answer (f16 all along)
    // needs no more than a bounded walk per query, so a far end past the bound counts as f32.
    auto g = std::make_shared<ir::Graph>("chain");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {2, 2}));
    ir::Node* head = node(*g, OpKind::Relu, "head", {x}, Precision::F16);
    ir::Value* v = head->output();
    std::vector<ir::Value*> chain;
    for (int i = 0; i < 2000; ++i) {
        ir::Node* t = node(*g, OpKind::Transpose, "t" + std::to_string(i), {v}, Precision::Unset,
                           {{"perm", std::vector<int64_t>{1, 0}}});
        v = t->output();
        chain.push_back(v);
    }
    ir::Node* tail = node(*g, OpKind::Relu, "tail", {v}, Precision::F16);
    g->setOutputs({tail->output()});
    ASSERT_TRUE(g->inferTypes().ok());
    EXPECT_EQ(storedDType(*chain.back()), DType::F16) << "its reader rounds";
    EXPECT_EQ(storedDType(*head->output()), DType::F32) << "too far from any rounding reader to tell";
    for (ir::Value* c : chain) // every answer is one of the two; none takes long
        EXPECT_TRUE(storedDType(*c) == DType::F16 || storedDType(*c) == DType::F32);
}
