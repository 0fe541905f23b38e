#include "core/backend/MemoryPlanner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>

using namespace sextant;
using namespace sextant::backend;

namespace {

std::string memplanDir() { return std::string(SEXTANT_SHARED_DIR) + "/memplan"; }

/// Reference greedy-by-size figures from SOURCE.txt ("A: 154 buffers, max-live 1048576, greedy 1374208").
std::map<std::string, std::pair<uint64_t, uint64_t>> referenceFigures() {
    std::map<std::string, std::pair<uint64_t, uint64_t>> out;
    std::ifstream in(memplanDir() + "/SOURCE.txt");
    std::regex row(R"(^\s*([A-Za-z0-9.]+): \d+ buffers, max-live\s+(\d+), greedy\s+(\d+))");
    std::string line;
    while (std::getline(in, line)) {
        std::smatch m;
        if (std::regex_search(line, m, row))
            out[m[1]] = {std::stoull(m[2]), std::stoull(m[3])};
    }
    return out;
}

} // namespace

TEST(MemoryPlanner, SharedInstancesArePlannedValidlyAndNoWorseThanGreedyBySize) {
    if (!std::filesystem::exists(memplanDir()))
        GTEST_SKIP() << memplanDir() << " not found: skipping memory planning instances";
    auto refs = referenceFigures();
    ASSERT_GE(refs.size(), 7u) << "SOURCE.txt reference figures not found";
    int checked = 0;
    for (const auto& entry : std::filesystem::directory_iterator(memplanDir())) {
        if (entry.path().extension() != ".csv")
            continue;
        std::string stem = entry.path().filename().string();
        std::string key = stem.substr(0, stem.find('.'));
        if (key == "example")
            key = "example.12";
        Expected<std::vector<IntervalBuffer>> buffers = readIntervalCsv(entry.path().string());
        ASSERT_TRUE(buffers.ok()) << buffers.error().message;
        OffsetProblem problem = problemFromIntervals(*buffers);
        OffsetPlan plan = planOffsets(problem);
        Status valid = checkOffsetPlan(problem, plan);
        EXPECT_TRUE(valid.ok()) << stem << ": " << (valid.ok() ? "" : valid.error().message);
        uint64_t maxLive = maxLiveBytes(*buffers);
        ASSERT_TRUE(refs.count(key)) << key;
        EXPECT_EQ(maxLive, refs[key].first) << stem;
        EXPECT_GE(plan.peak, maxLive) << stem;
        EXPECT_LE(plan.peak, refs[key].second) << stem << " peak " << plan.peak << " (" << plan.heuristic
                                               << ") worse than greedy-by-size " << refs[key].second;
        std::printf("%-16s max-live %8llu greedy %8llu ours %8llu (%.3fx, %s)\n", stem.c_str(),
                    static_cast<unsigned long long>(maxLive), static_cast<unsigned long long>(refs[key].second),
                    static_cast<unsigned long long>(plan.peak), double(plan.peak) / double(maxLive),
                    plan.heuristic.c_str());
        ++checked;
    }
    EXPECT_EQ(checked, 7);
}

TEST(MemoryPlanner, PisarchykLeeInstanceReachesItsOptimum) {
    // (first, last op, size) with inclusive op ranges; the optimum is 124 = max-live.
    std::vector<IntervalBuffer> b = {{"0", 0, 2, 32}, {"1", 1, 5, 28}, {"2", 2, 6, 36}, {"3", 3, 6, 16},
                                     {"4", 4, 6, 8},  {"5", 5, 8, 64}, {"6", 6, 9, 10}, {"7", 7, 9, 40}};
    OffsetProblem p = problemFromIntervals(b);
    OffsetPlan plan = planOffsets(p);
    ASSERT_TRUE(checkOffsetPlan(p, plan).ok());
    EXPECT_EQ(maxLiveBytes(b), 124u);
    EXPECT_EQ(plan.peak, 124u);
}

