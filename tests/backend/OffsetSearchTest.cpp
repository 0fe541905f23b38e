// planOffsets' search stage (core/backend/OffsetSearch.cpp): against brute force on small random
// problems, on instances whose optimum is known by construction, and on the shared MiniMalloc
// instances (validity, never worse than the heuristics, deterministic).
#include "core/backend/MemoryPlanner.h"
#include "core/backend/OffsetSearch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>
#include <set>

using namespace sextant;
using namespace sextant::backend;

namespace {

/// The least peak over every order of first-fit placement (every plan can be pushed down into
/// the first-fit plan of its own address order, so this is the optimum).
uint64_t bruteForceOptimum(const OffsetProblem& p, uint64_t align = 1) {
    const auto up = [align](uint64_t v) { return (v + align - 1) / align * align; };
    const size_t n = p.sizes.size();
    std::vector<int> order(n);
    std::iota(order.begin(), order.end(), 0);
    uint64_t best = UINT64_MAX;
    do {
        std::vector<uint64_t> off(n, 0);
        std::vector<char> placed(n, 0);
        uint64_t peak = 0;
        for (int i : order) {
            std::vector<std::pair<uint64_t, uint64_t>> busy;
            for (int j : p.conflicts[i])
                if (placed[j])
                    busy.emplace_back(off[j], off[j] + p.sizes[j]);
            std::sort(busy.begin(), busy.end());
            uint64_t at = 0;
            for (auto [b, e] : busy) {
                if (b >= at + p.sizes[i])
                    break;
                at = std::max(at, up(e));
            }
            off[i] = at;
            placed[i] = 1;
            peak = std::max(peak, at + p.sizes[i]);
        }
        best = std::min(best, peak);
    } while (std::next_permutation(order.begin(), order.end()));
    return best;
}

std::vector<IntervalBuffer> randomIntervals(std::mt19937& rng, int n) {
    std::uniform_int_distribution<int> start(0, 8), len(1, 5), size(1, 12);
    std::vector<IntervalBuffer> b;
    for (int i = 0; i < n; ++i) {
        const uint64_t lo = static_cast<uint64_t>(start(rng));
        b.push_back({std::to_string(i), lo, lo + static_cast<uint64_t>(len(rng)), static_cast<uint64_t>(size(rng))});
    }
    return b;
}

/// A program's DRAM buffers: besides those whose lifetimes meet, about a third of the other
/// pairs conflict too (their Tasks are not ordered). Each buffer's list ends sorted.
void addConflictsBeyondLifetimes(OffsetProblem& p, std::mt19937& rng) {
    const size_t n = p.sizes.size();
    for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n; ++j)
            if (std::find(p.conflicts[i].begin(), p.conflicts[i].end(), static_cast<int>(j)) == p.conflicts[i].end() &&
                rng() % 3 == 0) {
                p.conflicts[i].push_back(static_cast<int>(j));
                p.conflicts[j].push_back(static_cast<int>(i));
            }
    for (auto& c : p.conflicts)
        std::sort(c.begin(), c.end());
}

/// A rectangle of time x address space, [t0, t1) x [o0, o1).
struct Rect {
    uint64_t t0, t1, o0, o1;
};

/// A W x T rectangle cut into `pieces` rectangles at random (each cut across time or across
/// addresses, the latter at multiples of `grain`): a problem whose optimum is W = its max-live,
/// with no slack anywhere. The pieces' addresses are a plan at that optimum.
std::vector<Rect> sliceRectangle(std::mt19937& rng, size_t pieces, uint64_t W, uint64_t T, uint64_t grain = 1) {
    std::vector<Rect> rects{{0, T, 0, W}};
    while (rects.size() < pieces) {
        const size_t i = std::uniform_int_distribution<size_t>(0, rects.size() - 1)(rng);
        Rect r = rects[i];
        const bool acrossTime = rng() % 2 == 0;
        if (acrossTime && r.t1 - r.t0 > 1) {
            const uint64_t c = std::uniform_int_distribution<uint64_t>(r.t0 + 1, r.t1 - 1)(rng);
            rects[i] = {r.t0, c, r.o0, r.o1};
            rects.push_back({c, r.t1, r.o0, r.o1});
        } else if (!acrossTime && r.o1 - r.o0 > grain) {
            const uint64_t c = r.o0 + grain * std::uniform_int_distribution<uint64_t>(1, (r.o1 - r.o0) / grain - 1)(rng);
            rects[i] = {r.t0, r.t1, r.o0, c};
            rects.push_back({r.t0, r.t1, c, r.o1});
        }
    }
    std::shuffle(rects.begin(), rects.end(), rng);
    return rects;
}

