#include "TextDiff.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace sextant::passes {

std::vector<std::string> splitLines(const std::string& text) {
    std::vector<std::string> lines;
    size_t start = 0;
    while (start < text.size()) {
        size_t nl = text.find('\n', start);
        if (nl == std::string::npos) {
            lines.push_back(text.substr(start));
            break;
        }
        lines.push_back(text.substr(start, nl - start));
        start = nl + 1;
    }
    return lines;
}

namespace {

enum class Op : unsigned char { Same, Del, Ins };

/// Linear-space Myers diff over integer line ids. Emits ops in order.
class Myers {
public:
    Myers(const std::vector<int>& a, const std::vector<int>& b) : m_a(a), m_b(b) {
        size_t n = a.size() + b.size() + 2;
        m_vf.resize(2 * n + 2);
        m_vb.resize(2 * n + 2);
    }

    std::vector<Op> run() {
        diff(0, static_cast<int>(m_a.size()), 0, static_cast<int>(m_b.size()));
        return std::move(m_ops);
    }

private:
    struct Snake {
        int x0, y0, x1, y1; // forward coordinates relative to the sub-problem
        int d;
    };

    void emit(Op op, int count) {
        for (int i = 0; i < count; ++i)
            m_ops.push_back(op);
    }

    void diff(int aLo, int aHi, int bLo, int bHi) {
        // Common prefix and suffix cost nothing and shrink the search.
        int pre = 0;
        while (aLo + pre < aHi && bLo + pre < bHi && m_a[aLo + pre] == m_b[bLo + pre])
            ++pre;
        emit(Op::Same, pre);
        aLo += pre;
        bLo += pre;
        int suf = 0;
        while (aHi - suf > aLo && bHi - suf > bLo && m_a[aHi - 1 - suf] == m_b[bHi - 1 - suf])
            ++suf;
        aHi -= suf;
        bHi -= suf;
        if (aLo == aHi) {
            emit(Op::Ins, bHi - bLo);
        } else if (bLo == bHi) {
            emit(Op::Del, aHi - aLo);
        } else {
            Snake s = middleSnake(aLo, aHi, bLo, bHi);
            diff(aLo, aLo + s.x0, bLo, bLo + s.y0);
            emit(Op::Same, s.x1 - s.x0);
            diff(aLo + s.x1, aHi, bLo + s.y1, bHi);
        }
        emit(Op::Same, suf);
    }

    Snake middleSnake(int aLo, int aHi, int bLo, int bHi) {
        const int n = aHi - aLo, m = bHi - bLo;
        const int delta = n - m;
        const bool odd = (delta & 1) != 0;
        const int maxD = (n + m + 1) / 2;
        const int off = maxD + 1;
        int* vf = m_vf.data();
        int* vb = m_vb.data();
        vf[off + 1] = 0;
        vb[off + 1] = 0;
        for (int d = 0; d <= maxD; ++d) {
            for (int k = -d; k <= d; k += 2) {
                int x = (k == -d || (k != d && vf[off + k - 1] < vf[off + k + 1]))
                            ? vf[off + k + 1]
                            : vf[off + k - 1] + 1;
                int y = x - k;
                const int x0 = x, y0 = y;
                while (x < n && y < m && m_a[aLo + x] == m_b[bLo + y]) {
                    ++x;
                    ++y;
                }
                vf[off + k] = x;
                const int kb = delta - k;
                if (odd && kb >= -(d - 1) && kb <= d - 1 && x + vb[off + kb] >= n)
                    return Snake{x0, y0, x, y, 2 * d - 1};
            }
            for (int k = -d; k <= d; k += 2) {
                int x = (k == -d || (k != d && vb[off + k - 1] < vb[off + k + 1]))
                            ? vb[off + k + 1]
                            : vb[off + k - 1] + 1;
                int y = x - k;
                const int x0 = x, y0 = y;
                while (x < n && y < m && m_a[aHi - 1 - x] == m_b[bHi - 1 - y]) {
                    ++x;
                    ++y;
                }
                vb[off + k] = x;
                const int kf = delta - k;
                if (!odd && kf >= -d && kf <= d && x + vf[off + kf] >= n)
                    return Snake{n - x, m - y, n - x0, m - y0, 2 * d};
            }
        }
        // Unreachable for well-formed input: the paths must meet by d = maxD.
        return Snake{0, 0, 0, 0, n + m};
    }

    const std::vector<int>& m_a;
    const std::vector<int>& m_b;
    std::vector<int> m_vf, m_vb;
    std::vector<Op> m_ops;
};

} // namespace

