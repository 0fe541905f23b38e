#include "Fault.h"

#include <algorithm>
#include <charconv>
#include <optional>

namespace sextant::sim {

using backend::Buffer;
using backend::Program;
using backend::Task;

namespace {

constexpr FaultKind kKinds[] = {FaultKind::DropRecord, FaultKind::DelayDma, FaultKind::ShiftAddress};

std::string kindList() {
    std::string s;
    for (FaultKind k : kKinds)
        s += (s.empty() ? "" : ", ") + std::string(faultKindName(k));
    return s;
}

const Task* findTask(const Program& p, int id) {
    for (const Task& t : p.tasks)
        if (t.id == id)
            return &t;
    return nullptr;
}

std::optional<size_t> bufferIndex(const Program& p, int id) {
    for (size_t i = 0; i < p.buffers.size(); ++i)
        if (p.buffers[i].id == id)
            return i;
    return std::nullopt;
}

Error faultError(const FaultPlan& plan, const std::string& what) {
    return makeError(ErrorKind::Invalid, "inject " + faultSpec(plan) + ": " + what);
}

/// The Tasks that wait on an event `task` records, as "task 3 'add'" labels.
std::vector<const Task*> waitersOf(const Program& p, const Task& task) {
    std::vector<const Task*> out;
    for (const Task& t : p.tasks)
        for (int e : t.waitEvents)
            if (std::find(task.recordEvents.begin(), task.recordEvents.end(), e) != task.recordEvents.end()) {
                out.push_back(&t);
                break;
            }
    return out;
}

std::string shortLabel(const Task& t) {
    return "task " + std::to_string(t.id) + " '" + t.name + "'";
}

/// Two whole buffers of one memory (DRAM, or the SRAM of one core), not striped.
bool sameMemory(const Buffer& a, const Buffer& b) {
    if (!a.stripes.empty() || !b.stripes.empty() || a.level != b.level)
        return false;
    return a.level == backend::MemLevel::Dram || a.core == b.core;
}

/// Where `moved` goes to overlap `onto` within the memory's capacity, if anywhere.
std::optional<uint64_t> overlappingOffset(const Program& p, const Buffer& moved, const Buffer& onto) {
    const uint64_t capacity =
        moved.level == backend::MemLevel::Dram ? p.target.dramBytes : p.target.sramBytes;
    if (moved.size == 0 || onto.size == 0)
        return std::nullopt;
    if (onto.offset <= capacity && moved.size <= capacity - onto.offset)
        return onto.offset;
    const uint64_t end = onto.offset + onto.size;
    if (end >= moved.size && end <= capacity)
        return end - moved.size;
    return std::nullopt;
}

/// "written by task 2 'sig'", "a weight", "a graph input": who stores a buffer.
std::string ownerOf(const Program& p, const Buffer& b) {
    if (b.firstTask >= 0)
        if (const Task* t = findTask(p, b.firstTask))
            return "written by " + shortLabel(*t);
    return b.kind == backend::BufferKind::Weight ? "a weight" : "a graph input";
}

} // namespace

std::string_view faultKindName(FaultKind kind) {
    switch (kind) {
    case FaultKind::None: return "none";
    case FaultKind::DropRecord: return "drop-record";
    case FaultKind::DelayDma: return "delay-dma";
    case FaultKind::ShiftAddress: return "shift-address";
    }
    return "none";
}

std::string faultSpec(const FaultPlan& plan) {
    return std::string(faultKindName(plan.kind)) + ":" + std::to_string(plan.task);
}

Expected<FaultPlan> parseFaultPlan(std::string_view spec) {
    const size_t colon = spec.find(':');
    const std::string quoted = "'" + std::string(spec) + "'";
    if (colon == std::string_view::npos)
        return makeError(ErrorKind::Invalid, "--inject " + quoted + " is not KIND:N (kinds: " + kindList() +
                                                 "; N is a Task id)");
    const std::string_view kind = spec.substr(0, colon), number = spec.substr(colon + 1);
    FaultPlan plan;
    for (FaultKind k : kKinds)
        if (kind == faultKindName(k))
            plan.kind = k;
    if (!plan.active())
        return makeError(ErrorKind::Invalid, "--inject " + quoted + ": unknown kind '" + std::string(kind) +
                                                 "' (kinds: " + kindList() + ")");
    int id = -1;
    const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), id);
    if (number.empty() || ec != std::errc() || end != number.data() + number.size() || id < 0)
        return makeError(ErrorKind::Invalid, "--inject " + quoted + ": '" + std::string(number) +
                                                 "' is not a Task id (a whole number, as in 'task 7')");
    plan.task = id;
    return plan;
}

std::string taskAndNodes(const Task& task) {
    std::string s = shortLabel(task) + " (node" + (task.nodes.size() == 1 ? "" : "s");
    const size_t shown = std::min<size_t>(task.nodes.size(), 3);
    for (size_t i = 0; i < shown; ++i)
        s += (i ? ", '" : " '") + task.nodes[i] + "'";
    if (task.nodes.size() > shown)
        s += " and " + std::to_string(task.nodes.size() - shown) + " more";
    return s + ")";
}

