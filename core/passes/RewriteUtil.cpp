#include "RewriteUtil.h"

#include <algorithm>
#include <set>

namespace sextant::passes {

size_t useCount(const ir::Value* v) {
    return v->users().size() + (v->isGraphOutput() ? 1 : 0);
}

ir::Node* singleUser(const ir::Value* v) {
    if (v->isGraphOutput() || v->users().size() != 1)
        return nullptr;
    return v->users()[0];
}

const ir::Tensor* constantOf(const ir::Value* v) {
    return v ? v->constant() : nullptr;
}

bool allEqual(const ir::Tensor& t, double value) {
    for (int64_t i = 0; i < t.numel(); ++i)
        if (t.at(i) != value)
            return false;
    return t.numel() > 0;
}

std::string shapeStr(const std::vector<int64_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i)
        s += (i ? "," : "") + std::to_string(dims[i]);
    return s + "]";
}

std::vector<std::string> unionOrigins(const std::vector<const ir::Node*>& nodes) {
    std::set<std::string> all;
    for (const ir::Node* n : nodes)
        all.insert(n->provenance().origins.begin(), n->provenance().origins.end());
    return {all.begin(), all.end()};
}

std::string cannotForward(const ir::Value* from, const ir::Value* to) {
    if (!from->isGraphOutput())
        return {};
    if (to->isGraphInput())
        return "output '" + from->name() + "' is a graph output fed directly by graph input '" +
               to->name() + "'";
    if (to->isConstant())
        return "output '" + from->name() + "' is a graph output fed directly by constant '" +
               to->name() + "'";
    if (to->isGraphOutput())
        return "both '" + from->name() + "' and '" + to->name() + "' are graph outputs";
    return {};
}

Status forwardAndErase(ir::Graph& graph, ir::Node* node, ir::Value* from, ir::Value* to) {
    std::string reason = cannotForward(from, to);
    if (!reason.empty())
        return makeError(ErrorKind::Verify, reason, node->name());
    const bool rename = from->isGraphOutput();
    const std::string name = from->name();
    graph.replaceAllUsesWith(from, to);
    SX_TRY(graph.eraseNode(node));
    if (rename)
        SX_TRY(graph.renameValue(to, name));
    return {};
}

Expected<ir::Node*> replaceChain(ir::Graph& graph, const std::vector<ir::Node*>& chain,
                                 ir::OpKind kind, std::vector<ir::Value*> inputs,
                                 ir::AttributeMap attrs, const std::string& createdBy) {
    if (chain.empty())
        return makeError(ErrorKind::Verify, "empty chain to replace");
    const std::string name = chain.front()->name();
    ir::Value* result = chain.back()->output(0);
    const std::string resultName = result->name();
    const ir::TensorType resultType = result->type();
    std::vector<const ir::Node*> constChain(chain.begin(), chain.end());
    ir::Provenance prov{unionOrigins(constChain), createdBy};

    // The new node goes where the chain's last node is: its inputs come from outside the chain
    // (so they are defined earlier) and the result's users all come later. Inserting it just
    // before that node leaves, once the chain is erased, the same order as inserting it just
    // after, and needs no walk over the whole graph (one per fusion made the pipeline quadratic).
    ir::Node* before = chain.back();

    // The fused node is built under temporary names, takes over the result's uses, and then
    // inherits the chain's names once the chain is gone, so the IR text does not churn.
    SX_ASSIGN(ir::Node * fused,
              graph.addNode(kind, graph.uniqueName(name + ".fused"), std::move(inputs),
                            {graph.uniqueName(resultName + ".fused")}, std::move(attrs), before));
    fused->output(0)->setType(resultType);
    fused->mutableProvenance() = std::move(prov);
    graph.replaceAllUsesWith(result, fused->output(0));
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
        SX_TRY(graph.eraseNode(*it));
    SX_TRY(graph.renameNode(fused, name));
    SX_TRY(graph.renameValue(fused->output(0), resultName));
    // Weights only the chain used (e.g. the BatchNormalization's) go with it.
    graph.removeUnusedConstants();
    return fused;
}

Expected<ir::Value*> addDerivedConstant(ir::Graph& graph, const std::string& base, ir::Tensor t) {
    return graph.addConstant(graph.uniqueName(base), std::move(t));
}

} // namespace sextant::passes