TEST(MemoryPlanner, ConflictListsHoldEveryMeetingPairOnceAndTheMeetingCheckTakesAnyOrder) {
    // Buffers listed out of time order, some meeting many others, one without bytes (listed: the
    // lists follow the lifetimes alone).
    std::vector<IntervalBuffer> b = {{"0", 5, 9, 8}, {"1", 0, 6, 4}, {"2", 2, 3, 16}, {"3", 8, 12, 8},
                                     {"4", 1, 10, 2}, {"5", 3, 4, 0}, {"6", 9, 11, 8}};
    const OffsetProblem p = problemFromIntervals(b);
    ASSERT_EQ(p.conflicts.size(), b.size());
    for (size_t i = 0; i < b.size(); ++i) {
        std::vector<int> expected;
        for (size_t j = 0; j < b.size(); ++j)
            if (j != i && b[i].lower < b[j].upper && b[j].lower < b[i].upper)
                expected.push_back(static_cast<int>(j));
        std::vector<int> listed = p.conflicts[i]; // in sweep order
        std::sort(listed.begin(), listed.end());
        EXPECT_EQ(listed, expected) << "buffer " << i; // each once
    }
    EXPECT_TRUE(meetingBuffersConflict(p.lifetimes, p.sizes, p.conflicts));
    std::vector<std::vector<int>> shuffled = p.conflicts;
    for (std::vector<int>& list : shuffled)
        std::reverse(list.begin(), list.end());
    shuffled[4].push_back(6); // a duplicate changes nothing
    EXPECT_TRUE(meetingBuffersConflict(p.lifetimes, p.sizes, shuffled));
    // Drop one meeting pair (4 and 6, both ways): max-live no longer bounds the plan.
    for (auto [x, y] : {std::pair{4, 6}, std::pair{6, 4}})
        std::erase(shuffled[static_cast<size_t>(x)], y);
    EXPECT_FALSE(meetingBuffersConflict(p.lifetimes, p.sizes, shuffled));
}

TEST(MemoryPlanner, PlansDoNotDependOnTheOrderOfConflictLists) {
    // 3,000 buffers, each alive for up to 150 of 3,000 steps, so that a buffer meets about 100
    // others, many of them placed before it: the placements gather and sort their ranges. With
    // every list reversed and rotated the plan must be the same, offset for offset.
    std::vector<IntervalBuffer> b;
    uint64_t seed = 12345;
    auto next = [&seed] {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        return seed >> 33;
    };
    for (int i = 0; i < 3000; ++i) {
        const uint64_t lower = next() % 3000, length = 1 + next() % 150;
        b.push_back({std::to_string(i), lower, lower + length, 64 * (1 + next() % 40)});
    }
    const OffsetProblem p = problemFromIntervals(b, 64);
    OffsetProblem shuffled = p;
    for (size_t i = 0; i < shuffled.conflicts.size(); ++i) {
        std::vector<int>& list = shuffled.conflicts[i];
        std::reverse(list.begin(), list.end());
        if (!list.empty())
            std::rotate(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(i % list.size()), list.end());
    }
    for (unsigned threads : {1u, 2u}) {
        const OffsetPlan a = planOffsets(p, OffsetSearchOptions{0, 0, threads});
        const OffsetPlan c = planOffsets(shuffled, OffsetSearchOptions{0, 0, threads});
        ASSERT_TRUE(checkOffsetPlan(p, a).ok());
        EXPECT_EQ(a.offsets, c.offsets);
        EXPECT_EQ(a.peak, c.peak);
        EXPECT_EQ(a.heuristic, c.heuristic);
        EXPECT_LE(a.peak, maxLiveBytes(b) * 11 / 10) << "a greedy plan within 10 % of max-live";
    }
}

TEST(MemoryPlanner, CheckerRejectsOverlappingLiveBuffers) {
    std::vector<IntervalBuffer> b = {{"a", 0, 4, 100}, {"b", 2, 6, 50}, {"c", 5, 8, 100}};
    OffsetProblem p = problemFromIntervals(b, 32);
    OffsetPlan plan = planOffsets(p);
    ASSERT_TRUE(checkOffsetPlan(p, plan).ok());
    EXPECT_EQ(plan.offsets[0] % 32, 0u);
    // a and c never live together: they may share; b must not touch either.
    EXPECT_EQ(plan.offsets[0], plan.offsets[2]);
    OffsetPlan bad = plan;
    bad.offsets[1] = bad.offsets[0];
    Status s = checkOffsetPlan(p, bad);
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("overlap"), std::string::npos);
}

