#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sextant::backend {

/// Transitive "happens-before" over a DAG of Tasks given as predecessor lists. Node ids must be a
/// topological order (every predecessor id < the node id), which is what Program::tasks
/// guarantees.
///
/// The Tasks are covered by chains, each totally ordered by the DAG (a Task joins a chain whose
/// last Task comes before it, else starts one). A Task's ancestors on a chain are then a prefix of
/// it, so one number per chain says which: the Task's "clock", as in vector clocks. A clock keeps
/// only the chains the Task has ancestors on, sorted by chain: a program of thousands of
/// unordered branches starts a chain per branch, and a branch's Tasks have ancestors on few of
/// them. Memory is the sum over Tasks of those chains (at most Tasks x chains, where the chains
/// are about the program's parallelism), and a query is a binary search in one clock.
class Reachability {
public:
    /// Clock entries allowed before giving up (1 GiB of them). Programs the compiler builds
    /// stay far below (a 48,000-Task program of 24,000 chains holds 160,000; an 80,000-Task
    /// chain on 8 cores 640,000), but an artifact can describe Tasks no chain covers well:
    /// thousands of unordered Tasks, then thousands that each wait for all of them, which needs
    /// Tasks x chains entries, more than a machine has.
    static constexpr size_t kMaxClockEntries = size_t{1} << 27;

    /// `preds[i]` lists the direct predecessors of i (all < i); check valid().
    explicit Reachability(const std::vector<std::vector<int>>& preds, size_t maxClockEntries = kMaxClockEntries);

    /// False if some predecessor id was not smaller than its node's id, or the clocks would
    /// have held more than the limit; why() says which.
    bool valid() const { return m_valid; }
    const std::string& why() const { return m_why; }
    /// Invalid because the clocks would have passed the limit (the order itself may be fine).
    bool tooLarge() const { return m_tooLarge; }
    size_t size() const { return m_chain.size(); }
    size_t chains() const { return m_chainLength.size(); }
    /// True when a != b and a must finish before b starts (a path a -> ... -> b).
    bool before(int a, int b) const {
        if (a == b || a < 0 || b < 0 || static_cast<size_t>(a) >= size() || static_cast<size_t>(b) >= size())
            return false;
        const int32_t last = lastAncestor(static_cast<size_t>(b), m_chain[static_cast<size_t>(a)]);
        return static_cast<int32_t>(m_pos[static_cast<size_t>(a)]) <= last;
    }
    /// True when the two are ordered one way or the other.
    bool ordered(int a, int b) const { return before(a, b) || before(b, a); }

    /// The Tasks that come before every one of a set of Tasks: per chain, the last position of
    /// such a Task (-1: none).
    using Frontier = std::vector<int32_t>;
    /// Into `out`: the frontier of the Tasks before every one of `tasks` (all Tasks when `tasks`
    /// is empty; none when one of them is out of range).
    void commonAncestors(const std::vector<int>& tasks, Frontier& out) const;
    /// The chain `task` is on and its position there (task in range).
    uint32_t chainOf(int task) const { return m_chain[static_cast<size_t>(task)]; }
    int32_t positionOf(int task) const { return static_cast<int32_t>(m_pos[static_cast<size_t>(task)]); }
    /// True when `task` is in the set `frontier` describes.
    bool within(const Frontier& frontier, int task) const {
        if (task < 0 || static_cast<size_t>(task) >= size())
            return false;
        const uint32_t c = m_chain[static_cast<size_t>(task)];
        return c < frontier.size() && static_cast<int32_t>(m_pos[static_cast<size_t>(task)]) <= frontier[c];
    }

    /// Entries in all clocks together (what the memory grows with).
    size_t clockEntries() const { return m_clock.size(); }

private:
    /// One entry of a clock: the last ancestor's position on a chain.
    struct Tick {
        uint32_t chain;
        int32_t pos;
    };
    /// The position of b's last ancestor on `chain` (-1: none).
    int32_t lastAncestor(size_t b, uint32_t chain) const;
    uint32_t chooseChain(size_t b, const std::vector<int>& preds) const;

    bool m_valid = true;
    bool m_tooLarge = false;
    std::string m_why;
    std::vector<uint32_t> m_chain;       ///< per Task: its chain
    std::vector<uint32_t> m_pos;         ///< per Task: its position on the chain
    std::vector<uint32_t> m_chainLength; ///< per chain: Tasks on it so far
    std::vector<size_t> m_clockBegin;    ///< per Task (+1): where its clock starts in m_clock
    /// Task b's clock: per chain b has an ancestor on, in chain order, that ancestor's last
    /// position.
    std::vector<Tick> m_clock;
};

} // namespace sextant::backend
