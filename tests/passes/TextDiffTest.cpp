// TextDiff: a golden unified diff, edge cases, and a property check (minimal edit count, both
// texts reconstructed) against a dynamic-programming LCS on many random inputs.
#include "core/passes/TextDiff.h"

#include <gtest/gtest.h>

#include <random>

using namespace sextant::passes;

TEST(TextDiff, EqualTextsGiveEmptyDiff) {
    EXPECT_EQ(unifiedDiff("a\nb\n", "a\nb\n", "x", "y"), "");
    EXPECT_EQ(unifiedDiff("", "", "x", "y"), "");
}

TEST(TextDiff, GoldenUnifiedDiff) {
    const std::string a = "l1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nl15\n";
    // Change l2, insert after l4 (same hunk: gap 2 <= 6); remove l14 (a hunk of its own: gap 9).
    const std::string b = "l1\nL2\nl3\nl4\nnew\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl15\n";
    const std::string expected = "--- before\n"
                                 "+++ after\n"
                                 "@@ -1,7 +1,8 @@\n"
                                 " l1\n"
                                 "-l2\n"
                                 "+L2\n"
                                 " l3\n"
                                 " l4\n"
                                 "+new\n"
                                 " l5\n"
                                 " l6\n"
                                 " l7\n"
                                 "@@ -11,5 +12,4 @@\n"
                                 " l11\n"
                                 " l12\n"
                                 " l13\n"
                                 "-l14\n"
                                 " l15\n";
    EXPECT_EQ(unifiedDiff(a, b, "before", "after"), expected);
}

TEST(TextDiff, EmptySidesUseGnuRanges) {
    EXPECT_EQ(unifiedDiff("", "a\nb\n", "x", "y"), "--- x\n+++ y\n@@ -0,0 +1,2 @@\n+a\n+b\n");
    EXPECT_EQ(unifiedDiff("a\n", "", "x", "y"), "--- x\n+++ y\n@@ -1 +0,0 @@\n-a\n");
}

TEST(TextDiff, DiffLinesNumbersLines) {
    auto lines = diffLines("a\nb\nc\n", "a\nc\nd\n");
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(lines[0].kind, DiffLine::Kind::Same);
    EXPECT_EQ(lines[1].kind, DiffLine::Kind::Removed);
    EXPECT_EQ(lines[1].text, "b");
    EXPECT_EQ(lines[1].lineA, 2);
    EXPECT_EQ(lines[2].kind, DiffLine::Kind::Same);
    EXPECT_EQ(lines[2].lineA, 3);
    EXPECT_EQ(lines[2].lineB, 2);
    EXPECT_EQ(lines[3].kind, DiffLine::Kind::Added);
    EXPECT_EQ(lines[3].lineB, 3);
}

namespace {
size_t lcs(const std::vector<std::string>& a, const std::vector<std::string>& b) {
    std::vector<std::vector<size_t>> t(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
    for (size_t i = 1; i <= a.size(); ++i)
        for (size_t j = 1; j <= b.size(); ++j)
            t[i][j] =
                a[i - 1] == b[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
    return t[a.size()][b.size()];
}
std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (const auto& l : v)
        s += l + "\n";
    return s;
}
} // namespace

TEST(TextDiff, MinimalAndFaithfulOnRandomInputs) {
    std::mt19937 gen(12345);
    for (int iter = 0; iter < 300; ++iter) {
        std::vector<std::string> a, b;
        size_t na = gen() % 30, nb = gen() % 30;
        int alphabet = 1 + static_cast<int>(gen() % 6);
        for (size_t i = 0; i < na; ++i)
            a.push_back(std::string(1, static_cast<char>('a' + gen() % alphabet)));
        for (size_t i = 0; i < nb; ++i)
            b.push_back(std::string(1, static_cast<char>('a' + gen() % alphabet)));
        auto lines = diffLines(join(a), join(b));
        std::vector<std::string> ra, rb;
        size_t same = 0;
        for (const DiffLine& l : lines) {
            if (l.kind != DiffLine::Kind::Added)
                ra.push_back(l.text);
            if (l.kind != DiffLine::Kind::Removed)
                rb.push_back(l.text);
            same += l.kind == DiffLine::Kind::Same;
        }
        ASSERT_EQ(ra, a) << "iteration " << iter;
        ASSERT_EQ(rb, b) << "iteration " << iter;
        ASSERT_EQ(same, lcs(a, b)) << "iteration " << iter;
    }
}

TEST(TextDiff, LargeInputWithScatteredChanges) {
    // An IR-sized text (4,000 lines) with 40 edits: the diff has exactly those edits.
    std::vector<std::string> a, b;
    for (int i = 0; i < 4000; ++i)
        a.push_back("%v" + std::to_string(i) + " = Op(%v" + std::to_string(i / 2) + ")");
    b = a;
    for (int i = 0; i < 40; ++i)
        b[static_cast<size_t>(i * 97 + 13)] += " {changed}";
    auto lines = diffLines(join(a), join(b));
    int added = 0, removed = 0;
    for (const DiffLine& l : lines) {
        added += l.kind == DiffLine::Kind::Added;
        removed += l.kind == DiffLine::Kind::Removed;
    }
    EXPECT_EQ(added, 40);
    EXPECT_EQ(removed, 40);
    // Completely different texts still diff correctly.
    std::vector<std::string> c;
    for (int i = 0; i < 2000; ++i)
        c.push_back("other " + std::to_string(i));
    auto all = diffLines(join(a), join(c));
    EXPECT_EQ(all.size(), 6000u);
}
