// The one ceilDiv and alignUp of the compiler: tile counts, cycle estimates, buffer offsets and
// descriptor sizes all round through them, so an off-by-one here moves every artifact.
#include "core/ir/MathUtil.h"

#include <gtest/gtest.h>

using namespace sextant::ir;

TEST(MathUtil, CeilDivRoundsUpAndIsExactOnMultiples) {
    EXPECT_EQ(ceilDiv(0, 16), 0u);
    EXPECT_EQ(ceilDiv(1, 16), 1u);
    EXPECT_EQ(ceilDiv(16, 16), 1u);
    EXPECT_EQ(ceilDiv(17, 16), 2u);
    EXPECT_EQ(ceilDiv(1000, 64), 16u); // 15.6 DMA cycles take 16
    EXPECT_EQ(ceilDiv(7, 1), 7u);
}

TEST(MathUtil, ADivisorOfZeroCountsAsOne) {
    EXPECT_EQ(ceilDiv(0, 0), 0u);
    EXPECT_EQ(ceilDiv(5, 0), 5u);
    EXPECT_EQ(alignUp(5, 0), 5u);
    EXPECT_EQ(alignUp(0, 0), 0u);
}

TEST(MathUtil, CeilDivDoesNotWrapNearTheTop) {
    EXPECT_EQ(ceilDiv(UINT64_MAX, 2), UINT64_MAX / 2 + 1);
    EXPECT_EQ(ceilDiv(UINT64_MAX, UINT64_MAX), 1u);
    EXPECT_EQ(ceilDiv(UINT64_MAX - 1, UINT64_MAX), 1u);
}

TEST(MathUtil, AlignUpGivesTheNextMultiple) {
    EXPECT_EQ(alignUp(0, 32), 0u);
    EXPECT_EQ(alignUp(1, 32), 32u);
    EXPECT_EQ(alignUp(32, 32), 32u);
    EXPECT_EQ(alignUp(33, 32), 64u);
    EXPECT_EQ(alignUp(100, 64), 128u);
    EXPECT_EQ(alignUp(7, 1), 7u);
    static_assert(alignUp(65, 64) == 128, "usable in constant expressions");
}
