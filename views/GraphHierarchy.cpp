#include "GraphHierarchy.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>
#include <utility>

namespace sextant::views {

namespace {

/// The name scopes of an op box: its name split on '/', without the last part (the op's own).
std::vector<std::string> scopesOf(const LayoutNode& n) {
    std::vector<std::string> parts;
    if (n.kind != LayoutNodeKind::Op)
        return parts;
    size_t begin = 0;
    for (size_t slash = n.name.find('/'); slash != std::string::npos; slash = n.name.find('/', begin)) {
        if (slash > begin)
            parts.push_back(n.name.substr(begin, slash - begin));
        begin = slash + 1;
    }
    return parts;
}

/// A name-scope tree as the names give it, before small scopes are inlined and long levels chunked.
struct ScopeTree {
    struct Scope {
        std::string label;
        std::string path;
        std::vector<int> kids;
        std::vector<int> items;
        int size = 0;
    };
    std::vector<Scope> scopes{Scope{}};

    explicit ScopeTree(const GraphLayoutResult& items) {
        std::map<std::pair<int, std::string>, int> child;
        for (size_t i = 0; i < items.nodes.size(); ++i) {
            int g = 0;
            for (const std::string& part : scopesOf(items.nodes[i])) {
                auto [it, fresh] = child.try_emplace({g, part}, static_cast<int>(scopes.size()));
                if (fresh) {
                    const std::string path = scopes[static_cast<size_t>(g)].path;
                    scopes.push_back(Scope{part, path.empty() ? part : path + "/" + part, {}, {}, 0});
                    scopes[static_cast<size_t>(g)].kids.push_back(it->second);
                }
                g = it->second;
            }
            scopes[static_cast<size_t>(g)].items.push_back(static_cast<int>(i));
        }
        // Children come after their parents: sizes add up from the back.
        for (size_t g = scopes.size(); g-- > 0;) {
            Scope& s = scopes[g];
            s.size += static_cast<int>(s.items.size());
            for (int k : s.kids)
                s.size += scopes[static_cast<size_t>(k)].size;
        }
    }
};

/// Group g's size, first and last items from its items and its children's (measured before it),
/// and its children in graph order. `items`: how many boxes the graph has.
void measureGroup(GraphHierarchy& h, int g, int items) {
    HierarchyGroup& group = h.groups[static_cast<size_t>(g)];
    group.size = static_cast<int>(group.items.size());
    group.firstItem = group.items.empty() ? items : group.items.front();
    group.lastItem = group.items.empty() ? -1 : group.items.back();
    for (int k : group.groups) {
        const HierarchyGroup& kid = h.groups[static_cast<size_t>(k)];
        group.size += kid.size;
        group.firstItem = std::min(group.firstItem, kid.firstItem);
        group.lastItem = std::max(group.lastItem, kid.lastItem);
    }
    std::sort(group.groups.begin(), group.groups.end(), [&](int a, int b) {
        return std::tie(h.groups[static_cast<size_t>(a)].firstItem, a) < std::tie(h.groups[static_cast<size_t>(b)].firstItem, b);
    });
}

class Builder {
public:
    Builder(const GraphLayoutResult& items, int maxLevel) : m_items(items), m_maxLevel(std::max(2, maxLevel)) {}

    GraphHierarchy build(const ScopeTree& tree) {
        addGroup(-1, "", "");
        copyScope(tree, 0, 0);
        finish(0);
        m_h.groupOf.assign(m_items.nodes.size(), -1);
        for (size_t g = 0; g < m_h.groups.size(); ++g)
            for (int item : m_h.groups[g].items)
                m_h.groupOf[static_cast<size_t>(item)] = static_cast<int>(g);
        return std::move(m_h);
    }

private:
    int addGroup(int parent, const std::string& id, const std::string& label) {
        const int g = static_cast<int>(m_h.groups.size());
        HierarchyGroup group;
        group.id = id;
        group.label = label;
        group.parent = parent;
        m_h.groups.push_back(std::move(group));
        if (parent >= 0)
            m_h.groups[static_cast<size_t>(parent)].groups.push_back(g);
        return g;
    }