TEST(MemoryPlanner, CsvErrorsNameTheFileAndLine) {
    std::string path = ::testing::TempDir() + "/bad_memplan.csv";
    {
        std::ofstream out(path);
        out << "id,lower,upper,size\n0,1,2,3\n1,x,2,3\n";
    }
    Expected<std::vector<IntervalBuffer>> r = readIntervalCsv(path);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find(path + ":3"), std::string::npos) << r.error().message;
    EXPECT_FALSE(readIntervalCsv(path + ".missing").ok());
    // A number with trailing text or a sign is not read as its leading digits (or wrapped).
    for (const char* cell : {"12abc", "1 5", "0x10", ""}) {
        {
            std::ofstream out(path);
            out << "id,lower,upper,size\n0,1,2,3\n1,1,2," << cell << "\n";
        }
        Expected<std::vector<IntervalBuffer>> bad = readIntervalCsv(path);
        ASSERT_FALSE(bad.ok()) << "'" << cell << "'";
        EXPECT_EQ(bad.error().message, path + ":3: size '" + cell + "' is not a number");
    }
    // Each kind of bad row names its line and what is wrong with it.
    const std::pair<const char*, const char*> rows[] = {
        {"1,1,2,-1", ":3: size '-1' is negative"},
        {"1,5,5,8", ":3: lower 5 is not below upper 5 (a lifetime is [lower, upper))"},
        {"1,6,5,8", ":3: lower 6 is not below upper 5 (a lifetime is [lower, upper))"},
        {"1,1,2", ":3: expected 4 fields, found 3"},
    };
    for (const auto& [row, message] : rows) {
        {
            std::ofstream out(path);
            out << "id,lower,upper,size\n0,1,2,3\n" << row << "\n";
        }
        Expected<std::vector<IntervalBuffer>> bad = readIntervalCsv(path);
        ASSERT_FALSE(bad.ok()) << row;
        EXPECT_EQ(bad.error().message, path + message);
    }
    {
        std::ofstream out(path);
        out << "id,from,upper,size\n0,1,2,3\n";
    }
    Expected<std::vector<IntervalBuffer>> noLower = readIntervalCsv(path);
    ASSERT_FALSE(noLower.ok());
    EXPECT_EQ(noLower.error().message, path + ":1: the header has no column lower (expected 'id,lower,upper,size')");
    {
        // A written plan (with its offset column) reads back.
        std::ofstream out(path);
        out << "id,lower,upper,size,offset\r\nx,0,4,16,0\r\n";
    }
    Expected<std::vector<IntervalBuffer>> plan = readIntervalCsv(path);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_EQ(plan->size(), 1u);
    EXPECT_EQ((*plan)[0].size, 16u);
    {
        // Endless bytes without a newline: an error, not a hang or an exhausted memory.
        std::ofstream out(path);
        out << "id,lower,upper,size\n" << std::string(2'000'000, '7');
    }
    Expected<std::vector<IntervalBuffer>> endless = readIntervalCsv(path);
    ASSERT_FALSE(endless.ok());
    EXPECT_EQ(endless.error().message, path + ":2: line longer than 1048576 bytes");
}

TEST(MemoryPlanner, CsvInMiniMallocsOtherSpellings) {
    // MiniMalloc's reader takes begin/start, an inclusive end, buffer_id and an alignment column,
    // in any order, with spaces around numbers; its hint and gaps columns are left out.
    const std::string path = ::testing::TempDir() + "/spellings_memplan.csv";
    auto read = [&](const std::string& text) {
        std::ofstream(path) << text;
        return readIntervalCsv(path);
    };
    Expected<std::vector<IntervalBuffer>> r =
        read("buffer_id,begin,end,size,alignment,hint,gaps\na, 0 ,1,32,32,-1,\nb,1,4,28,4,-1,2-3\n");
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->size(), 2u);
    EXPECT_EQ((*r)[0].id, "a");
    EXPECT_EQ((*r)[0].lower, 0u);
    EXPECT_EQ((*r)[0].upper, 2u) << "end is inclusive";
    EXPECT_EQ((*r)[1].upper, 5u);
    EXPECT_EQ((*r)[0].alignment, 32u);
    EXPECT_EQ((*r)[1].alignment, 4u);
    r = read("\xEF\xBB\xBFsize,upper,start,buffer\n8,3,1,x\n"); // a byte order mark, columns in another order
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ((*r)[0].id, "x");
    EXPECT_EQ((*r)[0].lower, 1u);
    EXPECT_EQ((*r)[0].upper, 3u);
    EXPECT_EQ((*r)[0].size, 8u);
    EXPECT_EQ((*r)[0].alignment, 1u);

    const std::pair<const char*, const char*> bad[] = {
        {"id,lower,upper,end,size\n", ":1: the header has both 'upper' and 'end' (one lifetime end)"},
        {"id,lower,begin,upper,size\n", ":1: the header has two columns for lower ('lower' and 'begin')"},
        {"id,lower,end,size\n0,5,4,3\n", ":2: lower 5 is after end 4 (a lifetime is [lower, end])"},
        {"id,lower,end,size\n0,5,x,3\n", ":2: end 'x' is not a number"},
        {"id,lower,end,size\n0,5,18446744073709551615,3\n", ":2: end 18446744073709551615 is past the last time"},
        {"id,lower,upper,size,alignment\n0,0,4,3,0\n", ":2: alignment 0 is not a positive number"},
        {"id,lower,upper,size,alignment\n0,0,4,3,-8\n", ":2: alignment '-8' is negative"},
        {"id,lower,upper,size,alignment\n0,0,4,3,2199023255552\n", ":2: alignment 2199023255552 is over 2^40 bytes"},
    };
    for (const auto& [text, message] : bad) {
        r = read(text);
        ASSERT_FALSE(r.ok()) << text;
        EXPECT_EQ(r.error().message, path + message);
    }
}

