#include "Lower.h"

#include "EventAllocator.h"
#include "Grouping.h"
#include "MemoryPlanner.h"
#include "Reachability.h"
#include "Scheduler.h"
#include "Tiling.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace sextant::backend {

std::string_view unitName(UnitKind u) {
    switch (u) {
    case UnitKind::Cube: return "cube";
    case UnitKind::Vector: return "vector";
    case UnitKind::Dma: return "dma";
    }
    return "?";
}

int64_t storedElements(const ir::TensorType& t, int c0) {
    const int64_t n = t.numel();
    if (n < 0 || t.layout != ir::LayoutKind::NC1HWC0 || t.rank() != 4 || c0 <= 1)
        return n;
    const std::vector<int64_t> d = t.dims();
    const int64_t c1 = (d[1] + c0 - 1) / c0;
    return d[0] * c1 * d[2] * d[3] * c0;
}

uint64_t storedBytes(const ir::TensorType& t, int c0) {
    const int64_t n = storedElements(t, c0);
    return n < 0 ? 0 : static_cast<uint64_t>(n) * ir::dtypeSize(t.dtype);
}

namespace {

uint64_t alignUp(uint64_t v, uint64_t a) { return a <= 1 ? v : (v + a - 1) / a * a; }

/// Buffers for every value the Tasks touch: weights (constant order), graph inputs, graph
/// outputs (output order), then intermediates in node order. A value the layout pass tagged
/// NC1HWC0 is sized with its channel padding (storedBytes), so the memory plan shows what the
/// blocked layout really costs. Weights are plain: a blocked convolution's weights are repacked
/// when the program is built, never by a TransData at run time.
Status createBuffers(Program& prog, const ir::Graph& g, std::map<std::string, int>& byValue) {
    const uint64_t align = std::max<uint64_t>(prog.target.dramAlign, 1);
    auto add = [&](const ir::Value* v, BufferKind kind) -> Expected<int> {
        if (!v->type().isStatic())
            return makeError(ErrorKind::Unsupported, "value '" + v->name() + "' has a non-static shape " + v->type().str(),
                             v->name());
        Buffer b;
        b.id = static_cast<int>(prog.buffers.size());
        b.value = v->name();
        b.kind = kind;
        b.level = MemLevel::Dram;
        b.type = v->type();
        uint64_t bytes = storedBytes(v->type(), prog.target.c0);
        b.size = std::max<uint64_t>(alignUp(bytes, align), align); // never 0 bytes: every buffer has an address
        byValue[v->name()] = b.id;
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
        auto it = byValue.find(out->name());
        int id;
        if (it != byValue.end()) {
            id = it->second;
        } else {
            SX_ASSIGN(int made, add(out, BufferKind::Output));
            id = made;
        }
        prog.outputBuffers.push_back(id);
    }
    for (const ir::Node* n : g.nodes()) {
        if (isViewNode(*n))
            continue; // a view's output lives in its input's buffer (see bufferOwner)
        for (const ir::Value* v : n->outputs())
            if (!byValue.count(v->name()))
                SX_TRY(add(v, BufferKind::Intermediate));
    }
    return {};
}

} // namespace

