#include "FindNode.h"

#include <QRegularExpression>
#include <QString>

#include <algorithm>

namespace sextant::views {

namespace {

std::string trimmed(const std::string& s) {
    const size_t first = s.find_first_not_of(" \t\r\n");
    if (first == std::string::npos)
        return {};
    const size_t last = s.find_last_not_of(" \t\r\n");
    return s.substr(first, last - first + 1);
}

bool covers(const ir::Provenance& p, const std::string& origin) {
    return std::binary_search(p.origins.begin(), p.origins.end(), origin); // sorted, unique
}

std::string byWhom(const std::string& createdBy) {
    return createdBy.empty() || createdBy == "import" ? std::string() : " (made by " + createdBy + ")";
}

} // namespace

FindResult findNode(const ir::Graph& graph, const passes::PipelineResult& pipeline, const std::string& text) {
    const std::string name = trimmed(text);
    if (name.empty())
        return {};
    if (graph.findNode(name))
        return {name, {}};
    if (const ir::Value* v = graph.findValue(name)) {
        if (const ir::Node* p = v->producer())
            return {p->name(), "'" + name + "' is an output of node '" + p->name() + "'"};
        if (v->isGraphInput())
            return {{}, "'" + name + "' is a graph input (" + v->type().str() + ")"};
        return {{}, "'" + name + "' is a constant (" + v->type().str() + ")"};
    }
    // A layout conversion carries the origins of the node it feeds; the node itself is the answer.
    const ir::Node* covering = nullptr;
    for (const ir::Node* n : graph.nodeOrder()) {
        if (!covers(n->provenance(), name))
            continue;
        if (!covering || (covering->kind() == ir::OpKind::TransData && n->kind() != ir::OpKind::TransData))
            covering = n;
        if (covering->kind() != ir::OpKind::TransData)
            break;
    }
    if (covering)
        return {covering->name(), "ONNX node '" + name + "' is part of node '" + covering->name() + "'" +
                                      byWhom(covering->provenance().createdBy)};
    for (const passes::NodeRemoval& r : pipeline.removals)
        if (r.node == name || std::find(r.origins.begin(), r.origins.end(), name) != r.origins.end())
            return {{}, "'" + name + "' was removed by " + r.pass + (r.rule.empty() ? "" : "/" + r.rule) +
                            (r.reason.empty() ? "" : ": " + r.reason)};
    for (const auto& [constant, provenance] : pipeline.constantProvenance)
        if (covers(provenance, name))
            return {{}, "ONNX node '" + name + "' was folded into constant '" + constant + "'" +
                            byWhom(provenance.createdBy)};
    return {{}, "no node, value or ONNX node named '" + name + "' in this graph", false};
}

Expected<std::vector<std::string>> findMatching(const ir::Graph& graph, const std::string& pattern) {
    const std::string text = trimmed(pattern);
    if (text.empty())
        return std::vector<std::string>{};
    const QRegularExpression re(QString::fromStdString(text), QRegularExpression::CaseInsensitiveOption);
    if (!re.isValid())
        return makeError(ErrorKind::Invalid,
                         "'" + text + "' is not a regular expression: " + re.errorString().toStdString() +
                             " at offset " + std::to_string(re.patternErrorOffset()),
                         text);
    auto matches = [&](const std::string& s) { return re.match(QString::fromStdString(s)).hasMatch(); };
    std::vector<std::string> out;
    for (const ir::Node* n : graph.nodeOrder()) {
        const ir::OpInfo& info = n->info();
        std::string op = info.domain.empty() ? std::string(info.name)
                                             : std::string(info.domain) + "." + std::string(info.name);
        bool hit = matches(n->name()) || matches(op);
        for (size_t i = 0; !hit && i < n->numOutputs(); ++i)
            hit = n->output(i) && matches(n->output(i)->type().str());
        if (hit)
            out.push_back(n->name());
    }
    return out;
}

std::vector<std::string> findCompletions(const ir::Graph& graph) {
    std::vector<std::string> nodes;
    std::vector<std::string> origins;
    for (const ir::Node* n : graph.nodeOrder()) {
        nodes.push_back(n->name());
        for (const std::string& o : n->provenance().origins)
            origins.push_back(o);
    }
    std::sort(nodes.begin(), nodes.end());
    std::sort(origins.begin(), origins.end());
    origins.erase(std::unique(origins.begin(), origins.end()), origins.end());
    std::vector<std::string> out = nodes;
    for (const std::string& o : origins)
        if (!std::binary_search(nodes.begin(), nodes.end(), o))
            out.push_back(o);
    return out;
}

} // namespace sextant::views
