#include "Lower.h"

#include "CoreSplit.h"
#include "EventAllocator.h"
#include "Grouping.h"
#include "MathUtil.h"
#include "MemoryPlanner.h"
#include "Reachability.h"
#include "Scheduler.h"
#include "SramPlanner.h"

#include <algorithm>
#include <future>
#include <map>
#include <unordered_map>
#include <numeric>
#include <optional>

namespace sextant::backend {

std::string_view unitName(UnitKind u) {
    switch (u) {
    case UnitKind::Cube: return "cube";
    case UnitKind::Vector: return "vector";
    case UnitKind::Dma: return "dma";
    case UnitKind::Host: return "host";
    }
    return "?";
}

bool onItsLane(const Task& t, const Target& target) {
    if (t.unit == UnitKind::Host)
        return t.core == hostLane(target);
    return t.core >= 0 && t.core < target.numCores;
}

int coresUsed(const Program& p) {
    std::vector<char> used(static_cast<size_t>(std::max(p.target.numCores, 0)), 0);
    for (const Task& t : p.tasks)
        if (t.unit != UnitKind::Host && t.core >= 0 && static_cast<size_t>(t.core) < used.size())
            used[static_cast<size_t>(t.core)] = 1;
    return static_cast<int>(std::count(used.begin(), used.end(), 1));
}

std::vector<std::string> hostStepLines(const Program& p) {
    struct Op {
        std::string op, reason;
        std::vector<std::string> names;
    };
    std::vector<Op> ops;
    for (const Task& t : p.tasks) {
        if (t.unit != UnitKind::Host)
            continue;
        const ir::Node* n = p.graph && !t.nodes.empty() ? p.graph->findNode(t.nodes.front()) : nullptr;
        const std::string op = n ? ir::qualifiedOpName(n->kind()) : t.kernel;
        const std::string reason = n ? hostReason(*n) : std::string("runs on the host");
        auto it = std::find_if(ops.begin(), ops.end(), [&](const Op& o) { return o.op == op && o.reason == reason; });
        if (it == ops.end()) {
            ops.push_back(Op{op, reason, {}});
            it = ops.end() - 1;
        }
        it->names.push_back(t.name);
    }
    std::vector<std::string> lines;
    constexpr size_t kNamesShown = 3;
    for (const Op& o : ops) {
        std::string names;
        for (size_t i = 0; i < o.names.size() && i < kNamesShown; ++i)
            names += (i ? ", " : "") + o.names[i];
        if (o.names.size() > kNamesShown)
            names += ", ...";
        lines.push_back(std::to_string(o.names.size()) + " x " + o.op + " (" + names + "): " + o.reason);
    }
    return lines;
}

std::string guardValuesText(const ir::Tensor& t) {
    std::string out;
    for (int64_t k = 0; k < t.numel() && k < 16; ++k)
        out += (k ? ", " : "") + std::to_string(static_cast<int64_t>(t.at(k)));
    return t.numel() == 1 ? out : "[" + out + "]";
}

std::vector<std::string> inputGuardLines(const Program& p) {
    std::vector<std::string> lines;
    for (const InputGuard& g : p.inputGuards) {
        const std::string values = guardValuesText(g.value);
        const std::string name = p.graph && g.input >= 0 && static_cast<size_t>(g.input) < p.graph->inputs().size()
                                     ? p.graph->inputs()[static_cast<size_t>(g.input)]->name()
                                     : "#" + std::to_string(g.input);
        lines.push_back("input '" + name + "' = " + values + " (decides '" + g.decides +
                        "'; compiled for this value, others are refused)");
    }
    return lines;
}

std::string laneName(int core, const Target& target) {
    return core == hostLane(target) ? std::string("the host") : "core " + std::to_string(core);
}

const char* bufferKindName(BufferKind k) {
    switch (k) {
    case BufferKind::Input: return "input";
    case BufferKind::Output: return "output";
    case BufferKind::Weight: return "weight";
    case BufferKind::Intermediate: return "intermediate";
    }
    return "?";
}

int64_t storedElements(const ir::TensorType& t, int c0) {
    const int64_t n = t.numel();
    if (n < 0 || t.layout != ir::LayoutKind::NC1HWC0 || t.rank() != 4 || c0 <= 1)
        return n;
    const std::vector<int64_t> d = t.dims();
    const int64_t c1 = static_cast<int64_t>(ceilDiv(d[1], c0));
    // Checked: an artifact's manifest may give any shape (numel saturates the same way).
    int64_t stored = 1;
    for (int64_t f : {d[0], c1, d[2], d[3], static_cast<int64_t>(c0)})
        if (__builtin_mul_overflow(stored, f, &stored))
            return INT64_MAX;
    return stored;
}

uint64_t storedBytes(const ir::TensorType& t, int c0) {
    const int64_t n = storedElements(t, c0);
    uint64_t bytes = 0;
    if (n < 0)
        return 0;
    return __builtin_mul_overflow(static_cast<uint64_t>(n), static_cast<uint64_t>(ir::dtypeSize(t.dtype)), &bytes)
               ? UINT64_MAX
               : bytes;
}

SliceBytes sliceOf(const Task& task, const Buffer& buffer) {
    if (task.parts <= 1)
        return sliceAlong(buffer, -1, 0, 0);
    return sliceAlong(buffer, task.sliceAxis, task.sliceBegin, task.sliceEnd);
}

SliceBytes touchedBytes(const Task& task, const Buffer& buffer) {
    if (std::find(task.outputs.begin(), task.outputs.end(), buffer.id) != task.outputs.end())
        return sliceOf(task, buffer);
    if (const Task::HaloRead* h = task.haloReadOf(buffer.id))
        return sliceAlong(buffer, task.sliceAxis, h->begin, h->end);
    if (task.parts > 1 && std::binary_search(task.sliceLocalInputs.begin(), task.sliceLocalInputs.end(), buffer.id))
        return sliceOf(task, buffer);
    return sliceAlong(buffer, -1, 0, 0);
}

int storageOf(const Program& p, int b, uint64_t* offset) {
    uint64_t at = 0;
    forEachHolder(p.buffers, b, [&](int holder, uint64_t in) {
        b = holder;
        at = in;
    });
    if (offset)
        *offset = at;
    return b;
}

std::vector<char> holdersOfParts(const Program& p) {
    std::vector<char> holds(p.buffers.size(), 0);
    for (const Buffer& b : p.buffers)
        forEachHolder(p.buffers, b.id, [&](int holder, uint64_t) { holds[static_cast<size_t>(holder)] = 1; });
    return holds;
}

SliceBytes touchedInStorage(const Program& p, const Task& task, int storage) {
    const Buffer& whole = p.buffers[static_cast<size_t>(storage)];
    SliceBytes found{0, 0, 0, 0};
    int ways = 0;
    auto look = [&](int b) {
        if (b == storage) {
            if (ways++ == 0)
                found = touchedBytes(task, whole);
            return;
        }
        // Written in place into `storage`, directly or through a chain: at which offset.
        std::optional<uint64_t> at;
        forEachHolder(p.buffers, b, [&](int holder, uint64_t offset) {
            if (holder == storage && !at)
                at = offset;
        });
        if (!at)
            return;
        if (ways++ == 0) { // its span, moved to where it lies in the storage
            const SliceBytes own = touchedBytes(task, p.buffers[static_cast<size_t>(b)]);
            found = SliceBytes{1, 0, *at + own.begin, *at + (own.runs > 0 ? (own.runs - 1) * own.stride : 0) + own.end};
        }
    };
    std::vector<int> seen;
    for (const std::vector<int>* list : {&task.inputs, &task.outputs})
        for (int b : *list)
            if (b >= 0 && static_cast<size_t>(b) < p.buffers.size() &&
                std::find(seen.begin(), seen.end(), b) == seen.end()) {
                seen.push_back(b);
                look(b);
            }
    if (ways > 1)
        return sliceAlong(whole, -1, 0, 0);
    return found;
}

bool bytesMeet(uint64_t baseA, const SliceBytes& a, uint64_t baseB, const SliceBytes& b) {
    if (a.begin >= a.end || b.begin >= b.end || a.runs == 0 || b.runs == 0)
        return false;
    if (baseA == baseB && a.runs == b.runs && a.stride == b.stride)
        return a.begin < b.end && b.begin < a.end;
    // One range against runs (what is left unwritten of a Concat's output, and a slice of it
    // read): exact, from the first run that ends past the range's start.
    auto rangeMeetsRuns = [](uint64_t lo, uint64_t hi, uint64_t base, const SliceBytes& r) {
        const uint64_t end0 = base + r.end; // the first run's end
        const uint64_t i = lo < end0 ? 0 : (lo - end0) / r.stride + 1;
        return i < r.runs && base + i * r.stride + r.begin < hi;
    };
    const bool runsA = a.runs > 1 && a.stride > 0 && a.end <= a.stride;
    const bool runsB = b.runs > 1 && b.stride > 0 && b.end <= b.stride;
    if (a.runs == 1 && runsB)
        return rangeMeetsRuns(baseA + a.begin, baseA + a.end, baseB, b);
    if (b.runs == 1 && runsA)
        return rangeMeetsRuns(baseB + b.begin, baseB + b.end, baseA, a);
    // Runs of one stride whose bases are whole runs apart (a tensor written in place into a
    // Concat along a dim before the runs' and that Concat's output): exact, run by run.
    if (a.stride == b.stride && a.stride > 0 && a.end <= a.stride && b.end <= b.stride &&
        (baseA > baseB ? baseA - baseB : baseB - baseA) % a.stride == 0) {
        const uint64_t lo = std::min(baseA, baseB);
        const uint64_t ra = (baseA - lo) / a.stride, rb = (baseB - lo) / b.stride;
        return ra < rb + b.runs && rb < ra + a.runs && a.begin < b.end && b.begin < a.end;
    }
    const uint64_t endA = baseA + (a.runs - 1) * a.stride + a.end, endB = baseB + (b.runs - 1) * b.stride + b.end;
    return baseA + a.begin < endB && baseB + b.begin < endA;
}

SliceBytes sliceAlong(const Buffer& buffer, int sliceAxis, int64_t begin, int64_t end) {
    const int64_t numel = std::max<int64_t>(buffer.type.numel(), 0);
    const uint64_t elem = ir::dtypeSize(buffer.type.dtype);
    SliceBytes s;
    s.end = static_cast<uint64_t>(numel) * elem;
    if (sliceAxis < 0 || static_cast<size_t>(sliceAxis) >= buffer.type.rank())
        return s;
    const std::vector<int64_t> dims = buffer.type.dims();
    const size_t axis = static_cast<size_t>(sliceAxis);
    uint64_t outer = 1, inner = elem;
    for (size_t d = 0; d < axis; ++d)
        outer *= static_cast<uint64_t>(std::max<int64_t>(dims[d], 0));
    for (size_t d = axis + 1; d < dims.size(); ++d)
        inner *= static_cast<uint64_t>(std::max<int64_t>(dims[d], 0));
    const uint64_t extent = static_cast<uint64_t>(std::max<int64_t>(dims[axis], 0));
    s.runs = outer;
    s.stride = extent * inner;
    s.begin = std::min(extent, static_cast<uint64_t>(std::max<int64_t>(begin, 0))) * inner;
    s.end = std::min(extent, static_cast<uint64_t>(std::max<int64_t>(end, 0))) * inner;
    return s;
}

bool sameSplit(const Task& a, const Task& b) {
    return a.parts > 1 && a.parts == b.parts && a.nodes == b.nodes && a.sliceAxis == b.sliceAxis;
}

namespace {

/// Buffers for every value the Tasks touch: weights (constant order), graph inputs, graph
/// outputs (output order), then intermediates in node order, among them the outputs of the nodes
/// the loader fills (loadTimeFill: weights, with Buffer::fill). A value the layout pass tagged
/// NC1HWC0 is sized with its channel padding (storedBytes), so the memory plan shows what the
/// blocked layout really costs. Weights are plain: a blocked convolution's weights are repacked
/// when the program is built, never by a TransData at run time.
/// `byValue[v->id()]` becomes the buffer of value v (-1: none, a view's output or an unread value).
Status createBuffers(Program& prog, const ir::Graph& g, std::vector<int>& byValue, bool inPlace) {
    byValue.assign(g.valueIdBound(), -1);
    const uint64_t align = std::max<uint64_t>(prog.target.dramAlign, 1);
    auto add = [&](const ir::Value* v, BufferKind kind) -> Expected<int> {
        if (!v->type().isStatic() && (kind == BufferKind::Weight || kind == BufferKind::Input))
            return makeError(ErrorKind::Unsupported, "value '" + v->name() + "' has a non-static shape " + v->type().str(),
                             v->name());
        Buffer b;
        b.id = static_cast<int>(prog.buffers.size());
        b.value = v->name();
        b.kind = kind;
        b.level = MemLevel::Dram;
        b.type = storedType(*v);
        uint64_t bytes = storedBytes(b.type, prog.target.c0);
        // Never 0 bytes: every buffer has an address. Except a data-shaped value's (its shape only
        // the run decides): the host Tasks that write and read it hold it, size 0, no address.
        b.size = v->type().isStatic() ? std::max<uint64_t>(alignUp(bytes, align), align) : 0;
        byValue[v->id()] = b.id;
        prog.buffers.push_back(std::move(b));
        return prog.buffers.back().id;
    };
    // Every constant gets a weight buffer (even one no node reads) so that weights.bin can give
    // the artifact's printed graph all the data its digests name.
    for (const ir::Value* c : g.constants())
        SX_TRY(add(c, BufferKind::Weight));
    for (const ir::Value* in : g.inputs()) {
        SX_ASSIGN(int id, add(in, BufferKind::Input));
        prog.inputBuffers.push_back(id);
    }
    for (const ir::Value* out : g.outputs()) {
        if (!out->producer())
            return makeError(ErrorKind::Unsupported,
                             "graph output '" + out->name() + "' is a graph input or constant; the NPU program has no task "
                             "to produce it",
                             out->name());
        int id = byValue[out->id()];
        if (id < 0) {
            SX_ASSIGN(int made, add(out, BufferKind::Output));
            id = made;
        }
        prog.outputBuffers.push_back(id);
    }
    for (const ir::Node* n : g.nodes()) {
        if (isViewNode(*n))
            continue; // a view's output lives in its input's buffer (see bufferOwner)
        if (std::optional<double> fill = loadTimeFill(*n)) {
            SX_ASSIGN(int id, add(n->output(0), BufferKind::Weight));
            prog.buffers[static_cast<size_t>(id)].fill = *fill;
            continue;
        }
        for (const ir::Value* v : n->outputs())
            if (byValue[v->id()] < 0)
                SX_TRY(add(v, BufferKind::Intermediate));
    }
    // The inputs of a Concat lowered in place are its output's bytes, one after the other.
    for (const ir::Node* n : g.nodes()) {
        if (!inPlace || !lowersInPlace(*n, prog.target))
            continue;
        const int whole = byValue[n->output(0)->id()];
        uint64_t at = 0;
        for (const ir::Value* in : n->inputs()) {
            Buffer& part = prog.buffers[static_cast<size_t>(byValue[in->id()])];
            part.inPlaceOf = whole;
            part.inPlaceOffset = at;
            at += static_cast<uint64_t>(part.type.numel()) * ir::dtypeSize(part.type.dtype);
        }
    }
    return {};
}

} // namespace

void holdersLifetimes(std::vector<Buffer>& buffers) {
    for (size_t i = 0; i < buffers.size(); ++i) {
        const int first = buffers[i].firstTask, last = buffers[i].lastTask;
        forEachHolder(buffers, static_cast<int>(i), [&](int holder, uint64_t) {
            Buffer& h = buffers[static_cast<size_t>(holder)];
            if (first >= 0)
                h.firstTask = h.firstTask < 0 ? first : std::min(h.firstTask, first);
            h.lastTask = std::max(h.lastTask, last);
        });
    }
}

namespace {

/// The buffer createBuffers gave `v`, which node `n` reads or writes.
Expected<int> bufferFor(const std::vector<int>& byValue, const ir::Value& v, const ir::Node& n) {
    if (v.id() < byValue.size() && byValue[v.id()] >= 0)
        return byValue[v.id()];
    return makeError(ErrorKind::Invalid, "node '" + n.name() + "' uses '" + v.name() + "', which has no buffer", n.name());
}

} // namespace

namespace {

/// An input of a split group that each part reads only within its own slice, from a producer
/// split the same way (same dim, same ranges): part p depends on the producer's part p alone.
struct LocalInput {
    int buffer = -1;
    /// The nodes whose parts write it: its producer, or for the output of a Concat lowered in
    /// place, the producers of its inputs (through nested ones), each split the same way.
    std::vector<const ir::Node*> producers;
    /// Per part, the rows of the split dim it reads when that is a window wider than its own
    /// slice (a convolution's halo); empty: each part reads just its own slice.
    std::vector<std::pair<int64_t, int64_t>> windows;
};

/// The rows of window [w.first, w.second) inside the stripe [begin, end), and whether that is
/// most of the window: then a part reading the window is worth keeping beside the stripe.
int64_t rowsInside(std::pair<int64_t, int64_t> w, int64_t begin, int64_t end) {
    return std::max<int64_t>(0, std::min(w.second, end) - std::max(w.first, begin));
}
bool mostlyInside(std::pair<int64_t, int64_t> w, int64_t begin, int64_t end) {
    const int64_t inside = rowsInside(w, begin, end);
    return inside > (w.second - w.first) - inside;
}

/// Bytes of `rows` of the `extent` rows along the split dim of a tensor of `whole` bytes.
uint64_t rowBytes(uint64_t whole, int64_t rows, int64_t extent) {
    return ceilDiv(whole * static_cast<uint64_t>(std::max<int64_t>(rows, 0)),
                   static_cast<uint64_t>(std::max<int64_t>(extent, 1)));
}

/// The inputs each part of `grp` reads only within its own slice (an elementwise op, a depthwise
/// convolution or a pooling along channels) or within a window mostly its own stripe (a
/// convolution's halo rows), split like that by their producers: each part depends only on the
/// producer parts it reads, and keep-on-chip may keep the stripes on their cores. Every such
/// edge is narrowed, whether or not its stripes then fit on chip: the DRAM plan lets the maps of
/// one shape that the unordered chains leave behind share their addresses slice by slice
/// (sliceShares in MemoryPlanner.cpp).
/// Whether `node` is a Concat lowered in place; then `out` gets the nodes that write its parts
/// (through nested ones), or stays empty when a part read along `axis` is not that part's rows
/// alone (joined along that axis).
bool inPlaceWriters(const ir::Node& node, int axis, const Target& target, std::vector<const ir::Node*>& out) {
    if (!lowersInPlace(node, target))
        return false;
    const int64_t rank = static_cast<int64_t>(node.output(0)->type().rank());
    int64_t along = node.attrInt("axis", 0);
    along = along < 0 ? along + rank : along;
    bool ok = along != axis;
    for (const ir::Value* in : node.inputs()) {
        if (!ok)
            break;
        std::vector<const ir::Node*> nested;
        if (!inPlaceWriters(*in->producer(), axis, target, nested))
            out.push_back(in->producer());
        else if (nested.empty())
            ok = false;
        else
            out.insert(out.end(), nested.begin(), nested.end());
    }
    if (!ok)
        out.clear();
    return true;
}

std::vector<LocalInput> sliceLocalInputs(const Group& grp, const SplitPlan& split, const std::vector<Task>& tasks,
                                         const std::unordered_map<const ir::Node*, std::vector<int>>& tasksOfNode,
                                         const std::vector<int>& bufferOf, const Target& target, bool inPlace) {
    std::vector<LocalInput> out;
    const ir::Node& n = *grp.nodes.front();
    if (grp.nodes.size() != 1)
        return out;
    for (const ir::Value* read : n.inputs()) {
        const ir::Value* v = bufferOwner(read);
        if (!v || v != read || v->isConstant() || !v->producer())
            continue; // through a view the dims differ; constants and graph inputs have no parts
        LocalInput in{bufferOf[v->id()], {}, {}};
        if (!inPlace || !inPlaceWriters(*v->producer(), split.axis, target, in.producers))
            in.producers = {v->producer()};
        if (in.producers.empty())
            continue;
        bool parted = true;
        for (const ir::Node* producer : in.producers) {
            auto it = tasksOfNode.find(producer);
            parted = parted && it != tasksOfNode.end() && it->second.size() == split.ranges.size();
        }
        if (!parted)
            continue;
        if (!readsOwnSlice(n, *v, split.axis)) {
            // A convolution's window reaches into its neighbours' rows: worth it while most of
            // each part's window is its producer part's stripe (the rest comes through DRAM).
            if (read != n.input(0))
                continue;
            for (const auto& [b, e] : split.ranges)
                if (std::optional<std::pair<int64_t, int64_t>> w = convWindowRows(n, split.axis, b, e))
                    in.windows.push_back(*w);
            if (in.windows.size() != split.ranges.size())
                continue;
        }
        bool same = true;
        for (size_t p = 0; p < split.ranges.size() * in.producers.size() && same; ++p) {
            const std::vector<int>& parts = tasksOfNode.at(in.producers[p / split.ranges.size()]);
            const Task& pt = tasks[static_cast<size_t>(parts[p % split.ranges.size()])];
            const size_t q = p % split.ranges.size();
            if (in.windows.empty())
                same = pt.sliceAxis == split.axis && pt.sliceBegin == split.ranges[q].first &&
                       pt.sliceEnd == split.ranges[q].second && pt.outputs.size() == 1;
            else
                same = pt.sliceAxis == split.axis && pt.outputs.size() == 1 &&
                       mostlyInside(in.windows[q], pt.sliceBegin, pt.sliceEnd);
        }
        if (same)
            out.push_back(std::move(in));
    }
    return out;
}

/// chooseSplit's plan, or the split of the group's data input's producer (same axis, same
/// ranges) where that costs no more than the chosen one plus what the aligned one saves: each
/// part's input stripe no longer goes through DRAM and across cores (its bytes at the engine's
/// rate, the DRAM latency, the event). The local figure chooseSplit compares cannot see that
/// saving, and a chain of nodes split alike keeps its stripes on chip from one to the next.
SplitPlan alignWithProducer(const Group& grp, const Target& target, const TaskCost& whole, SplitPlan chosen,
                            const std::vector<Task>& tasks,
                            const std::unordered_map<const ir::Node*, std::vector<int>>& tasksOfNode,
                            TileOptions tiles) {
    const ir::Node& n = *grp.nodes.front();
    if (grp.nodes.size() != 1 || n.numInputs() == 0 || !n.input(0))
        return chosen;
    const ir::Value* v = n.input(0);
    if (bufferOwner(v) != v || v->isConstant() || !v->producer())
        return chosen;
    auto it = tasksOfNode.find(v->producer());
    if (it == tasksOfNode.end() || it->second.size() < 2)
        return chosen;
    const Task& first = tasks[static_cast<size_t>(it->second.front())];
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (int id : it->second) {
        const Task& pt = tasks[static_cast<size_t>(id)];
        if (pt.sliceAxis != first.sliceAxis)
            return chosen;
        ranges.emplace_back(pt.sliceBegin, pt.sliceEnd);
    }
    if (chosen.axis == first.sliceAxis && chosen.ranges == ranges)
        return chosen;
    // Only where the part would then read its input in place: its own slice, or a window mostly
    // its own stripe (as sliceLocalInputs decides).
    if (!readsOwnSlice(n, *v, first.sliceAxis))
        for (const auto& [b, e] : ranges) {
            const std::optional<std::pair<int64_t, int64_t>> w = convWindowRows(n, first.sliceAxis, b, e);
            if (!w || !mostlyInside(*w, b, e))
                return chosen;
        }
    std::optional<SplitPlan> aligned = splitAlong(grp, target, first.sliceAxis, ranges, tiles);
    if (!aligned)
        return chosen;
    const uint64_t fixed = target.eventLatencyCycles + target.dispatchCycles;
    const uint64_t now = chosen.axis < 0 ? whole.estCycles : chosen.costs.front().estCycles + fixed;
    const uint64_t then = aligned->costs.front().estCycles + fixed;
    const std::vector<int64_t> dims = v->type().dims();
    const size_t a = static_cast<size_t>(first.sliceAxis);
    const uint64_t stripe = a < dims.size() ? rowBytes(storedBytes(storedType(*v), target.c0),
                                                       ranges.front().second - ranges.front().first, dims[a])
                                            : 0;
    const uint64_t saved = ceilDiv(stripe, std::max<uint64_t>(target.dmaBytesPerCycle, 1)) + target.dramLatencyCycles +
                           target.eventLatencyCycles;
    return then <= now + saved ? std::move(*aligned) : chosen;
}

/// Whether a part of `reader` computing rows `ranges` of dim `axis` reads `v` (its input 0) in
/// place when `v` is split into the same ranges: its own slice, or a window mostly its own stripe.
bool readsInPlaceAlong(const ir::Node& reader, const ir::Value& v, int axis,
                       const std::vector<std::pair<int64_t, int64_t>>& ranges) {
    if (readsOwnSlice(reader, v, axis))
        return true;
    if (reader.numInputs() == 0 || reader.input(0) != &v)
        return false;
    for (const auto& [b, e] : ranges) {
        const std::optional<std::pair<int64_t, int64_t>> w = convWindowRows(reader, axis, b, e);
        if (!w || !mostlyInside(*w, b, e))
            return false;
    }
    return true;
}

/// chooseSplit's plan for `grp`, or the split its only reader chooses for itself (chooseSplit on
/// the reader's group) where the reader would then read this node's output in place and this
/// node can be split so at all: the stripe then stays on chip from this node to its reader,
/// where split apart it goes through DRAM to every core. The mirror of alignWithProducer, which
/// cannot see that a node's own choice breaks the chain one edge further on.
SplitPlan alignWithReader(const Group& grp, const Target& target, bool inPlace, const TaskCost& whole, SplitPlan chosen,
                          int maxParts, const std::vector<Group>& groups,
                          const std::unordered_map<const ir::Node*, size_t>& groupOf, TileOptions tiles) {
    const ir::Node& n = *grp.nodes.front();
    if (grp.nodes.size() != 1 || n.numOutputs() != 1 || !n.output(0))
        return chosen;
    const ir::Value& v = *n.output(0);
    if (v.isGraphOutput() || v.users().size() != 1)
        return chosen;
    const ir::Node* r = v.users().front();
    if (inPlace && lowersInPlace(*r, target))
        return chosen; // it writes its part of the Concat's buffer, which no Task splits
    auto g = groupOf.find(r);
    if (g == groupOf.end())
        return chosen;
    const Group& rg = groups[g->second];
    if (rg.nodes.size() != 1)
        return chosen;
    Expected<TaskCost> rc = chooseTiling(rg, target, nullptr, tiles);
    if (!rc.ok())
        return chosen;
    Expected<SplitPlan> rs = chooseSplit(rg, target, *rc, maxParts, tiles);
    if (!rs.ok() || rs->axis < 0 || rs->ranges.size() < 2)
        return chosen;
    if (chosen.axis == rs->axis && chosen.ranges == rs->ranges)
        return chosen;
    const std::vector<int64_t> dims = v.type().dims();
    const std::vector<int64_t> rdims = r->output(0) ? r->output(0)->type().dims() : std::vector<int64_t>{};
    const size_t a = static_cast<size_t>(rs->axis);
    // The reader's rows are this node's rows only where the two have the extent (no stride).
    if (a >= dims.size() || a >= rdims.size() || dims[a] != rdims[a])
        return chosen;
    if (!readsInPlaceAlong(*r, v, rs->axis, rs->ranges))
        return chosen;
    std::optional<SplitPlan> aligned = splitAlong(grp, target, rs->axis, rs->ranges, tiles);
    if (!aligned)
        return chosen;
    // As alignWithProducer weighs it: no dearer than its own choice plus the stripe's trip.
    const uint64_t fixed = target.eventLatencyCycles + target.dispatchCycles;
    const uint64_t now = chosen.axis < 0 ? whole.estCycles : chosen.costs.front().estCycles + fixed;
    const uint64_t then = aligned->costs.front().estCycles + fixed;
    const uint64_t stripe = rowBytes(storedBytes(storedType(v), target.c0),
                                     rs->ranges.front().second - rs->ranges.front().first, dims[a]);
    const uint64_t saved = ceilDiv(stripe, std::max<uint64_t>(target.dmaBytesPerCycle, 1)) + target.dramLatencyCycles +
                           target.eventLatencyCycles;
    return then <= now + saved ? std::move(*aligned) : chosen;
}

/// Whether `part` reads, other than through a slice-local input, a buffer Task `dep` writes.
bool nonLocalNeeds(const Task& part, int dep, const std::vector<Task>& tasks, const std::vector<LocalInput>& local) {
    for (int b : tasks[static_cast<size_t>(dep)].outputs) {
        const bool isLocal =
            std::any_of(local.begin(), local.end(), [&](const LocalInput& in) { return in.buffer == b; });
        if (!isLocal && std::find(part.inputs.begin(), part.inputs.end(), b) != part.inputs.end())
            return true;
    }
    return false;
}

/// Part p's deps: for each slice-local input, only the producer's part p instead of every part.
void narrowDeps(Task& part, const std::vector<LocalInput>& local, size_t p, const std::vector<Task>& tasks,
                const std::unordered_map<const ir::Node*, std::vector<int>>& tasksOfNode) {
    std::vector<int> keep;
    std::vector<int> drop;
    for (const LocalInput& in : local) {
        for (const ir::Node* producer : in.producers) {
            const std::vector<int>& parts = tasksOfNode.at(producer);
            for (size_t q = 0; q < parts.size(); ++q) {
                bool needed = q == p;
                if (!in.windows.empty()) { // every part whose slice meets the window
                    const Task& pq = tasks[static_cast<size_t>(parts[q])];
                    needed = pq.sliceBegin < in.windows[p].second && in.windows[p].first < pq.sliceEnd;
                }
                (needed ? keep : drop).push_back(parts[q]);
            }
        }
        if (in.windows.empty())
            part.sliceLocalInputs.push_back(in.buffer);
        else
            part.haloReads.push_back(Task::HaloRead{in.buffer, in.windows[p].first, in.windows[p].second});
    }
    // A producer part stays a dep if another (non-local) input of the group needs it whole.
    for (int d : keep)
        drop.erase(std::remove(drop.begin(), drop.end(), d), drop.end());
    std::vector<int> deps;
    for (int d : part.deps)
        if (std::find(drop.begin(), drop.end(), d) == drop.end() || nonLocalNeeds(part, d, tasks, local))
            deps.push_back(d);
    part.deps = std::move(deps);
    std::sort(part.sliceLocalInputs.begin(), part.sliceLocalInputs.end());
    std::sort(part.haloReads.begin(), part.haloReads.end(),
              [](const Task::HaloRead& a, const Task::HaloRead& b) { return a.buffer < b.buffer; });
}

/// lower() with groups split into at most `maxParts` parts and scheduled on the first `cores`
/// cores. Sets `*outOfEvents` when the event allocator ran out of a core's slots (more splitting
/// and more cores mean more cross-core events).
Expected<Program> lowerSplitting(std::shared_ptr<const ir::Graph> graph, const Target& target, int maxParts,
                                 int cores, bool* outOfEvents, const LowerOptions& options,
                                 std::vector<OnChipDecision>* decisions) {
    const ir::Graph& g = *graph;
    if (g.numNodes() == 0)
        return makeError(ErrorKind::Unsupported, "graph '" + g.name() + "' has no nodes to lower");
    Program prog;
    prog.modelName = g.name();
    prog.target = target;
    prog.graph = graph;

    SX_ASSIGN(std::vector<Group> groups, formGroups(g));
    std::unordered_map<const ir::Node*, size_t> groupOf;
    if (options.sram.alignBackward)
        for (size_t i = 0; i < groups.size(); ++i)
            for (const ir::Node* n : groups[i].nodes)
                groupOf.emplace(n, i);
    std::vector<int> bufferOf;
    SX_TRY(createBuffers(prog, g, bufferOf, options.concatInPlace));

    // Tasks in node order (topological), with deps from producing nodes. A group split across
    // cores (chooseSplit) becomes one Task per part, each depending on every part of each
    // producer.
    std::unordered_map<const ir::Node*, std::vector<int>> tasksOfNode;
    std::vector<Task> tasks;
    std::vector<TaskCost> costs; // per Task, for the SRAM plan
    std::vector<int> follow;     // per Task: the Task whose core it must run on (-1: any)
    std::vector<char> host;      // per Task: a host Task (on the host lane)
    // A Concat lowered in place has no Task: its readers depend on its inputs' writers.
    std::unordered_map<const ir::Node*, std::vector<int>> inPlaceWriters;
    auto tasksOf = [&](const ir::Node* n) -> const std::vector<int>* {
        if (auto it = tasksOfNode.find(n); it != tasksOfNode.end())
            return &it->second;
        if (auto it = inPlaceWriters.find(n); it != inPlaceWriters.end())
            return &it->second;
        return nullptr;
    };
    for (size_t i = 0; i < groups.size(); ++i) {
        const Group& grp = groups[i];
        if (options.concatInPlace && grp.nodes.size() == 1 && lowersInPlace(*grp.nodes.front(), target)) {
            std::vector<int>& writers = inPlaceWriters[grp.nodes.front()];
            for (const ir::Value* in : grp.nodes.front()->inputs()) {
                const std::vector<int>* ids = tasksOf(in->producer());
                if (!ids)
                    return makeError(ErrorKind::Invalid,
                                     "node '" + grp.nodes.front()->name() + "' uses '" + in->name() +
                                         "' before node '" + in->producer()->name() +
                                         "' computes it (graph not in topological order)",
                                     grp.nodes.front()->name());
                writers.insert(writers.end(), ids->begin(), ids->end());
            }
            std::sort(writers.begin(), writers.end());
            writers.erase(std::unique(writers.begin(), writers.end()), writers.end());
            continue;
        }
        Task t;
        t.name = grp.nodes.front()->name();
        t.kernel = grp.kernel;
        t.unit = grp.unit;
        std::vector<int> deps;
        for (const ir::Node* n : grp.nodes)
            t.nodes.push_back(n->name());
        for (const ir::Node* n : grp.nodes) {
            for (const ir::Value* read : n->inputs()) {
                // A view's output is read from the buffer its input lives in, and the Task
                // depends on that buffer's producer (so the buffer stays live until it ran).
                const ir::Value* v = bufferOwner(read);
                if (!v)
                    continue;
                SX_ASSIGN(int in, bufferFor(bufferOf, *v, *n));
                t.inputs.push_back(in);
                const ir::Node* p = v->producer();
                if (p && prog.buffers[static_cast<size_t>(in)].fill)
                    continue; // the loader wrote it before the run, as a weight
                if (p && std::find(grp.nodes.begin(), grp.nodes.end(), p) == grp.nodes.end()) {
                    const std::vector<int>* ids = tasksOf(p);
                    if (!ids)
                        return makeError(ErrorKind::Invalid,
                                         "node '" + n->name() + "' uses '" + v->name() + "' before node '" + p->name() +
                                             "' computes it (graph not in topological order)",
                                         n->name());
                    deps.insert(deps.end(), ids->begin(), ids->end());
                }
            }
            for (const ir::Value* v : n->outputs()) {
                SX_ASSIGN(int out, bufferFor(bufferOf, *v, *n));
                t.outputs.push_back(out);
            }
        }
        std::sort(deps.begin(), deps.end());
        deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
        t.deps = std::move(deps);
        const TileOptions tiles{options.sram.tilePricing, options.sram.chunkReductions, options.sram.tileCache.get()};
        if (grp.unit == UnitKind::Host) { // one host Task: no tiles, no parts, on the host lane
            const TaskCost cost = hostCost(grp);
            t.id = static_cast<int>(tasks.size());
            t.tiling = cost.tiling;
            t.flops = cost.flops;
            t.estCycles = cost.estCycles;
            t.computeCycles = cost.computeCycles;
            host.push_back(1);
            follow.push_back(-1);
            for (const ir::Node* n : grp.nodes)
                tasksOfNode[n] = {t.id};
            tasks.push_back(std::move(t));
            costs.push_back(cost);
            continue;
        }
        SX_ASSIGN(TaskCost cost, chooseTiling(grp, target, nullptr, tiles));
        SX_ASSIGN(SplitPlan split, chooseSplit(grp, target, cost, maxParts, tiles));
        if (options.sram.keepOnChip && options.sram.stripes && options.sram.alignSplits) {
            const SplitPlan own = split;
            split = alignWithProducer(grp, target, cost, std::move(split), tasks, tasksOfNode, tiles);
            if (options.sram.alignBackward && split.axis == own.axis && split.ranges == own.ranges)
                split = alignWithReader(grp, target, options.concatInPlace, cost, std::move(split), maxParts, groups,
                                        groupOf, tiles);
        }
        const size_t parts = split.axis < 0 ? 1 : split.ranges.size();
        const std::vector<LocalInput> local = parts > 1 && options.sram.keepOnChip && options.sram.stripes
                                                  ? sliceLocalInputs(grp, split, tasks, tasksOfNode, bufferOf, target, options.concatInPlace)
                                                  : std::vector<LocalInput>{};
        std::vector<int> ids;
        for (size_t p = 0; p < parts; ++p) {
            Task part = t;
            if (!local.empty())
                narrowDeps(part, local, p, tasks, tasksOfNode);
            // Pinned beside the part whose stripe it reads first, so the stripe can stay on chip.
            follow.push_back(local.empty() ? -1 : tasksOfNode.at(local.front().producers.front())[p]);
            part.id = static_cast<int>(tasks.size());
            const TaskCost& c = parts == 1 ? cost : split.costs[p];
            if (parts > 1) {
                part.name = t.name + "[" + std::to_string(p + 1) + "/" + std::to_string(parts) + "]";
                part.part = static_cast<int>(p);
                part.parts = static_cast<int>(parts);
                part.sliceAxis = split.axis;
                part.sliceBegin = split.ranges[p].first;
                part.sliceEnd = split.ranges[p].second;
            }
            part.tiling = c.tiling;
            part.flops = c.flops;
            part.dmaBytes = c.dmaBytes;
            part.estCycles = c.estCycles;
            part.computeCycles = c.computeCycles;
            ids.push_back(part.id);
            host.push_back(0);
            tasks.push_back(std::move(part));
            costs.push_back(c);
        }
        for (const ir::Node* n : grp.nodes)
            tasksOfNode[n] = ids;
    }

    // Schedule, then issue order = (start, id): a topological order since a dep ends before its
    // consumer starts and every Task takes at least the dispatch time.
    std::vector<std::vector<int>> preds(tasks.size());
    std::vector<uint64_t> cycles(tasks.size());
    for (size_t i = 0; i < tasks.size(); ++i) {
        preds[i] = tasks[i].deps;
        cycles[i] = tasks[i].estCycles;
    }
    Target onCores = target;
    onCores.numCores = cores;
    std::vector<ScheduleSlot> sched = listSchedule(preds, cycles, onCores, follow, host, hostLane(target));
    std::vector<int> order(tasks.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        return std::tie(sched[a].start, a) < std::tie(sched[b].start, b);
    });
    std::vector<int> newId(tasks.size());
    for (size_t pos = 0; pos < order.size(); ++pos)
        newId[static_cast<size_t>(order[pos])] = static_cast<int>(pos);
    std::vector<TaskCost> costInOrder(costs.size());
    prog.tasks.reserve(order.size());
    for (size_t pos = 0; pos < order.size(); ++pos) {
        int old = order[pos];
        costInOrder[pos] = std::move(costs[static_cast<size_t>(old)]);
        Task t = std::move(tasks[static_cast<size_t>(old)]);
        t.id = static_cast<int>(pos);
        t.core = sched[static_cast<size_t>(old)].core;
        t.estStart = sched[static_cast<size_t>(old)].start;
        t.estEnd = sched[static_cast<size_t>(old)].end;
        for (int& d : t.deps)
            d = newId[static_cast<size_t>(d)];
        std::sort(t.deps.begin(), t.deps.end());
        prog.estCycles = std::max(prog.estCycles, t.estEnd);
        prog.tasks.push_back(std::move(t));
    }
    for (Task& t : prog.tasks) {
        for (int b : t.outputs) // a split group's first part in issue order
            if (prog.buffers[static_cast<size_t>(b)].firstTask < 0)
                prog.buffers[static_cast<size_t>(b)].firstTask = t.id;
        for (int b : t.inputs)
            prog.buffers[static_cast<size_t>(b)].lastTask = std::max(prog.buffers[static_cast<size_t>(b)].lastTask, t.id);
    }
    // A graph output is read by the host after the run.
    for (int b : prog.outputBuffers)
        prog.buffers[static_cast<size_t>(b)].lastTask = -1;
    holdersLifetimes(prog.buffers);

