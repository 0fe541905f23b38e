// Equal, GreaterOrEqual, Not, Neg, Log, Max, ReduceMax, Split and Size against hand-computed values.

#include "TestUtil.h"

#include "core/ir/Verifier.h"

#include <cmath>
#include <limits>

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

Tensor boolT(std::vector<int64_t> shape, std::vector<int> v) {
    Tensor t(DType::Bool, std::move(shape));
    for (size_t i = 0; i < v.size(); ++i)
        t.set(static_cast<int64_t>(i), v[i]);
    return t;
}

Tensor i32(std::vector<int64_t> shape, std::vector<int32_t> v) {
    return Tensor::fromVector<int32_t>(std::move(shape), v);
}

/// The message of the error inferTypes or interpret reports for a one-node graph.
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

} // namespace

TEST(MoreOps, EqualBroadcastsAndGivesBool) {
    auto y = runOne(OpKind::Equal, {f64({2, 3}, {1, 2, 3, 3, 2, 1}), f64({3}, {1, 5, 1})});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::Bool);
    expectValues(y[0], {2, 3}, {1, 0, 0, 0, 0, 1});
    auto n = runOne(OpKind::Equal, {f64({2}, {kNaN, 0}), f64({2}, {kNaN, -0.0})});
    ASSERT_EQ(n.size(), 1u);
    expectValues(n[0], {2}, {0, 1}); // NaN is equal to nothing, -0 == 0
    auto i = runOne(OpKind::Equal, {i64({3}, {4, 5, 4}), i64({}, {4})});
    ASSERT_EQ(i.size(), 1u);
    expectValues(i[0], {3}, {1, 0, 1});
    auto b = runOne(OpKind::Equal, {boolT({2, 1}, {1, 0}), boolT({2}, {1, 0})});
    ASSERT_EQ(b.size(), 1u);
    expectValues(b[0], {2, 2}, {1, 0, 0, 1});
}

TEST(MoreOps, GreaterOrEqualOnFloatsAndIntegers) {
    auto y = runOne(OpKind::GreaterOrEqual, {f64({2, 1}, {1, 2}), f64({3}, {0, 2, kNaN})});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0].dtype(), DType::Bool);
    expectValues(y[0], {2, 3}, {1, 0, 0, 1, 1, 0});
    auto f = runOne(OpKind::GreaterOrEqual, {f64({2}, {1.5, -1}), f64({2}, {1.5, 0})}, {}, 1, DType::F32);
    ASSERT_EQ(f.size(), 1u);
    expectValues(f[0], {2}, {1, 0});
    auto i = runOne(OpKind::GreaterOrEqual, {i32({3}, {-1, 0, 7}), i32({1}, {0})});
    ASSERT_EQ(i.size(), 1u);
    expectValues(i[0], {3}, {0, 1, 1});
    // Exact on i64 values that doubles cannot tell apart.
    const int64_t big = (int64_t{1} << 53) + 1;
    auto e = runOne(OpKind::Equal, {i64({1}, {big}), i64({1}, {big - 1})});
    ASSERT_EQ(e.size(), 1u);
    expectValues(e[0], {1}, {0});
}

TEST(MoreOps, NotNegLog) {
    auto n = runOne(OpKind::Not, {boolT({3}, {1, 0, 1})});
    ASSERT_EQ(n.size(), 1u);
    EXPECT_EQ(n[0].dtype(), DType::Bool);
    expectValues(n[0], {3}, {0, 1, 0});
    auto g = runOne(OpKind::Neg, {f64({3}, {1.5, -2, 0})});
    ASSERT_EQ(g.size(), 1u);
    expectValues(g[0], {3}, {-1.5, 2, 0});
    auto gi = runOne(OpKind::Neg, {i64({2}, {3, -4})});
    ASSERT_EQ(gi.size(), 1u);
    EXPECT_EQ(gi[0].dtype(), DType::I64);
    expectValues(gi[0], {2}, {-3, 4});
    auto l = runOne(OpKind::Log, {f64({3}, {1, std::exp(2.0), 0.5})});
    ASSERT_EQ(l.size(), 1u);
    expectValues(l[0], {3}, {0, 2, -std::log(2.0)});
    auto lf = runOne(OpKind::Log, {f64({2}, {0, std::exp(1.0)})}, {}, 1, DType::F32);
    ASSERT_EQ(lf.size(), 1u);
    EXPECT_EQ(lf[0].dtype(), DType::F32);
    EXPECT_TRUE(std::isinf(lf[0].at(0)) && lf[0].at(0) < 0);
    EXPECT_NEAR(lf[0].at(1), 1.0, 1e-6);
}