std::vector<DiffLine> diffLines(const std::string& a, const std::string& b) {
    std::vector<std::string> la = splitLines(a), lb = splitLines(b);
    // Lines become small integers (numbered in order of first appearance) so that comparing two
    // lines is one int compare.
    std::unordered_map<std::string_view, int> ids;
    auto toIds = [&ids](const std::vector<std::string>& lines) {
        std::vector<int> out;
        out.reserve(lines.size());
        for (const std::string& l : lines)
            out.push_back(ids.emplace(l, static_cast<int>(ids.size())).first->second);
        return out;
    };
    std::vector<int> ia = toIds(la), ib = toIds(lb);
    std::vector<Op> ops = Myers(ia, ib).run();

    std::vector<DiffLine> out;
    out.reserve(ops.size());
    size_t i = 0, j = 0;
    // Within one run of changes, list all removals before the additions, as diff(1) does.
    size_t p = 0;
    while (p < ops.size()) {
        if (ops[p] == Op::Same) {
            out.push_back(
                {DiffLine::Kind::Same, la[i], static_cast<int>(i + 1), static_cast<int>(j + 1)});
            ++i;
            ++j;
            ++p;
            continue;
        }
        size_t q = p;
        while (q < ops.size() && ops[q] != Op::Same)
            ++q;
        for (size_t r = p; r < q; ++r)
            if (ops[r] == Op::Del) {
                out.push_back({DiffLine::Kind::Removed, la[i], static_cast<int>(i + 1), 0});
                ++i;
            }
        for (size_t r = p; r < q; ++r)
            if (ops[r] == Op::Ins) {
                out.push_back({DiffLine::Kind::Added, lb[j], 0, static_cast<int>(j + 1)});
                ++j;
            }
        p = q;
    }
    return out;
}

namespace {
std::string range(int start, int count) {
    // GNU conventions: "l" for one line, "l,n" otherwise; an empty range names the line before.
    if (count == 1)
        return std::to_string(start);
    if (count == 0)
        return std::to_string(start - 1) + ",0";
    return std::to_string(start) + "," + std::to_string(count);
}
} // namespace

std::string unifiedDiff(const std::string& a, const std::string& b, const std::string& nameA,
                        const std::string& nameB, int context) {
    if (a == b)
        return {};
    std::vector<DiffLine> lines = diffLines(a, b);
    if (context < 0)
        context = 0;
    std::string out = "--- " + nameA + "\n+++ " + nameB + "\n";
    const size_t n = lines.size();
    size_t p = 0;
    while (p < n) {
        while (p < n && lines[p].kind == DiffLine::Kind::Same)
            ++p;
        if (p == n)
            break;
        // A hunk starts `context` lines before the first change and grows while the gap of
        // unchanged lines to the next change is at most 2 * context.
        size_t start = p >= static_cast<size_t>(context) ? p - context : 0;
        size_t end = p; // one past the last changed line
        size_t q = p;
        while (q < n) {
            if (lines[q].kind != DiffLine::Kind::Same) {
                end = q + 1;
                ++q;
                continue;
            }
            size_t r = q;
            while (r < n && lines[r].kind == DiffLine::Kind::Same)
                ++r;
            if (r == n || r - q > static_cast<size_t>(2 * context))
                break;
            q = r;
        }
        size_t stop = std::min(n, end + static_cast<size_t>(context));
        // Line numbers: the first line of the hunk on each side.
        int aStart = 0, bStart = 0, aCount = 0, bCount = 0;
        int aNext = 1, bNext = 1; // the line a hunk starting here would begin with
        for (size_t r = 0; r < start; ++r) {
            if (lines[r].kind != DiffLine::Kind::Added)
                ++aNext;
            if (lines[r].kind != DiffLine::Kind::Removed)
                ++bNext;
        }
        aStart = aNext;
        bStart = bNext;
        for (size_t r = start; r < stop; ++r) {
            if (lines[r].kind != DiffLine::Kind::Added)
                ++aCount;
            if (lines[r].kind != DiffLine::Kind::Removed)
                ++bCount;
        }
        out += "@@ -" + range(aStart, aCount) + " +" + range(bStart, bCount) + " @@\n";
        for (size_t r = start; r < stop; ++r) {
            char mark = lines[r].kind == DiffLine::Kind::Same    ? ' '
                        : lines[r].kind == DiffLine::Kind::Added ? '+'
                                                                 : '-';
            out += mark;
            out += lines[r].text;
            out += '\n';
        }
        p = stop;
    }
    return out;
}

} // namespace sextant::passes