    /// Copies scope `s`'s contents into group `g`: a scope of one item is inlined, a scope holding
    /// only one scope merges with it ("encoder/layer_0").
    void copyScope(const ScopeTree& tree, int s, int g) {
        const ScopeTree::Scope& scope = tree.scopes[static_cast<size_t>(s)];
        for (int item : scope.items)
            m_h.groups[static_cast<size_t>(g)].items.push_back(item);
        for (int k : scope.kids) {
            if (tree.scopes[static_cast<size_t>(k)].size <= 1) {
                copyScope(tree, k, g);
                continue;
            }
            std::string label = tree.scopes[static_cast<size_t>(k)].label;
            while (tree.scopes[static_cast<size_t>(k)].items.empty() && tree.scopes[static_cast<size_t>(k)].kids.size() == 1) {
                k = tree.scopes[static_cast<size_t>(k)].kids.front();
                label += "/" + tree.scopes[static_cast<size_t>(k)].label;
            }
            copyScope(tree, k, addGroup(g, "group:" + tree.scopes[static_cast<size_t>(k)].path, label));
        }
    }

    /// Sizes, first and last items of `g`'s subtree; then chunks its level if it is too long.
    void finish(int g) {
        for (size_t k = 0; k < m_h.groups[static_cast<size_t>(g)].groups.size(); ++k)
            finish(m_h.groups[static_cast<size_t>(g)].groups[k]);
        measure(g);
        chunk(g);
    }

    void measure(int g) { measureGroup(m_h, g, static_cast<int>(m_items.nodes.size())); }

    /// Splits a level of more than maxLevel entries into runs of consecutive entries (graph
    /// order), as few and as even as keep every level within maxLevel.
    void chunk(int g) {
        // Entries by their first item: an item as itself, a group as -1 - index.
        std::vector<std::pair<int, int>> entries;
        for (int item : m_h.groups[static_cast<size_t>(g)].items)
            entries.emplace_back(item, item);
        for (int k : m_h.groups[static_cast<size_t>(g)].groups)
            entries.emplace_back(m_h.groups[static_cast<size_t>(k)].firstItem, -1 - k);
        const size_t n = entries.size();
        if (n <= static_cast<size_t>(m_maxLevel))
            return;
        std::sort(entries.begin(), entries.end());
        size_t per = static_cast<size_t>(m_maxLevel);
        while ((n + per - 1) / per > static_cast<size_t>(m_maxLevel))
            per *= static_cast<size_t>(m_maxLevel);
        const size_t chunks = (n + per - 1) / per;
        const std::vector<size_t> cuts = cutsOf(entries, chunks, per);
        m_h.groups[static_cast<size_t>(g)].items.clear();
        m_h.groups[static_cast<size_t>(g)].groups.clear();
        const std::string base = m_h.groups[static_cast<size_t>(g)].id.empty() ? "group:" : m_h.groups[static_cast<size_t>(g)].id;
        for (size_t c = 0; c < chunks; ++c) {
            const int part = addGroup(g, base + "#" + std::to_string(c + 1), "");
            for (size_t e = cuts[c]; e < cuts[c + 1]; ++e) {
                const int entry = entries[e].second;
                if (entry >= 0) {
                    m_h.groups[static_cast<size_t>(part)].items.push_back(entry);
                    continue;
                }
                m_h.groups[static_cast<size_t>(part)].groups.push_back(-1 - entry);
                m_h.groups[static_cast<size_t>(-1 - entry)].parent = part;
            }
            measure(part);
            HierarchyGroup& p = m_h.groups[static_cast<size_t>(part)];
            p.label = elideMiddle(m_items.nodes[static_cast<size_t>(p.firstItem)].name, 20) + " \u2026 " +
                      elideMiddle(m_items.nodes[static_cast<size_t>(p.lastItem)].name, 20);
            chunk(part);
        }
        measure(g);
    }