/// The pieces of sliceRectangle as buffers.
std::vector<IntervalBuffer> asBuffers(const std::vector<Rect>& rects) {
    std::vector<IntervalBuffer> b;
    for (size_t i = 0; i < rects.size(); ++i)
        b.push_back({std::to_string(i), rects[i].t0, rects[i].t1, rects[i].o1 - rects[i].o0});
    return b;
}

std::vector<IntervalBuffer> slicedRectangle(std::mt19937& rng, size_t pieces, uint64_t W, uint64_t T) {
    return asBuffers(sliceRectangle(rng, pieces, W, T));
}

} // namespace

TEST(OffsetSearch, MatchesBruteForceOnSmallRandomProblems) {
    std::mt19937 rng(20261201);
    int provedOptimal = 0;
    for (int trial = 0; trial < 300; ++trial) {
        const int n = 3 + trial % 5; // 3..7 buffers: 5040 orders at most
        std::vector<IntervalBuffer> buffers = randomIntervals(rng, n);
        OffsetProblem p = problemFromIntervals(buffers);
        const uint64_t optimum = bruteForceOptimum(p);
        OffsetPlan plan = planOffsets(p);
        ASSERT_TRUE(checkOffsetPlan(p, plan).ok()) << "trial " << trial;
        EXPECT_EQ(plan.peak, optimum) << "trial " << trial;
        EXPECT_LE(plan.lowerBound, optimum) << "trial " << trial << ": a lower bound above the optimum";
        // Small problems are searched to the end: the optimum is proven.
        EXPECT_TRUE(plan.optimal) << "trial " << trial;
        provedOptimal += plan.optimal;
    }
    EXPECT_EQ(provedOptimal, 300);
}

TEST(OffsetSearch, MatchesBruteForceWithConflictsBeyondTheLifetimes) {
    // A program's DRAM buffers: those whose lifetimes meet conflict, and so do some that do not
    // (their Tasks are not ordered). The search must honour both and still find the optimum.
    std::mt19937 rng(20261204);
    int searched = 0;
    for (int trial = 0; trial < 300; ++trial) {
        const int n = 3 + trial % 5;
        std::vector<IntervalBuffer> buffers = randomIntervals(rng, n);
        OffsetProblem p = problemFromIntervals(buffers);
        addConflictsBeyondLifetimes(p, rng);
        const uint64_t optimum = bruteForceOptimum(p);
        OffsetPlan plan = planOffsets(p);
        ASSERT_TRUE(checkOffsetPlan(p, plan).ok()) << "trial " << trial;
        EXPECT_EQ(plan.peak, optimum) << "trial " << trial;
        EXPECT_LE(plan.lowerBound, optimum) << "trial " << trial;
        EXPECT_TRUE(plan.optimal) << "trial " << trial << ": small problems are searched to the end";
        searched += plan.heuristic == "search" || plan.heuristic == "reorder";
    }
    EXPECT_GT(searched, 0) << "the heuristics found every optimum: neither other orders nor the search were needed";
}

TEST(OffsetSearch, PacksSlicedRectanglesWithoutWaste) {
    // Greedy heuristics leave gaps in these; the search looks for the tiling (peak = max-live).
    std::mt19937 rng(7);
    for (int trial = 0; trial < 12; ++trial) {
        std::vector<IntervalBuffer> buffers = slicedRectangle(rng, 40 + 10 * static_cast<size_t>(trial), 4096, 64);
        OffsetProblem p = problemFromIntervals(buffers);
        OffsetPlan plan = planOffsets(p);
        OffsetPlan greedy = planOffsets(p, OffsetSearchOptions{.steps = 0});
        ASSERT_TRUE(checkOffsetPlan(p, plan).ok()) << "trial " << trial;
        EXPECT_EQ(maxLiveBytes(buffers), 4096u);
        std::printf("sliced rectangle %2d: %3zu buffers, heuristics %.3fx, search %.3fx%s\n", trial, buffers.size(),
                    double(greedy.peak) / 4096.0, double(plan.peak) / 4096.0, plan.optimal ? " (optimal)" : "");
        EXPECT_LE(plan.peak, greedy.peak) << "trial " << trial;
        // What the search does today: up to 100 buffers it finds the tiling, beyond it comes
        // within 5% (150 buffers: 1.031x with the default steps).
        if (buffers.size() <= 100) {
            EXPECT_EQ(plan.peak, 4096u) << "trial " << trial << " (" << plan.heuristic << ")";
            EXPECT_TRUE(plan.optimal) << "trial " << trial;
        } else {
            EXPECT_LE(plan.peak, 4096u * 105 / 100) << "trial " << trial;
        }
    }
}