TEST(MoreOps, MaxIsVariadicAndBroadcasts) {
    auto y = runOne(OpKind::Max, {f64({2, 1}, {1, 5}), f64({3}, {0, 3, 6}), f64({}, {2})});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 3}, {2, 3, 6, 5, 5, 6});
    auto one = runOne(OpKind::Max, {f64({2}, {-1, 4})});
    ASSERT_EQ(one.size(), 1u);
    expectValues(one[0], {2}, {-1, 4});
    auto nan = runOne(OpKind::Max, {f64({2}, {kNaN, 1}), f64({2}, {1, kNaN})});
    ASSERT_EQ(nan.size(), 1u);
    EXPECT_TRUE(std::isnan(nan[0].at(0)));
    EXPECT_TRUE(std::isnan(nan[0].at(1)));
    auto i = runOne(OpKind::Max, {i64({3}, {-5, 2, 9}), i64({3}, {-7, 3, 1})});
    ASSERT_EQ(i.size(), 1u);
    EXPECT_EQ(i[0].dtype(), DType::I64);
    expectValues(i[0], {3}, {-5, 3, 9});
}

TEST(MoreOps, ReduceMaxAttributeAndInputForms) {
    Tensor x = f64({2, 3}, {1, 7, 3, 4, -5, 6});
    auto last = runOne(OpKind::ReduceMax, {x}, {{"axes", std::vector<int64_t>{-1}}});
    ASSERT_EQ(last.size(), 1u);
    expectValues(last[0], {2, 1}, {7, 6});
    auto first = runOne(OpKind::ReduceMax, {x}, {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t{0}}});
    ASSERT_EQ(first.size(), 1u);
    expectValues(first[0], {3}, {4, 7, 6});
    auto all = runOne(OpKind::ReduceMax, {x}, {{"keepdims", int64_t{0}}});
    ASSERT_EQ(all.size(), 1u);
    expectValues(all[0], {}, {7});
    auto allKeep = runOne(OpKind::ReduceMax, {x});
    ASSERT_EQ(allKeep.size(), 1u);
    expectValues(allKeep[0], {1, 1}, {7});
    auto input = runOne(OpKind::ReduceMax, {x, i64({1}, {1})}, {{"keepdims", int64_t{0}}});
    ASSERT_EQ(input.size(), 1u);
    expectValues(input[0], {2}, {7, 6});
    auto ints = runOne(OpKind::ReduceMax, {i64({2, 2}, {-3, -9, -4, -1})}, {{"axes", std::vector<int64_t>{0}}});
    ASSERT_EQ(ints.size(), 1u);
    expectValues(ints[0], {1, 2}, {-3, -1});
    auto nan = runOne(OpKind::ReduceMax, {f64({3}, {1, kNaN, 2})});
    ASSERT_EQ(nan.size(), 1u);
    EXPECT_TRUE(std::isnan(nan[0].at(0)));
}