    /// Where `chunks` runs of the sorted `entries` begin (and, last, n): each run at most `per`
    /// entries, about even, and each cut moved (by up to a quarter of a run) to where the fewest
    /// boxes' outputs cross it, so a run of repeated blocks is cut between two blocks, not
    /// through one (a residual chain is cut after an Add, where one tensor crosses, not after a
    /// Conv, where the skip connection crosses too).
    std::vector<size_t> cutsOf(const std::vector<std::pair<int, int>>& entries, size_t chunks, size_t per) const {
        const size_t n = entries.size();
        std::vector<int> entryOf(m_items.nodes.size(), -1);
        std::vector<int> inside;
        for (size_t e = 0; e < n; ++e) {
            const int entry = entries[e].second;
            inside.clear();
            if (entry >= 0)
                inside.push_back(entry);
            else
                collect(-1 - entry, inside);
            for (int item : inside)
                entryOf[static_cast<size_t>(item)] = static_cast<int>(e);
        }
        // crossing[b]: entries before cut b (between entries b-1 and b) with an output read at or
        // after it.
        std::vector<int> furthest(n, -1);
        for (const LayoutEdge& edge : m_items.edges) {
            const int from = entryOf[static_cast<size_t>(edge.fromIndex)];
            const int to = entryOf[static_cast<size_t>(edge.toIndex)];
            if (from >= 0 && to > from)
                furthest[static_cast<size_t>(from)] = std::max(furthest[static_cast<size_t>(from)], to);
        }
        std::vector<int> crossing(n + 1, 0);
        for (size_t e = 0; e < n; ++e)
            if (furthest[e] > static_cast<int>(e)) {
                ++crossing[e + 1];
                --crossing[static_cast<size_t>(furthest[e]) + 1];
            }
        for (size_t b = 1; b <= n; ++b)
            crossing[b] += crossing[b - 1];
        std::vector<size_t> cuts{0};
        const size_t reach = std::max<size_t>(1, n / chunks / 4);
        for (size_t c = 1; c < chunks; ++c) {
            // Within reach of the even cut, and leaving every later run room for its entries.
            const size_t prev = cuts.back();
            const size_t lo = std::max(prev + 1, n > (chunks - c) * per ? n - (chunks - c) * per : 0);
            const size_t hi = std::min(prev + per, n - (chunks - c));
            const size_t ideal = std::clamp(c * n / chunks, lo, hi);
            size_t best = ideal;
            for (size_t b = std::max(lo, ideal > reach ? ideal - reach : 0); b <= std::min(hi, ideal + reach); ++b) {
                const size_t away = b > ideal ? b - ideal : ideal - b, bestAway = best > ideal ? best - ideal : ideal - best;
                if (crossing[b] < crossing[best] || (crossing[b] == crossing[best] && away < bestAway))
                    best = b;
            }
            cuts.push_back(best);
        }
        cuts.push_back(n);
        return cuts;
    }

    void collect(int g, std::vector<int>& out) const {
        const HierarchyGroup& group = m_h.groups[static_cast<size_t>(g)];
        out.insert(out.end(), group.items.begin(), group.items.end());
        for (int k : group.groups)
            collect(k, out);
    }

