#include "core/backend/Reachability.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>
#include <vector>

using namespace sextant::backend;

namespace {

/// The transitive closure by brute force: closure[b][a] when a reaches b.
std::vector<std::vector<bool>> closureOf(const std::vector<std::vector<int>>& preds) {
    const size_t n = preds.size();
    std::vector<std::vector<bool>> c(n, std::vector<bool>(n, false));
    for (size_t b = 0; b < n; ++b)
        for (int a : preds[b]) {
            c[b][static_cast<size_t>(a)] = true;
            for (size_t x = 0; x < n; ++x)
                if (c[static_cast<size_t>(a)][x])
                    c[b][x] = true;
        }
    return c;
}

/// A random DAG: each node takes up to `fanIn` predecessors among the `window` nodes before it
/// (a small window gives long chains, a large one wide parallelism), some nodes none.
std::vector<std::vector<int>> randomDag(std::mt19937& rng, int n, int window, int fanIn) {
    std::vector<std::vector<int>> preds(static_cast<size_t>(n));
    for (int b = 1; b < n; ++b) {
        const int count = std::uniform_int_distribution<int>(0, fanIn)(rng);
        for (int i = 0; i < count; ++i) {
            const int lo = std::max(0, b - window);
            preds[static_cast<size_t>(b)].push_back(std::uniform_int_distribution<int>(lo, b - 1)(rng));
        }
    }
    return preds;
}

} // namespace

TEST(Reachability, AgreesWithTheTransitiveClosureOnRandomDags) {
    std::mt19937 rng(7);
    for (int round = 0; round < 60; ++round) {
        const int n = 20 + round * 3;
        const int window = 1 + round % 12 * (round % 3 == 0 ? 10 : 1);
        const auto preds = randomDag(rng, n, window, 1 + round % 4);
        const Reachability r(preds);
        ASSERT_TRUE(r.valid());
        const auto c = closureOf(preds);
        for (int a = 0; a < n; ++a)
            for (int b = 0; b < n; ++b)
                ASSERT_EQ(r.before(a, b), static_cast<bool>(c[static_cast<size_t>(b)][static_cast<size_t>(a)]))
                    << "round " << round << ": " << a << " before " << b;
    }
}

TEST(Reachability, CommonAncestorsAreTheIntersectionOfTheAncestorSets) {
    std::mt19937 rng(11);
    for (int round = 0; round < 40; ++round) {
        const int n = 60;
        const auto preds = randomDag(rng, n, 2 + round % 20, 3);
        const Reachability r(preds);
        const auto c = closureOf(preds);
        std::vector<int> tasks;
        for (int i = 0, m = 1 + round % 4; i < m; ++i)
            tasks.push_back(std::uniform_int_distribution<int>(0, n - 1)(rng));
        Reachability::Frontier f;
        r.commonAncestors(tasks, f);
        for (int x = 0; x < n; ++x) {
            bool all = true;
            for (int t : tasks)
                all = all && c[static_cast<size_t>(t)][static_cast<size_t>(x)];
            ASSERT_EQ(r.within(f, x), all) << "round " << round << " task " << x;
        }
        r.commonAncestors({}, f); // no constraint: every Task
        for (int x = 0; x < n; ++x)
            ASSERT_TRUE(r.within(f, x));
        r.commonAncestors({n + 5}, f); // an unknown Task: none
        for (int x = 0; x < n; ++x)
            ASSERT_FALSE(r.within(f, x));
    }
}

TEST(Reachability, CoresInProgramOrderNeedOneChainEach) {
    // 8 cores, each running its Tasks in order, every Task also waiting on one Task of another
    // core: the chains are the cores, so memory is Tasks x 8, not Tasks x Tasks.
    const int cores = 8, perCore = 500;
    std::vector<std::vector<int>> preds(static_cast<size_t>(cores * perCore));
    for (int i = cores; i < cores * perCore; ++i) {
        preds[static_cast<size_t>(i)].push_back(i - cores);     // same core, previous Task
        preds[static_cast<size_t>(i)].push_back(i - cores - 3 >= 0 ? i - cores - 3 : 0); // another core
    }
    const Reachability r(preds);
    ASSERT_TRUE(r.valid());
    EXPECT_EQ(r.chains(), 8u);
    EXPECT_TRUE(r.before(0, cores * perCore - 1));
    EXPECT_FALSE(r.before(cores * perCore - 1, 0));
    EXPECT_FALSE(r.ordered(cores * perCore - 1, cores * perCore - 2));
}

