#include "OpRegistry.h"

#include "Graph.h"

namespace sextant::ir {

// Each op's functions are defined in ops/*.cpp; declaring them here makes a missing one a link
// error, and the registry test checks that every row is complete.
#define SEXTANT_OP(id, domain, name, minIn, maxIn, minOut, maxOut, cost, work, passes, layout, \
                   fusable, grey, compare, f16risk, summary)                                      \
    Status verify##id(const Node&);                                                                \
    Expected<std::vector<TensorType>> infer##id(const Node&);                                      \
    Expected<std::vector<Tensor>> run##id(const Node&, std::span<const Tensor>,                    \
                                          const KernelContext&);
#include "OpTable.def"
#undef SEXTANT_OP

namespace {
const OpInfo kOps[] = {
#define SEXTANT_OP(id, domain, name, minIn, maxIn, minOut, maxOut, cost, work, passes, layout, \
                   fusable, grey, compare, f16risk, summary)                                      \
    OpInfo{OpKind::id,      domain,           name,                  minIn,                        \
           maxIn,           minOut,           maxOut,                CostClass::cost,              \
           WorkModel::work, passes,           LayoutClass::layout,   Fusable::fusable,             \
           GreyClass::grey, CompareClass::compare, F16Risk::f16risk, summary,                      \
           &verify##id,     &infer##id,       &run##id},
#include "OpTable.def"
#undef SEXTANT_OP
};
} // namespace

bool groupStepOp(OpKind op) {
    const Fusable f = opInfo(op).fusable;
    return f == Fusable::Group || f == Fusable::Pooled;
}

std::string_view costClassName(CostClass c) {
    switch (c) {
    case CostClass::Cube: return "cube";
    case CostClass::Vector: return "vector";
    case CostClass::DmaOnly: return "dma";
    case CostClass::Host: return "host";
    }
    return "?";
}

const OpInfo& opInfo(OpKind kind) { return kOps[static_cast<size_t>(kind)]; }

std::span<const OpInfo> allOps() { return kOps; }

std::optional<OpKind> findOp(std::string_view domain, std::string_view name) {
    if (domain == "ai.onnx")
        domain = "";
    for (const OpInfo& op : kOps)
        if (op.domain == domain && op.name == name)
            return op.kind;
    return std::nullopt;
}

std::string qualifiedOpName(OpKind kind) {
    const OpInfo& op = opInfo(kind);
    if (op.domain.empty())
        return std::string(op.name);
    return std::string(op.domain) + "." + std::string(op.name);
}

} // namespace sextant::ir