TEST(OffsetSearch, PacksTilingsWhoseConflictsOutrunTheirLifetimes) {
    // A program's DRAM buffers conflict wherever their Tasks are not ordered, also when their
    // estimated lifetimes do not meet. Planted here: a sliced rectangle (a tiling at max-live)
    // where a third of the pairs that lie apart in time and in its address space conflict too.
    // The tiling stays a plan, so the optimum is still its width. The section bounds see only
    // the lifetimes; other orders of placement find what the search misses (PaddleOCR det's
    // arena, Compiler.DramArenaOfPaddleOcrDetIsSearchedDownToItsBound).
    std::mt19937 rng(20261208);
    int reordered = 0, searched = 0, optimal = 0;
    for (int trial = 0; trial < 12; ++trial) {
        const std::vector<Rect> rects = sliceRectangle(rng, 30 + 2 * static_cast<size_t>(trial), 4096, 64, 64);
        const std::vector<IntervalBuffer> buffers = asBuffers(rects);
        OffsetProblem p = problemFromIntervals(buffers, 64);
        const size_t n = rects.size();
        for (size_t i = 0; i < n; ++i)
            for (size_t j = i + 1; j < n; ++j) {
                const bool apartInTime = rects[i].t1 <= rects[j].t0 || rects[j].t1 <= rects[i].t0;
                const bool apartInSpace = rects[i].o1 <= rects[j].o0 || rects[j].o1 <= rects[i].o0;
                if (apartInTime && apartInSpace && rng() % 3 == 0) {
                    p.conflicts[i].push_back(static_cast<int>(j));
                    p.conflicts[j].push_back(static_cast<int>(i));
                }
            }
        for (auto& c : p.conflicts)
            std::sort(c.begin(), c.end());
        OffsetPlan planted;
        planted.peak = 4096;
        for (const Rect& r : rects)
            planted.offsets.push_back(r.o0);
        ASSERT_TRUE(checkOffsetPlan(p, planted).ok()) << "trial " << trial << ": the tiling is a plan";
        const OffsetSearchOptions dram{.steps = kDramSearchSteps}; // the compiler's budget for its arena
        const OffsetPlan plan = planOffsets(p, dram);
        std::printf("tiling with conflicts %2d: %zu buffers, %.4fx (%s)\n", trial, n, plan.peak / 4096.0,
                    plan.heuristic.c_str());
        ASSERT_TRUE(checkOffsetPlan(p, plan).ok()) << "trial " << trial;
        EXPECT_EQ(plan.lowerBound, 4096u) << "trial " << trial;
        EXPECT_EQ(planOffsets(p, dram).offsets, plan.offsets) << "trial " << trial << ": the same plan every time";
        // What the two stages do today: 11 of the 12 at the optimum, the other (trial 7) within
        // 5 % (1.047x; the search alone leaves it at 1.125x).
        EXPECT_LE(plan.peak, 4096u * 105 / 100) << "trial " << trial << " (" << plan.heuristic << ")";
        optimal += plan.optimal;
        reordered += plan.heuristic == "reorder";
        searched += plan.heuristic == "search";
    }
    EXPECT_GE(optimal, 11);
    EXPECT_GT(reordered, 0) << "no trial needed another order of placement";
    EXPECT_GT(searched, 0) << "the search, going on from the orders' best, never found a lower peak";
}

TEST(OffsetSearch, AlignmentAndCapacity) {
    std::vector<IntervalBuffer> b = {{"a", 0, 4, 100}, {"b", 2, 6, 50}, {"c", 5, 8, 100}, {"d", 0, 8, 10}};
    OffsetProblem p = problemFromIntervals(b, 64);
    OffsetPlan plan = planOffsets(p);
    ASSERT_TRUE(checkOffsetPlan(p, plan).ok());
    for (uint64_t o : plan.offsets)
        EXPECT_EQ(o % 64, 0u);
    // a, b and d are live together, each starting on a 64-byte boundary: a at 0, b at 128 (or b
    // at 0, a at 64), then d at 192 ends at 202; every other stacking ends higher.
    EXPECT_EQ(plan.peak, 202u);
    EXPECT_TRUE(plan.optimal == false || plan.lowerBound <= 202u);
    OffsetSearchOptions tight;
    tight.capacity = 200;
    OffsetPlan over = planOffsets(p, tight);
    EXPECT_FALSE(over.fitsCapacity);
    EXPECT_GT(over.peak, 200u);
    tight.capacity = 202;
    EXPECT_TRUE(planOffsets(p, tight).fitsCapacity);
}

