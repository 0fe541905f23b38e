#include "Dot.h"

#include "OpRegistry.h"

#include <map>
#include <set>

namespace sextant::ir {

namespace {

/// A DOT double-quoted string: backslashes and quotes escaped, line breaks as \n.
std::string quoted(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\')
            out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out + "\"";
}

/// Fill and outline per unit, the Graph tab's legend: cube blue, vector green, DMA orange, host grey.
std::pair<const char*, const char*> colours(CostClass c) {
    switch (c) {
    case CostClass::Cube: return {"#dbe8fb", "#3b6fc9"};
    case CostClass::Vector: return {"#dcf1dc", "#3a9a3a"};
    case CostClass::DmaOnly: return {"#fde3cc", "#d9822b"};
    case CostClass::Host: return {"#e6e6e6", "#777777"};
    }
    return {"#ffffff", "#000000"};
}

} // namespace

std::string graphToDot(const Graph& graph, const std::string& title) {
    std::string out = "digraph " + quoted(graph.name()) + " {\n";
    out += "  graph [rankdir=TB, nodesep=0.3, ranksep=0.4, fontname=\"Helvetica\", labelloc=t, label=" +
           quoted(title) + "];\n";
    out += "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n";
    out += "  edge [fontname=\"Helvetica\", fontsize=8, color=\"#555555\"];\n";
    std::map<const Value*, std::string> producer;
    const std::vector<Value*>& inputs = graph.inputs();
    for (size_t i = 0; i < inputs.size(); ++i) {
        const std::string id = "i" + std::to_string(i);
        producer[inputs[i]] = id;
        out += "  " + id + " [shape=ellipse, fillcolor=\"#fdf3c8\", color=\"#b49a2a\", label=" +
               quoted(inputs[i]->name() + "\n" + inputs[i]->type().str()) + "];\n";
    }
    const std::vector<Node*>& nodes = graph.nodeOrder();
    for (size_t k = 0; k < nodes.size(); ++k) {
        const Node& n = *nodes[k];
        const std::string id = "n" + std::to_string(k);
        for (size_t o = 0; o < n.numOutputs(); ++o)
            producer[n.output(o)] = id;
        const auto [fill, line] = colours(n.info().cost);
        std::string label = std::string(n.info().name) + "\n" + n.name();
        if (n.numOutputs() > 0)
            label += "\n" + n.output(0)->type().str();
        out += "  " + id + " [fillcolor=\"" + fill + "\", color=\"" + line + "\"" +
               (n.isView() ? ", style=\"rounded,filled,dashed\"" : "") + ", label=" + quoted(label) + "];\n";
    }
    auto edge = [&](const Value* v, const std::string& to) {
        auto it = producer.find(v);
        if (it != producer.end())
            out += "  " + it->second + " -> " + to + " [label=" + quoted(v->type().str()) + "];\n";
    };
    for (size_t k = 0; k < nodes.size(); ++k) {
        std::set<const Value*> seen; // a node reading a value twice gets one edge
        for (const Value* in : nodes[k]->inputs())
            if (in && !in->isConstant() && seen.insert(in).second)
                edge(in, "n" + std::to_string(k));
    }
    const std::vector<Value*>& outputs = graph.outputs();
    for (size_t i = 0; i < outputs.size(); ++i) {
        const std::string id = "o" + std::to_string(i);
        out += "  " + id + " [shape=ellipse, fillcolor=\"#fdf3c8\", color=\"#b49a2a\", label=" +
               quoted(outputs[i]->name() + "\n" + outputs[i]->type().str()) + "];\n";
        edge(outputs[i], id);
    }
    return out + "}\n";
}

} // namespace sextant::ir
