#include "GraphLayout.h"

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

double boxWidth(const LayoutNode& n) {
    const size_t chars = std::max({n.op.size(), n.shortName.size(), n.typeText.size()});
    return std::max(90.0, static_cast<double>(chars) * charWidthPx + 22.0);
}

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

Expected<GraphLayoutResult> layoutGraph(const ir::Graph& graph) {
    GraphLayoutResult result;

    // 1. Boxes: graph inputs, nodes in graph order, graph outputs. Scene names must be unique
    //    across the three groups, so inputs and outputs get their own prefixes inside Graphviz.
    std::map<const ir::Value*, int> producerBox; // value -> box that produces it (input or node)
    for (const ir::Value* v : graph.inputs()) {
        LayoutNode n;
        n.name = v->name();
        n.op = "input";
        n.shortName = elideMiddle(v->name(), maxNameChars);
        n.typeText = v->type().str();
        n.kind = LayoutNodeKind::Input;
        n.cost = ir::CostClass::Host;
        n.h = ioBoxHeight;
        producerBox[v] = static_cast<int>(result.nodes.size());
        result.nodes.push_back(std::move(n));
    }
    for (const ir::Node* node : graph.nodes()) {
        LayoutNode n;
        n.name = node->name();
        std::string op = ir::qualifiedOpName(node->kind());
        if (op.rfind("sextant.", 0) == 0)
            op = op.substr(8);
        n.op = op;
        n.shortName = elideMiddle(node->name(), maxNameChars);
        n.typeText = node->numOutputs() > 0 && node->output(0) ? node->output(0)->type().str() : "";
        n.kind = LayoutNodeKind::Op;
        n.cost = node->info().cost;
        n.view = node->isView();
        n.h = opBoxHeight;
        const int box = static_cast<int>(result.nodes.size());
        for (const ir::Value* out : node->outputs())
            if (out)
                producerBox[out] = box;
        result.nodes.push_back(std::move(n));
    }
    std::vector<std::pair<int, int>> edgeEnds; // (from box, to box) per edge
    for (const ir::Node* node : graph.nodes()) {
        const int to = result.findNode(node->name());
        std::set<const ir::Value*> seen; // a node using a value twice gets one edge
        for (const ir::Value* in : node->inputs()) {
            if (!in || in->isConstant() || !seen.insert(in).second)
                continue;
            auto it = producerBox.find(in);
            if (it == producerBox.end())
                continue;
            LayoutEdge e;
            e.from = result.nodes[it->second].name;
            e.to = node->name();
            e.value = in->name();
            edgeEnds.emplace_back(it->second, to);
            result.edges.push_back(std::move(e));
        }
    }
    for (const ir::Value* v : graph.outputs()) {
        LayoutNode n;
        n.name = "output:" + v->name();
        n.op = "output";
        n.shortName = elideMiddle(v->name(), maxNameChars);
        n.typeText = v->type().str();
        n.kind = LayoutNodeKind::Output;
        n.cost = ir::CostClass::Host;
        n.h = ioBoxHeight;
        const int box = static_cast<int>(result.nodes.size());
        result.nodes.push_back(std::move(n));
        auto it = producerBox.find(v);
        if (it == producerBox.end())
            continue; // an output that is a constant or an input passed through
        LayoutEdge e;
        e.from = result.nodes[it->second].name;
        e.to = result.nodes[box].name;
        e.value = v->name();
        edgeEnds.emplace_back(it->second, box);
        result.edges.push_back(std::move(e));
    }
    for (LayoutNode& n : result.nodes)
        n.w = boxWidth(n);

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
    for (size_t i = 0; i < edgeEnds.size(); ++i) {
        const std::string id = "e" + std::to_string(i);
        Agedge_t* ae = agedge(gv.g, gvNodes[edgeEnds[i].first], gvNodes[edgeEnds[i].second],
                              const_cast<char*>(id.c_str()), 1);
        if (!ae)
            return makeError(ErrorKind::Runtime, "graphviz: could not add edge for '" + result.edges[i].value + "'");
        gvEdges.push_back(ae);
    }
    if (gvLayout(gvc, gv.g, "dot") != 0)
        return makeError(ErrorKind::Runtime, "graphviz: dot layout failed for graph '" + graph.name() + "'");
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
    return result;
}

} // namespace sextant::views