    const GraphLayoutResult& m_items;
    const int m_maxLevel;
    GraphHierarchy m_h;
};

/// "Conv 50 · Add 50 · Relu 49 …": the most frequent op types among items `first`..`last` that sit in `level`'s subtree.
std::string opSummary(const GraphLayoutResult& items, const std::vector<int>& members) {
    std::map<std::string, int> counts;
    for (int item : members)
        ++counts[items.nodes[static_cast<size_t>(item)].op];
    std::vector<std::pair<int, std::string>> byCount;
    for (const auto& [op, count] : counts)
        byCount.emplace_back(-count, op);
    std::sort(byCount.begin(), byCount.end());
    std::string text;
    for (size_t i = 0; i < byCount.size() && i < 2; ++i)
        text += (i ? " \u00b7 " : "") + byCount[i].second + " " + std::to_string(-byCount[i].first);
    if (byCount.size() > 2)
        text += " \u2026";
    return text;
}

void collectItems(const GraphHierarchy& h, int g, std::vector<int>& out) {
    const HierarchyGroup& group = h.groups[static_cast<size_t>(g)];
    out.insert(out.end(), group.items.begin(), group.items.end());
    for (int k : group.groups)
        collectItems(h, k, out);
}

LayoutNode groupBox(const GraphLayoutResult& items, const HierarchyGroup& group, const std::vector<int>& members) {
    LayoutNode n;
    n.name = group.id;
    n.kind = LayoutNodeKind::Group;
    n.cost = ir::CostClass::Host;
    n.groupSize = group.size;
    n.op = std::to_string(group.size) + " nodes";
    n.shortName = group.label;
    n.typeText = opSummary(items, members);
    n.h = 52.0;
    n.w = boxWidth(n) + 12.0; // room for the stacked look
    return n;
}

} // namespace

int GraphHierarchy::findGroup(const std::string& id) const {
    for (size_t g = 0; g < groups.size(); ++g)
        if (groups[g].id == id)
            return static_cast<int>(g);
    return -1;
}

std::vector<int> GraphHierarchy::pathTo(int group) const {
    std::vector<int> path;
    for (int g = group; g >= 0; g = groups[static_cast<size_t>(g)].parent)
        path.push_back(g);
    std::reverse(path.begin(), path.end());
    return path;
}

int GraphHierarchy::groupOfName(const GraphLayoutResult& items, const std::string& name) const {
    const int item = items.findNode(name);
    return item < 0 || static_cast<size_t>(item) >= groupOf.size() ? -1 : groupOf[static_cast<size_t>(item)];
}

GraphHierarchy buildHierarchy(const GraphLayoutResult& items, int collapseAbove, int maxLevel) {
    if (static_cast<int>(items.nodes.size()) <= collapseAbove) {
        GraphHierarchy flat;
        flat.groups.resize(1);
        HierarchyGroup& root = flat.groups.front();
        for (size_t i = 0; i < items.nodes.size(); ++i)
            root.items.push_back(static_cast<int>(i));
        root.size = static_cast<int>(items.nodes.size());
        root.lastItem = root.size - 1;
        flat.groupOf.assign(items.nodes.size(), 0);
        return flat;
    }
    return Builder(items, maxLevel).build(ScopeTree(items));
}

GraphLayoutResult levelItems(const GraphLayoutResult& items, const GraphHierarchy& h, int level, bool ports) {
    GraphLayoutResult result;
    const HierarchyGroup& group = h.groups[static_cast<size_t>(level)];
    // Entries in graph order: the level's own items and its child groups by their first item.
    std::vector<std::pair<int, int>> entries; // (first item, item or -1 - group)
    for (int item : group.items)
        entries.emplace_back(item, item);
    for (int k : group.groups)
        entries.emplace_back(h.groups[static_cast<size_t>(k)].firstItem, -1 - k);
    std::sort(entries.begin(), entries.end());
    std::vector<int> entryOf(items.nodes.size(), -1);
    for (const auto& [first, entry] : entries) {
        const int index = static_cast<int>(result.nodes.size());
        if (entry >= 0) {
            entryOf[static_cast<size_t>(entry)] = index;
            result.nodes.push_back(items.nodes[static_cast<size_t>(entry)]);
            continue;
        }
        std::vector<int> members;
        collectItems(h, -1 - entry, members);
        for (int item : members)
            entryOf[static_cast<size_t>(item)] = index;
        result.nodes.push_back(groupBox(items, h.groups[static_cast<size_t>(-1 - entry)], members));
    }
    // Ports, when asked for and used: the entries -2 (in) and -3 (out) until they get a box.
    int portIn = -1, portOut = -1;
    auto port = [&](bool in) {
        int& index = in ? portIn : portOut;
        if (index < 0) {
            index = static_cast<int>(result.nodes.size());
            LayoutNode n;
            n.name = (in ? "port:in:" : "port:out:") + group.id;
            n.op = in ? "in" : "out";
            n.kind = LayoutNodeKind::Port;
            n.cost = ir::CostClass::Host;
            n.w = n.h = 10.0;
            result.nodes.push_back(std::move(n));
        }
        return index;
    };
    std::map<std::pair<int, int>, size_t> merged; // (from entry, to entry) -> edge
    for (const LayoutEdge& e : items.edges) {
        int from = entryOf[static_cast<size_t>(e.fromIndex)];
        int to = entryOf[static_cast<size_t>(e.toIndex)];
        if (ports && level > 0 && (from < 0) != (to < 0)) {
            if (from < 0)
                from = port(true);
            else
                to = port(false);
        }
        if (from < 0 || to < 0 || from == to)
            continue;
        auto [it, fresh] = merged.try_emplace({from, to}, result.edges.size());
        if (!fresh) {
            ++result.edges[it->second].count;
            continue;
        }
        LayoutEdge edge = e;
        edge.from = result.nodes[static_cast<size_t>(from)].name;
        edge.to = result.nodes[static_cast<size_t>(to)].name;
        edge.fromIndex = from;
        edge.toIndex = to;
        edge.count = 1;
        edge.points.clear();
        result.edges.push_back(std::move(edge));
    }
    return result;
}

} // namespace sextant::views

