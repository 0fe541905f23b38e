#include "Simulator.h"

#include "MemoryImage.h"
#include "core/backend/Grouping.h"
#include "core/backend/MathUtil.h"
#include "core/ir/Half.h"
#include "core/ir/Interpreter.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <tuple>

namespace sextant::sim {

namespace {

using backend::Buffer;
using backend::ceilDiv;
using backend::Program;
using backend::Task;
using backend::UnitKind;

std::string taskLabel(const Task& t) {
    return "task " + std::to_string(t.id) + " '" + t.name + "'";
}

/// One entry of the event queue. Ends sort before starts at the same cycle so that a Task starting
/// exactly when its producer ends sees the producer's data; ties then go by Task id.
struct Item {
    uint64_t time;
    int kind; ///< 0 end, 1 start
    int taskId;
    size_t index;
    bool operator>(const Item& o) const {
        return std::tie(time, kind, taskId, index) > std::tie(o.time, o.kind, o.taskId, o.index);
    }
};

struct TaskState {
    bool scheduled = false;
    bool started = false;
    bool ended = false;
    uint64_t ready = 0;
    uint64_t start = 0;
    uint64_t end = 0;
    std::vector<std::pair<size_t, ir::Tensor>> pendingWrites; ///< buffer index, value
    std::vector<size_t> reads;  ///< buffer indices read (for the race checker)
    std::vector<size_t> writes; ///< buffer indices written
};

/// The whole state of one run; simulate() builds one and calls run().
class Machine {
public:
    Machine(const Program& program, const SimOptions& options, MemoryImage memory)
        : m_p(program), m_opt(options), m_mem(std::move(memory)) {}

    Status prepare(std::span<const ir::Tensor> inputs);
    Expected<SimResult> run();

private:
    Status loadWeights();
    Status loadInputs(std::span<const ir::Tensor> inputs);
    void trySchedule(int core);
    Status startTask(size_t index, uint64_t now);
    Status endTask(size_t index, uint64_t now);
    Status execute(size_t index);
    Expected<ir::Tensor> readInput(const Task& task, const ir::Node& node, const ir::Value& v,
                                   const std::map<std::string, ir::Tensor>& local,
                                   std::vector<size_t>& reads);
    Status checkRaces(size_t index, uint64_t now) const;
    std::vector<size_t> outputBuffersFor(const Task& task, const std::string& value) const;
    std::string watchdogDump(uint64_t now) const;
    uint64_t computeCycles(const Task& t) const;

