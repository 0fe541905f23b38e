// NonMaxSuppression (ops/Detection.cpp) against selections worked out by hand (the IOUs are in the
// comments). ONNX's own node tests for it run in tests/conformance.

#include "TestUtil.h"

#include "core/ir/Interpreter.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

// Four corner boxes [y1, x1, y2, x2] of one batch:
//   0: [0, 0, 1, 1]      score 0.9
//   1: [0, 0.1, 1, 1.1]  score 0.8   IOU with 0 and 3: 0.9 / 1.1 = 0.818
//   2: [0, 2, 1, 3]      score 0.7   overlaps none
//   3: [1, 1, 0, 0]      score 0.95  box 0 with the other two corners: IOU 1 with 0
Tensor cornerBoxes() { return f64({1, 4, 4}, {0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, 2, 1, 3, 1, 1, 0, 0}); }
Tensor cornerScores() { return f64({1, 1, 4}, {0.9, 0.8, 0.7, 0.95}); }

std::vector<Tensor> nms(std::vector<Tensor> ins, AttributeMap attrs = {}) {
    auto y = runOneDynamic(OpKind::NonMaxSuppression, ins, std::move(attrs));
    EXPECT_EQ(y.size(), 1u);
    if (!y.empty()) {
        EXPECT_EQ(y[0].dtype(), DType::I64);
    }
    return y;
}

std::string failure(const std::vector<Tensor>& ins, AttributeMap attrs = {}) {
    return test::failure(OpKind::NonMaxSuppression, ins, std::move(attrs));
}

} // namespace

TEST(NonMaxSuppression, CornerBoxesInScoreOrder) {
    auto y = nms({cornerBoxes(), cornerScores(), i64({1}, {10}), f64({1}, {0.5})});
    ASSERT_EQ(y.size(), 1u);
    // 3 first; 0 and 1 overlap it by more than 0.5; 2 overlaps nothing.
    expectValues(y[0], {2, 3}, {0, 0, 3, 0, 0, 2}, 0);
}

TEST(NonMaxSuppression, ScoreThresholdAndLimit) {
    // Above 0.75: boxes 3, 0, 1, of which only 3 survives.
    auto y = nms({cornerBoxes(), cornerScores(), i64({1}, {10}), f64({1}, {0.5}), f64({1}, {0.75})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 3}, {0, 0, 3}, 0);
    // A score equal to the threshold is dropped (only those above it count): 0.7 leaves box 2 out.
    y = nms({cornerBoxes(), cornerScores(), i64({1}, {10}), f64({1}, {0.5}), f64({1}, {0.7})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 3}, {0, 0, 3}, 0);
    // At most one box per class.
    y = nms({cornerBoxes(), cornerScores(), i64({}, {1}), f64({}, {0.5})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 3}, {0, 0, 3}, 0);
    // Without max_output_boxes_per_class nothing is selected.
    y = nms({cornerBoxes(), cornerScores()});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {0, 3}, {}, 0);
}

TEST(NonMaxSuppression, IouEqualToTheThresholdIsKept) {
    // [0, 0, 1, 2] and [0, 0, 1, 1]: intersection 1, union 2, IOU 0.5 exactly.
    Tensor boxes = f64({1, 2, 4}, {0, 0, 1, 2, 0, 0, 1, 1});
    Tensor scores = f64({1, 1, 2}, {0.9, 0.8});
    auto y = nms({boxes, scores, i64({1}, {5}), f64({1}, {0.5})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 3}, {0, 0, 0, 0, 0, 1}, 0);
    y = nms({boxes, scores, i64({1}, {5}), f64({1}, {0.49})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 3}, {0, 0, 0}, 0);
}

TEST(NonMaxSuppression, CenterPointBoxesOverBatchesAndClasses) {
    // [x_center, y_center, width, height]: 0 is [0, 1] x [0, 1], 1 is [0.1, 1.1] x [0, 1] (IOU
    // 0.818 with 0), 2 is [5, 6] x [5, 6].
    std::vector<double> b = {0.5, 0.5, 1, 1, 0.6, 0.5, 1, 1, 5.5, 5.5, 1, 1};
    std::vector<double> twoBatches = b;
    twoBatches.insert(twoBatches.end(), b.begin(), b.end());
    Tensor boxes = f64({2, 3, 4}, twoBatches);
    // batch 0: class 0 prefers 1 (then 0 is suppressed), class 1 prefers 2, then 0;
    // batch 1: class 0 prefers 0, class 1 has equal scores (lower index first: 0, then 2).
    Tensor scores = f64({2, 2, 3}, {0.5, 0.6, 0.1, 0.3, 0.2, 0.9, 0.8, 0.7, 0.6, 0.4, 0.4, 0.4});
    auto y = nms({boxes, scores, i64({1}, {3}), f64({1}, {0.6})}, {{"center_point_box", int64_t{1}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {8, 3},
                 {0, 0, 1, 0, 0, 2, 0, 1, 2, 0, 1, 0, 1, 0, 0, 1, 0, 2, 1, 1, 0, 1, 1, 2}, 0);
    // The same boxes as corners are different boxes: with center_point_box 0, [0.5, 0.5, 1, 1] and
    // [0.6, 0.5, 1, 1] are [0.5, 1] x [0.5, 1] and [0.6, 1] x [0.5, 1], IOU 0.2 / 0.25 = 0.8; box 2,
    // [5.5, 5.5, 1, 1], is [1, 5.5] x [1, 5.5], which touches the others at a corner only (IOU 0).
    auto c = nms({f64({1, 3, 4}, b), f64({1, 1, 3}, {0.5, 0.6, 0.1}), i64({1}, {3}), f64({1}, {0.6})});
    ASSERT_EQ(c.size(), 1u);
    expectValues(c[0], {2, 3}, {0, 0, 1, 0, 0, 2}, 0);
}

TEST(NonMaxSuppression, RejectsBadShapes) {
    std::string e = failure({f64({1, 2, 3}, {0, 0, 1, 0, 0, 1}), f64({1, 1, 2}, {1, 2}), i64({1}, {1})});
    EXPECT_NE(e.find("boxes must be [batches, boxes, 4]"), std::string::npos) << e;
    e = failure({cornerBoxes(), f64({1, 1, 3}, {1, 2, 3}), i64({1}, {1})});
    EXPECT_NE(e.find("disagree in batches or boxes"), std::string::npos) << e;
    e = failure({cornerBoxes(), cornerScores(), i64({1}, {1})}, {{"center_point_box", int64_t{2}}});
    EXPECT_NE(e.find("center_point_box"), std::string::npos) << e;
}