namespace sextant::views {

std::vector<int> openGroupsOf(const GraphHierarchy& h, int level, const std::set<std::string>& expanded) {
    std::vector<int> open;
    if (level < 0 || static_cast<size_t>(level) >= h.groups.size())
        return open;
    const std::vector<int>& top = h.groups[static_cast<size_t>(level)].groups;
    std::vector<int> stack(top.rbegin(), top.rend());
    while (!stack.empty()) {
        const int g = stack.back();
        stack.pop_back();
        const HierarchyGroup& group = h.groups[static_cast<size_t>(g)];
        if (expanded.count(group.id) == 0)
            continue; // closed: nothing inside it shows
        open.push_back(g);
        stack.insert(stack.end(), group.groups.rbegin(), group.groups.rend());
    }
    return open;
}

Status placeLevel(const GraphLayoutResult& items, const GraphHierarchy& h, int level,
                  const std::set<std::string>& expanded, const std::string& graphName, GraphLayoutResult& out) {
    out = levelItems(items, h, level, level > 0);
    // The open groups' own levels first: their sizes are their frames' sizes.
    std::vector<std::pair<size_t, GraphLayoutResult>> inner;
    for (size_t i = 0; i < out.nodes.size(); ++i) {
        LayoutNode& n = out.nodes[i];
        if (n.kind != LayoutNodeKind::Group || expanded.count(n.name) == 0)
            continue;
        const int g = h.findGroup(n.name);
        if (g <= 0)
            continue;
        GraphLayoutResult sub;
        SX_TRY(placeLevel(items, h, g, expanded, graphName, sub));
        n.open = true;
        n.w = std::max(n.w, sub.width + 2 * kFrameMargin);
        n.h = sub.height + kFrameTitle + kFrameMargin;
        inner.emplace_back(i, std::move(sub));
    }
    SX_TRY(placeItems(out, graphName));
    for (auto& [box, sub] : inner) {
        const LayoutNode frame = out.nodes[box]; // a copy: the boxes below grow the vector
        const double dx = frame.x - sub.width / 2;
        const double dy = frame.y - frame.h / 2 + kFrameTitle;
        const int base = static_cast<int>(out.nodes.size());
        for (LayoutNode& n : sub.nodes) {
            n.x += dx;
            n.y += dy;
            out.nodes.push_back(std::move(n));
        }
        for (LayoutEdge& e : sub.edges) {
            for (LayoutPoint& p : e.points) {
                p.x += dx;
                p.y += dy;
            }
            e.arrowTip.x += dx;
            e.arrowTip.y += dy;
            e.fromIndex += base;
            e.toIndex += base;
            out.edges.push_back(std::move(e));
        }
    }
    return {};
}

} // namespace sextant::views

