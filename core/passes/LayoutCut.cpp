// The minimum cut behind the layout pass's whole-graph assignment (Layout.cpp): Edmonds-Karp
// (shortest augmenting paths by breadth-first search, no recursion, so a 20,000-node chain is
// fine), groups by Lawler's construction (two helper vertices joined by the group's cost, every
// member tied to both by infinite arcs).
#include "LayoutCut.h"

#include <algorithm>
#include <cassert>

namespace sextant::passes {

LayoutCut::LayoutCut(uint32_t vertices) : m_out(vertices + 2) {}

uint32_t LayoutCut::addVertex() {
    m_out.emplace_back();
    return static_cast<uint32_t>(m_out.size() - 1);
}

void LayoutCut::addArc(uint32_t u, uint32_t v, int64_t cap) {
    assert(u < m_out.size() && v < m_out.size() && "arc to an unknown vertex");
    m_out[u].push_back(static_cast<uint32_t>(m_arcs.size()));
    m_arcs.push_back({v, cap});
    m_out[v].push_back(static_cast<uint32_t>(m_arcs.size()));
    m_arcs.push_back({u, 0});
}

void LayoutCut::addEdge(uint32_t u, uint32_t v, int64_t cost) {
    // Arcs into the source or out of the sink never carry flow.
    if (u == v || cost <= 0 || v == kSource || u == kSink)
        return;
    addArc(u, v, cost);
}

void LayoutCut::addGroup(const std::vector<uint32_t>& members, int64_t cost) {
    std::vector<uint32_t> m = members;
    std::sort(m.begin(), m.end());
    m.erase(std::unique(m.begin(), m.end()), m.end());
    if (m.size() < 2 || cost <= 0 || m.back() <= kSink) // all terminals: a fixed cost
        return;
    if (m.size() == 2) { // split either way: one arc each way
        addEdge(m[0], m[1], cost);
        addEdge(m[1], m[0], cost);
        return;
    }
    const uint32_t in = addVertex();
    const uint32_t out = addVertex();
    addArc(in, out, cost);
    for (uint32_t u : m) {
        addEdge(u, in, kInfinite);
        addEdge(out, u, kInfinite);
    }
}

bool LayoutCut::augment() {
    constexpr uint32_t kNone = UINT32_MAX;
    std::vector<uint32_t> via(m_out.size(), kNone); // the arc a vertex was reached by
    std::vector<uint32_t> queue{kSource};
    via[kSource] = 0;
    for (size_t head = 0; head < queue.size() && via[kSink] == kNone; ++head)
        for (uint32_t a : m_out[queue[head]]) {
            const Arc& arc = m_arcs[a];
            if (arc.cap > 0 && via[arc.to] == kNone) {
                via[arc.to] = a;
                queue.push_back(arc.to);
            }
        }
    if (via[kSink] == kNone)
        return false;
    int64_t push = kInfinite;
    for (uint32_t v = kSink; v != kSource; v = m_arcs[via[v] ^ 1].to)
        push = std::min(push, m_arcs[via[v]].cap);
    for (uint32_t v = kSink; v != kSource; v = m_arcs[via[v] ^ 1].to) {
        m_arcs[via[v]].cap -= push;
        m_arcs[via[v] ^ 1].cap += push;
    }
    return true;
}

std::vector<bool> LayoutCut::sourceSide() {
    while (augment()) {
    }
    // Sink side: the vertices with a residual path to the sink (walked backwards from it).
    std::vector<bool> reachesSink(m_out.size(), false);
    std::vector<uint32_t> queue{kSink};
    reachesSink[kSink] = true;
    for (size_t head = 0; head < queue.size(); ++head)
        for (uint32_t a : m_out[queue[head]]) {
            // Arc a leaves the queued vertex w; its reverse runs u -> w with residual cap.
            const uint32_t u = m_arcs[a].to;
            if (!reachesSink[u] && m_arcs[a ^ 1].cap > 0) {
                reachesSink[u] = true;
                queue.push_back(u);
            }
        }
    std::vector<bool> side(m_out.size());
    for (size_t v = 0; v < side.size(); ++v)
        side[v] = !reachesSink[v];
    return side;
}

} // namespace sextant::passes