TEST(OffsetSearch, SamePlanOnOneThreadAsOnTwo) {
    // Two runs searching at a time, or one: the plan, the bound and the steps counted are those of
    // the slices taken one after another either way.
    std::mt19937 rng(11);
    for (int trial = 0; trial < 3; ++trial) {
        std::vector<IntervalBuffer> buffers = slicedRectangle(rng, 160 + 20 * static_cast<size_t>(trial), 4096, 64);
        OffsetProblem p = problemFromIntervals(buffers);
        OffsetSearchOptions one{.steps = 40'000'000, .threads = 1};
        OffsetSearchOptions two{.steps = 40'000'000, .threads = 2};
        const OffsetPlan a = planOffsets(p, one), b = planOffsets(p, two);
        ASSERT_TRUE(checkOffsetPlan(p, b).ok()) << "trial " << trial;
        EXPECT_EQ(a.offsets, b.offsets) << "trial " << trial;
        EXPECT_EQ(a.searchSteps, b.searchSteps) << "trial " << trial;
        EXPECT_EQ(a.lowerBound, b.lowerBound) << "trial " << trial;
        EXPECT_GT(a.searchSteps, 0u) << "trial " << trial << ": the search did not run";
    }
}

TEST(OffsetSearch, HeuristicsOnTwoThreadsChooseAsOnOne) {
    // 1,500 long-lived buffers (about 400,000 overlapping pairs, enough for the greedy passes to
    // run two at a time): the same plan, the same ordering named, with one thread or two.
    std::mt19937 rng(5);
    std::uniform_int_distribution<uint64_t> start(0, 3000), len(500, 2500), size(1, 64);
    std::vector<IntervalBuffer> buffers;
    for (int i = 0; i < 1500; ++i) {
        const uint64_t lo = start(rng);
        buffers.push_back({std::to_string(i), lo, lo + len(rng), size(rng) * 64});
    }
    const OffsetProblem p = problemFromIntervals(buffers);
    size_t entries = 0;
    for (const std::vector<int>& c : p.conflicts)
        entries += c.size();
    ASSERT_GT(entries, size_t{1} << 18) << "too few pairs to take the second thread";
    const OffsetPlan a = planOffsets(p, {.steps = 0, .threads = 1});
    const OffsetPlan b = planOffsets(p, {.steps = 0, .threads = 2});
    ASSERT_TRUE(checkOffsetPlan(p, b).ok());
    EXPECT_EQ(a.offsets, b.offsets);
    EXPECT_EQ(a.heuristic, b.heuristic);
    EXPECT_EQ(a.peak, b.peak);
}

TEST(OffsetSearch, SharedInstancesNoWorseThanHeuristicsAndDeterministic) {
    const std::string dir = std::string(SEXTANT_SHARED_DIR) + "/memplan";
    if (!std::filesystem::exists(dir))
        GTEST_SKIP() << dir << " not found: skipping the memory planning instances";
    int checked = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() != ".csv")
            continue;
        Expected<std::vector<IntervalBuffer>> buffers = readIntervalCsv(entry.path().string());
        ASSERT_TRUE(buffers.ok()) << buffers.error().message;
        OffsetProblem p = problemFromIntervals(*buffers);
        OffsetSearchOptions few;
        few.steps = 30'000'000; // a fifth of the default: keeps the suite quick
        OffsetPlan searched = planOffsets(p, few);
        OffsetPlan heuristic = planOffsets(p, OffsetSearchOptions{.steps = 0});
        ASSERT_TRUE(checkOffsetPlan(p, searched).ok()) << entry.path();
        EXPECT_LE(searched.peak, heuristic.peak) << entry.path();
        EXPECT_EQ(searched.lowerBound, maxLiveBytes(*buffers)) << entry.path();
        EXPECT_EQ(planOffsets(p, few).offsets, searched.offsets) << entry.path() << ": not deterministic";
        std::printf("%-20s max-live %8llu heuristics %.3fx search %.3fx%s\n", entry.path().filename().c_str(),
                    static_cast<unsigned long long>(searched.lowerBound),
                    double(heuristic.peak) / double(searched.lowerBound),
                    double(searched.peak) / double(searched.lowerBound), searched.optimal ? " (optimal)" : "");
        ++checked;
    }
    EXPECT_GE(checked, 1);
}

