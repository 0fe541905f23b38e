#include "InPlace.h"

#include <string>
#include <vector>

namespace sextant::ir {

std::string concatInPlaceReason(const Node& n, int c0) {
    if (n.kind() != OpKind::Concat || n.numOutputs() != 1 || !n.output(0))
        return "not a Concat with one output";
    const Value* out = n.output(0);
    if (out->isGraphOutput())
        return "output '" + out->name() + "' is a graph output, which the host reads from a buffer of its own";
    const TensorType& ot = out->type();
    if (!ot.isStatic())
        return "output '" + out->name() + "' has no static shape";
    const int64_t rank = static_cast<int64_t>(ot.rank());
    int64_t axis = n.attrInt("axis", 0);
    axis = axis < 0 ? axis + rank : axis;
    if (axis < 0 || axis >= rank || n.numInputs() == 0)
        return "axis " + std::to_string(axis) + " is not a dim of its rank-" + std::to_string(rank) + " output";
    const std::vector<int64_t> dims = ot.dims();
    for (int64_t d = 0; d < axis; ++d)
        if (dims[static_cast<size_t>(d)] != 1)
            return "dim " + std::to_string(d) + " before axis " + std::to_string(axis) + " is " +
                   std::to_string(dims[static_cast<size_t>(d)]) + ", not 1: each input would be strided in the output";
    const bool blocked = ot.layout == LayoutKind::NC1HWC0;
    if (blocked && (axis != 1 || rank != 4))
        return "output '" + out->name() + "' is NC1HWC0 and joined along dim " + std::to_string(axis) +
               ": only whole channel blocks are contiguous";
    for (size_t i = 0; i < n.numInputs(); ++i) {
        const Value* in = n.input(i);
        if (!in)
            return "input " + std::to_string(i) + " is missing";
        const std::string name = "input '" + in->name() + "'";
        if (in->isConstant() || in->isGraphInput() || !in->producer())
            return name + " is a constant or a graph input, which no Task writes";
        if (in->isGraphOutput())
            return name + " is a graph output, which needs a buffer of its own";
        if (in->producer()->isView() && in->producer()->kind() != OpKind::Concat)
            return name + " is a view of another tensor's buffer";
        if (!in->type().isStatic() || in->type().layout != ot.layout || in->type().dtype != ot.dtype)
            return name + " is not a static " + std::string(dtypeName(ot.dtype)) + " tensor in the output's layout";
        if (blocked && (c0 <= 0 || in->type().dims()[1] % c0 != 0))
            return name + " has " + std::to_string(in->type().dims()[1]) + " channels, not whole blocks of " +
                   std::to_string(c0) + ": its padded block would overlap the next input's";
        for (size_t j = 0; j < i; ++j)
            if (n.input(j) == in)
                return name + " is joined twice, and a tensor has one place";
        for (const Node* u : in->users())
            if (u != &n && u->kind() == OpKind::Concat && u->isView())
                return name + " is already written in place into '" + (u->output(0) ? u->output(0)->name() : u->name()) + "'";
    }
    return {};
}

} // namespace sextant::ir
