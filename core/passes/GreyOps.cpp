#include "GreyOps.h"

namespace sextant::passes {

namespace {

std::vector<int64_t> permOf(const ir::Node& t) {
    std::vector<int64_t> perm = t.attrInts("perm");
    if (!perm.empty() || !t.input(0))
        return perm;
    for (int64_t i = static_cast<int64_t>(t.input(0)->type().rank()) - 1; i >= 0; --i)
        perm.push_back(i);
    return perm;
}

} // namespace

GreyOpCounts countGreyOps(const ir::Graph& graph) {
    GreyOpCounts c;
    for (const ir::Node* n : graph.nodeOrder()) {
        c.quantization += n->kind() == ir::OpKind::QuantizeLinear || n->kind() == ir::OpKind::DequantizeLinear;
        switch (n->info().grey) {
        case ir::GreyClass::NotGrey: break;
        case ir::GreyClass::Transpose: ++c.transposes; break;
        case ir::GreyClass::CopyOrCast: ++c.copyOrCast; break;
        case ir::GreyClass::LayoutConversion: ++c.layoutConversions; break;
        }
    }
    return c;
}

std::vector<std::string> inverseTransposePairs(const ir::Graph& graph) {
    std::vector<std::string> pairs;
    for (const ir::Node* n : graph.nodeOrder()) {
        if (n->kind() != ir::OpKind::Transpose || !n->input(0))
            continue;
        const ir::Node* inner = n->input(0)->producer();
        if (!inner || inner->kind() != ir::OpKind::Transpose)
            continue;
        std::vector<int64_t> p1 = permOf(*inner), p2 = permOf(*n);
        if (p1.empty() || p1.size() != p2.size())
            continue;
        bool identity = true;
        for (size_t k = 0; k < p2.size() && identity; ++k)
            identity = p2[k] >= 0 && p2[k] < static_cast<int64_t>(p1.size()) &&
                       p1[static_cast<size_t>(p2[k])] == static_cast<int64_t>(k);
        if (identity)
            pairs.push_back(inner->name() + " -> " + n->name());
    }
    return pairs;
}

} // namespace sextant::passes