// The figures BENCHMARKS.md reports for the default budget, as a user of `plan-offsets` would see
// them: the instances that pack at max-live are packed there and proven optimal, and no instance
// is left far above its bound.
TEST(OffsetSearch, SharedInstancesAtTheDefaultBudget) {
    const std::string dir = std::string(SEXTANT_SHARED_DIR) + "/memplan";
    if (!std::filesystem::exists(dir))
        GTEST_SKIP() << dir << " not found: skipping the memory planning instances";
    const std::set<std::string> packTight = {"A", "B", "C", "E", "F", "example"};
    int checked = 0;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
        if (entry.path().extension() != ".csv")
            continue;
        Expected<std::vector<IntervalBuffer>> buffers = readIntervalCsv(entry.path().string());
        ASSERT_TRUE(buffers.ok()) << buffers.error().message;
        const OffsetProblem p = problemFromIntervals(*buffers);
        const OffsetPlan plan = planOffsets(p);
        ASSERT_TRUE(checkOffsetPlan(p, plan).ok()) << entry.path();
        EXPECT_LE(plan.searchSteps, OffsetSearchOptions::kDefaultSearchSteps + 100'000) << entry.path();
        const std::string key = entry.path().filename().string().substr(0, entry.path().filename().string().find('.'));
        if (packTight.count(key)) {
            EXPECT_EQ(plan.peak, maxLiveBytes(*buffers)) << entry.path();
            EXPECT_TRUE(plan.optimal) << entry.path();
        }
        EXPECT_LE(double(plan.peak), 1.08 * double(maxLiveBytes(*buffers))) << entry.path();
        ++checked;
    }
    EXPECT_GE(checked, 1);
}

// A capacity the heuristics miss is searched first: D's heuristics need 1.29x its max-live,
// above the 1 MiB D was made for; asked for 1 MiB (`plan-offsets D.csv --capacity 1048576`, or
// a core's SRAM) the search probes there first and finds a plan.
TEST(OffsetSearch, ACapacityTheHeuristicsMissIsSearchedFirst) {
    const std::string path = std::string(SEXTANT_SHARED_DIR) + "/memplan/D.1048576.csv";
    if (!std::filesystem::exists(path))
        GTEST_SKIP() << path << " not found: skipping the capacity search on D";
    Expected<std::vector<IntervalBuffer>> buffers = readIntervalCsv(path);
    ASSERT_TRUE(buffers.ok()) << buffers.error().message;
    const OffsetProblem p = problemFromIntervals(*buffers);
    OffsetSearchOptions fit;
    fit.capacity = 1048576;
    const OffsetPlan plan = planOffsets(p, fit);
    ASSERT_TRUE(checkOffsetPlan(p, plan).ok());
    EXPECT_TRUE(plan.fitsCapacity);
    EXPECT_LE(plan.peak, 1048576u);
    EXPECT_GT(planOffsets(p, OffsetSearchOptions{.steps = 0}).peak, 1048576u) << "the heuristics fit already";
}

namespace {

/// The packer's form of `buffers`: one section per unit of time (their times are small).
std::vector<SectionSpan> unitSections(const std::vector<IntervalBuffer>& buffers) {
    std::vector<SectionSpan> spans;
    for (const IntervalBuffer& b : buffers)
        spans.push_back(SectionSpan{static_cast<int>(b.lower), static_cast<int>(b.upper), b.size, b.upper - b.lower});
    return spans;
}

/// A packer's offsets as a plan of `p`, for the independent checker.
OffsetPlan planOf(const OffsetProblem& p, const std::vector<uint64_t>& offsets) {
    OffsetPlan plan;
    plan.offsets = offsets;
    for (size_t i = 0; i < offsets.size(); ++i)
        plan.peak = std::max(plan.peak, offsets[i] + p.sizes[i]);
    return plan;
}

/// Every order of the packer (with and without ranking parts again) finds a plan within
/// `optimum`, valid and on the alignment, and proves that none fits one byte below.
void expectEveryOrderFindsTheOptimum(const IntervalPacker& packer, const OffsetProblem& p, uint64_t optimum,
                                     uint64_t align, int trial) {
    for (int preorder = 0; preorder < IntervalPacker::kPreorders; ++preorder)
        for (bool rerank : {false, true}) {
            IntervalPacker run = packer;
            uint64_t steps = 0;
            std::vector<uint64_t> offsets;
            ASSERT_EQ(run.fits(optimum, preorder, rerank, 50'000'000, steps, offsets), SearchVerdict::Found)
                << "trial " << trial << ", order " << preorder << (rerank ? " reranked" : "");
            const OffsetPlan plan = planOf(p, offsets);
            EXPECT_TRUE(checkOffsetPlan(p, plan).ok()) << "trial " << trial;
            EXPECT_LE(plan.peak, optimum) << "trial " << trial;
            for (uint64_t o : offsets)
                EXPECT_EQ(o % align, 0u) << "trial " << trial;
            EXPECT_EQ(run.fits(optimum - 1, preorder, rerank, 50'000'000, steps, offsets), SearchVerdict::Infeasible)
                << "trial " << trial << ", order " << preorder << (rerank ? " reranked" : "");
        }
}

} // namespace