TEST(Reachability, ThousandsOfUnorderedBranchesKeepClocksSmall) {
    // 20,000 Tasks no dependency orders (a wide graph's branches: a chain each), summed by a
    // binary tree of Tasks. A clock listing every chain would hold about 600 million entries
    // (gigabytes); one listing the chains with ancestors holds leaves x tree depth.
    const int leaves = 20000;
    std::vector<std::vector<int>> preds(static_cast<size_t>(leaves));
    std::vector<int> level(static_cast<size_t>(leaves));
    std::iota(level.begin(), level.end(), 0);
    while (level.size() > 1) {
        std::vector<int> next;
        for (size_t i = 0; i + 1 < level.size(); i += 2) {
            next.push_back(static_cast<int>(preds.size()));
            preds.push_back({level[i], level[i + 1]});
        }
        if (level.size() % 2)
            next.push_back(level.back());
        level = std::move(next);
    }
    const Reachability r(preds);
    ASSERT_TRUE(r.valid());
    EXPECT_EQ(r.chains(), static_cast<size_t>(leaves));
    EXPECT_LT(r.clockEntries(), static_cast<size_t>(leaves) * 20);
    const int root = static_cast<int>(preds.size()) - 1;
    for (int leaf : {0, 1, 4097, leaves - 1})
        EXPECT_TRUE(r.before(leaf, root)) << leaf;
    EXPECT_FALSE(r.ordered(0, 1));
    EXPECT_TRUE(r.before(0, leaves));   // the first sum reads leaves 0 and 1
    EXPECT_FALSE(r.before(2, leaves));  // but not leaf 2
    Reachability::Frontier f;
    r.commonAncestors({leaves, leaves + 1}, f); // sums of {0, 1} and {2, 3}: nothing in common
    for (int x = 0; x < leaves; ++x)
        ASSERT_FALSE(r.within(f, x)) << x;
    r.commonAncestors({root}, f);
    for (int x = 0; x < root; ++x)
        ASSERT_TRUE(r.within(f, x)) << x;
}

TEST(Reachability, ClocksPastTheLimitAreRefusedNotAllocated) {
    // 2,000 unordered Tasks, one that waits for all of them, and 2,000 that each wait for that
    // one (a fan-out no chain covers): every one of the last 2,000 has ancestors on 2,001
    // chains, about 4 million entries in all.
    const int wide = 2000;
    std::vector<std::vector<int>> preds(static_cast<size_t>(wide));
    std::vector<int> all(static_cast<size_t>(wide));
    std::iota(all.begin(), all.end(), 0);
    preds.push_back(all);
    for (int i = 0; i < wide; ++i)
        preds.push_back({wide});
    const Reachability fits(preds);
    ASSERT_TRUE(fits.valid()) << fits.why();
    EXPECT_FALSE(fits.tooLarge());
    EXPECT_GT(fits.clockEntries(), size_t{4'000'000});
    EXPECT_TRUE(fits.before(5, 2 * wide));
    EXPECT_FALSE(fits.ordered(wide + 1, wide + 2));

    const Reachability capped(preds, 1'000'000);
    EXPECT_FALSE(capped.valid());
    EXPECT_TRUE(capped.tooLarge());
    EXPECT_NE(capped.why().find("too large to check"), std::string::npos) << capped.why();
    EXPECT_NE(capped.why().find("1000000 entries"), std::string::npos) << capped.why();
    EXPECT_EQ(capped.clockEntries(), 0u); // given back, not kept
    EXPECT_FALSE(capped.before(5, 2 * wide)); // no answers from a partial order

    const Reachability backwards(std::vector<std::vector<int>>{{}, {2}, {}});
    EXPECT_FALSE(backwards.tooLarge());
    EXPECT_EQ(backwards.why(), "Task 1 depends on Task 2, which does not come before it");
}

TEST(Reachability, APredecessorThatDoesNotComeFirstIsInvalid) {
    using Preds = std::vector<std::vector<int>>;
    EXPECT_FALSE(Reachability(Preds{{}, {1}}).valid());
    EXPECT_FALSE(Reachability(Preds{{}, {2}, {}}).valid());
    EXPECT_FALSE(Reachability(Preds{{}, {-1}}).valid());
    EXPECT_TRUE(Reachability(Preds{{}, {0}, {0, 1}}).valid());
}
