// Unique (ops/Unique.cpp) against numpy.unique(return_index, return_inverse, return_counts); the
// unsorted outputs are numpy's reordered by first index (np.argsort of the indices), values pasted
// as literals. ONNX's own node tests for Unique run in tests/conformance.

#include "TestUtil.h"

#include "core/ir/Interpreter.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

Tensor matrix() { return f64({4, 3}, {1, 0, 0, 1, 0, 0, 2, 3, 4, 0, 5, 1}); }

void expectUnique(const std::vector<Tensor>& out, std::vector<int64_t> yShape, std::vector<double> y,
                  std::vector<double> indices, std::vector<double> inverse, std::vector<double> counts) {
    ASSERT_EQ(out.size(), 4u);
    expectValues(out[0], yShape, y, 0);
    for (size_t i = 1; i < 4; ++i)
        EXPECT_EQ(out[i].dtype(), DType::I64) << "output " << i;
    expectValues(out[1], {static_cast<int64_t>(indices.size())}, indices, 0);
    expectValues(out[2], {static_cast<int64_t>(inverse.size())}, inverse, 0);
    expectValues(out[3], {static_cast<int64_t>(counts.size())}, counts, 0);
}

} // namespace

TEST(Unique, FlattenedSortedAndUnsorted) {
    Tensor x = f64({2, 3}, {2, 1, 1, 3, 4, 3});
    expectUnique(runOneDynamic(OpKind::Unique, {x}, {}, 4), {4}, {1, 2, 3, 4}, {1, 0, 3, 4}, {1, 0, 0, 2, 3, 2}, {2, 1, 2, 1});
    expectUnique(runOneDynamic(OpKind::Unique, {x}, {{"sorted", int64_t{0}}}, 4), {4}, {2, 1, 3, 4}, {0, 1, 3, 4},
                 {0, 1, 1, 2, 3, 2}, {1, 2, 2, 1});
}

TEST(Unique, SlicesAlongAnAxis) {
    expectUnique(runOneDynamic(OpKind::Unique, {matrix()}, {{"axis", int64_t{0}}}, 4), {3, 3}, {0, 5, 1, 1, 0, 0, 2, 3, 4},
                 {3, 0, 2}, {1, 1, 2, 0}, {1, 2, 1});
    expectUnique(runOneDynamic(OpKind::Unique, {matrix()}, {{"axis", int64_t{0}}, {"sorted", int64_t{0}}}, 4), {3, 3},
                 {1, 0, 0, 2, 3, 4, 0, 5, 1}, {0, 2, 3}, {0, 0, 1, 2}, {2, 1, 1});
    // Columns [1,1,2,0], [0,0,3,5], [0,0,4,1]: sorted, the second, third, first; axis -1 is axis 1.
    expectUnique(runOneDynamic(OpKind::Unique, {matrix()}, {{"axis", int64_t{-1}}}, 4), {4, 3},
                 {0, 0, 1, 0, 0, 1, 3, 4, 2, 5, 1, 0}, {1, 2, 0}, {2, 0, 1}, {1, 1, 1});
}

TEST(Unique, IntegersAndFewerOutputs) {
    auto y = runOneDynamic(OpKind::Unique, {i64({5}, {7, -2, 7, 7, -2})}, {}, 1);
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::I64);
    expectValues(y[0], {2}, {-2, 7}, 0);
}

TEST(Unique, RejectsAnAxisOutOfRange) {
    OneNode one = makeOneNode(OpKind::Unique, {matrix()}, {{"axis", int64_t{2}}}, 4);
    Status st = one.graph->inferTypes();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("unique axis"), std::string::npos) << st.error().message;
}
