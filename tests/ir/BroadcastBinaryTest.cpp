// ops::broadcastBinary coalesces dims before its inner loops; the result must be the plain
// definition: out[idx] = f(a[idx broadcast], b[idx broadcast]) for every output index.

#include "core/ir/ops/OpUtil.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

using sextant::ir::product;
using sextant::ir::ops::broadcastBinary;
using sextant::ir::ops::broadcastStrides;

// The definition: decompose every output index and read each operand through its strides.
std::vector<float> naive(const std::vector<float>& a, const std::vector<int64_t>& sa,
                         const std::vector<float>& b, const std::vector<int64_t>& sb,
                         const std::vector<int64_t>& dst) {
    std::vector<float> out(static_cast<size_t>(product(dst)));
    for (int64_t o = 0; o < product(dst); ++o) {
        int64_t rem = o, offA = 0, offB = 0;
        for (size_t d = dst.size(); d-- > 0;) {
            const int64_t i = rem % dst[d];
            rem /= dst[d];
            offA += i * sa[d];
            offB += i * sb[d];
        }
        out[static_cast<size_t>(o)] = a[static_cast<size_t>(offA)] * 10.0f - b[static_cast<size_t>(offB)];
    }
    return out;
}

std::vector<float> iota(int64_t n, float start) {
    std::vector<float> v(static_cast<size_t>(n));
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = start + static_cast<float>(i);
    return v;
}

TEST(BroadcastBinary, MatchesTheDefinitionOnBroadcastShapes) {
    struct Case {
        std::vector<int64_t> a, b, out;
    };
    const std::vector<Case> cases = {
        {{2, 3, 4, 5}, {2, 3, 4, 5}, {2, 3, 4, 5}}, // same shape: one run
        {{2, 3, 4, 5}, {}, {2, 3, 4, 5}},           // scalar
        {{1, 3, 4, 5}, {1, 3, 1, 1}, {1, 3, 4, 5}}, // per channel
        {{3, 1, 5}, {2, 1, 4, 1}, {2, 3, 4, 5}},    // both broadcast
        {{1, 1, 1}, {1}, {1, 1, 1}},                // all ones
        {{4, 1}, {1, 6}, {4, 6}},                   // outer product
        {{2, 1, 3, 1, 4}, {1, 5, 1, 1, 4}, {2, 5, 3, 1, 4}},
        {{0, 3}, {3}, {0, 3}},                      // empty
    };
    for (const Case& c : cases) {
        const std::vector<int64_t> sa = broadcastStrides(c.a, c.out), sb = broadcastStrides(c.b, c.out);
        const std::vector<float> a = iota(product(c.a), 1.0f), b = iota(product(c.b), 0.5f);
        std::vector<float> got(static_cast<size_t>(product(c.out)), -7.0f);
        broadcastBinary(a.data(), sa, b.data(), sb, c.out, got.data(),
                        [](float x, float y) { return x * 10.0f - y; });
        EXPECT_EQ(got, naive(a, sa, b, sb, c.out)) << "out rank " << c.out.size();
    }
}

TEST(BroadcastBinary, StridedAndNegativeStridesAsInTransposeAndSlice) {
    // A transpose of [2,3,4] by perm (2,0,1): strides (1,12,4) over the output [4,2,3].
    const std::vector<int64_t> out = {4, 2, 3}, sa = {1, 12, 4}, zero = {0, 0, 0};
    const std::vector<float> a = iota(24, 0.0f), b = {0.0f};
    std::vector<float> got(24);
    broadcastBinary(a.data(), sa, b.data(), zero, out, got.data(), [](float x, float y) { return x * 10.0f - y; });
    EXPECT_EQ(got, naive(a, sa, b, zero, out));
    // Reversed rows of a [3,4] matrix (a slice with step -1 on the last dim) read from its end.
    const std::vector<int64_t> out2 = {3, 4}, s2 = {4, -1}, z2 = {0, 0};
    std::vector<float> got2(12);
    broadcastBinary(a.data() + 3, s2, b.data(), z2, out2, got2.data(), [](float x, float y) { return x * 10.0f - y; });
    const std::vector<float> want2 = {30, 20, 10, 0, 70, 60, 50, 40, 110, 100, 90, 80};
    EXPECT_EQ(got2, want2);
}

TEST(BroadcastBinary, InPlaceAccumulationAsInSum) {
    const std::vector<int64_t> out = {2, 3, 4};
    std::vector<float> acc = iota(24, 0.0f);
    const std::vector<float> row = iota(4, 100.0f);
    const std::vector<int64_t> self = broadcastStrides(out, out), sr = broadcastStrides({4}, out);
    broadcastBinary(acc.data(), self, row.data(), sr, out, acc.data(), [](float x, float y) { return x + y; });
    for (int64_t i = 0; i < 24; ++i)
        EXPECT_EQ(acc[static_cast<size_t>(i)], static_cast<float>(i) + 100.0f + static_cast<float>(i % 4));
}

} // namespace
