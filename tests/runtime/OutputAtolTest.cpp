// The default tolerance of `run --reference --expected` follows shared/models/INVENTORY.md:
// atol 1e-4 for probability-like outputs, 1e-4 * max|expected| for unbounded ones.
#include "core/runtime/Compare.h"

#include <gtest/gtest.h>

namespace sextant::runtime {
namespace {

struct Heads {
    ir::Graph g;
    ir::Value* logits = nullptr;
    ir::Value* probs = nullptr;
    ir::Value* flatProbs = nullptr;
    ir::Value* gate = nullptr;
};

void build(Heads& h) {
    ir::Value* x = h.g.addInput("x", ir::TensorType::of(ir::DType::F32, {1, 4})).value();
    ir::Value* b = h.g.addConstant("b", ir::Tensor::fromVector<float>({1, 4}, {1, 2, 3, 4})).value();
    ir::Value* shape = h.g.addConstant("shape", ir::Tensor::fromVector<int64_t>({1}, {4})).value();
    h.logits = h.g.addNode(ir::OpKind::Add, "add", {x, b}, {"logits"}).value()->output();
    h.probs = h.g.addNode(ir::OpKind::Softmax, "softmax", {h.logits}, {"probs"}).value()->output();
    h.flatProbs =
        h.g.addNode(ir::OpKind::Reshape, "flat", {h.probs, shape}, {"flat"}).value()->output();
    h.gate = h.g.addNode(ir::OpKind::Sigmoid, "sigmoid", {h.logits}, {"gate"}).value()->output();
    h.g.setOutputs({h.logits, h.flatProbs, h.gate});
}

TEST(OutputAtol, ProbabilitiesKeepTheBaseAndUnboundedOutputsScale) {
    Heads h;
    build(h);
    const ir::Tensor big = ir::Tensor::fromVector<float>({1, 4}, {-26.5f, 3, 0, 12});
    const ir::Tensor small = ir::Tensor::fromVector<float>({1, 4}, {0.1f, 0.2f, 0.3f, 0.4f});
    EXPECT_FALSE(isProbabilityLike(*h.logits));
    EXPECT_TRUE(isProbabilityLike(*h.probs));
    EXPECT_TRUE(isProbabilityLike(*h.flatProbs)); // through a Reshape
    EXPECT_TRUE(isProbabilityLike(*h.gate));
    EXPECT_DOUBLE_EQ(outputAtol(*h.logits, big), 1e-4 * 26.5);
    EXPECT_DOUBLE_EQ(outputAtol(*h.flatProbs, small), 1e-4);
    EXPECT_DOUBLE_EQ(outputAtol(*h.gate, small), 1e-4);
    // A logit 2.6e-3 off passes with the scaled tolerance, not with a flat 1e-4.
    const ir::Tensor got = ir::Tensor::fromVector<float>({1, 4}, {-26.5f + 2.6e-3f, 3, 0, 12});
    EXPECT_TRUE(compareTensors("logits", got, big, outputAtol(*h.logits, big), 0).pass);
    EXPECT_FALSE(compareTensors("logits", got, big, 1e-4, 0).pass);
}

} // namespace
} // namespace sextant::runtime