    if (Status events = allocateEvents(prog); !events.ok()) {
        *outOfEvents = true;
        return events.takeError();
    }
    SX_TRY(planSram(prog, costInOrder, bufferOf, options.sram, decisions));
    std::vector<std::vector<int>> depPreds(prog.tasks.size());
    for (const Task& t : prog.tasks)
        depPreds[static_cast<size_t>(t.id)] = t.deps;
    Reachability depOrder(depPreds);
    if (depOrder.tooLarge())
        return makeError(ErrorKind::Unsupported, "cannot plan the memory: " + depOrder.why());
    if (!depOrder.valid())
        return makeError(ErrorKind::Verify, "lowering produced a task order that is not topological");
    SX_TRY(planMemory(prog, depOrder));

    // The phases prove their own work; a failure here is a compiler bug, reported, not ignored.
    SX_TRY(checkEvents(prog));
    SX_TRY(checkHazards(prog));
    SX_TRY(checkSramPlan(prog));
    return prog;
}

} // namespace

namespace {

Expected<Program> lowerWithSlots(std::shared_ptr<const ir::Graph> graph, const Target& target,
                                 const LowerOptions& options, std::vector<OnChipDecision>* decisions) {
    // Split groups across up to every core. If the cross-core events that needs do not fit the
    // cores' event slots, try fewer parts (down to none) on every core, then on half as many
    // cores, and so on down to one core, which needs no events at all; of the programs that fit,
    // keep the fastest by the schedule (the most parallel one on a tie). A target with very few
    // slots still gets a program, only a slower one, and a note says why.
    const int allCores = std::max(target.numCores, 1);
    bool outOfEvents = false;
    Expected<Program> first = lowerSplitting(graph, target, allCores, allCores, &outOfEvents, options, decisions);
    if (first.ok() || !outOfEvents)
        return first;
    std::optional<Program> best;
    int bestCores = 0, bestParts = 0;
    for (int cores = allCores; cores >= 1; cores /= 2)
        for (int maxParts = cores; maxParts >= 1; maxParts /= 2) {
            if (cores == allCores && maxParts == allCores)
                continue; // the first attempt
            bool out = false;
            std::vector<OnChipDecision> attempt;
            Expected<Program> p = lowerSplitting(graph, target, maxParts, cores, &out, options, &attempt);
            if (!p.ok()) {
                if (!out)
                    return p; // a real error, not a shortage of slots
                continue;
            }
            if (!best || p->estCycles < best->estCycles) {
                best = std::move(p).value();
                if (decisions)
                    *decisions = std::move(attempt);
                bestCores = cores;
                bestParts = maxParts;
            }
        }
    if (!best)
        return first;
    best->notes.push_back(
        "the cross-core events did not fit " + std::to_string(target.eventSlotsPerCore) + " event slot" +
        (target.eventSlotsPerCore == 1 ? "" : "s") + " per core: " +
        (bestParts > 1 ? "nodes shared out in at most " + std::to_string(bestParts) + " parts"
                       : "no node shared out across cores") +
        (bestCores < allCores ? ", Tasks on at most " + std::to_string(bestCores) + " of " +
                                    std::to_string(allCores) + " cores"
                              : std::string()));
    return std::move(*best);
}

} // namespace

