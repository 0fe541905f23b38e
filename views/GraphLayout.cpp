#include "GraphLayout.h"

#include "core/backend/Grouping.h"

#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>

namespace sextant::views {

namespace {

// Graphviz keeps global state (the current graph, error buffers), so at most one layout runs at a
// time in the whole process; the context is created once and lives as long as the process.
std::mutex& graphvizMutex() {
    static std::mutex m;
    return m;
}

GVC_t* graphvizContext() {
    static GVC_t* ctx = gvContext();
    return ctx;
}

// Graphviz's API predates const; these wrappers keep the casts in one place.
void setAttr(void* obj, const char* name, const std::string& value) {
    agsafeset(obj, const_cast<char*>(name), const_cast<char*>(value.c_str()), const_cast<char*>(""));
}

std::string inches(double px) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", px / 72.0);
    return buf;
}

constexpr double charWidthPx = 7.0;  // average width of the 9-pt UI font the view draws with
constexpr double opBoxHeight = 52.0; // three text lines
constexpr double ioBoxHeight = 36.0; // two text lines
constexpr size_t maxNameChars = 26;

/// RAII for a Graphviz graph and its layout.
struct GvGraph {
    Agraph_t* g = nullptr;
    bool laidOut = false;
    ~GvGraph() {
        if (laidOut)
            gvFreeLayout(graphvizContext(), g);
        if (g)
            agclose(g);
    }
};

} // namespace

int GraphLayoutResult::findNode(const std::string& name) const {
    for (size_t i = 0; i < nodes.size(); ++i)
        if (nodes[i].name == name)
            return static_cast<int>(i);
    return -1;
}

std::string elideMiddle(const std::string& text, size_t maxChars) {
    if (text.size() <= maxChars || maxChars < 5)
        return text;
    const size_t keep = maxChars - 1;
    const size_t head = (keep + 1) / 2;
    const size_t tail = keep - head;
    return text.substr(0, head) + "\u2026" + text.substr(text.size() - tail);
}

double boxWidth(const LayoutNode& n) {
    const size_t chars = std::max({n.op.size(), n.shortName.size(), n.typeText.size()});
    return std::max(90.0, static_cast<double>(chars) * charWidthPx + 22.0);
}

namespace {

LayoutNode ioBox(const ir::Value& v, LayoutNodeKind kind) {
    LayoutNode n;
    n.name = kind == LayoutNodeKind::Output ? "output:" + v.name() : v.name();
    n.op = kind == LayoutNodeKind::Output ? "output" : "input";
    n.shortName = elideMiddle(v.name(), maxNameChars);
    n.typeText = v.type().str();
    n.kind = kind;
    n.cost = ir::CostClass::Host;
    n.h = ioBoxHeight;
    return n;
}

/// `hostWhenDataShaped`: the graph's inputs are static, so a node touching an unknown dim touches
/// a value only the run sizes, and runs on the host whatever its op (backend::unitFor); the box is
/// coloured by where it runs.
LayoutNode opBox(const ir::Node& node, bool hostWhenDataShaped) {
    LayoutNode n;
    n.name = node.name();
    std::string op = ir::qualifiedOpName(node.kind());
    if (op.rfind("sextant.", 0) == 0)
        op = op.substr(8);
    n.op = op;
    n.shortName = elideMiddle(node.name(), maxNameChars);
    n.typeText = node.numOutputs() > 0 && node.output(0) ? node.output(0)->type().str() : "";
    n.kind = LayoutNodeKind::Op;
    n.cost = (hostWhenDataShaped && backend::dataShapedValue(node)) || backend::perAxisQuantization(node)
                 ? ir::CostClass::Host
                 : node.info().cost;
    n.view = node.isView() || backend::loadTimeFill(node).has_value();
    n.origins = node.provenance().origins;
    n.h = opBoxHeight;
    return n;
}

void addEdge(GraphLayoutResult& r, int from, int to, const std::string& value) {
    LayoutEdge e;
    e.from = r.nodes[static_cast<size_t>(from)].name;
    e.to = r.nodes[static_cast<size_t>(to)].name;
    e.value = value;
    e.fromIndex = from;
    e.toIndex = to;
    r.edges.push_back(std::move(e));
}

} // namespace

