#include "Reachability.h"

namespace sextant::backend {

Reachability::Reachability(const std::vector<std::vector<int>>& preds)
    : m_n(preds.size()), m_words((preds.size() + 63) / 64) {
    m_bits.assign(m_n * m_words, 0);
    for (size_t b = 0; b < m_n; ++b) {
        uint64_t* row = &m_bits[b * m_words];
        for (int a : preds[b]) {
            if (a < 0 || static_cast<size_t>(a) >= b) {
                m_valid = false;
                continue;
            }
            row[a / 64] |= uint64_t{1} << (a % 64);
            const uint64_t* aRow = &m_bits[static_cast<size_t>(a) * m_words];
            for (size_t w = 0; w < m_words; ++w)
                row[w] |= aRow[w];
        }
    }
}

void Reachability::commonAncestors(const std::vector<int>& tasks, std::vector<uint64_t>& out) const {
    out.assign(m_words, ~uint64_t{0});
    for (int t : tasks) {
        if (t < 0 || static_cast<size_t>(t) >= m_n) {
            out.assign(m_words, 0);
            return;
        }
        const uint64_t* row = &m_bits[static_cast<size_t>(t) * m_words];
        for (size_t w = 0; w < m_words; ++w)
            out[w] &= row[w];
    }
}

} // namespace sextant::backend