/// The small graph's candidates (striped; aligned to the producers' splits; aligned to the
/// producers' and the only readers' splits; those three with tiles priced as the simulator times
/// a stream; unstriped), each measured (LowerOptions::measure): the fastest is kept, the earlier on a tie. No margins: they
/// are there for the estimate's error, and a measured run has none of it. `whole` is the
/// unstriped lowering running on its thread, writing its decisions to `wholeDecisions`.
/// `options` is what they were lowered with, convolutions' input channels taken whole; where
/// `chunkReductions` allows chunks, the fastest of each tile pricing is lowered once more with
/// them, and kept if faster.
Expected<Program> lowerMeasured(std::shared_ptr<const ir::Graph> graph, const Target& target,
                                const LowerOptions& options, bool chunkReductions, Expected<Program> striped,
                                std::vector<OnChipDecision> stripedDecisions, std::future<Expected<Program>>& whole,
                                std::vector<OnChipDecision>& wholeDecisions, std::vector<OnChipDecision>* decisions) {
    struct Candidate {
        Expected<Program> program;
        std::vector<OnChipDecision> decisions;
        LowerOptions options;
    };
    std::vector<Candidate> candidates;
    const bool tryAligned = striped.ok() && options.sram.tryAlignedSplits;
    candidates.push_back({std::move(striped), std::move(stripedDecisions), options});
    // Aligned to the producers' splits where the local figures say so, then also backwards to
    // the readers' splits. (Aligning wherever the parts would read in place, whatever the
    // figures, was measured on the 16 shared nets with and without the readers': it never won.)
    for (int variant = 0; tryAligned && variant < 2; ++variant) {
        LowerOptions aligned = options;
        aligned.sram.alignSplits = true;
        aligned.sram.alignBackward = variant == 1;
        std::vector<OnChipDecision> alignedDecisions;
        Expected<Program> a = lowerWithSlots(graph, target, aligned, &alignedDecisions);
        candidates.push_back({std::move(a), std::move(alignedDecisions), aligned});
    }
    // The same three with tiles priced as the simulator times a stream, the DRAM latency once
    // per Task (TilePricing::LatencyOnce): more, smaller tiles. Most nets lose by it (a tiled
    // Task loads nothing beside the Task before it on its core); PaddleOCR rec, ZFNet, VGG-19
    // and AlexNet win.
    const size_t perTile = candidates.size();
    for (size_t c = 0; c < perTile; ++c) {
        if (!candidates[c].program.ok())
            continue;
        LowerOptions once = options;
        once.sram.alignSplits = c >= 1;
        once.sram.alignBackward = c == 2;
        once.sram.tilePricing = TilePricing::LatencyOnce;
        std::vector<OnChipDecision> onceDecisions;
        Expected<Program> o = lowerWithSlots(graph, target, once, &onceDecisions);
        candidates.push_back({std::move(o), std::move(onceDecisions), once});
    }
    Expected<Program> w = whole.get();
    LowerOptions noStripes = options;
    noStripes.sram.stripes = false;
    candidates.push_back({std::move(w), std::move(wholeDecisions), noStripes});
    size_t best = candidates.size();
    uint64_t bestCycles = 0;
    bool anyMeasured = false;
    std::vector<std::optional<uint64_t>> cycles(candidates.size()); // each candidate's run, if it ran
    auto measure = [&](size_t i) {
        if (!candidates[i].program.ok())
            return;
        Expected<uint64_t> run = options.measure(*candidates[i].program);
        if (!run.ok())
            return;
        cycles[i] = *run;
        if (!anyMeasured || *run < bestCycles) {
            best = i;
            bestCycles = *run;
        }
        anyMeasured = true;
    };
    for (size_t i = 0; i < candidates.size(); ++i)
        measure(i);
    // Chunked reductions change tiles that its neighbours' loads and the SRAM plan were chosen
    // around: a Task that streams its chunks loads nothing beside the Task before it, and its f32
    // sums take room another Task's prefetch had. So the fastest program of each tile pricing is
    // lowered again with them, and one is kept only if its run is faster (ResNet-50 and VGG-19
    // by a third; PaddleOCR det, chunked from the start, 0.6 % slower). Priced once per stream,
    // chunks pay more often: ResNet-50's fastest chunked program is one that lost unchunked.
    if (chunkReductions && anyMeasured) {
        std::vector<size_t> fastest; // per pricing, the fastest measured candidate
        for (TilePricing pricing : {TilePricing::LatencyPerTile, TilePricing::LatencyOnce}) {
            size_t f = candidates.size();
            for (size_t i = 0; i < candidates.size(); ++i)
                if (cycles[i] && candidates[i].options.sram.tilePricing == pricing &&
                    (f == candidates.size() || *cycles[i] < *cycles[f]))
                    f = i;
            if (f < candidates.size())
                fastest.push_back(f);
        }
        for (size_t f : fastest) {
            LowerOptions chunked = candidates[f].options;
            chunked.sram.chunkReductions = true;
            std::vector<OnChipDecision> chunkedDecisions;
            Expected<Program> c = lowerWithSlots(graph, target, chunked, &chunkedDecisions);
            candidates.push_back({std::move(c), std::move(chunkedDecisions), chunked});
            cycles.emplace_back();
            measure(candidates.size() - 1);
        }
    }
    if (!anyMeasured) // every run failed: the least estimate decides
        for (size_t i = 0; i < candidates.size(); ++i)
            if (candidates[i].program.ok() &&
                (best == candidates.size() || candidates[i].program->estCycles < candidates[best].program->estCycles))
                best = i;
    if (best == candidates.size()) // none lowered: the first one's error
        return std::move(candidates.front().program);
    if (decisions)
        *decisions = std::move(candidates[best].decisions);
    return std::move(candidates[best].program);
}