Expected<Program> lower(std::shared_ptr<const ir::Graph> graph, const Target& target) {
    if (!graph)
        return makeError(ErrorKind::Invalid, "lower: no graph");
    const ir::Graph& g = *graph;
    if (g.numNodes() == 0)
        return makeError(ErrorKind::Unsupported, "graph '" + g.name() + "' has no nodes to lower");
    Program prog;
    prog.modelName = g.name();
    prog.target = target;
    prog.graph = graph;

    SX_ASSIGN(std::vector<Group> groups, formGroups(g));
    std::map<std::string, int> bufferOf;
    SX_TRY(createBuffers(prog, g, bufferOf));

    // Tasks in node order (topological), with deps from producing nodes.
    std::map<std::string, int> taskOfNode;
    std::vector<Task> tasks;
    for (size_t i = 0; i < groups.size(); ++i) {
        const Group& grp = groups[i];
        Task t;
        t.id = static_cast<int>(i);
        t.name = grp.nodes.front()->name();
        t.kernel = grp.kernel;
        t.unit = grp.unit;
        std::vector<int> deps;
        for (const ir::Node* n : grp.nodes) {
            t.nodes.push_back(n->name());
            taskOfNode[n->name()] = t.id;
            for (const ir::Value* read : n->inputs()) {
                // A view's output is read from the buffer its input lives in, and the Task
                // depends on that buffer's producer (so the buffer stays live until it ran).
                const ir::Value* v = bufferOwner(read);
                if (!v)
                    continue;
                t.inputs.push_back(bufferOf.at(v->name()));
                if (const ir::Node* p = v->producer()) {
                    auto it = taskOfNode.find(p->name());
                    if (it == taskOfNode.end())
                        return makeError(ErrorKind::Invalid,
                                         "node '" + n->name() + "' uses '" + v->name() + "' before node '" + p->name() +
                                             "' computes it (graph not in topological order)",
                                         n->name());
                    if (it->second != t.id)
                        deps.push_back(it->second);
                }
            }
            for (const ir::Value* v : n->outputs())
                t.outputs.push_back(bufferOf.at(v->name()));
        }
        std::sort(deps.begin(), deps.end());
        deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
        t.deps = std::move(deps);
        SX_ASSIGN(TaskCost cost, chooseTiling(grp, target));
        t.tiling = std::move(cost.tiling);
        t.flops = cost.flops;
        t.dmaBytes = cost.dmaBytes;
        t.estCycles = cost.estCycles;
        t.computeCycles = cost.computeCycles;
        tasks.push_back(std::move(t));
    }

    // Schedule, then issue order = (start, id): a topological order since a dep ends before its
    // consumer starts and every Task takes at least the dispatch time.
    std::vector<std::vector<int>> preds(tasks.size());
    std::vector<uint64_t> cycles(tasks.size());
    for (size_t i = 0; i < tasks.size(); ++i) {
        preds[i] = tasks[i].deps;
        cycles[i] = tasks[i].estCycles;
    }
    std::vector<ScheduleSlot> sched = listSchedule(preds, cycles, target);
    std::vector<int> order(tasks.size());
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
        return std::tie(sched[a].start, a) < std::tie(sched[b].start, b);
    });
    std::vector<int> newId(tasks.size());
    for (size_t pos = 0; pos < order.size(); ++pos)
        newId[static_cast<size_t>(order[pos])] = static_cast<int>(pos);
    for (size_t pos = 0; pos < order.size(); ++pos) {
        int old = order[pos];
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
        for (int b : t.outputs)
            prog.buffers[static_cast<size_t>(b)].firstTask = t.id;
        for (int b : t.inputs)
            prog.buffers[static_cast<size_t>(b)].lastTask = std::max(prog.buffers[static_cast<size_t>(b)].lastTask, t.id);
    }
    // A graph output is read by the host after the run.
    for (int b : prog.outputBuffers)
        prog.buffers[static_cast<size_t>(b)].lastTask = -1;

    SX_TRY(allocateEvents(prog));
    std::vector<std::vector<int>> depPreds(prog.tasks.size());
    for (const Task& t : prog.tasks)
        depPreds[static_cast<size_t>(t.id)] = t.deps;
    Reachability depOrder(depPreds);
    if (!depOrder.valid())
        return makeError(ErrorKind::Verify, "lowering produced a task order that is not topological");
    SX_TRY(planMemory(prog, depOrder));

    // The phases prove their own work; a failure here is a compiler bug, reported, not ignored.
    SX_TRY(checkEvents(prog));
    SX_TRY(checkHazards(prog));
    return prog;
}

} // namespace sextant::backend
