#include "Reachability.h"

#include <algorithm>

namespace sextant::backend {

Reachability::Reachability(const std::vector<std::vector<int>>& preds, size_t maxClockEntries) {
    const size_t n = preds.size();
    m_chain.resize(n);
    m_pos.resize(n);
    m_clockBegin.reserve(n + 1);
    m_clockBegin.push_back(0);
    // b's clock is the join of its predecessors' clocks and their own positions, gathered in a
    // table by chain (-1: no ancestor there yet) and written out in chain order.
    std::vector<int32_t> last;
    std::vector<uint32_t> touched;
    auto see = [&](uint32_t chain, int32_t pos) {
        if (last[chain] < 0)
            touched.push_back(chain);
        last[chain] = std::max(last[chain], pos);
    };
    for (size_t b = 0; b < n; ++b) {
        last.resize(m_chainLength.size(), -1);
        touched.clear();
        for (int a : preds[b]) {
            if (a < 0 || static_cast<size_t>(a) >= b) {
                if (m_valid)
                    m_why = "Task " + std::to_string(b) + " depends on Task " + std::to_string(a) +
                            ", which does not come before it";
                m_valid = false;
                continue;
            }
            const size_t from = m_clockBegin[static_cast<size_t>(a)], to = m_clockBegin[static_cast<size_t>(a) + 1];
            for (size_t q = from; q < to; ++q)
                see(m_clock[q].chain, m_clock[q].pos);
            see(m_chain[static_cast<size_t>(a)], static_cast<int32_t>(m_pos[static_cast<size_t>(a)]));
        }
        if (m_clock.size() + touched.size() > maxClockEntries) {
            m_valid = false;
            m_tooLarge = true;
            m_why = "the Task order is too large to check: past Task " + std::to_string(b) + " of " +
                    std::to_string(n) + ", its " + std::to_string(m_chainLength.size()) +
                    " chains of ordered Tasks needed more than " + std::to_string(maxClockEntries) +
                    " entries to say which Tasks come before which";
            m_chain.clear();
            m_pos.clear();
            m_clock.clear();
            m_clock.shrink_to_fit();
            m_clockBegin.assign(1, 0);
            m_chainLength.clear();
            return;
        }
        std::sort(touched.begin(), touched.end());
        for (uint32_t c : touched) {
            m_clock.push_back({c, last[c]});
            last[c] = -1;
        }
        m_clockBegin.push_back(m_clock.size());
        const uint32_t c = chooseChain(b, preds[b]);
        if (c == m_chainLength.size())
            m_chainLength.push_back(0);
        m_chain[b] = c;
        m_pos[b] = m_chainLength[c]++;
    }
}

int32_t Reachability::lastAncestor(size_t b, uint32_t chain) const {
    const auto first = m_clock.begin() + static_cast<std::ptrdiff_t>(m_clockBegin[b]);
    const auto end = m_clock.begin() + static_cast<std::ptrdiff_t>(m_clockBegin[b + 1]);
    const auto it = std::lower_bound(first, end, chain, [](const Tick& t, uint32_t c) { return t.chain < c; });
    return it != end && it->chain == chain ? it->pos : -1;
}

/// A chain whose last Task is an ancestor of b: b may follow it. Preferably a direct
/// predecessor's (the latest one, the same core's previous Task in a program order), else the
/// first such chain, else a new one.
uint32_t Reachability::chooseChain(size_t b, const std::vector<int>& preds) const {
    int best = -1;
    for (int a : preds)
        if (a >= 0 && static_cast<size_t>(a) < b && m_pos[static_cast<size_t>(a)] + 1 == m_chainLength[m_chain[static_cast<size_t>(a)]])
            best = std::max(best, a);
    if (best >= 0)
        return m_chain[static_cast<size_t>(best)];
    for (size_t q = m_clockBegin[b]; q < m_clockBegin[b + 1]; ++q)
        if (static_cast<uint32_t>(m_clock[q].pos) + 1 == m_chainLength[m_clock[q].chain])
            return m_clock[q].chain;
    return static_cast<uint32_t>(m_chainLength.size());
}

void Reachability::commonAncestors(const std::vector<int>& tasks, Frontier& out) const {
    const size_t k = chains();
    out.resize(k);
    for (size_t q = 0; q < k; ++q)
        out[q] = static_cast<int32_t>(m_chainLength[q]) - 1;
    for (int t : tasks) {
        if (t < 0 || static_cast<size_t>(t) >= size()) {
            out.assign(k, -1);
            return;
        }
        // Chains missing from t's clock hold none of its ancestors.
        size_t q = m_clockBegin[static_cast<size_t>(t)];
        const size_t to = m_clockBegin[static_cast<size_t>(t) + 1];
        for (size_t c = 0; c < k; ++c) {
            if (q < to && m_clock[q].chain == c)
                out[c] = std::min(out[c], m_clock[q++].pos);
            else
                out[c] = -1;
        }
    }
}

} // namespace sextant::backend