TEST(MemoryPlanner, ConflictsColumnPairsBuffersApartInTime) {
    // `compile --export-offset-problem` lists, per buffer, the buffers its Tasks do not order
    // against it although the lifetimes do not meet; plan-offsets must keep them apart.
    const std::string path = ::testing::TempDir() + "/conflicts_memplan.csv";
    auto read = [&](const std::string& text) {
        std::ofstream(path) << text;
        return readIntervalCsv(path);
    };
    Expected<std::vector<IntervalBuffer>> r = read("id,lower,upper,size,conflicts\na,0,2,8,c\nb,1,3,8,\nc,4,6,8,\n");
    ASSERT_TRUE(r.ok()) << r.error().message;
    ASSERT_EQ(r->size(), 3u);
    EXPECT_EQ((*r)[0].conflicts, std::vector<size_t>{2});
    EXPECT_TRUE((*r)[1].conflicts.empty());
    ASSERT_TRUE(hasConflictsBeyondLifetimes(*r));
    const OffsetProblem p = problemFromIntervals(*r);
    EXPECT_EQ(p.conflicts[0], (std::vector<int>{1, 2}));
    EXPECT_EQ(p.conflicts[2], std::vector<int>{0}) << "the pair is in both lists";
    const OffsetPlan plan = planOffsets(p);
    ASSERT_TRUE(checkOffsetPlan(p, plan).ok());
    EXPECT_EQ(plan.peak, 16u);
    EXPECT_NE(plan.offsets[0], plan.offsets[2]) << "a and c are apart in time but conflict";
    // Without the column, c reuses a's bytes.
    r = read("id,lower,upper,size\na,0,2,8\nb,1,3,8\nc,4,6,8\n");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_FALSE(hasConflictsBeyondLifetimes(*r));
    // A pair named from both sides, and several ids in one cell, read as the same problem.
    r = read("id,lower,upper,size,conflicts\na,0,2,8,c d\nb,1,3,8,\nc,4,6,8,a\nd,7,9,8,\n");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(problemFromIntervals(*r).conflicts[0], (std::vector<int>{1, 2, 3}));

    const std::pair<const char*, const char*> bad[] = {
        {"id,lower,upper,size,conflicts\na,0,2,8,z\n", ":2: conflicts names 'z', which no row has"},
        {"id,lower,upper,size,conflicts\na,0,2,8,\nb,3,4,8,b\n", ":3: conflicts names the row's own id 'b'"},
        {"id,lower,upper,size,conflicts\na,0,2,8,\na,3,4,8,\n",
         ":3: id 'a' is also on line 2 (the conflicts column names rows by id)"},
    };
    for (const auto& [text, message] : bad) {
        r = read(text);
        ASSERT_FALSE(r.ok()) << text;
        EXPECT_EQ(r.error().message, path + message);
    }
}

TEST(MemoryPlanner, BuffersAlignedTheirOwnWaysArePlannedAtTheCommonMultiple) {
    std::vector<IntervalBuffer> b = {{"a", 0, 2, 32, 32}, {"b", 1, 5, 28, 4}, {"c", 2, 6, 36, 64}};
    Expected<uint64_t> common = commonAlignment(b, 1);
    ASSERT_TRUE(common.ok());
    EXPECT_EQ(*common, 64u);
    EXPECT_EQ(*commonAlignment(b, 48), 192u) << "not a power of two: the least common multiple";
    const OffsetProblem p = problemFromIntervals(b, *common);
    const OffsetPlan plan = planOffsets(p);
    ASSERT_TRUE(checkOffsetPlan(p, plan).ok());
    for (size_t i = 0; i < b.size(); ++i)
        EXPECT_EQ(plan.offsets[i] % b[i].alignment, 0u) << b[i].id;
    EXPECT_EQ(plan.peak, 92u) << "b at 64 over a and c, both at 0";
    EXPECT_TRUE(plan.optimal);
    // No common multiple a memory could have: an error naming the buffer, not an overflow.
    b.push_back({"d", 0, 1, 8, (uint64_t{1} << 40) - 1});
    Expected<uint64_t> none = commonAlignment(b, 1);
    ASSERT_FALSE(none.ok());
    EXPECT_EQ(none.error().message, "the buffers' alignments have no common multiple up to 2^40 bytes (64 and "
                                    "1099511627775, of buffer 'd')");
}
