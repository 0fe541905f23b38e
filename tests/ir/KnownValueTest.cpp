// Data propagation (ir::knownValue): shape inference sees through the shape arithmetic exporters
// write, within bounds, and leaves what it cannot know unknown instead of failing.

#include "TestUtil.h"

#include "core/ir/Interpreter.h"
#include "core/ir/Verifier.h"

namespace sextant::ir::test {
namespace {

Tensor ints(std::vector<int64_t> v) {
    return Tensor::fromVector<int64_t>({static_cast<int64_t>(v.size())}, v);
}

Value* add(Graph& g, OpKind kind, const std::string& name, std::vector<Value*> inputs,
           AttributeMap attrs = {}) {
    return g.addNode(kind, name, std::move(inputs), {name + "_out"}, std::move(attrs)).value()->output(0);
}

TEST(KnownValue, ReshapeToBatchTimesMinusOneIsInferredFromTheInputShape) {
    // x [2,3,4] -> Reshape(x, Concat(Unsqueeze(Gather(Shape(x), 0)), [-1])): the flatten-all-but-
    // batch idiom of exported classifiers.
    Graph g("flatten");
    Value* x = g.addInput("x", TensorType::of(DType::F32, {2, 3, 4})).value();
    Value* shape = add(g, OpKind::Shape, "shape", {x});
    Value* batch = add(g, OpKind::Gather, "batch", {shape, g.addConstant("i0", Tensor::fromVector<int64_t>({}, {0})).value()});
    Value* batch1 = add(g, OpKind::Unsqueeze, "batch1", {batch, g.addConstant("ax", ints({0})).value()});
    Value* target = add(g, OpKind::Concat, "target", {batch1, g.addConstant("m1", ints({-1})).value()},
                        {{"axis", int64_t{0}}});
    Value* y = add(g, OpKind::Reshape, "y", {x, target});
    g.setOutputs({y});
    ASSERT_TRUE(g.inferTypes().ok());
    EXPECT_EQ(y->type().dims(), (std::vector<int64_t>{2, 12}));
    EXPECT_TRUE(verifyGraph(g).ok());
    std::optional<Tensor> t = knownValue(target);
    ASSERT_TRUE(t.has_value());
    EXPECT_EQ(t->data<int64_t>()[0], 2);
    EXPECT_EQ(t->data<int64_t>()[1], -1);
    EXPECT_FALSE(knownValue(y).has_value()) << "a float tensor is data, not shape arithmetic";
}

TEST(KnownValue, HugeOrUnknownResultsStayUnknown) {
    Graph g("bounds");
    TensorType dyn = TensorType::of(DType::F32, {1, 3});
    dyn.shape[0] = Dim::symbolic("batch");
    Value* x = g.addInput("x", dyn).value();
    // A billion-element ConstantOfShape is not evaluated (nor allocated) to learn its value.
    Value* big = add(g, OpKind::ConstantOfShape, "big", {g.addConstant("n", ints({1000000000})).value()},
                     {{"value", Tensor::fromVector<int64_t>({1}, {1})}});
    // Shape of a tensor with a symbolic dim is not known.
    Value* shape = add(g, OpKind::Shape, "shape", {x});
    Value* y = add(g, OpKind::Reshape, "y", {x, shape});
    g.setOutputs({y, big});
    ASSERT_TRUE(g.inferTypes().ok());
    EXPECT_FALSE(knownValue(big).has_value());
    EXPECT_FALSE(knownValue(shape).has_value());
    EXPECT_EQ(y->type().rank(), 2u);
    EXPECT_FALSE(y->type().isStatic());
}

} // namespace
} // namespace sextant::ir::test
