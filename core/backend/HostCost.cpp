// The cost of a host Task (DESIGN §6, partitions): a node the NPU cannot run, estimated as the
// host runs it. No tiling, no SRAM: the host reads its inputs from DRAM and writes its outputs
// there.
#include "Tiling.h"

#include "MathUtil.h"
#include "core/ir/DType.h"

#include <algorithm>
#include <set>
#include <variant>

namespace sextant::backend {

namespace {

/// One host step's fixed cost: the NPU's completion interrupt, the host's kernel launch and the
/// NPU's restart (about 10 us at 1 GHz, a driver round trip).
constexpr uint64_t kHostStepCycles = 10000;
/// What one host core computes per NPU cycle: one core, 8-wide fused multiply-add, at the NPU's
/// clock.
constexpr uint64_t kHostFlopsPerCycle = 16;
/// What the host reads and writes of DRAM per NPU cycle.
constexpr uint64_t kHostBytesPerCycle = 16;

uint64_t staticBytes(const ir::Value* v) {
    if (!v || !v->type().isStatic())
        return 0;
    return static_cast<uint64_t>(v->type().numel()) * ir::dtypeSize(v->type().dtype);
}

uint64_t graphFlops(const ir::Graph& g, int depth);

/// How many times a Loop or Scan runs its body, when the graph tells: a Loop's constant trip
/// count, a Scan's sequence length (its first scan input's scanned dim). 1 otherwise.
uint64_t bodyRuns(const ir::Node& n) {
    if (n.kind() == ir::OpKind::Loop && n.numInputs() > 0 && n.input(0) && n.input(0)->constant() &&
        n.input(0)->constant()->numel() == 1)
        return static_cast<uint64_t>(std::clamp<double>(n.input(0)->constant()->at(0), 1.0, 1e6));
    if (n.kind() == ir::OpKind::Scan) {
        const bool opset8 = n.attrInt("_opset", 9) < 9;
        const int64_t scans = n.attrInt("num_scan_inputs", 0);
        const int64_t first = static_cast<int64_t>(n.numInputs()) - n.attrInt("num_captured", 0) - scans;
        if (scans > 0 && first >= 0 && n.input(static_cast<size_t>(first))) {
            const ir::TensorType& t = n.input(static_cast<size_t>(first))->type();
            int64_t axis = opset8 ? 1 : n.attrInts("scan_input_axes", {0}).front();
            if (axis < 0)
                axis += static_cast<int64_t>(t.rank());
            if (axis >= 0 && static_cast<size_t>(axis) < t.rank() && t.shape[static_cast<size_t>(axis)].isKnown())
                return static_cast<uint64_t>(std::max<int64_t>(1, t.shape[static_cast<size_t>(axis)].value));
        }
    }
    return 1;
}

/// The flops of one node as the reference kernels do them, roughly: a recurrence its gates'
/// matrix products per step, control flow its costliest branch (a loop body times its runs,
/// once when the trip count is data), anything else two per output element.
uint64_t nodeFlops(const ir::Node& n, int depth) {
    uint64_t branches = 0;
    bool control = false;
    for (const auto& [name, attr] : n.attrs())
        if (const auto* g = std::get_if<std::shared_ptr<const ir::Graph>>(&attr); g && *g) {
            control = true;
            if (depth < 8)
                branches = std::max(branches, graphFlops(**g, depth + 1));
        }
    if (control)
        return branches * bodyRuns(n);
    const int gates = n.kind() == ir::OpKind::LSTM ? 4 : n.kind() == ir::OpKind::GRU ? 3 : n.kind() == ir::OpKind::RNN ? 1 : 0;
    if (gates > 0 && n.numInputs() >= 3 && n.input(0) && n.input(2) && n.input(0)->type().isStatic() &&
        n.input(2)->type().isStatic()) {
        const std::vector<int64_t> x = n.input(0)->type().dims(), r = n.input(2)->type().dims();
        if (x.size() == 3 && r.size() == 3) {
            const uint64_t steps = static_cast<uint64_t>(x[0] * x[1]); // seq * batch (either layout)
            const uint64_t in = static_cast<uint64_t>(x[2]), dirs = static_cast<uint64_t>(r[0]);
            const uint64_t hidden = static_cast<uint64_t>(r[2]);
            return dirs * steps * gates * hidden * (2 * (in + hidden) + 8);
        }
    }
    uint64_t flops = 0;
    for (const ir::Value* o : n.outputs())
        if (o && o->type().isStatic())
            flops += 2 * static_cast<uint64_t>(o->type().numel());
    return flops;
}

uint64_t graphFlops(const ir::Graph& g, int depth) {
    uint64_t flops = 0;
    for (const ir::Node* n : g.nodes())
        flops += nodeFlops(*n, depth);
    return flops;
}

} // namespace

TaskCost hostCost(const Group& group) {
    TaskCost c;
    uint64_t bytes = 0;
    for (const ir::Node* n : group.nodes) {
        c.flops += nodeFlops(*n, 0);
        for (const ir::Value* v : n->inputs())
            bytes += staticBytes(v);
        for (const ir::Value* v : n->outputs())
            bytes += staticBytes(v);
    }
    // One "tile": the whole of its first output at once.
    const ir::Node* first = group.nodes.empty() ? nullptr : group.nodes.front();
    if (first && first->numOutputs() > 0 && first->output(0) && first->output(0)->type().isStatic())
        c.tiling.tileShape = first->output(0)->type().dims();
    c.computeCycles = kHostStepCycles + ceilDiv(c.flops, kHostFlopsPerCycle) + ceilDiv(bytes, kHostBytesPerCycle);
    c.estCycles = c.computeCycles;
    c.tiling.estCycles = c.estCycles;
    return c;
}

HostTransfer hostTransfer(const Task& t, const std::function<uint64_t(int)>& sizeOf) {
    HostTransfer out;
    for (int id : std::set<int>(t.inputs.begin(), t.inputs.end()))
        out.read += sizeOf(id);
    for (int id : std::set<int>(t.outputs.begin(), t.outputs.end()))
        out.written += sizeOf(id);
    return out;
}

uint64_t hostTransferCycles(uint64_t bytes) {
    return ceilDiv(bytes, kHostBytesPerCycle);
}

} // namespace sextant::backend