Expected<AddressShift> shiftFor(const Program& p, const FaultPlan& plan) {
    const Task* task = findTask(p, plan.task);
    if (!task)
        return faultError(plan, "the program has no task " + std::to_string(plan.task));
    // The best candidate: the other buffer written by a Task (both Tasks of the overlap then have
    // names), and Task N's buffer fitting inside it (it overlaps that buffer only).
    std::optional<AddressShift> best;
    int bestScore = -1;
    for (int out : task->outputs) {
        const std::optional<size_t> b = bufferIndex(p, out);
        for (const Task& reader : p.tasks) {
            if (!b || std::find(reader.inputs.begin(), reader.inputs.end(), out) == reader.inputs.end())
                continue;
            for (int in : reader.inputs) {
                const std::optional<size_t> l = bufferIndex(p, in);
                if (!l || *l == *b || !sameMemory(p.buffers[*b], p.buffers[*l]) ||
                    p.buffers[*l].value == p.buffers[*b].value)
                    continue;
                const std::optional<uint64_t> at = overlappingOffset(p, p.buffers[*b], p.buffers[*l]);
                const int score = (p.buffers[*l].firstTask >= 0 ? 2 : 0) + (p.buffers[*b].size <= p.buffers[*l].size);
                if (at && score > bestScore) {
                    best = AddressShift{*b, *l, *at};
                    bestScore = score;
                }
            }
        }
    }
    if (best)
        return *best;
    return faultError(plan, shortLabel(*task) +
                                " writes no buffer that a later Task reads beside another buffer of the same "
                                "memory, so there is no live buffer to move it onto");
}

Status checkFault(const Program& p, const FaultPlan& plan) {
    if (!plan.active())
        return {};
    const Task* task = findTask(p, plan.task);
    if (!task) {
        int lo = 0, hi = 0;
        for (size_t i = 0; i < p.tasks.size(); ++i) {
            lo = i ? std::min(lo, p.tasks[i].id) : p.tasks[i].id;
            hi = i ? std::max(hi, p.tasks[i].id) : p.tasks[i].id;
        }
        return faultError(plan, "the program has no task " + std::to_string(plan.task) +
                                    (p.tasks.empty() ? std::string(" (it has no tasks)")
                                                     : " (its task ids run " + std::to_string(lo) + ".." +
                                                           std::to_string(hi) + ")"));
    }
    switch (plan.kind) {
    case FaultKind::None: return {};
    case FaultKind::DropRecord:
        if (waitersOf(p, *task).empty())
            return faultError(plan, shortLabel(*task) +
                                        " records no event that another Task waits on (a dropped record would "
                                        "change nothing); Tasks that record events are the last on their core "
                                        "before a Task on another core needs their data");
        return {};
    case FaultKind::DelayDma:
        if (task->dmaBytes == 0)
            return faultError(plan, shortLabel(*task) + " moves no bytes between DRAM and SRAM: no DMA to delay");
        return {};
    case FaultKind::ShiftAddress: {
        Expected<AddressShift> shift = shiftFor(p, plan);
        if (!shift.ok())
            return shift.error();
        return {};
    }
    }
    return {};
}

std::string describeFault(const Program& p, const FaultPlan& plan) {
    const Task* task = findTask(p, plan.task);
    if (!plan.active() || !task)
        return {};
    std::string s = "inject " + faultSpec(plan) + ": " + taskAndNodes(*task);
    switch (plan.kind) {
    case FaultKind::None: break;
    case FaultKind::DropRecord: {
        s += " ends without recording event";
        s += task->recordEvents.size() == 1 ? "" : "s";
        for (size_t i = 0; i < task->recordEvents.size(); ++i)
            s += (i ? ", " : " ") + std::to_string(task->recordEvents[i]);
        s += " (waited on by ";
        const std::vector<const Task*> waiters = waitersOf(p, *task);
        for (size_t i = 0; i < waiters.size(); ++i)
            s += (i ? ", " : "") + shortLabel(*waiters[i]);
        s += ")";
        break;
    }
    case FaultKind::DelayDma:
        s += ": its DMA of " + std::to_string(task->dmaBytes) + " bytes runs " + std::to_string(kDmaDelayFactor) +
             " times slower";
        break;
    case FaultKind::ShiftAddress: {
        Expected<AddressShift> shift = shiftFor(p, plan);
        if (!shift.ok())
            return s;
        const Buffer& b = p.buffers[shift->buffer];
        const Buffer& onto = p.buffers[shift->onto];
        const std::string where = b.level == backend::MemLevel::Dram ? "DRAM" : "the SRAM of core " + std::to_string(b.core);
        s += ": its buffer " + std::to_string(b.id) + " ('" + b.value + "') moves in " + where + " from offset " +
             std::to_string(b.offset) + " to " + std::to_string(shift->offset) + ", onto live buffer " +
             std::to_string(onto.id) + " ('" + onto.value + "', [" + std::to_string(onto.offset) + ", " +
             std::to_string(onto.offset + onto.size) + "), " + ownerOf(p, onto) + ")";
        const auto writers = std::count_if(p.tasks.begin(), p.tasks.end(), [&](const Task& t) {
            return std::find(t.outputs.begin(), t.outputs.end(), b.id) != t.outputs.end();
        });
        if (writers > 1)
            s += "; the buffer is shared by the " + std::to_string(writers) + " Tasks that write it";
        break;
    }
    }
    return s;
}

} // namespace sextant::sim