    const Program& m_p;
    SimOptions m_opt;
    std::vector<std::pair<std::string, ir::Tensor>> m_values; ///< SimOptions::keepValues
    MemoryImage m_mem;
    std::map<int, size_t> m_bufferById;
    std::map<std::string, std::vector<size_t>> m_buffersByValue; ///< buffer indices, by id order
    std::map<int, size_t> m_eventById;
    std::map<int, std::vector<size_t>> m_recorders; ///< event id -> Tasks that record it
    /// Hardware event slots, keyed by (recording core, slot): the event last recorded there and
    /// the cycle its recording Task ended. A wait on E passes while E's slot holds E.
    std::map<std::pair<int, int>, std::pair<int, uint64_t>> m_slots;
    std::set<int> m_everRecorded; ///< for the watchdog dump
    /// The slot an event lives in: (core of the Task that records it, Event::slot); unknown
    /// events get a slot no Task records, so their waits never pass.
    std::pair<int, int> slotOf(int event) const;
    /// The cycle `event` was recorded if its slot holds it now.
    std::optional<uint64_t> recordedAt(int event) const;
    std::vector<std::vector<size_t>> m_queues; ///< per core: Task indices in issue order
    std::vector<size_t> m_head;
    std::vector<uint64_t> m_coreFree;
    std::vector<TaskState> m_state;
    std::vector<TraceRecord> m_trace;
    std::priority_queue<Item, std::vector<Item>, std::greater<Item>> m_queue;
    std::vector<size_t> m_running; ///< started, not ended
    std::map<int, size_t> m_taskById;
    std::vector<std::vector<size_t>> m_writers; ///< per buffer index: the Tasks (indices) writing it
    /// A split node's outputs, from its first part to start until its last, with the inputs they
    /// were computed from (see execute).
    struct PartResults {
        std::vector<ir::Tensor> inputs; ///< as the part that computed them read them
        std::vector<ir::Tensor> outputs;
        int started = 0;
    };
    std::map<std::string, PartResults> m_partResults;
    /// Race checker only: per buffer, whether its bytes still hold what was last stored for it, and
    /// if not, the buffer whose write overwrote them.
    std::vector<bool> m_intact;
    std::vector<size_t> m_clobberedBy;
    void noteWrite(size_t buffer);
    size_t m_finished = 0;
};

std::pair<int, int> Machine::slotOf(int event) const {
    auto rec = m_recorders.find(event);
    auto ev = m_eventById.find(event);
    if (rec == m_recorders.end() || rec->second.empty() || ev == m_eventById.end())
        return {-1, event}; // no such slot on any core: never recorded
    return {m_p.tasks[rec->second.front()].core, m_p.events[ev->second].slot};
}

std::optional<uint64_t> Machine::recordedAt(int event) const {
    auto it = m_slots.find(slotOf(event));
    if (it == m_slots.end() || it->second.first != event)
        return std::nullopt;
    return it->second.second;
}

Status Machine::prepare(std::span<const ir::Tensor> inputs) {
    if (!m_p.graph)
        return makeError(ErrorKind::Invalid, "program '" + m_p.modelName + "' has no graph");
    const backend::Target& t = m_p.target;
    if (t.numCores <= 0)
        return makeError(ErrorKind::Invalid, "target '" + t.name + "' has no cores");
    for (size_t i = 0; i < m_p.buffers.size(); ++i) {
        const Buffer& b = m_p.buffers[i];
        if (!m_bufferById.emplace(b.id, i).second)
            return makeError(ErrorKind::Invalid,
                             "buffer id " + std::to_string(b.id) + " is used twice");
    }
    // Buffers of a value in id order, so lookups are deterministic whatever the vector order.
    std::vector<size_t> byId;
    for (const auto& [id, index] : m_bufferById)
        byId.push_back(index);
    for (size_t index : byId)
        m_buffersByValue[m_p.buffers[index].value].push_back(index);
    for (size_t i = 0; i < m_p.events.size(); ++i)
        m_eventById.emplace(m_p.events[i].id, i);

    m_queues.assign(static_cast<size_t>(t.numCores), {});
    m_head.assign(m_queues.size(), 0);
    m_coreFree.assign(m_queues.size(), 0);
    m_state.assign(m_p.tasks.size(), {});
    m_trace.assign(m_p.tasks.size(), {});
    m_writers.assign(m_p.buffers.size(), {});
    for (size_t i = 0; i < m_p.tasks.size(); ++i) {
        const Task& task = m_p.tasks[i];
        if (task.core < 0 || task.core >= t.numCores)
            return makeError(ErrorKind::Invalid,
                             taskLabel(task) + " is on core " + std::to_string(task.core) +
                                 " but target '" + t.name + "' has " + std::to_string(t.numCores),
                             task.name);
        for (int b : task.inputs)
            if (!m_bufferById.count(b))
                return makeError(ErrorKind::Invalid,
                                 taskLabel(task) + " reads unknown buffer " + std::to_string(b),
                                 task.name);
        for (int b : task.outputs)
            if (!m_bufferById.count(b))
                return makeError(ErrorKind::Invalid,
                                 taskLabel(task) + " writes unknown buffer " + std::to_string(b),
                                 task.name);
        for (int e : task.recordEvents)
            m_recorders[e].push_back(i);
        m_taskById.emplace(task.id, i);
        for (int b : task.outputs)
            if (auto it = m_bufferById.find(b); it != m_bufferById.end())
                m_writers[it->second].push_back(i);
        m_queues[static_cast<size_t>(task.core)].push_back(i);
    }
    m_intact.assign(m_p.buffers.size(), false);
    m_clobberedBy.assign(m_p.buffers.size(), 0);
    SX_TRY(loadWeights());
    return loadInputs(inputs);
}

Status Machine::loadWeights() {
    for (const auto& [id, index] : m_bufferById) {
        const Buffer& b = m_p.buffers[index];
        const ir::Value* v = m_p.graph->findValue(b.value);
        if (!v || !v->isConstant())
            continue;
        if (b.kind != backend::BufferKind::Weight && b.firstTask >= 0)
            continue; // a value some Task computes, not a weight
        SX_TRY(m_mem.write(b, *v->constant()));
        noteWrite(index);
    }
    return {};
}

Status Machine::loadInputs(std::span<const ir::Tensor> inputs) {
    if (inputs.size() != m_p.inputBuffers.size())
        return makeError(ErrorKind::Invalid, "program '" + m_p.modelName + "' takes " +
                                                 std::to_string(m_p.inputBuffers.size()) +
                                                 " inputs, got " + std::to_string(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) {
        auto it = m_bufferById.find(m_p.inputBuffers[i]);
        if (it == m_bufferById.end())
            return makeError(ErrorKind::Invalid, "input " + std::to_string(i) +
                                                     " names unknown buffer " +
                                                     std::to_string(m_p.inputBuffers[i]));
        const Buffer& b = m_p.buffers[it->second];
        if (inputs[i].numel() != b.type.numel() ||
            (isFloat(inputs[i].dtype()) != isFloat(b.type.dtype)))
            return makeError(ErrorKind::Invalid, "input " + std::to_string(i) + " '" + b.value +
                                                     "': expected " + b.type.str() + ", got " +
                                                     inputs[i].type().str());
        SX_TRY(m_mem.write(b, inputs[i]));
        noteWrite(it->second);
    }
    return {};
}

uint64_t Machine::computeCycles(const Task& t) const {
    if (t.computeCycles > 0) // the cost model's figure for its tiles
        return t.computeCycles;
    const backend::Target& tg = m_p.target;
    switch (t.unit) {
    case UnitKind::Cube:
        return ceilDiv(t.flops, 2ull * static_cast<uint64_t>(tg.cubeM) * tg.cubeN * tg.cubeK);
    case UnitKind::Vector: {
        // An f16 vector op fills the wider f16 lanes.
        const ir::Node* node = t.nodes.empty() ? nullptr : m_p.graph->findNode(t.nodes.front());
        const bool f16 = node && node->attrString("precision", "") == "f16";
        return ceilDiv(t.flops, static_cast<uint64_t>(std::max(f16 ? tg.vectorLanesF16 : tg.vectorLanesF32, 1)));
    }
    case UnitKind::Dma:
        return 0;
    }
    return 0;
}

void Machine::trySchedule(int core) {
    size_t c = static_cast<size_t>(core);
    if (m_head[c] >= m_queues[c].size())
        return;
    size_t index = m_queues[c][m_head[c]];
    TaskState& st = m_state[index];
    if (st.scheduled)
        return;
    const Task& task = m_p.tasks[index];
    uint64_t ready = 0;
    for (int e : task.waitEvents) {
        std::optional<uint64_t> at = recordedAt(e);
        if (!at)
            return;
        ready = std::max(ready, *at + m_p.target.eventLatencyCycles);
    }
    if (m_opt.strict && index > 0) {
        const TaskState& prev = m_state[index - 1];
        if (!prev.ended)
            return;
        ready = std::max(ready, prev.end);
    }
    st.scheduled = true;
    st.ready = ready;
    st.start = std::max(ready, m_coreFree[c] + m_p.target.dispatchCycles);
    m_queue.push(Item{st.start, 1, task.id, index});
}

std::vector<size_t> Machine::outputBuffersFor(const Task& task, const std::string& value) const {
    std::vector<size_t> out;
    auto it = m_buffersByValue.find(value);
    if (it == m_buffersByValue.end())
        return out;
    for (size_t index : it->second) {
        const Buffer& b = m_p.buffers[index];
        bool listed =
            std::find(task.outputs.begin(), task.outputs.end(), b.id) != task.outputs.end();
        if (listed || b.firstTask == task.id)
            out.push_back(index);
    }
    return out;
}

Expected<ir::Tensor> Machine::readInput(const Task& task, const ir::Node& node, const ir::Value& v,
                                        const std::map<std::string, ir::Tensor>& local,
                                        std::vector<size_t>& reads) {
    if (auto it = local.find(v.name()); it != local.end())
        return it->second;
    // The output of a view node (no Task) is read from the buffer its input lives in, then
    // takes its own shape below.
    const ir::Value* owner = m_buffersByValue.count(v.name()) ? &v : backend::bufferOwner(&v);
    if (owner != &v)
        if (auto it = local.find(owner->name()); it != local.end())
            return it->second.reshaped(v.type().dims());
    const Buffer* chosen = nullptr;
    if (auto it = m_buffersByValue.find(owner->name()); it != m_buffersByValue.end()) {
        // Prefer a buffer the Task lists as an input (it may have an SRAM copy), else the value's
        // first buffer by id.
        for (size_t index : it->second) {
            const Buffer& b = m_p.buffers[index];
            if (std::find(task.inputs.begin(), task.inputs.end(), b.id) != task.inputs.end()) {
                chosen = &b;
                break;
            }
        }
        if (!chosen && !it->second.empty())
            chosen = &m_p.buffers[it->second.front()];
    }
    if (!chosen) {
        if (v.isConstant() && !ir::isFloat(v.constant()->dtype()))
            return *v.constant(); // a shape/axes operand: part of the descriptor, not of memory
        return makeError(ErrorKind::Runtime,
                         taskLabel(task) + ": input '" + v.name() + "' of node '" + node.name() +
                             "' has no planned buffer",
                         task.name);
    }
    reads.push_back(static_cast<size_t>(chosen - m_p.buffers.data()));
    SX_ASSIGN(ir::Tensor t, m_mem.read(*chosen));
    if (v.type().isStatic() && v.type().numel() == t.numel() && v.type().dims() != t.shape())
        t = t.reshaped(v.type().dims());
    return t;
}

/// How a node's numbers are computed on its unit, from the precision the `precision` pass wrote
/// (node attribute "precision"), or the unit's default where the pass did not run:
///   "f16-acc-f32"  operands 0 and 1 (data, weights) rounded to f16, f32 accumulation
///   "f16"          every float operand and the results rounded to f16 (vector lanes in f16)
///   "f32"          f32 throughout (a cube op kept in f32 reads f32 data and weights)
///   none           cube nodes as "f16-acc-f32", everything else f32
struct Numerics {
    size_t f16Operands = 0; ///< the first this-many operands are rounded to f16
    bool f16Results = false;
};

Numerics numericsOf(const Task& task, const ir::Node& node) {
    const bool cube = task.unit == UnitKind::Cube && node.info().cost == ir::CostClass::Cube;
    const std::string precision = node.attrString("precision", "");
    if (precision == "f32")
        return {};
    if (precision == "f16-acc-f32")
        return {2, false};
    if (precision == "f16")
        return {SIZE_MAX, true};
    return cube ? Numerics{2, false} : Numerics{};
}

/// Same dtypes, shapes and bytes (an omitted operand matches only an omitted one).
bool sameTensors(const std::vector<ir::Tensor>& a, const std::vector<ir::Tensor>& b) {
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i) {
        const ir::Tensor& x = a[i];
        const ir::Tensor& y = b[i];
        if (x.valid() != y.valid() || x.dtype() != y.dtype() || x.shape() != y.shape())
            return false;
        if (x.byteSize() > 0 && (x.bytes() == nullptr || y.bytes() == nullptr ||
                                 std::memcmp(x.bytes(), y.bytes(), x.byteSize()) != 0))
            return false;
    }
    return true;
}

Status Machine::execute(size_t index) {
    const Task& task = m_p.tasks[index];
    TaskState& st = m_state[index];
    std::map<std::string, ir::Tensor> local;
    ir::KernelContext ctx;
    ctx.compute = ir::DType::F32;
    for (const std::string& nodeName : task.nodes) {
        const ir::Node* node = m_p.graph->findNode(nodeName);
        if (!node)
            return makeError(ErrorKind::Runtime,
                             taskLabel(task) + " executes node '" + nodeName +
                                 "' which is not in the graph",
                             task.name);
        const Numerics num = numericsOf(task, *node);
        std::vector<ir::Tensor> raw; // as read from memory
        raw.reserve(node->numInputs());
        for (size_t i = 0; i < node->numInputs(); ++i) {
            const ir::Value* v = node->input(i);
            if (!v) {
                raw.emplace_back();
                continue;
            }
            SX_ASSIGN(ir::Tensor t, readInput(task, *node, *v, local, st.reads));
            raw.push_back(std::move(t));
        }
        // The parts of a node split across cores compute the same numbers from the same inputs:
        // the first part to start computes them, and a later part whose inputs read back
        // byte-identical takes them over. A plan that changed an input between parts (a hazard)
        // reads other bytes, so that part computes afresh and the corruption shows.
        std::vector<ir::Tensor> outs;
        auto cached = task.parts > 1 ? m_partResults.find(nodeName) : m_partResults.end();
        if (cached != m_partResults.end() && sameTensors(cached->second.inputs, raw)) {
            outs = cached->second.outputs;
        } else {
            std::vector<ir::Tensor> args;
            args.reserve(raw.size());
            for (size_t i = 0; i < raw.size(); ++i) {
                ir::Tensor t = raw[i];
                if (t.valid() && ir::isFloat(t.dtype())) {
                    // f16 operands are rounded to f16 (the cube's data and weights, i < 2; every
                    // operand of an f16 vector op); the cube's bias joins the f32 accumulator.
                    t = i < num.f16Operands ? t.castTo(ir::DType::F16).castTo(ir::DType::F32)
                                            : t.castTo(ir::DType::F32);
                }
                args.push_back(std::move(t));
            }
            auto results = ir::evaluateNode(*node, args, ctx);
            if (!results.ok())
                return makeError(ErrorKind::Runtime,
                                 taskLabel(task) + ": node '" + nodeName + "': " + results.error().message,
                                 task.name);
            outs = std::move(results).value();
            if (num.f16Results)
                for (ir::Tensor& o : outs)
                    if (ir::isFloat(o.dtype()))
                        o = o.castTo(ir::DType::F16).castTo(ir::DType::F32);
            if (task.parts > 1)
                cached = m_partResults.insert_or_assign(nodeName, PartResults{std::move(raw), outs, 0}).first;
        }
        if (task.parts > 1 && ++cached->second.started >= task.parts)
            m_partResults.erase(cached); // the last part: nobody needs them any more
        for (size_t i = 0; i < outs.size() && i < node->numOutputs(); ++i) {
            const std::string& name = node->output(i)->name();
            for (size_t b : outputBuffersFor(task, name)) {
                st.pendingWrites.emplace_back(b, outs[i]);
                st.writes.push_back(b);
            }
            if (m_opt.keepValues && task.part == 0) // the parts of a split group compute the same
                m_values.emplace_back(name, outs[i]);
            local[name] = std::move(outs[i]);
        }
    }
    for (int b : task.outputs) {
        const Buffer& buf = m_p.buffers[m_bufferById.at(b)];
        if (!local.count(buf.value))
            return makeError(ErrorKind::Runtime,
                             taskLabel(task) + " lists output buffer " + std::to_string(b) + " ('" +
                                 buf.value + "') but none of its nodes computes it",
                             task.name);
    }
    return {};
}

Status Machine::startTask(size_t index, uint64_t now) {
    const Task& task = m_p.tasks[index];
    TaskState& st = m_state[index];
    st.started = true;
    if (m_opt.functional) {
        SX_TRY(execute(index));
    } else {
        for (int b : task.inputs)
            st.reads.push_back(m_bufferById.at(b));
        for (int b : task.outputs)
            st.writes.push_back(m_bufferById.at(b));
    }
    if (m_opt.checkRaces)
        SX_TRY(checkRaces(index, now));
    const backend::Target& tg = m_p.target;
    int sharers = task.dmaBytes > 0 ? 1 : 0;
    for (size_t r : m_running)
        if (m_p.tasks[r].dmaBytes > 0)
            ++sharers;
    uint64_t rate =
        std::min<uint64_t>(tg.dmaBytesPerCycle, tg.dramBytesPerCycle / std::max(sharers, 1));
    rate = std::max<uint64_t>(rate, 1);
    uint64_t compute = computeCycles(task);
    uint64_t dma = ceilDiv(task.dmaBytes, rate);
    uint64_t body;
    int tiles = std::max(task.tiling.numTiles, 1);
    if (task.tiling.doubleBuffered && tiles > 1)
        body = std::max(compute, dma) + std::min(compute, dma) / static_cast<uint64_t>(tiles);
    else
        body = compute + dma;
    uint64_t duration =
        std::max<uint64_t>(1, body + (task.dmaBytes > 0 ? tg.dramLatencyCycles : 0));
    st.end = now + duration;
    TraceRecord& rec = m_trace[index];
    rec.task = task.id;
    rec.core = task.core;
    rec.unit = task.unit;
    rec.ready = st.ready;
    rec.start = now;
    rec.end = st.end;
    rec.computeCycles = compute;
    rec.dmaCycles = dma;
    rec.dmaSharers = std::max(sharers, 1);
    m_running.push_back(index);
    m_queue.push(Item{st.end, 0, task.id, index});
    return {};
}

namespace {

bool overlaps(const Buffer& a, const Buffer& b) {
    if (a.level != b.level || (a.level == backend::MemLevel::Sram && a.core != b.core))
        return false;
    return a.offset < b.offset + b.size && b.offset < a.offset + a.size;
}

/// Two parts of one split group writing (or one writing, one reading nothing of) the same buffer
/// touch disjoint slices: they may run at once.
bool disjointParts(const Task& a, const Task& b) {
    return backend::sameSplit(a, b) && (a.sliceEnd <= b.sliceBegin || b.sliceEnd <= a.sliceBegin);
}

std::string bufferLabel(const Buffer& b) {
    return "buffer " + std::to_string(b.id) + " ('" + b.value + "')";
}

} // namespace

void Machine::noteWrite(size_t buffer) {
    if (!m_opt.checkRaces)
        return;
    for (size_t other = 0; other < m_p.buffers.size(); ++other) {
        if (other == buffer || !overlaps(m_p.buffers[other], m_p.buffers[buffer]))
            continue;
        m_intact[other] = false;
        m_clobberedBy[other] = buffer;
    }
    m_intact[buffer] = true;
}

Status Machine::checkRaces(size_t index, uint64_t now) const {
    const Task& task = m_p.tasks[index];
    const TaskState& st = m_state[index];
    auto race = [&](const std::string& what) {
        return makeError(ErrorKind::Runtime,
                         "race: " + taskLabel(task) + " (core " + std::to_string(task.core) +
                             ") at cycle " + std::to_string(now) + " " + what,
                         task.name);
    };
    for (size_t b : st.reads) {
        const Buffer& buf = m_p.buffers[b];
        // Reading a value whose producer (any part of it) has not finished: a missing wait.
        for (size_t w : m_writers[b]) {
            if (w == index || m_state[w].ended)
                continue;
            const Task& p = m_p.tasks[w];
            return race("reads " + bufferLabel(buf) + " before its producer " + taskLabel(p) +
                        " (core " + std::to_string(p.core) + ") ended: a missing event wait?");
        }
        // Reading bytes another buffer's write replaced: two live buffers share addresses.
        if (!m_intact[b]) {
            const Buffer& by = m_p.buffers[m_clobberedBy[b]];
            return race("reads " + bufferLabel(buf) + " but its bytes were overwritten by " +
                        bufferLabel(by) + ": the memory plan overlaps two live buffers");
        }
    }
    // Touching addresses a running Task writes, or writing what it reads: overlapping live buffers.
    for (size_t r : m_running) {
        if (r == index)
            continue;
        const TaskState& other = m_state[r];
        auto clash = [&](const std::vector<size_t>& mine, const std::vector<size_t>& theirs,
                         const char* verb, const char* theirVerb) -> std::optional<Error> {
            for (size_t a : mine)
                for (size_t b : theirs) {
                    if (!overlaps(m_p.buffers[a], m_p.buffers[b]) ||
                        (a == b && disjointParts(task, m_p.tasks[r])))
                        continue;
                    return race(std::string(verb) + " " + bufferLabel(m_p.buffers[a]) + " which overlaps " +
                                bufferLabel(m_p.buffers[b]) + " that running " + taskLabel(m_p.tasks[r]) + " " +
                                theirVerb);
                }
            return std::nullopt;
        };
        if (auto e = clash(st.reads, other.writes, "reads", "writes"))
            return *e;
        if (auto e = clash(st.writes, other.writes, "writes", "writes"))
            return *e;
        if (auto e = clash(st.writes, other.reads, "writes", "reads"))
            return *e;
    }
    return {};
}

Status Machine::endTask(size_t index, uint64_t now) {
    const Task& task = m_p.tasks[index];
    TaskState& st = m_state[index];
    for (auto& [b, value] : st.pendingWrites) {
        Status s = m_mem.writeSlice(m_p.buffers[b], value, backend::sliceOf(task, m_p.buffers[b]));
        if (!s.ok())
            return makeError(ErrorKind::Runtime, taskLabel(task) + ": " + s.error().message,
                             task.name);
        noteWrite(b);
    }
    st.pendingWrites.clear();
    st.ended = true;
    ++m_finished;
    m_running.erase(std::find(m_running.begin(), m_running.end(), index));
    for (int e : task.recordEvents) {
        m_slots[slotOf(e)] = {e, now};
        m_everRecorded.insert(e);
    }
    size_t c = static_cast<size_t>(task.core);
    m_coreFree[c] = now;
    ++m_head[c];
    return {};
}

std::string Machine::watchdogDump(uint64_t now) const {
    std::string s = "watchdog: no task can make progress at cycle " + std::to_string(now) + " (" +
                    std::to_string(m_finished) + " of " + std::to_string(m_p.tasks.size()) +
                    " tasks finished)";
    for (size_t c = 0; c < m_queues.size(); ++c) {
        for (size_t k = m_head[c]; k < m_queues[c].size(); ++k) {
            size_t index = m_queues[c][k];
            const Task& task = m_p.tasks[index];
            s += "; " + taskLabel(task) + " on core " + std::to_string(c);
            if (k != m_head[c]) {
                s += " is queued behind task " +
                     std::to_string(m_p.tasks[m_queues[c][m_head[c]]].id);
                continue;
            }
            bool any = false;
            for (int e : task.waitEvents) {
                if (recordedAt(e))
                    continue;
                any = true;
                auto [slotCore, slot] = slotOf(e);
                s += " waits on event " + std::to_string(e) + " (slot " + std::to_string(slot) +
                     " of core " + std::to_string(slotCore) + ")";
                auto rec = m_recorders.find(e);
                if (rec == m_recorders.end()) {
                    s += " which no task records";
                } else if (m_everRecorded.count(e)) {
                    s += " whose record was overwritten by event " +
                         std::to_string(m_slots.at({slotCore, slot}).first);
                } else {
                    s += " recorded by";
                    for (size_t r : rec->second)
                        s += " " + taskLabel(m_p.tasks[r]) +
                             (m_state[r].started ? " (running)" : " (not run)");
                }
            }
            if (m_opt.strict && index > 0 && !m_state[index - 1].ended) {
                any = true;
                s += " waits (strict mode) for task " + std::to_string(m_p.tasks[index - 1].id);
            }
            if (!any)
                s += " is blocked";
        }
    }
    std::string slots;
    for (const auto& [key, held] : m_slots)
        slots += (slots.empty() ? "" : ", ") + std::string("core ") + std::to_string(key.first) +
                 " slot " + std::to_string(key.second) + " holds event " +
                 std::to_string(held.first);
    s += "; event slots: " + (slots.empty() ? std::string("none recorded") : slots);
    return s;
}

Expected<SimResult> Machine::run() {
    for (size_t c = 0; c < m_queues.size(); ++c)
        trySchedule(static_cast<int>(c));
    uint64_t now = 0;
    while (!m_queue.empty()) {
        Item item = m_queue.top();
        m_queue.pop();
        now = item.time;
        if (item.kind == 1) {
            SX_TRY(startTask(item.index, now));
            continue;
        }
        SX_TRY(endTask(item.index, now));
        for (size_t c = 0; c < m_queues.size(); ++c)
            trySchedule(static_cast<int>(c));
    }
    if (m_finished != m_p.tasks.size())
        return makeError(ErrorKind::Runtime, watchdogDump(now));

    SimResult result;
    result.trace = std::move(m_trace);
    result.values = std::move(m_values);
    for (const TraceRecord& r : result.trace)
        result.totalCycles = std::max(result.totalCycles, r.end);
    const auto& graphOutputs = m_p.graph->outputs();
    for (size_t i = 0; i < m_p.outputBuffers.size(); ++i) {
        auto it = m_bufferById.find(m_p.outputBuffers[i]);
        if (it == m_bufferById.end())
            return makeError(ErrorKind::Invalid, "output " + std::to_string(i) +
                                                     " names unknown buffer " +
                                                     std::to_string(m_p.outputBuffers[i]));
        SX_ASSIGN(ir::Tensor t, m_mem.read(m_p.buffers[it->second]));
        if (i < graphOutputs.size()) {
            const ir::TensorType& vt = graphOutputs[i]->type();
            if (vt.isStatic() && vt.numel() == t.numel() && vt.dims() != t.shape())
                t = t.reshaped(vt.dims());
        }
        result.outputs.push_back(std::move(t));
    }
    return result;
}

} // namespace

Expected<SimResult> simulate(const Program& program, std::span<const ir::Tensor> inputs,
                             const SimOptions& options) {
    SX_ASSIGN(MemoryImage memory, MemoryImage::forProgram(program));
    Machine machine(program, options, std::move(memory));
    SX_TRY(machine.prepare(inputs));
    return machine.run();
}

} // namespace sextant::sim
