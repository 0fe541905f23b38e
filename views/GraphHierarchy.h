#pragma once

#include "GraphLayout.h"

#include <set>
#include <string>
#include <vector>

namespace sextant::views {

/// One group of a GraphHierarchy: a part of the graph that the Graph tab can show collapsed into
/// one box, or open as a level of its own.
struct HierarchyGroup {
    std::string id;      ///< unique, stable: "" for the root, else "group:" + path ("group:model/block_9", "group:#3")
    std::string label;   ///< what its box says: a name scope ("block_9") or a range ("Conv_0 … Add_49")
    int parent = -1;     ///< index into GraphHierarchy::groups; -1 for the root
    std::vector<int> groups; ///< child groups, in the order of their first item
    std::vector<int> items;  ///< items (GraphLayoutResult::nodes indices) directly inside, in graph order
    int size = 0;        ///< items inside, at any depth
    int firstItem = 0;   ///< smallest item index inside (orders the children of a level)
    int lastItem = 0;    ///< largest item index inside
};

/// How a large graph is folded: every item (box of graphItems) sits in exactly one group, a level
/// (a group's child groups and items) has at most `maxLevel` entries, and a group stands for a
/// name scope (ONNX names like "model/block_9/add", split on '/'), or, where the names give no
/// scopes, for a run of consecutive items in graph (topological) order. Small graphs are not
/// folded: the root then holds every item.
struct GraphHierarchy {
    std::vector<HierarchyGroup> groups; ///< [0] is the root
    std::vector<int> groupOf;           ///< item -> the group holding it directly

    bool collapsed() const { return groups.size() > 1; }
    /// Index of the group with `id`, or -1.
    int findGroup(const std::string& id) const;
    /// The groups from the root down to `group` (both included).
    std::vector<int> pathTo(int group) const;
    /// The group holding the box named `name` directly, or -1 when no box has that name.
    int groupOfName(const GraphLayoutResult& items, const std::string& name) const;
};

/// Above this many items the Graph tab opens a graph collapsed (GraphHierarchy::collapsed).
constexpr int kCollapseAbove = 400;
/// The most entries (groups and items) on one level of a collapsed graph.
constexpr int kMaxLevelEntries = 200;

/// Folds `items` (graphItems of a snapshot) as GraphHierarchy says: not at all when it has at most
/// `collapseAbove` boxes. Deterministic: the same items give the same groups.
GraphHierarchy buildHierarchy(const GraphLayoutResult& items, int collapseAbove = kCollapseAbove,
                              int maxLevel = kMaxLevelEntries);

/// Folds `items` (a later pass's graph) the way `reference` folds `referenceItems` (the graph as
/// imported), by provenance: a box goes to the group of the reference box with its name, else of
/// the earliest reference box among its origins, else (a node no ONNX node accounts for) to the
/// group of the box before it. So a group keeps its id, label and nodes from pass to pass, and a
/// fused node sits where the nodes it replaced sat. Groups left empty are dropped. Falls back to
/// buildHierarchy when `reference` is not collapsed, when `items` has at most `collapseAbove`
/// boxes, or when a level would hold more than `maxLevel` entries.
GraphHierarchy foldLike(const GraphLayoutResult& items, const GraphLayoutResult& referenceItems,
                        const GraphHierarchy& reference, int collapseAbove = kCollapseAbove,
                        int maxLevel = kMaxLevelEntries);

/// The boxes and edges of one level, not yet placed (placeItems does): the items directly in
/// `level` and one Group box per child group, with the graph's edges between them (edges inside
/// one child group dropped, edges between two entries merged into one carrying their count;
/// edges leaving the level dropped).
/// With `ports`, the edges that enter the level from outside start at a Port box
/// ("port:in:" + the level's id) and those that leave it end at one ("port:out:" + id), merged
/// per box inside, as an open group shows them.
GraphLayoutResult levelItems(const GraphLayoutResult& items, const GraphHierarchy& hierarchy, int level,
                             bool ports = false);

/// Height of an open group's title strip, and the margin around its boxes.
constexpr double kFrameTitle = 24.0;
constexpr double kFrameMargin = 14.0;

/// The groups of `expanded` that show when `level` is shown with them opened in place: those
/// inside `level` whose every group between it and `level` is open too, in hierarchy order.
std::vector<int> openGroupsOf(const GraphHierarchy& hierarchy, int level, const std::set<std::string>& expanded);

/// Level `level` placed with the groups of `expanded` opened in place, as Model Explorer opens
/// a layer: each open group is laid out on its own first (its own level, recursively), then its
/// box in the level around it becomes a frame of that size (LayoutNode::open), and its boxes
/// and edges follow in the result, moved into the frame. An edge from outside ends at the frame,
/// and goes on inside from the group's Port box to the boxes that read it (levelItems' ports).
/// Graphviz never sees more than one level at a time.
Status placeLevel(const GraphLayoutResult& items, const GraphHierarchy& hierarchy, int level,
                  const std::set<std::string>& expanded, const std::string& graphName, GraphLayoutResult& out);

} // namespace sextant::views