// The pruning must never cut off the last plan: at the optimum every order of the search (with
// and without ranking parts again) finds a plan, and one byte below it proves there is none.
// planOffsets' heuristics reach most of these optima on their own, so the packer is driven
// directly here, where every one of its checks is on the path.
TEST(OffsetSearch, EveryOrderFindsTheOptimumAndProvesTheByteBelow) {
    std::mt19937 rng(20261206);
    int withExtraConflicts = 0;
    for (int trial = 0; trial < 240; ++trial) {
        const int n = 4 + trial % 4; // 4..7 buffers
        std::vector<IntervalBuffer> buffers = randomIntervals(rng, n);
        OffsetProblem p = problemFromIntervals(buffers);
        const bool extra = trial % 3 == 2; // conflicts beyond the lifetimes, as a program's DRAM has
        if (extra) {
            addConflictsBeyondLifetimes(p, rng);
            ++withExtraConflicts;
        }
        const uint64_t optimum = bruteForceOptimum(p);
        const std::vector<SectionSpan> spans = unitSections(buffers);
        const IntervalPacker packer = extra ? IntervalPacker(spans, 16, 1, p.conflicts) : IntervalPacker(spans, 16, 1);
        expectEveryOrderFindsTheOptimum(packer, p, optimum, 1, trial);
        if (::testing::Test::HasFatalFailure())
            return;
    }
    EXPECT_GT(withExtraConflicts, 0);
}

// Buffers alive over the same time with the same neighbours (a Task's tiles, the pieces of an
// address cut) are searched in one stacking order only (IntervalPacker::restsOnAlike). Drawn
// here from three spans, so most buffers have such twins of other sizes: every order still
// finds the optimum and proves the byte below, also with an alignment that not every size is a
// multiple of (those may not trade places: the gap above one depends on its size). With 4-byte
// offsets, sizes 7, 8, 9 and 10 live together fit in 37 bytes only stacked as 8, 7, 10, 9; the
// section bounds once stacked them in one fixed order with the alignment and proved 37
// impossible.
TEST(OffsetSearch, StacksOfBuffersAliveTogetherKeepTheOptimum) {
    std::mt19937 rng(20261207);
    for (int trial = 0; trial < 240; ++trial) {
        const int n = 4 + trial % 4; // 4..7 buffers
        const uint64_t align = trial % 2 ? 4 : 1;
        std::uniform_int_distribution<int> start(0, 6), len(1, 5), size(1, 12), pick(0, 2);
        std::pair<uint64_t, uint64_t> pool[3];
        for (auto& span : pool) {
            span.first = static_cast<uint64_t>(start(rng));
            span.second = span.first + static_cast<uint64_t>(len(rng));
        }
        std::vector<IntervalBuffer> buffers;
        for (int i = 0; i < n; ++i) {
            const auto [lo, hi] = pool[pick(rng)];
            buffers.push_back({std::to_string(i), lo, hi, static_cast<uint64_t>(size(rng))});
        }
        const OffsetProblem p = problemFromIntervals(buffers, align);
        const uint64_t optimum = bruteForceOptimum(p, align);
        const IntervalPacker packer(unitSections(buffers), 16, align);
        expectEveryOrderFindsTheOptimum(packer, p, optimum, align, trial);
        if (::testing::Test::HasFatalFailure())
            return;
    }
}

// Tilings leave no slack at all: one wrong cut and an order finds nothing at the optimum.
TEST(OffsetSearch, TooManyToSearchStillBoundedByBuffersThatAllConflict) {
    // A wide program's DRAM: 300 branch outputs no Task order separates (they pairwise conflict,
    // though their estimated lifetimes follow each other), among 4,700 short-lived buffers in a
    // chain. Too many buffers to search; the peak is the 300 together, and the bound must say so
    // (the lifetimes alone would bound it by one branch output).
    OffsetProblem p;
    const int wide = 300, chain = 4700, n = wide + chain;
    p.sizes.assign(n, 1024);
    p.conflicts.resize(n);
    p.lifetimes.resize(n);
    for (int i = 0; i < n; ++i)
        p.lifetimes[static_cast<size_t>(i)] = {static_cast<uint64_t>(i), static_cast<uint64_t>(i) + 1};
    for (int i = 0; i < wide; ++i)
        for (int j = 0; j < wide; ++j)
            if (i != j)
                p.conflicts[static_cast<size_t>(i)].push_back(j);
    for (int i = wide; i + 1 < n; ++i) { // each chain buffer conflicts with the next
        p.conflicts[static_cast<size_t>(i)].push_back(i + 1);
        p.conflicts[static_cast<size_t>(i) + 1].push_back(i);
    }
    for (auto& c : p.conflicts)
        std::sort(c.begin(), c.end());
    ASSERT_GT(static_cast<size_t>(n), kMaxSearchBuffers);
    const OffsetPlan plan = planOffsets(p);
    ASSERT_TRUE(checkOffsetPlan(p, plan).ok());
    EXPECT_EQ(plan.peak, uint64_t{wide} * 1024);
    EXPECT_EQ(plan.lowerBound, uint64_t{wide} * 1024);
    EXPECT_TRUE(plan.optimal);
}