TEST(MoreOps, SplitEquallyByAttributeAndByInput) {
    Tensor x = f64({2, 4}, {0, 1, 2, 3, 4, 5, 6, 7});
    auto halves = runOne(OpKind::Split, {x}, {{"axis", int64_t{1}}}, 2);
    ASSERT_EQ(halves.size(), 2u);
    expectValues(halves[0], {2, 2}, {0, 1, 4, 5});
    expectValues(halves[1], {2, 2}, {2, 3, 6, 7});
    auto attr = runOne(OpKind::Split, {x}, {{"axis", int64_t{-1}}, {"split", std::vector<int64_t>{1, 3}}}, 2);
    ASSERT_EQ(attr.size(), 2u);
    expectValues(attr[0], {2, 1}, {0, 4});
    expectValues(attr[1], {2, 3}, {1, 2, 3, 5, 6, 7});
    auto input = runOne(OpKind::Split, {x, i64({3}, {1, 0, 1})}, {}, 3);
    ASSERT_EQ(input.size(), 3u);
    expectValues(input[0], {1, 4}, {0, 1, 2, 3});
    expectValues(input[1], {0, 4}, {});
    expectValues(input[2], {1, 4}, {4, 5, 6, 7});
    auto uneven = runOne(OpKind::Split, {f64({5}, {1, 2, 3, 4, 5})}, {{"num_outputs", int64_t{2}}}, 2);
    ASSERT_EQ(uneven.size(), 2u);
    expectValues(uneven[0], {3}, {1, 2, 3});
    expectValues(uneven[1], {2}, {4, 5});
    auto ints = runOne(OpKind::Split, {i64({3}, {7, 8, 9})}, {}, 3);
    ASSERT_EQ(ints.size(), 3u);
    EXPECT_EQ(ints[2].dtype(), DType::I64);
    expectValues(ints[2], {1}, {9});
}

TEST(MoreOps, SplitGraphVerifies) {
    OneNode one = makeOneNode(OpKind::Split, {f64({6}, {1, 2, 3, 4, 5, 6})}, {{"split", std::vector<int64_t>{2, 4}}}, 2);
    ASSERT_TRUE(one.graph->inferTypes().ok());
    Status st = verifyGraph(*one.graph);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    EXPECT_EQ(one.node->output(1)->type().str(), "f64[4]");
}

TEST(MoreOps, SizeIsAnI64Scalar) {
    auto s = runOne(OpKind::Size, {f64({2, 3, 4}, std::vector<double>(24, 0))});
    ASSERT_EQ(s.size(), 1u);
    EXPECT_EQ(s[0].dtype(), DType::I64);
    expectValues(s[0], {}, {24});
    auto e = runOne(OpKind::Size, {boolT({0, 3}, {})});
    ASSERT_EQ(e.size(), 1u);
    expectValues(e[0], {}, {0});
}

TEST(MoreOps, BadInputsAreErrorsNamingTheNode) {
    auto has = [](const std::string& msg, const std::string& part) {
        EXPECT_NE(msg.find(part), std::string::npos) << msg;
    };
    has(failure(OpKind::Equal, {f64({2}, {1, 2}), i64({2}, {1, 2})}),
        "node 'n' (Equal): operands have different dtypes f64 and i64");
    has(failure(OpKind::GreaterOrEqual, {boolT({1}, {1}), boolT({1}, {0})}),
        "node 'n' (GreaterOrEqual): greater-or-equal operand 0 must be numeric, got bool");
    has(failure(OpKind::Equal, {f64({2}, {1, 2}), f64({3}, {1, 2, 3})}), "cannot broadcast shapes [2] and [3]");
    has(failure(OpKind::Not, {f64({1}, {1})}), "not input must be a bool tensor, got f64");
    has(failure(OpKind::Neg, {boolT({1}, {1})}), "neg input must be a float or signed integer tensor, got bool");
    has(failure(OpKind::Log, {i64({1}, {1})}), "log input must be a float tensor, got i64");
    has(failure(OpKind::Max, {f64({2}, {1, 2}), i64({2}, {1, 2})}), "max inputs have different dtypes f64 and i64");
    has(failure(OpKind::ReduceMax, {f64({2}, {1, 2})}, {{"axes", std::vector<int64_t>{1}}}),
        "node 'n' (ReduceMax): reduce axis 1 is out of range for rank 1");
    has(failure(OpKind::Split, {f64({5}, {1, 2, 3, 4, 5})}, {}, 2),
        "node 'n' (Split): axis extent 5 does not split evenly into 2 outputs");
    has(failure(OpKind::Split, {f64({5}, {1, 2, 3, 4, 5})}, {{"split", std::vector<int64_t>{2, 2}}}, 2),
        "split sizes sum to 4 but the axis has extent 5");
    has(failure(OpKind::Split, {f64({4}, {1, 2, 3, 4}), i64({3}, {1, 1, 2})}, {}, 2),
        "split has 3 sizes but the node has 2 outputs");
    has(failure(OpKind::Split, {f64({}, {1})}, {}, 1), "split axis 0 is out of range for rank 0");
}
