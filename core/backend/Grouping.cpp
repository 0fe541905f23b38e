#include "Grouping.h"

#include "core/ir/InPlace.h"

#include <algorithm>
#include <cmath>
#include <variant>

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

std::optional<double> loadTimeFill(const ir::Node& node) {
    if (node.kind() != ir::OpKind::ConstantOfShape || node.numInputs() != 1 || node.numOutputs() != 1 ||
        !node.input(0) || !node.input(0)->isConstant() || !node.output(0))
        return std::nullopt;
    const ir::Value& out = *node.output(0);
    const ir::TensorType& t = out.type();
    if (!t.isStatic() || t.numel() <= 0 || !ir::isFloat(t.dtype) || t.layout == ir::LayoutKind::NC1HWC0 ||
        !ir::onlyFeedsWeights(&out))
        return std::nullopt;
    const ir::Attribute* a = node.attr("value");
    if (!a)
        return 0.0; // ONNX's default: a float zero
    const auto* value = std::get_if<ir::Tensor>(a);
    if (!value || value->numel() != 1 || !ir::isFloat(value->dtype()))
        return std::nullopt;
    const double v = value->at(0);
    if (!std::isfinite(v))
        return std::nullopt;
    return v;
}

bool lowersInPlace(const ir::Node& node, const Target& target) {
    if (node.kind() != ir::OpKind::Concat || !node.isView() || !ir::concatInPlaceReason(node, target.c0).empty())
        return false;
    const uint64_t align = std::max<uint64_t>(target.dramAlign, 1);
    const ir::DType stored = storedDType(*node.output(0));
    for (const ir::Value* in : node.inputs()) {
        if (storedDType(*in) != stored)
            return false;
        const uint64_t bytes = static_cast<uint64_t>(in->type().numel()) * ir::dtypeSize(stored);
        if (bytes % align != 0)
            return false;
    }
    return true;
}

const ir::Value* bufferOwner(const ir::Value* v) {
    while (v && v->producer() && isViewNode(*v->producer()))
        v = v->producer()->input(0);
    return v;
}

namespace {

/// A query follows data movement through at most this many readers; past that, the reader
/// counts as keeping f32 (the walk stays bounded on any graph, even one that fans out and
/// joins again through chains of Split and Concat, and the answer errs on the safe side).
constexpr int kStorageVisits = 256;

bool everyReaderRounds(const ir::Value& v, int& visits);

/// Whether node `u` takes its operand `i` rounded to f16, directly or through data movement.
bool readsRounded(const ir::Node& u, size_t i, int& visits) {
    if (readsInF16(u, i))
        return true;
    if (u.info().cost != ir::CostClass::DmaOnly || --visits <= 0)
        return false;
    bool moves = false;
    for (const ir::Value* o : u.outputs()) {
        if (!o || !ir::isFloat(o->type().dtype))
            continue;
        if (!everyReaderRounds(*o, visits))
            return false;
        moves = true;
    }
    return moves;
}

bool everyReaderRounds(const ir::Value& v, int& visits) {
    if (v.isGraphOutput() || v.users().empty())
        return false;
    for (const ir::Node* u : v.users())
        for (size_t i = 0; i < u->numInputs(); ++i)
            if (u->input(i) == &v && !readsRounded(*u, i, visits))
                return false;
    return true;
}

} // namespace

bool readsInF16(const ir::Node& n, size_t i) {
    switch (n.precision()) {
    case ir::Precision::F16: return true;
    case ir::Precision::F16AccF32: return i < 2 || (i >= 3 && i <= 5 && n.kind() == ir::OpKind::FusedConv);
    case ir::Precision::F32:
    case ir::Precision::Unset: break;
    }
    return false;
}

ir::DType storedDType(const ir::Value& value) {
    const ir::Value& v = *bufferOwner(&value);
    const ir::DType own = value.type().dtype;
    if (v.type().dtype != ir::DType::F32 || v.isGraphInput() || v.isGraphOutput() || v.isConstant())
        return own;
    int visits = kStorageVisits;
    return everyReaderRounds(v, visits) ? ir::DType::F16 : own;
}

