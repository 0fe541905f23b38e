#pragma once

#include "core/ir/Error.h"
#include "core/ir/Graph.h"

#include <string>
#include <vector>

namespace sextant::views {

/// What a laid-out box stands for.
/// Port: where the edges from outside an open group enter it (or leave it), a dot under its title
/// (or at its foot), so an edge that reaches the frame goes on to the boxes that read it.
enum class LayoutNodeKind { Op, Input, Output, Group, Port };

/// A point in scene coordinates (pixels, y grows downwards).
struct LayoutPoint {
    double x = 0.0;
    double y = 0.0;
};

/// A laid-out node: its box (centre and size) and the text drawn in it.
struct LayoutNode {
    std::string name;       ///< IR node name; a graph input's value name; "output:" + value for outputs
    std::string op;         ///< op type without the "sextant." prefix; "input"/"output" for I/O
    std::string shortName;  ///< name elided to fit the box
    std::string typeText;   ///< first output's type, e.g. "f32[1,16,32,32]"
    LayoutNodeKind kind = LayoutNodeKind::Op;
    ir::CostClass cost = ir::CostClass::Vector;
    /// Lowered to no Task: a view of its input (layout pass, attribute view=1), no bytes moved; or
    /// a ConstantOfShape the loader fills before the run (backend::loadTimeFill).
    bool view = false;
    /// The ONNX nodes an op box came from (its provenance; sorted), for folding a later pass's
    /// graph like the imported one.
    std::vector<std::string> origins;
    /// A Group box (a collapsed part of a large graph, GraphHierarchy): the graph nodes inside it.
    int groupSize = 0;
    /// A Group box opened in place: a frame whose own boxes (placed after it in the result) sit
    /// inside it, below a title strip of kFrameTitle pixels.
    bool open = false;
    double x = 0.0, y = 0.0; ///< centre
    double w = 0.0, h = 0.0;
};

/// A laid-out edge: a cubic B-spline as Graphviz returns it (1 + 3k control points) and the
/// arrow head from the spline's last point to `arrowTip`.
struct LayoutEdge {
    std::string from; ///< LayoutNode::name of the producer
    std::string to;   ///< LayoutNode::name of the consumer
    std::string value;        ///< the tensor; between groups, the first of `count`
    int fromIndex = -1;       ///< index of the producer in GraphLayoutResult::nodes
    int toIndex = -1;         ///< index of the consumer
    int count = 1;            ///< graph edges this edge stands for (more than one between groups)
    std::vector<LayoutPoint> points;
    bool hasArrow = false;
    LayoutPoint arrowTip;
};

/// A whole graph laid out top to bottom; plain data, computed off the GUI thread.
struct GraphLayoutResult {
    double width = 0.0;
    double height = 0.0;
    std::vector<LayoutNode> nodes;
    std::vector<LayoutEdge> edges;

    /// Index of the node named `name`, or -1.
    int findNode(const std::string& name) const;
};

/// The boxes and edges of `graph`, not yet placed: one box per graph input, per node (graph
/// order) and per graph output, one edge per (value, consumer) pair; constants (weights) are not
/// drawn. Box sizes are set; positions are zero.
GraphLayoutResult graphItems(const ir::Graph& graph);

/// Places `items` (boxes with sizes, edges with fromIndex/toIndex) with Graphviz "dot", top to
/// bottom, setting positions, splines and the bounds. Safe to call from any thread (calls into
/// Graphviz are serialised, as Graphviz keeps global state).
Status placeItems(GraphLayoutResult& items, const std::string& graphName);

/// Lays `graph` out with Graphviz "dot": graphItems, then placeItems.
Expected<GraphLayoutResult> layoutGraph(const ir::Graph& graph);

/// The width of a box showing `node`'s three lines of text.
double boxWidth(const LayoutNode& node);

/// Shortens `text` to at most `maxChars` characters by replacing its middle with "…".
std::string elideMiddle(const std::string& text, size_t maxChars);

} // namespace sextant::views