TEST(OffsetSearch, EveryOrderFindsTheTilingOfASlicedRectangle) {
    std::mt19937 rng(6122026);
    for (int trial = 0; trial < 200; ++trial) {
        const size_t pieces = 8 + static_cast<size_t>(trial % 24);
        std::vector<IntervalBuffer> buffers = slicedRectangle(rng, pieces, 64, 16);
        const OffsetProblem p = problemFromIntervals(buffers);
        const IntervalPacker packer(unitSections(buffers), 16, 1);
        for (int preorder = 0; preorder < IntervalPacker::kPreorders; ++preorder)
            for (bool rerank : {false, true}) {
                IntervalPacker run = packer;
                uint64_t steps = 0;
                std::vector<uint64_t> offsets;
                ASSERT_EQ(run.fits(64, preorder, rerank, 200'000'000, steps, offsets), SearchVerdict::Found)
                    << "trial " << trial << ", order " << preorder << (rerank ? " reranked" : "");
                const OffsetPlan plan = planOf(p, offsets);
                EXPECT_TRUE(checkOffsetPlan(p, plan).ok()) << "trial " << trial;
                EXPECT_EQ(plan.peak, 64u) << "trial " << trial;
            }
    }
}

// Interval problems with more overlapping pairs than kMaxListedPairs are planned and checked by
// sweeps over time (MemoryPlanner.h: overlapsOnly), without pair lists.
TEST(OffsetSweep, CountsOverlappingPairsAsThePairListsDo) {
    std::mt19937 rng(11);
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<IntervalBuffer> buffers = randomIntervals(rng, 1 + trial % 12);
        buffers[0].size = trial % 3 == 0 ? 0 : buffers[0].size; // a buffer without bytes meets nothing
        const OffsetProblem listed = problemFromIntervals(buffers);
        uint64_t pairs = 0;
        for (size_t i = 0; i < listed.conflicts.size(); ++i)
            for (int j : listed.conflicts[i])
                pairs += static_cast<size_t>(j) > i && listed.sizes[i] > 0 && listed.sizes[j] > 0;
        EXPECT_EQ(overlappingPairs(listed.lifetimes, listed.sizes), pairs) << "trial " << trial;
        EXPECT_FALSE(listed.overlapsOnly);
        EXPECT_EQ(problemFromIntervals(buffers, 1, pairs).overlapsOnly, false) << "at the limit, listed";
        if (pairs > 0) {
            EXPECT_TRUE(problemFromIntervals(buffers, 1, pairs - 1).overlapsOnly) << "over the limit, not listed";
        }
    }
}

TEST(OffsetSweep, SweepPlansPassThePairByPairCheck) {
    std::mt19937 rng(12);
    for (int trial = 0; trial < 300; ++trial) {
        const uint64_t align = trial % 2 ? 4 : 1;
        const std::vector<IntervalBuffer> buffers = randomIntervals(rng, 2 + trial % 30);
        const OffsetProblem listed = problemFromIntervals(buffers, align);
        const OffsetProblem swept = problemFromIntervals(buffers, align, 0);
        ASSERT_EQ(swept.overlapsOnly, overlappingPairs(listed.lifetimes, listed.sizes) > 0);
        if (!swept.overlapsOnly)
            continue; // nothing overlaps: nothing to sweep
        EXPECT_TRUE(swept.conflicts.empty());
        const OffsetPlan plan = planOffsets(swept);
        EXPECT_EQ(plan.heuristic, "time-sweep/best-fit");
        ASSERT_TRUE(checkOffsetPlan(listed, plan).ok()) << "trial " << trial << ": "
                                                        << checkOffsetPlan(listed, plan).error().message;
        EXPECT_TRUE(checkOffsetPlan(swept, plan).ok()) << "trial " << trial;
        EXPECT_EQ(plan.lowerBound, maxLiveBytes(buffers)) << "trial " << trial;
        EXPECT_EQ(plan.optimal, plan.peak == plan.lowerBound);
        EXPECT_GE(plan.peak, plan.lowerBound);
        EXPECT_EQ(planOffsets(swept).offsets, plan.offsets) << "not deterministic";
    }
}