ir::TensorType storedType(const ir::Value& v) {
    ir::TensorType t = v.type();
    t.dtype = storedDType(v);
    return t;
}

const ir::Value* dataShapedValue(const ir::Node& node) {
    for (const ir::Value* v : node.inputs())
        if (v && !v->type().isStatic())
            return v;
    for (const ir::Value* v : node.outputs())
        if (v && !v->type().isStatic())
            return v;
    return nullptr;
}

bool perAxisQuantization(const ir::Node& node) {
    if (node.kind() != ir::OpKind::QuantizeLinear && node.kind() != ir::OpKind::DequantizeLinear)
        return false;
    const ir::Value* scale = node.numInputs() > 1 ? node.input(1) : nullptr;
    return !scale || !scale->type().isStatic() || scale->type().numel() != 1;
}

bool hostOnlyHere(const ir::Node& node) { return dataShapedValue(node) || perAxisQuantization(node); }

UnitKind unitFor(const ir::Node& node) {
    if (hostOnlyHere(node))
        return UnitKind::Host;
    switch (node.info().cost) {
    case ir::CostClass::Cube: return UnitKind::Cube;
    case ir::CostClass::Vector: return UnitKind::Vector;
    case ir::CostClass::DmaOnly: return UnitKind::Dma;
    case ir::CostClass::Host: break;
    }
    return UnitKind::Host;
}

std::string hostReason(const ir::Node& node) {
    const std::string op = "'" + ir::qualifiedOpName(node.kind()) + "'";
    if (node.info().cost != ir::CostClass::Host) {
        if (perAxisQuantization(node))
            return op + " has a per-axis or blocked scale (" + node.input(1)->type().str() +
                   "); the vector unit quantizes with one scale and zero point per tensor";
        const ir::Value* v = dataShapedValue(node);
        if (!v)
            return {};
        const bool reads = std::find(node.inputs().begin(), node.inputs().end(), v) != node.inputs().end();
        return op + (reads ? " reads '" : " writes '") + v->name() + "' (" + v->type().str() +
               "), whose shape only the run decides; the NPU's buffers and Tasks are sized before it";
    }
    const bool control = std::any_of(node.attrs().begin(), node.attrs().end(), [](const auto& kv) {
        return std::holds_alternative<std::shared_ptr<const ir::Graph>>(kv.second);
    });
    if (control)
        return op + " is control flow: which branch or how many iterations run depends on data, and the NPU's "
                    "Task list is fixed";
    switch (node.kind()) {
    case ir::OpKind::LSTM:
    case ir::OpKind::GRU:
    case ir::OpKind::RNN:
        return op + " is a recurrence: each step needs the one before, and the NPU has no kernel for it";
    case ir::OpKind::Shape:
    case ir::OpKind::Size:
        return op + " computes shape data (i64), which the NPU does not run";
    default: break;
    }
    return op + " has no NPU kernel (its op-table cost class is host)";
}

Expected<std::vector<Group>> formGroups(const ir::Graph& graph) {
    std::vector<Group> groups;
    // Shapes the run decides come from the data (NonZero, NonMaxSuppression, a Loop that stops
    // on a condition), never from the inputs: those must be fixed first.
    for (const ir::Value* in : graph.inputs())
        if (!in->type().isStatic())
            return makeError(ErrorKind::Unsupported,
                             "graph input '" + in->name() + "' has a non-static shape " + in->type().str() +
                                 "; specialise the model's input shapes first",
                             in->name());
    for (const ir::Node* node : graph.nodes()) {
        // A node that reads or writes such a value is a host step (unitFor), its values held by
        // the host (a buffer of size 0 and no address, createBuffers in Lower.cpp).
        const UnitKind unit = unitFor(*node);
        if (isViewNode(*node))
            continue; // no Task: its output aliases its input's buffer
        if (loadTimeFill(*node))
            continue; // no Task: the loader fills its output (Buffer::fill)
        groups.push_back(Group{{node}, std::string(node->info().name), unit});
    }
    return groups;
}

} // namespace sextant::backend
