#pragma once

#include "core/ir/Error.h"
#include "core/ir/Graph.h"

#include <string>
#include <vector>

namespace sextant::views {

/// What a laid-out box stands for.
enum class LayoutNodeKind { Op, Input, Output };

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
    /// Lowered as a view of its input (layout pass, attribute view=1): no Task, no bytes moved.
    bool view = false;
    double x = 0.0, y = 0.0; ///< centre
    double w = 0.0, h = 0.0;
};

/// A laid-out edge: a cubic B-spline as Graphviz returns it (1 + 3k control points) and the
/// arrow head from the spline's last point to `arrowTip`.
struct LayoutEdge {
    std::string from; ///< LayoutNode::name of the producer
    std::string to;   ///< LayoutNode::name of the consumer
    std::string value;
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

/// Lays `graph` out with Graphviz "dot": one box per node plus one per graph input and output,
/// one edge per (value, consumer) pair; constants (weights) are not drawn. Safe to call from any
/// thread (calls into Graphviz are serialised, as Graphviz keeps global state).
Expected<GraphLayoutResult> layoutGraph(const ir::Graph& graph);

/// Shortens `text` to at most `maxChars` characters by replacing its middle with "…".
std::string elideMiddle(const std::string& text, size_t maxChars);

} // namespace sextant::views