GraphLayoutResult graphItems(const ir::Graph& graph) {
    GraphLayoutResult result;
    // Inputs, nodes in graph order, outputs; an output's box is named "output:" + value, so the
    // names are unique across the three groups.
    std::map<const ir::Value*, int> producerBox; // value -> box that produces it (input or node)
    for (const ir::Value* v : graph.inputs()) {
        producerBox[v] = static_cast<int>(result.nodes.size());
        result.nodes.push_back(ioBox(*v, LayoutNodeKind::Input));
    }
    const bool staticInputs = std::all_of(graph.inputs().begin(), graph.inputs().end(),
                                          [](const ir::Value* v) { return v->type().isStatic(); });
    std::vector<int> nodeBox;
    for (const ir::Node* node : graph.nodes()) {
        const int box = static_cast<int>(result.nodes.size());
        nodeBox.push_back(box);
        for (const ir::Value* out : node->outputs())
            if (out)
                producerBox[out] = box;
        result.nodes.push_back(opBox(*node, staticInputs));
    }
    size_t k = 0;
    for (const ir::Node* node : graph.nodes()) {
        const int to = nodeBox[k++];
        std::set<const ir::Value*> seen; // a node using a value twice gets one edge
        for (const ir::Value* in : node->inputs()) {
            if (!in || in->isConstant() || !seen.insert(in).second)
                continue;
            if (auto it = producerBox.find(in); it != producerBox.end())
                addEdge(result, it->second, to, in->name());
        }
    }
    for (const ir::Value* v : graph.outputs()) {
        const int box = static_cast<int>(result.nodes.size());
        result.nodes.push_back(ioBox(*v, LayoutNodeKind::Output));
        // An output that is a constant or an input passed through has no producer box.
        if (auto it = producerBox.find(v); it != producerBox.end())
            addEdge(result, it->second, box, v->name());
    }
    for (LayoutNode& n : result.nodes)
        n.w = boxWidth(n);
    return result;
}

Expected<GraphLayoutResult> layoutGraph(const ir::Graph& graph) {
    GraphLayoutResult result = graphItems(graph);
    SX_TRY(placeItems(result, graph.name()));
    return result;
}

Status placeItems(GraphLayoutResult& result, const std::string& graphName) {
    // 2. Graphviz.
    std::lock_guard<std::mutex> lock(graphvizMutex());
    GVC_t* gvc = graphvizContext();
    if (!gvc)
        return makeError(ErrorKind::Runtime, "graphviz: could not create a context");
    GvGraph gv;
    gv.g = agopen(const_cast<char*>("sextant"), Agdirected, nullptr);
    if (!gv.g)
        return makeError(ErrorKind::Runtime, "graphviz: could not create a graph");
    setAttr(gv.g, "rankdir", "TB");
    setAttr(gv.g, "nodesep", "0.3");
    setAttr(gv.g, "ranksep", "0.4");
    setAttr(gv.g, "splines", "spline");
    std::vector<Agnode_t*> gvNodes;
    gvNodes.reserve(result.nodes.size());
    for (size_t i = 0; i < result.nodes.size(); ++i) {
        const LayoutNode& n = result.nodes[i];
        const std::string id = "n" + std::to_string(i);
        Agnode_t* an = agnode(gv.g, const_cast<char*>(id.c_str()), 1);
        if (!an)
            return makeError(ErrorKind::Runtime, "graphviz: could not add node '" + n.name + "'");
        setAttr(an, "shape", "box");
        setAttr(an, "fixedsize", "true");
        setAttr(an, "label", "");
        setAttr(an, "width", inches(n.w));
        setAttr(an, "height", inches(n.h));
        gvNodes.push_back(an);
    }
    std::vector<Agedge_t*> gvEdges;
    for (size_t i = 0; i < result.edges.size(); ++i) {
        const std::string id = "e" + std::to_string(i);
        const LayoutEdge& edge = result.edges[i];
        if (edge.fromIndex < 0 || edge.toIndex < 0 || edge.fromIndex >= static_cast<int>(gvNodes.size()) ||
            edge.toIndex >= static_cast<int>(gvNodes.size()))
            return makeError(ErrorKind::Invalid, "layout: edge '" + edge.value + "' has no ends");
        Agedge_t* ae = agedge(gv.g, gvNodes[static_cast<size_t>(edge.fromIndex)], gvNodes[static_cast<size_t>(edge.toIndex)],
                              const_cast<char*>(id.c_str()), 1);
        if (!ae)
            return makeError(ErrorKind::Runtime, "graphviz: could not add edge for '" + result.edges[i].value + "'");
        gvEdges.push_back(ae);
    }
    if (gvLayout(gvc, gv.g, "dot") != 0)
        return makeError(ErrorKind::Runtime, "graphviz: dot layout failed for graph '" + graphName + "'");
    gv.laidOut = true;

    // 3. Read positions back. Graphviz has y pointing up, in points; the scene has y down.
    const boxf bb = GD_bb(gv.g);
    const double top = bb.UR.y;
    auto toScene = [&](pointf p) { return LayoutPoint{p.x - bb.LL.x, top - p.y}; };
    result.width = bb.UR.x - bb.LL.x;
    result.height = bb.UR.y - bb.LL.y;
    for (size_t i = 0; i < result.nodes.size(); ++i) {
        const LayoutPoint c = toScene(ND_coord(gvNodes[i]));
        result.nodes[i].x = c.x;
        result.nodes[i].y = c.y;
    }
    for (size_t i = 0; i < gvEdges.size(); ++i) {
        const splines* spl = ED_spl(gvEdges[i]);
        if (!spl || spl->size == 0)
            continue;
        const bezier& bz = spl->list[0];
        LayoutEdge& e = result.edges[i];
        for (int k = 0; k < bz.size; ++k)
            e.points.push_back(toScene(bz.list[k]));
        if (bz.eflag) {
            e.hasArrow = true;
            e.arrowTip = toScene(bz.ep);
        }
    }
    return {};
}

} // namespace sextant::views