TEST(OffsetSweep, SweepCheckAgreesWithThePairByPairCheck) {
    // Random offsets, valid or not: both checks must say the same.
    std::mt19937 rng(13);
    std::uniform_int_distribution<int> offset(0, 24);
    int rejected = 0;
    for (int trial = 0; trial < 2000; ++trial) {
        const std::vector<IntervalBuffer> buffers = randomIntervals(rng, 2 + trial % 8);
        const OffsetProblem listed = problemFromIntervals(buffers);
        const OffsetProblem swept = problemFromIntervals(buffers, 1, 0);
        OffsetPlan plan;
        for (size_t i = 0; i < buffers.size(); ++i) {
            plan.offsets.push_back(static_cast<uint64_t>(offset(rng)));
            plan.peak = std::max(plan.peak, plan.offsets.back() + buffers[i].size);
        }
        const Status a = checkOffsetPlan(listed, plan), b = checkOffsetPlan(swept, plan);
        ASSERT_EQ(a.ok(), b.ok()) << "trial " << trial << ": " << (a.ok() ? b : a).error().message;
        rejected += !a.ok();
        if (!b.ok()) {
            EXPECT_NE(b.error().message.find("may be live together but overlap at"), std::string::npos);
        }
    }
    EXPECT_GT(rejected, 100) << "the trials must hold overlapping plans too";
    EXPECT_LT(rejected, 1900) << "and valid ones";
}

TEST(OffsetSweep, FiftyThousandBuffersAliveTogetherArePlannedWithoutPairLists) {
    // A window of 25,000 buffers alive at every moment slides over 50,000: 937 million
    // overlapping pairs (listed, 7.5 GB). Sizes of five kinds, in turn: the buffer that ends as
    // another starts is of its kind, and the range it gives back is the tightest fit.
    std::vector<IntervalBuffer> buffers;
    constexpr uint64_t kCount = 50'000, kAlive = kCount / 2;
    for (uint64_t i = 0; i < kCount; ++i)
        buffers.push_back({std::to_string(i), i, i + kAlive, 64 * (1 + i % 5)});
    const OffsetProblem p = problemFromIntervals(buffers, 64);
    ASSERT_TRUE(p.overlapsOnly);
    EXPECT_EQ(overlappingPairs(p.lifetimes, p.sizes), kCount * (kAlive - 1) - kAlive * (kAlive - 1) / 2);
    const OffsetPlan plan = planOffsets(p);
    ASSERT_TRUE(checkOffsetPlan(p, plan).ok()) << checkOffsetPlan(p, plan).error().message;
    EXPECT_EQ(plan.lowerBound, maxLiveBytes(buffers));
    EXPECT_EQ(plan.peak, plan.lowerBound);
    EXPECT_TRUE(plan.optimal);
    // And the check finds a buffer moved onto a neighbour.
    OffsetPlan moved = plan;
    moved.offsets[kCount / 3] = plan.offsets[kCount / 3 + 1];
    EXPECT_FALSE(checkOffsetPlan(p, moved).ok());
}

TEST(OffsetSweep, AWideProgramsSramProblemIsSweptBeforeAnyOrdering) {
    // A window of 1,000 buffers alive at every moment slides over 1,600 (about a million listed
    // pairs, as one core's SRAM in a program of a thousand unordered branches): each greedy
    // ordering's placement reads every pair, and the lowering plans such a core again for every
    // candidate it weighs. The sweep over time reaches max-live in O(n log n), so no ordering runs.
    std::vector<IntervalBuffer> buffers;
    constexpr uint64_t kCount = 1'600, kAlive = 1'000;
    for (uint64_t i = 0; i < kCount; ++i)
        buffers.push_back({std::to_string(i), i, i + kAlive, 64 * (1 + i % 5)});
    OffsetProblem p = problemFromIntervals(buffers, 64);
    ASSERT_FALSE(p.overlapsOnly);
    const OffsetPlan plan = planOffsets(p);
    ASSERT_TRUE(checkOffsetPlan(p, plan).ok());
    EXPECT_EQ(plan.heuristic, "time-sweep/best-fit");
    EXPECT_EQ(plan.peak, maxLiveBytes(buffers));
    EXPECT_TRUE(plan.optimal);
    // With conflicts beyond the lifetimes the sweep would not keep them apart: not taken.
    for (int i = 0; i < 50; ++i) {
        const int a = i, b = static_cast<int>(kCount) - 1 - i; // apart in time
        p.conflicts[static_cast<size_t>(a)].push_back(b);
        p.conflicts[static_cast<size_t>(b)].push_back(a);
    }
    const OffsetPlan beyond = planOffsets(p, OffsetSearchOptions{.steps = 0});
    ASSERT_TRUE(checkOffsetPlan(p, beyond).ok()) << checkOffsetPlan(p, beyond).error().message;
    EXPECT_NE(beyond.heuristic, "time-sweep/best-fit");
}