namespace {

/// lower() with the Concats in place or copied, as options.concatInPlace says.
Expected<Program> lowerChoosing(std::shared_ptr<const ir::Graph> graph, const Target& target,
                                const LowerOptions& options, std::vector<OnChipDecision>* decisions) {
    if (!options.sram.keepOnChip || !options.sram.stripes)
        return lowerWithSlots(graph, target, options, decisions);
    // Stripes pin a part to its producer's part's core and narrow its deps to that part: the
    // DRAM traffic drops, but the schedule loses freedom and the event slots may be reused less.
    // Lower both ways and keep the faster program by the schedule.
    // The two are independent (the graph and target are only read). On a small graph the
    // unstriped one runs on a second thread. A large one is lowered once, with stripes, and again
    // without them only when the stripes' events did not fit the slots (a note says so) and it
    // found something to stripe: lowering is still quadratic in Tasks in places (the DRAM plan's
    // conflicts, the dependency matrices), and twice that at 20,000 nodes is minutes.
    constexpr size_t kParallelNodes = 2000;
    std::vector<OnChipDecision> stripedDecisions, wholeDecisions;
    // Measured, the candidates take convolutions' input channels whole (today's programs), and
    // the fastest is then tried with them in chunks (lowerMeasured).
    const bool measured = graph->numNodes() <= kParallelNodes && options.measure;
    LowerOptions base = options;
    if (measured)
        base.sram.chunkReductions = false;
    LowerOptions noStripes = base;
    noStripes.sram.stripes = false;
    auto lowerWhole = [&] { return lowerWithSlots(graph, target, noStripes, &wholeDecisions); };
    std::optional<std::future<Expected<Program>>> other;
    if (graph->numNodes() <= kParallelNodes)
        other = std::async(std::launch::async, lowerWhole);
    Expected<Program> striped = lowerWithSlots(graph, target, base, &stripedDecisions);
    if (measured)
        return lowerMeasured(graph, target, base, options.sram.chunkReductions, std::move(striped),
                             std::move(stripedDecisions), *other, wholeDecisions, decisions);
    // On a small graph, also with splits aligned to their producers' (alignWithProducer): kept
    // where its schedule wins by kAlignMargin. The estimate leaves out how Tasks share DRAM
    // bandwidth, and aligning moves more of that than striping alone: inception v1 was 2.4 %
    // faster estimated and 0.6 % slower simulated, AlexNet slower either way. A large graph is
    // not lowered a third time (see kParallelNodes).
    constexpr double kAlignMargin = 0.03;
    if (other && striped.ok() && options.sram.tryAlignedSplits) {
        LowerOptions aligned = options;
        aligned.sram.alignSplits = true;
        std::vector<OnChipDecision> alignedDecisions;
        Expected<Program> a = lowerWithSlots(graph, target, aligned, &alignedDecisions);
        if (a.ok() && static_cast<double>(a->estCycles) < (1.0 - kAlignMargin) * static_cast<double>(striped->estCycles)) {
            striped = std::move(a);
            stripedDecisions = std::move(alignedDecisions);
        }
    }
    const bool stripedAny = striped.ok() && std::any_of(striped->tasks.begin(), striped->tasks.end(), [](const Task& t) {
                                return !t.sliceLocalInputs.empty() || !t.haloReads.empty();
                            });
    if (!other && striped.ok() && (!stripedAny || striped->notes.empty())) {
        if (decisions)
            *decisions = std::move(stripedDecisions);
        return striped;
    }
    Expected<Program> whole = other ? other->get() : lowerWhole();
    // The schedule's estimate leaves out how Tasks share DRAM bandwidth, so a gain within its
    // error could be a loss when simulated (PaddleOCR cls: 1.6 % faster estimated, 0.9 % slower
    // simulated): stripes must win by kStripeMargin.
    constexpr double kStripeMargin = 0.02;
    const bool takeWhole =
        !striped.ok() || (whole.ok() && static_cast<double>(striped->estCycles) >
                                            (1.0 - kStripeMargin) * static_cast<double>(whole->estCycles));
    if (!takeWhole || !whole.ok()) {
        if (decisions)
            *decisions = std::move(stripedDecisions);
        return striped;
    }
    if (decisions)
        *decisions = std::move(wholeDecisions);
    return whole;
}

} // namespace

