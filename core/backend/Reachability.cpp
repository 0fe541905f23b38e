#include "Reachability.h"

#include <algorithm>

namespace sextant::backend {

Reachability::Reachability(const std::vector<std::vector<int>>& preds) {
    const size_t n = preds.size();
    m_chain.resize(n);
    m_pos.resize(n);
    m_clockBegin.reserve(n + 1);
    m_clockBegin.push_back(0);
    for (size_t b = 0; b < n; ++b) {
        const size_t k = m_chainLength.size();
        const size_t begin = m_clock.size();
        m_clock.resize(begin + k, -1);
        for (int a : preds[b]) {
            if (a < 0 || static_cast<size_t>(a) >= b) {
                m_valid = false;
                continue;
            }
            const size_t from = m_clockBegin[static_cast<size_t>(a)], to = m_clockBegin[static_cast<size_t>(a) + 1];
            for (size_t q = 0; q < to - from; ++q)
                m_clock[begin + q] = std::max(m_clock[begin + q], m_clock[from + q]);
            int32_t& own = m_clock[begin + m_chain[static_cast<size_t>(a)]];
            own = std::max(own, static_cast<int32_t>(m_pos[static_cast<size_t>(a)]));
        }
        const uint32_t c = chooseChain(b, preds[b]);
        if (c == m_chainLength.size())
            m_chainLength.push_back(0);
        m_chain[b] = c;
        m_pos[b] = m_chainLength[c]++;
        m_clockBegin.push_back(m_clock.size());
    }
}

/// A chain whose last Task is an ancestor of b: b may follow it. Preferably a direct
/// predecessor's (the latest one, the same core's previous Task in a program order), else the
/// first such chain, else a new one.
uint32_t Reachability::chooseChain(size_t b, const std::vector<int>& preds) const {
    const size_t begin = m_clockBegin[b];
    const size_t k = m_chainLength.size();
    int best = -1;
    for (int a : preds)
        if (a >= 0 && static_cast<size_t>(a) < b && m_pos[static_cast<size_t>(a)] + 1 == m_chainLength[m_chain[static_cast<size_t>(a)]])
            best = std::max(best, a);
    if (best >= 0)
        return m_chain[static_cast<size_t>(best)];
    for (size_t q = 0; q < k; ++q)
        if (m_clock[begin + q] >= 0 && static_cast<uint32_t>(m_clock[begin + q]) + 1 == m_chainLength[q])
            return static_cast<uint32_t>(q);
    return static_cast<uint32_t>(k);
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
        const size_t from = m_clockBegin[static_cast<size_t>(t)], to = m_clockBegin[static_cast<size_t>(t) + 1];
        for (size_t q = 0; q < k; ++q)
            out[q] = std::min(out[q], q < to - from ? m_clock[from + q] : -1);
    }
}

} // namespace sextant::backend