namespace sextant::views {

GraphHierarchy foldLike(const GraphLayoutResult& items, const GraphLayoutResult& referenceItems,
                        const GraphHierarchy& reference, int collapseAbove, int maxLevel) {
    if (!reference.collapsed() || static_cast<int>(items.nodes.size()) <= collapseAbove ||
        reference.groupOf.size() != referenceItems.nodes.size())
        return buildHierarchy(items, collapseAbove, maxLevel);
    std::unordered_map<std::string, int> referenceBox;
    referenceBox.reserve(referenceItems.nodes.size());
    for (size_t i = 0; i < referenceItems.nodes.size(); ++i)
        referenceBox.emplace(referenceItems.nodes[i].name, static_cast<int>(i));
    // Each box's group in the reference.
    const size_t n = items.nodes.size();
    std::vector<int> groupOf(n, 0);
    for (size_t i = 0; i < n; ++i) {
        const LayoutNode& box = items.nodes[i];
        int found = -1;
        if (auto it = referenceBox.find(box.name); it != referenceBox.end())
            found = it->second;
        else
            for (const std::string& origin : box.origins)
                if (auto at = referenceBox.find(origin); at != referenceBox.end() && (found < 0 || at->second < found))
                    found = at->second;
        groupOf[i] = found >= 0 ? reference.groupOf[static_cast<size_t>(found)] : (i > 0 ? groupOf[i - 1] : 0);
    }
    // The reference's groups that still hold a box, in the reference's order (parents first).
    const size_t groups = reference.groups.size();
    std::vector<int> held(groups, 0);
    for (int g : groupOf)
        for (int k = g; k >= 0; k = reference.groups[static_cast<size_t>(k)].parent)
            ++held[static_cast<size_t>(k)];
    std::vector<int> index(groups, -1);
    GraphHierarchy h;
    for (size_t g = 0; g < groups; ++g) {
        if (held[g] == 0 && g > 0)
            continue;
        index[g] = static_cast<int>(h.groups.size());
        HierarchyGroup group;
        group.id = reference.groups[g].id;
        group.label = reference.groups[g].label;
        const int parent = reference.groups[g].parent;
        group.parent = parent < 0 ? -1 : index[static_cast<size_t>(parent)];
        h.groups.push_back(std::move(group));
        if (parent >= 0)
            h.groups[static_cast<size_t>(index[static_cast<size_t>(parent)])].groups.push_back(index[g]);
    }
    h.groupOf.resize(n);
    for (size_t i = 0; i < n; ++i) {
        const int g = index[static_cast<size_t>(groupOf[i])];
        h.groupOf[i] = g;
        h.groups[static_cast<size_t>(g)].items.push_back(static_cast<int>(i));
    }
    // Sizes and spans from the leaves up (a child comes after its parent), children in graph order.
    for (size_t g = h.groups.size(); g-- > 0;) {
        HierarchyGroup& group = h.groups[g];
        if (static_cast<int>(group.items.size() + group.groups.size()) > maxLevel)
            return buildHierarchy(items, collapseAbove, maxLevel); // boxes no reference node accounts for
        measureGroup(h, static_cast<int>(g), static_cast<int>(n));
    }
    return h;
}

} // namespace sextant::views
