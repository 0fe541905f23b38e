#include "Machine.h"
#include "Timing.h"

#include <algorithm>

namespace sextant::sim {

namespace detail {

std::string taskLabel(const Task& t) {
    return "task " + std::to_string(t.id) + " '" + t.name + "'";
}

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
    m_bufferValue.assign(m_p.buffers.size(), nullptr);
    m_buffersByValue.assign(m_p.graph->valueIdBound(), {});
    for (size_t index : byId) {
        const ir::Value* v = m_p.graph->findValue(m_p.buffers[index].value);
        m_bufferValue[index] = v;
        if (v)
            m_buffersByValue[v->id()].push_back(index);
    }
    m_taskNodes.assign(m_p.tasks.size(), {});
    for (size_t i = 0; i < m_p.tasks.size(); ++i)
        for (const std::string& name : m_p.tasks[i].nodes)
            m_taskNodes[i].push_back(m_p.graph->findNode(name));
    for (size_t i = 0; i < m_p.events.size(); ++i)
        m_eventById.emplace(m_p.events[i].id, i);

    m_queues.assign(static_cast<size_t>(t.numCores) + 1, {}); // the cores, then the host lane
    m_head.assign(m_queues.size(), 0);
    m_coreFree.assign(m_queues.size(), 0);
    m_state.assign(m_p.tasks.size(), {});
    m_trace.assign(m_p.tasks.size(), {});
    m_writers.assign(m_p.buffers.size(), {});
    for (size_t i = 0; i < m_p.tasks.size(); ++i) {
        const Task& task = m_p.tasks[i];
        if (!backend::onItsLane(task, t))
            return makeError(ErrorKind::Invalid,
                             taskLabel(task) + " (" + std::string(backend::unitName(task.unit)) + ") is on core " +
                                 std::to_string(task.core) + " but target '" + t.name + "' has " +
                                 std::to_string(t.numCores) + " cores and the host lane " +
                                 std::to_string(backend::hostLane(t)),
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
    // A buffer written in place into others (a Concat lowered in place) is written by their writers.
    m_inPlaceParts.assign(m_p.buffers.size(), {});
    m_holders.assign(m_p.buffers.size(), {});
    m_holderKept.assign(m_p.buffers.size(), 0);
    for (size_t b = 0; b < m_p.buffers.size(); ++b) {
        size_t hops = 0;
        for (int at = m_p.buffers[b].inPlaceOf; at >= 0 && hops <= m_p.buffers.size(); ++hops) {
            auto it = m_bufferById.find(at);
            if (it == m_bufferById.end())
                return makeError(ErrorKind::Invalid, "buffer " + std::to_string(m_p.buffers[b].id) + " ('" +
                                                         m_p.buffers[b].value + "') is written in place into unknown "
                                                         "buffer " + std::to_string(at));
            m_inPlaceParts[it->second].push_back(b);
            m_holders[b].push_back(it->second);
            at = m_p.buffers[it->second].inPlaceOf;
        }
    }
    const bool holders = std::any_of(m_inPlaceParts.begin(), m_inPlaceParts.end(), [](const auto& v) { return !v.empty(); });
    const std::vector<std::vector<size_t>> own = holders ? m_writers : std::vector<std::vector<size_t>>{};
    for (size_t h = 0; holders && h < m_p.buffers.size(); ++h) {
        for (size_t b : m_inPlaceParts[h])
            m_writers[h].insert(m_writers[h].end(), own[b].begin(), own[b].end());
        std::sort(m_writers[h].begin(), m_writers[h].end());
        m_writers[h].erase(std::unique(m_writers[h].begin(), m_writers[h].end()), m_writers[h].end());
    }
    SX_TRY(checkSram());
    for (const backend::SramBuffer& sb : m_p.sramBuffers)
        if (sb.role == backend::SramRole::Resident)
            m_residentRange[{sb.buffer, sb.core}] = {sb.firstTask, sb.lastTask};
    findOverlaps();
    // Loads and stores split a Task's DMA time; a program without transfers (an artifact of
    // format 1, before the SRAM plan) counts all of it as loads.
    m_loadBytes.assign(m_p.tasks.size(), 0);
    for (size_t i = 0; i < m_p.tasks.size(); ++i)
        m_loadBytes[i] = m_p.transfers.empty() ? m_p.tasks[i].dmaBytes : 0;
    for (const backend::Transfer& tr : m_p.transfers)
        if (auto it = m_taskById.find(tr.task); it != m_taskById.end() && tr.load)
            m_loadBytes[it->second] += tr.bytes;
    // A host Task moves its inputs and outputs across the host/NPU boundary instead.
    m_hostMoves.assign(m_p.tasks.size(), {});
    for (size_t i = 0; i < m_p.tasks.size(); ++i)
        if (m_p.tasks[i].unit == UnitKind::Host)
            m_hostMoves[i] = backend::hostTransfer(m_p.tasks[i], [this](int id) -> uint64_t {
                auto it = m_bufferById.find(id);
                return it == m_bufferById.end() ? 0 : m_p.buffers[it->second].size;
            });
    m_stale.resize(m_p.buffers.size());
    for (size_t b = 0; b < m_p.buffers.size(); ++b) {
        const Buffer& buf = m_p.buffers[b];
        m_stale[b].assign(std::max<size_t>(1, buf.stripes.size() +
                                                  (buf.stripes.empty() ? 0 : buf.level == backend::MemLevel::Dram)),
                          {});
        for (size_t k = 0; k < m_stale[b].size(); ++k) // nothing written yet
            m_stale[b][k].push_back(StaleBytes{backend::SliceBytes{1, 0, 0, buf.size}, kNoBuffer});
    }
    if (!m_opt.functional)
        return {}; // timing only: nothing is read or written
    SX_TRY(loadWeights());
    return loadInputs(inputs);
}

Status Machine::checkSram() const {
    const backend::Target& t = m_p.target;
    for (const backend::SramBuffer& sb : m_p.sramBuffers) {
        auto task = m_taskById.find(sb.task);
        const std::string who = task == m_taskById.end() ? "task " + std::to_string(sb.task)
                                                         : taskLabel(m_p.tasks[task->second]);
        if (sb.core < 0 || sb.core >= t.numCores)
            return makeError(ErrorKind::Invalid, "SRAM buffer " + std::to_string(sb.id) + " of " + who + " is on core " +
                                                     std::to_string(sb.core) + " but target '" + t.name + "' has " +
                                                     std::to_string(t.numCores));
        if (sb.offset > t.sramBytes || sb.size > t.sramBytes - sb.offset)
            return makeError(ErrorKind::Runtime,
                             "SRAM overflow: " + who + " on core " + std::to_string(sb.core) + " uses [" +
                                 std::to_string(sb.offset) + ", " + std::to_string(sb.offset + sb.size) + ") (" +
                                 std::string(backend::sramRoleName(sb.role)) + "), past the core's " +
                                 std::to_string(t.sramBytes) + " bytes of SRAM",
                             task == m_taskById.end() ? std::string() : m_p.tasks[task->second].name);
    }
    return {};
}

void Machine::findOverlaps() {
    const size_t n = m_p.tasks.size();
    m_prevOnCore.assign(n, -1);
    m_overlapsPrev.assign(n, 0);
    m_clearOfSecondPrev.assign(n, 0);
    m_lateLoad.assign(n, 0);
    m_hostLoad.assign(n, 0);
    for (const auto& queue : m_queues)
        for (size_t k = 1; k < queue.size(); ++k)
            m_prevOnCore[queue[k]] = static_cast<long>(queue[k - 1]);
    // Without an SRAM plan nothing shows where a Task's loads land; strict mode runs one Task at
    // a time by definition.
    if (m_opt.strict || m_p.sramBuffers.empty())
        return;
    auto indexOf = [&](int id) -> long {
        auto it = m_taskById.find(id);
        return it == m_taskById.end() ? -1 : static_cast<long>(it->second);
    };
    auto writes = [&](const Task& t, int buffer) { // it, or a buffer written in place into it
        for (int o : t.outputs) {
            if (o == buffer)
                return true;
            auto it = m_bufferById.find(o);
            if (it != m_bufferById.end())
                for (size_t h : m_holders[it->second])
                    if (m_p.buffers[h].id == buffer)
                        return true;
        }
        return false;
    };
    // Per Task, what it loads of what the Task before it on its core stores (those bytes move
    // once that Task ended) and of what the host wrote (weights, graph inputs: no event needed).
    for (const backend::Transfer& tr : m_p.transfers) {
        const long t = indexOf(tr.task);
        if (t < 0 || !tr.load)
            continue;
        const long prev = m_prevOnCore[static_cast<size_t>(t)];
        if (prev >= 0 && writes(m_p.tasks[static_cast<size_t>(prev)], tr.dramBuffer))
            m_lateLoad[static_cast<size_t>(t)] += tr.bytes;
        if (auto b = m_bufferById.find(tr.dramBuffer); b != m_bufferById.end()) {
            const backend::BufferKind kind = m_p.buffers[b->second].kind;
            if (kind == backend::BufferKind::Weight || kind == backend::BufferKind::Input)
                m_hostLoad[static_cast<size_t>(t)] += tr.bytes;
        }
    }
    // SRAM buffers by the Task whose slots they are (or who writes the resident), and by the last
    // Task using them: a Task's own buffers must not meet those its predecessor still uses.
    std::vector<std::vector<uint32_t>> own(n), ending(n);
    for (size_t i = 0; i < m_p.sramBuffers.size(); ++i) {
        const backend::SramBuffer& sb = m_p.sramBuffers[i];
        const long t = indexOf(sb.task), last = indexOf(sb.lastTask);
        if (t >= 0)
            own[static_cast<size_t>(t)].push_back(static_cast<uint32_t>(i));
        if (last >= 0 && last != t)
            ending[static_cast<size_t>(last)].push_back(static_cast<uint32_t>(i));
    }
    auto meet = [&](uint32_t a, uint32_t b) {
        const backend::SramBuffer &x = m_p.sramBuffers[a], &y = m_p.sramBuffers[b];
        return x.core == y.core && x.offset < y.offset + y.size && y.offset < x.offset + x.size;
    };
    for (size_t i = 0; i < n; ++i) {
        const long prev = m_prevOnCore[i];
        if (prev < 0)
            continue;
        const Task& task = m_p.tasks[i];
        // A DMA Task keeps both engines busy from its start to its end; the host runs one host
        // step at a time.
        if (m_p.tasks[static_cast<size_t>(prev)].unit == UnitKind::Dma || task.unit == UnitKind::Host)
            continue;
        // A double-buffered stream of what the Task before it stores cannot start before it.
        if (task.tiling.doubleBuffered && task.tiling.numTiles > 1 && m_lateLoad[i] > 0)
            continue;
        auto clashes = [&](size_t other) {
            for (uint32_t a : own[i]) {
                for (uint32_t b : own[other])
                    if (meet(a, b))
                        return true;
                for (uint32_t b : ending[other])
                    if (meet(a, b))
                        return true;
            }
            return false;
        };
        m_overlapsPrev[i] = !clashes(static_cast<size_t>(prev));
        const long second = m_prevOnCore[static_cast<size_t>(prev)];
        m_clearOfSecondPrev[i] = second < 0 || !clashes(static_cast<size_t>(second));
    }
}

Status Machine::loadWeights() {
    for (const auto& [id, index] : m_bufferById) {
        const Buffer& b = m_p.buffers[index];
        if (b.kind == backend::BufferKind::Weight && b.fill) {
            SX_TRY(m_mem.fill(b, *b.fill));
            noteWrite(index);
            continue;
        }
        const ir::Value* v = m_bufferValue[index];
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

void Machine::trySchedule(int core) {
    size_t c = static_cast<size_t>(core);
    if (m_head[c] >= m_queues[c].size())
        return;
    size_t index = m_queues[c][m_head[c]];
    // While the head runs, the Task after it may start beside it once the head has started:
    // its loads go to SRAM the head does not use while the head computes (findOverlaps).
    long beside = -1;
    if (m_state[index].scheduled) {
        if (!m_state[index].started || m_head[c] + 1 >= m_queues[c].size())
            return;
        beside = static_cast<long>(index);
        index = m_queues[c][m_head[c] + 1];
        if (!m_overlapsPrev[index])
            return;
    }
    TaskState& st = m_state[index];
    if (st.scheduled)
        return;
    const Task& task = m_p.tasks[index];
    // When its core could start it: dispatched after the head, its requests issued at once (their
    // bytes follow the head's on the load engine, timeBeside), but only once the Tasks before
    // the head whose SRAM it may meet have ended (it is checked against the head and the one
    // before: findOverlaps); a stream once the head's loads are done; else once the core is free.
    uint64_t free = m_coreFree[c] + m_p.target.dispatchCycles;
    if (beside >= 0) {
        const TraceRecord& head = m_trace[static_cast<size_t>(beside)];
        uint64_t cleared = 0; // when the last Task before the head that it may meet ended
        if (const long pre = m_prevOnCore[static_cast<size_t>(beside)]; pre >= 0) {
            const long second = m_prevOnCore[static_cast<size_t>(pre)];
            cleared = !m_clearOfSecondPrev[index] ? m_trace[static_cast<size_t>(pre)].end
                      : second >= 0               ? m_trace[static_cast<size_t>(second)].end
                                                  : 0;
        }
        free = std::max(head.start, cleared) + m_p.target.dispatchCycles;
        if (task.tiling.doubleBuffered && task.tiling.numTiles > 1)
            free = std::max(free, head.loadEnd);
    }
    uint64_t ready = 0;
    for (int e : task.waitEvents) {
        std::optional<uint64_t> at = recordedAt(e);
        if (!at) {
            // Its weights need no event: it may start loading them now and wait for the rest
            // (not in strict mode, not a stream, and only with an SRAM plan to load into).
            if (!st.issued && !m_opt.strict && !m_p.sramBuffers.empty() && m_hostLoad[index] > 0 &&
                !(task.tiling.doubleBuffered && task.tiling.numTiles > 1) && task.unit != UnitKind::Dma) {
                st.issued = true;
                st.issuedAt = free;
            }
            return;
        }
        ready = std::max(ready, *at + m_p.target.eventLatencyCycles);
    }
    if (m_opt.strict && index > 0) {
        const TaskState& prev = m_state[index - 1];
        if (!prev.ended)
            return;
        ready = std::max(ready, prev.end);
    }
    // Beside the head with nothing to load before its data is in, it starts when the head's
    // loads are done, as it would have before requests could queue behind them.
    if (beside >= 0 && !st.issued) {
        const uint64_t loads = m_loadBytes[index];
        const uint64_t early =
            ready > free ? std::min(m_hostLoad[index], loads) : loads - std::min(m_lateLoad[index], loads);
        if (early == 0)
            free = std::max(free, m_trace[static_cast<size_t>(beside)].loadEnd);
    }
    st.scheduled = true;
    st.ready = ready;
    st.start = st.issued && st.issuedAt < ready ? st.issuedAt : std::max(ready, free);
    m_queue.push(Item{std::max(st.start, m_now), 1, task.id, index});
}

Status Machine::executeStarted(size_t index, uint64_t now) {
    const Task& task = m_p.tasks[index];
    TaskState& st = m_state[index];
    st.executed = true;
    if (m_opt.functional) {
        SX_TRY(execute(index));
    } else {
        for (int b : task.inputs) {
            st.reads.push_back(m_bufferById.at(b));
            if (readsHome(task, m_p.buffers[st.reads.back()]))
                st.homeReads.push_back(st.reads.back());
        }
        for (int b : task.outputs)
            st.writes.push_back(m_bufferById.at(b));
    }
    if (m_opt.checkRaces)
        SX_TRY(checkRaces(index, now));
    return {};
}

Status Machine::startTask(size_t index, uint64_t now) {
    const Task& task = m_p.tasks[index];
    TaskState& st = m_state[index];
    st.started = true;
    // Its time counts from its start, which is earlier than now when it began loading its weights
    // before its events were in (trySchedule).
    const uint64_t base = std::min(st.start, now);
    // Started beside the Task before it on its core: its nodes compute once that Task's results
    // are in memory, when it ends (endTask).
    const long prev = m_prevOnCore[index];
    const bool beside = prev >= 0 && !m_state[static_cast<size_t>(prev)].ended;
    if (!beside)
        SX_TRY(executeStarted(index, now));
    // DRAM is shared by the cores streaming it (two Tasks of one core share its DMA engines).
    int sharers = task.dmaBytes > 0 ? 1 : 0;
    m_dmaCore.assign(m_queues.size(), 0);
    for (size_t r : m_running)
        if (const Task& other = m_p.tasks[r]; other.dmaBytes > 0 && other.core != task.core &&
                                              !m_dmaCore[static_cast<size_t>(other.core)]) {
            m_dmaCore[static_cast<size_t>(other.core)] = 1;
            ++sharers;
        }
    const ir::Node* first = m_taskNodes[index].empty() ? nullptr : m_taskNodes[index].front();
    // The injected DelayDma fault: the same bytes at a hundredth of the rate, as long as moving a
    // hundred times as many.
    const bool slow = m_opt.fault.kind == FaultKind::DelayDma && task.id == m_opt.fault.task;
    const uint64_t cap = UINT64_MAX / kDmaDelayFactor;
    auto scaled = [&](uint64_t bytes) { return slow ? std::min(bytes, cap) * kDmaDelayFactor : bytes; };
    Task moved = task;
    moved.dmaBytes = scaled(task.dmaBytes);
    TaskTiming timing;
    const uint64_t eventsAt = st.ready > base ? st.ready - base : 0; // its cross-core data is in
    // The Task before it on its core still ran when it started (it may have ended since).
    const bool headRan = prev >= 0 && m_state[static_cast<size_t>(prev)].started &&
                         m_trace[static_cast<size_t>(prev)].end > base;
    if (task.unit == UnitKind::Host) {
        timing = timeHost(task, m_p.target, m_hostMoves[index].read, m_hostMoves[index].written, eventsAt);
    } else if (headRan || eventsAt > 0) {
        const TraceRecord* head = headRan ? &m_trace[static_cast<size_t>(prev)] : nullptr;
        const bool reads = headRan && (std::find(task.deps.begin(), task.deps.end(),
                                                 m_p.tasks[static_cast<size_t>(prev)].id) != task.deps.end() ||
                                       m_lateLoad[index] > 0);
        auto rel = [&](uint64_t t) { return t > base ? t - base : 0; };
        const uint64_t headComputeEnd = head ? rel(head->computeEnd) : 0, headEnd = head ? rel(head->end) : 0;
        const uint64_t headLoadEnd = head ? rel(head->loadEnd) : 0;
        // Waiting for other cores, it loads only the host's data (weights, graph inputs) early;
        // beside the head only, everything but what the head stores.
        const uint64_t loads = m_loadBytes[index];
        const uint64_t late = eventsAt > 0 ? loads - std::min(m_hostLoad[index], loads) : std::min(m_lateLoad[index], loads);
        timing = timeBeside(moved, m_p.target, first, sharers, scaled(loads - late), scaled(late), headComputeEnd,
                            headEnd, std::max(eventsAt, reads ? headEnd : 0), headLoadEnd);
    } else {
        timing = timeTask(moved, m_p.target, first, sharers, scaled(m_loadBytes[index]));
    }
    st.end = base + timing.duration;
    TraceRecord& rec = m_trace[index];
    rec.task = task.id;
    rec.core = task.core;
    rec.unit = task.unit;
    rec.ready = st.ready;
    rec.start = base;
    rec.end = st.end;
    rec.computeCycles = timing.compute;
    rec.dmaCycles = timing.dma;
    rec.dmaSharers = std::max(sharers, 1);
    rec.loadEnd = base + timing.loadEnd;
    rec.computeStart = base + timing.computeStart;
    rec.computeEnd = base + timing.computeEnd;
    rec.storeStart = base + timing.storeStart;
    m_running.push_back(index);
    m_queue.push(Item{st.end, 0, task.id, index});
    return {};
}

Status Machine::endTask(size_t index, uint64_t now) {
    const Task& task = m_p.tasks[index];
    TaskState& st = m_state[index];
    for (auto& [b, value] : st.pendingWrites) {
        Status s = m_mem.writeSlice(m_p.buffers[b], value, backend::sliceOf(task, m_p.buffers[b]), task.core);
        if (!s.ok())
            return makeError(ErrorKind::Runtime, taskLabel(task) + ": " + s.error().message,
                             task.name);
        noteWrite(b, task.core, index);
    }
    st.pendingWrites.clear();
    st.ended = true;
    if (m_opt.keepValues && m_opt.functional)
        keepHeldValues(task);
    ++m_finished;
    m_running.erase(std::find(m_running.begin(), m_running.end(), index));
    // The Task that started beside it computes now, from what it wrote.
    if (const size_t c = static_cast<size_t>(task.core); m_head[c] + 1 < m_queues[c].size()) {
        const size_t next = m_queues[c][m_head[c] + 1];
        if (m_state[next].started && !m_state[next].executed)
            SX_TRY(executeStarted(next, now));
    }
    const bool dropped = m_opt.fault.kind == FaultKind::DropRecord && task.id == m_opt.fault.task;
    for (int e : task.recordEvents) {
        if (dropped) {
            m_dropped[e] = now; // the injected fault: the record never reaches its slot
            continue;
        }
        m_slots[slotOf(e)] = {e, now};
        m_everRecorded.insert(e);
    }
    size_t c = static_cast<size_t>(task.core);
    m_coreFree[c] = now;
    ++m_head[c];
    return {};
}

Expected<SimResult> Machine::run() {
    for (size_t c = 0; c < m_queues.size(); ++c)
        trySchedule(static_cast<int>(c));
    uint64_t now = 0;
    while (!m_queue.empty()) {
        Item item = m_queue.top();
        m_queue.pop();
        now = item.time;
        m_now = now;
        if (item.kind == 1) {
            SX_TRY(startTask(item.index, now));
            trySchedule(m_p.tasks[item.index].core); // the Task after it may start beside it
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
    for (size_t i = 0; m_opt.functional && i < m_p.outputBuffers.size(); ++i) {
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

} // namespace detail

namespace {

Expected<SimResult> runOn(const backend::Program& program, std::span<const ir::Tensor> inputs,
                          const SimOptions& options) {
    // A timing-only run checks the plan against the target but holds no bytes.
    SX_ASSIGN(MemoryImage memory, MemoryImage::forProgram(program, options.functional));
    detail::Machine machine(program, options, std::move(memory));
    SX_TRY(machine.prepare(inputs));
    return machine.run();
}

} // namespace

Expected<SimResult> simulate(const backend::Program& program, std::span<const ir::Tensor> inputs,
                             const SimOptions& options) {
    SX_TRY(checkFault(program, options.fault));
    if (options.fault.kind != FaultKind::ShiftAddress)
        return runOn(program, inputs, options);
    // The run's own copy of the plan, with Task N's buffer moved onto its live neighbour.
    SX_ASSIGN(AddressShift shift, shiftFor(program, options.fault));
    backend::Program shifted = program;
    shifted.buffers[shift.buffer].offset = shift.offset;
    return runOn(shifted, inputs, options);
}

bool isSafetyNetStop(const Error& error) {
    return error.kind == ErrorKind::Runtime &&
           (error.message.rfind("watchdog: ", 0) == 0 || error.message.rfind("race: ", 0) == 0);
}

} // namespace sextant::sim
