// GroupNormalization (ops/GroupNorm.cpp) against numpy: X reshaped to [N, G, -1], normalised by
// its mean and biased variance over the last axis, reshaped back, then scaled and shifted per
// channel (opset 21) or with each group's scale and bias repeated over its channels (opset 18):
//   xr = x.reshape(N, G, -1); xn = ((xr - xr.mean(2, keepdims=True)) /
//        np.sqrt(xr.var(2, keepdims=True) + eps)).reshape(x.shape); y = xn * s + b

#include "TestUtil.h"

using namespace sextant;
using namespace sextant::ir;
using namespace sextant::ir::test;

namespace {

/// ((np.arange(24) * 0.37 - 2) ** 2 / 5 - 1).reshape(2, 4, 3)
Tensor groupInput() {
    std::vector<double> v;
    for (int i = 0; i < 24; ++i) {
        const double t = i * 0.37 - 2.0;
        v.push_back(t * t / 5 - 1);
    }
    return f64({2, 4, 3}, v);
}

} // namespace

TEST(GroupNormalization, PerChannelScaleAtOpset21) {
    auto y = runOne(OpKind::GroupNormalization,
                    {groupInput(), f64({4}, {0.5, 1.0, 2.0, -1.0}), f64({4}, {0.0, 0.1, -0.2, 0.3})},
                    {{"num_groups", int64_t{2}}, {"_opset", int64_t{21}}, {"stash_type", int64_t{1}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 4, 3},
                 {0.8726676114356386,   0.3933056801098326,  0.011664913847689634, -0.44450937470158103,
                  -0.8169062469712154,  -0.9938607891135242, -2.4354527964770587,  -2.0323247597097676,
                  -1.2609069115748266,  0.26059962603611886, -0.4933991093990006,  -1.431542750517945,
                  -0.6760913925356008,  -0.44843902626225574, -0.1886985169332394, 0.3062602709028975,
                  0.9540938617836161,   1.6661037387756783,  -2.995119206950905,   -1.980394069941066,
                  -0.8881770236033351,  0.05923403396885682, -0.5643663985279026,  -1.226712785688607},
                 1e-12);
}

TEST(GroupNormalization, PerGroupScaleAtOpset18) {
    auto y = runOne(OpKind::GroupNormalization, {groupInput(), f64({2}, {0.5, 2.0}), f64({2}, {0.1, -0.3})},
                    {{"num_groups", int64_t{2}}, {"epsilon", 0.01}, {"_opset", int64_t{18}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {2, 4, 3},
                 {0.9219354559456407,   0.470441023902865,    0.11098677910847907,  -0.15642727843751755,
                  -0.33180114873512456, -0.4151348317843423,  -2.418966221507203,   -2.036844669131507,
                  -1.3056244145854223,  -0.22530545786894873, 1.2041122010179144,   2.982628562075168,
                  -0.571500239081603,   -0.3453937983432759,  -0.08741711643421338, 0.20242980664558505,
                  0.5241469708961187,   0.8777343763173883,   -3.088155566439203,   -2.0759584722601505,
                  -0.986462528783626,   0.18033226399036723,  1.424425906061837,    2.7458183974307757},
                 1e-12);
}

TEST(GroupNormalization, OneGroupOver4DWithoutOpsetReadsTheScaleLength) {
    // A node without "_opset" (made by hand) and one group: [1] is the per-group form.
    auto y = runOne(OpKind::GroupNormalization,
                    {f64({1, 2, 2, 2}, {1, 2, 4, 8, -1, 0, 3, 3}), f64({1}, {1.5}), f64({1}, {0.25})},
                    {{"num_groups", int64_t{1}}});
    ASSERT_EQ(y.size(), 1u);
    expectValues(y[0], {1, 2, 2, 2},
                 {-0.6160247622848523, -0.03867492076161744, 1.1160247622848523, 3.4254241283777915,
                  -1.770724445331322, -1.193374603808087, 0.5386749207616175, 0.5386749207616175},
                 1e-12);
}

TEST(GroupNormalization, RejectsBadGroupsScaleAndStashType) {
    const Tensor s4 = f64({4}, {1, 1, 1, 1}), s2 = f64({2}, {1, 1});
    std::string why = failure(OpKind::GroupNormalization, {groupInput(), s4, s4}, {{"num_groups", int64_t{3}}});
    EXPECT_NE(why.find("channels 4 do not divide into num_groups 3"), std::string::npos) << why;
    why = failure(OpKind::GroupNormalization, {groupInput(), s2, s2}, {{"num_groups", int64_t{2}}, {"_opset", int64_t{21}}});
    EXPECT_NE(why.find("scale must have 4 entries (one per channel at opset 21), got [2]"), std::string::npos) << why;
    why = failure(OpKind::GroupNormalization, {groupInput(), s4, s4}, {{"num_groups", int64_t{2}}, {"_opset", int64_t{18}}});
    EXPECT_NE(why.find("scale must have 2 entries (one per group at opset 18), got [4]"), std::string::npos) << why;
    why = failure(OpKind::GroupNormalization, {groupInput(), s4, s4}, {{"num_groups", int64_t{2}}, {"stash_type", int64_t{10}}});
    EXPECT_NE(why.find("stash_type 10 is not supported"), std::string::npos) << why;
    why = failure(OpKind::GroupNormalization, {groupInput(), s2, s2},
                  {{"num_groups", int64_t{2}}, {"stash_type", int64_t{1}}, {"_opset", int64_t{18}}});
    EXPECT_NE(why.find("no stash_type before opset 21"), std::string::npos) << why;
    why = failure(OpKind::GroupNormalization, {groupInput(), s4, s4}, {});
    EXPECT_NE(why.find("needs attribute num_groups"), std::string::npos) << why;
    why = failure(OpKind::GroupNormalization, {groupInput(), f64({3}, {1, 1, 1}), f64({3}, {1, 1, 1})},
                  {{"num_groups", int64_t{2}}});
    EXPECT_NE(why.find("scale has 3 entries, expected 2 (one per group, opset 18) or 4"), std::string::npos) << why;
}