Expected<Program> lower(std::shared_ptr<const ir::Graph> graph, const Target& target, const LowerOptions& given,
                        std::vector<OnChipDecision>* decisions) {
    if (!graph)
        return makeError(ErrorKind::Invalid, "lower: no graph");
    constexpr size_t kMeasuredNodes = 2000;
    // A graph small enough to be measured is lowered many ways (in place and copying, each with
    // up to nine candidates, lowerMeasured): they share the tile search's answers.
    LowerOptions options = given;
    if (options.measure && !options.sram.tileCache && graph->numNodes() <= kMeasuredNodes)
        options.sram.tileCache = std::make_shared<TileCache>();
    // In place, a Concat's reader waits for every part's writer rather than for the copy Task's
    // parts, which can cost cross-core events (and so parts) the copy did not: on a graph small
    // enough to be measured, the program is built both ways and the faster kept.
    const ir::Graph& g = *graph;
    bool both = options.concatInPlace && options.measure && g.numNodes() <= kMeasuredNodes;
    if (both) {
        const std::vector<ir::Node*> nodes = g.nodes();
        both = std::any_of(nodes.begin(), nodes.end(), [&](const ir::Node* n) { return lowersInPlace(*n, target); });
    }
    if (!both)
        return lowerChoosing(graph, target, options, decisions);
    std::vector<OnChipDecision> inPlaceDecisions, copyDecisions;
    Expected<Program> inPlace = lowerChoosing(graph, target, options, &inPlaceDecisions);
    LowerOptions copying = options;
    copying.concatInPlace = false;
    Expected<Program> copied = lowerChoosing(graph, target, copying, &copyDecisions);
    bool takeCopy = !inPlace.ok() && copied.ok();
    if (inPlace.ok() && copied.ok()) {
        Expected<uint64_t> a = options.measure(*inPlace), b = options.measure(*copied);
        if (a.ok() && b.ok() && *b < *a) {
            takeCopy = true;
            copied->notes.push_back("concat-in-place: the Concats are copied: in place, the program simulates in " +
                                    std::to_string(*a) + " cycles, copying them in " + std::to_string(*b));
        }
    }
    if (decisions)
        *decisions = std::move(takeCopy ? copyDecisions : inPlaceDecisions);
    return takeCopy ? std::move(copied) : std::move(inPlace);
}

} // namespace sextant::backend
