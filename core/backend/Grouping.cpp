#include "Grouping.h"

namespace sextant::backend {

bool isViewNode(const ir::Node& node) {
    if (node.info().layout != ir::LayoutClass::View)
        return false;
    if (!node.isView() || node.numOutputs() != 1 || !node.input(0))
        return false;
    const ir::Value* in = node.input(0);
    const ir::Value* out = node.output(0);
    return in->type().layout != ir::LayoutKind::NC1HWC0 && !out->isGraphOutput() &&
           in->type().isStatic() && out->type().isStatic() &&
           in->type().numel() == out->type().numel() && in->type().dtype == out->type().dtype;
}

const ir::Value* bufferOwner(const ir::Value* v) {
    while (v && v->producer() && isViewNode(*v->producer()))
        v = v->producer()->input(0);
    return v;
}

Expected<UnitKind> unitFor(const ir::Node& node) {
    switch (node.info().cost) {
    case ir::CostClass::Cube: return UnitKind::Cube;
    case ir::CostClass::Vector: return UnitKind::Vector;
    case ir::CostClass::DmaOnly: return UnitKind::Dma;
    case ir::CostClass::Host:
        return makeError(ErrorKind::Unsupported,
                         "op '" + ir::qualifiedOpName(node.kind()) + "' at node '" + node.name() +
                             "' runs on the host and cannot be lowered to the NPU",
                         node.name());
    }
    return makeError(ErrorKind::Unsupported, "unknown cost class at node '" + node.name() + "'", node.name());
}

Expected<std::vector<Group>> formGroups(const ir::Graph& graph) {
    std::vector<Group> groups;
    for (const ir::Node* node : graph.nodes()) {
        SX_ASSIGN(UnitKind unit, unitFor(*node));
        for (const ir::Value* v : node->inputs())
            if (v && !v->type().isStatic())
                return makeError(ErrorKind::Unsupported,
                                 "node '" + node->name() + "' input '" + v->name() + "' has a non-static shape " +
                                     v->type().str() + "; specialise the model's input shapes first",
                                 node->name());
        for (const ir::Value* v : node->outputs())
            if (!v->type().isStatic())
                return makeError(ErrorKind::Unsupported,
                                 "node '" + node->name() + "' output '" + v->name() + "' has a non-static shape " +
                                     v->type().str(),
                                 node->name());
        if (isViewNode(*node))
            continue; // no Task: its output aliases its input's buffer
        groups.push_back(Group{{node}, std::string(node->info().name), unit});
    }
    return groups;
}

} // namespace sextant::backend
