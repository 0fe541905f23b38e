// MaxUnpool (MaxPool's values put back at its indices) and Det (LU with partial pivoting),
// against values worked out by hand and numpy.linalg.det.

#include "TestUtil.h"

#include "core/ir/Interpreter.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

TEST(MaxUnpool, PutsEachValueAtItsFlatIndex) {
    // A 2x2 MaxPool (stride 2) of a 4x4 map gave these maxima and indices.
    auto y = runOne(OpKind::MaxUnpool, {f64({1, 1, 2, 2}, {5, 6, 7, 8}), i64({1, 1, 2, 2}, {5, 7, 13, 15})},
                    {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 1, 4, 4}, {0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8}, 0);
}

TEST(MaxUnpool, UndoesMaxPoolWhereTheMaximaWere) {
    const Tensor x = f64({1, 2, 4, 4}, {1, 9, 2, 3, 4, 5, 8, 6, 7, 0, 1, 2, 3, 4, 5, 9,
                                        -1, -2, -3, -4, -5, -6, -7, -8, 8, 7, 6, 5, 4, 3, 2, 1});
    AttributeMap window{{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}};
    auto pooled = runOne(OpKind::MaxPool, {x}, window, 2);
    ASSERT_EQ(pooled.size(), 2u);
    auto y = runOne(OpKind::MaxUnpool, {pooled[0], pooled[1]}, window);
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2, 4, 4}, {0, 9, 0, 0, 0, 0, 8, 0, 7, 0, 0, 0, 0, 0, 0, 9,
                                      -1, 0, -3, 0, 0, 0, 0, 0, 8, 0, 6, 0, 0, 0, 0, 0}, 0);
}

TEST(MaxUnpool, OutputShapeInputSetsTheExtent) {
    // ONNX's node test: the indices are flat positions in the unpooled 4x4 (MaxPool's input), which
    // sits at the origin of the larger 5x5 output_shape, zeros around it. (onnxruntime reads them
    // as positions in the 5x5 instead; both agree where output_shape is the unpooled shape.)
    auto y = runOne(OpKind::MaxUnpool,
                    {f64({1, 1, 2, 2}, {5, 6, 7, 8}), i64({1, 1, 2, 2}, {5, 7, 13, 15}), i64({4}, {1, 1, 5, 5})},
                    {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 1, 5, 5}, {0, 0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 0, 0, 7, 0, 8, 0, 0, 0, 0, 0, 0}, 0);
}

TEST(MaxUnpool, AnOutputShapeSmallerThanTheUnpooledIsRejected) {
    OneNode one = makeOneNode(OpKind::MaxUnpool,
                              {f64({1, 1, 2, 2}, {5, 6, 7, 8}), i64({1, 1, 2, 2}, {5, 7, 13, 15}), i64({4}, {1, 1, 3, 4})},
                              {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
    Status st = one.graph->inferTypes();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("output_shape [1,1,3,4] is smaller than the unpooled [1,1,4,4] in dim 2"),
              std::string::npos)
        << st.error().message;
}

TEST(MaxUnpool, AnIndexOutsideTheOutputIsAnError) {
    OneNode one = makeOneNode(OpKind::MaxUnpool, {f64({1, 1, 1, 2}, {1, 2}), i64({1, 1, 1, 2}, {0, 4})},
                              {{"kernel_shape", std::vector<int64_t>{1, 2}}, {"strides", std::vector<int64_t>{1, 1}}});
    ASSERT_TRUE(one.graph->inferTypes().ok()); // output [1, 1, 1, 3]
    auto r = interpret(*one.graph, one.feeds, KernelContext{});
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("index 4 at position 1 is outside the unpooled [1,1,1,3]'s 3 elements"), std::string::npos)
        << r.error().message;
}

TEST(Det, DeterminantOfEachMatrix) {
    // numpy.linalg.det: 24 and 0 (the second matrix's rows 1 and 2 are dependent).
    auto y = runOne(OpKind::Det, {f64({2, 3, 3}, {2, -1, 0, 1, 3, 2, 0, 1, 4, 1, 2, 3, 2, 4, 6, 1, 0, 1})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2}, {24.0, 0.0}, 1e-12);
    // A row swap flips the sign; a single matrix gives a scalar.
    auto swap = runOne(OpKind::Det, {f64({2, 2}, {0, 1, 1, 0})});
    ASSERT_EQ(swap.size(), 1u);
    expectValues(swap[0], {}, {-1.0}, 0);
}

TEST(Det, ANonSquareMatrixIsRejected) {
    OneNode one = makeOneNode(OpKind::Det, {f64({2, 3}, {1, 2, 3, 4, 5, 6})}, {});
    Status st = one.graph->inferTypes();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("is not square"), std::string::npos) << st.error().message;
}
