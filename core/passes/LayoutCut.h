#pragma once

#include <cstdint>
#include <vector>

namespace sextant::passes {

/// A two-way partition problem solved exactly by a minimum s-t cut: vertices go to the source
/// side (for the layout pass: blocked NC1HWC0) or the sink side (plain NCHW). Costs are paid for
/// every edge u -> v with u on the source side and v on the sink side, and for every group
/// ("hyperedge") whose members are not all on one side (one layout conversion of a value,
/// shared by all its readers). Vertex 0 is the source, 1 the sink.
class LayoutCut {
public:
    static constexpr int64_t kInfinite = INT64_MAX / 4;
    static constexpr uint32_t kSource = 0;
    static constexpr uint32_t kSink = 1;

    /// A cut with `vertices` free vertices, numbered 2 .. vertices + 1.
    explicit LayoutCut(uint32_t vertices);

    /// Costs `cost` when `u` is on the source side and `v` on the sink side.
    void addEdge(uint32_t u, uint32_t v, int64_t cost);
    /// Costs `cost` once when the `members` (terminals allowed, duplicates ignored) are split.
    void addGroup(const std::vector<uint32_t>& members, int64_t cost);

    /// Solves the cut; returns, per vertex, whether it is on the source side. Of the minimum
    /// cuts, the one with the largest source side (vertices that cannot reach the sink in the
    /// residual graph), so the answer does not depend on the order the flow was found in.
    std::vector<bool> sourceSide();

private:
    struct Arc {
        uint32_t to;
        int64_t cap;
    };
    uint32_t addVertex();
    void addArc(uint32_t u, uint32_t v, int64_t cap);
    bool augment();

    std::vector<std::vector<uint32_t>> m_out; ///< arc indices leaving each vertex
    std::vector<Arc> m_arcs;                  ///< arc 2k and its reverse 2k + 1
};

} // namespace sextant::passes
