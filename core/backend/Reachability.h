#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace sextant::backend {

/// Transitive "happens-before" over a DAG of Tasks given as predecessor lists, with one bitset
/// per Task. Node ids must be a topological order (every predecessor id < the node id), which is
/// what Program::tasks guarantees.
class Reachability {
public:
    /// `preds[i]` lists the direct predecessors of i (all < i). Returns false-y (empty) on bad input;
    /// check valid().
    explicit Reachability(const std::vector<std::vector<int>>& preds);

    /// False if some predecessor id was not smaller than its node's id.
    bool valid() const { return m_valid; }
    size_t size() const { return m_n; }
    /// True when a != b and a must finish before b starts (a path a -> ... -> b).
    bool before(int a, int b) const {
        if (a == b || a < 0 || b < 0)
            return false;
        return (m_bits[static_cast<size_t>(b) * m_words + static_cast<size_t>(a) / 64] >> (a % 64)) & 1u;
    }
    /// True when the two are ordered one way or the other.
    bool ordered(int a, int b) const { return before(a, b) || before(b, a); }
    /// Into `out` (resized to words()): the Tasks that come before every one of `tasks` (all of
    /// them when `tasks` is empty), one bit per Task as before() reads them.
    void commonAncestors(const std::vector<int>& tasks, std::vector<uint64_t>& out) const;
    size_t words() const { return m_words; }
    static bool has(const std::vector<uint64_t>& set, int task) {
        return task >= 0 && (set[static_cast<size_t>(task) / 64] >> (task % 64)) & 1u;
    }

private:
    size_t m_n = 0;
    size_t m_words = 0;
    bool m_valid = true;
    std::vector<uint64_t> m_bits; ///< row b: the set of a with a before b
};

} // namespace sextant::backend
