// manifest.json's SRAM plan, artifact format version 2 (docs/artifact-format.md, "SRAM plan"):
// every core's SRAM buffers, the DMA transfers between them and the DRAM buffers, the tensors
// keep-on-chip kept, and the memory figures. checkSramPlan (run by readArtifact afterwards)
// proves the plan safe in itself; what is checked here is that it belongs to this program —
// its buffers, its Tasks and their dma_bytes — with every failure naming the field.
#include "ArtifactInternal.h"

#include <map>
#include <set>
#include <tuple>

#include <algorithm>

namespace sextant::backend::artifact {

namespace {

constexpr SramRole kRoles[] = {SramRole::InputTile, SramRole::WeightTile, SramRole::OutputTile,
                               SramRole::Accumulator, SramRole::Resident};

std::string at(const std::string& list, size_t i) { return list + "[" + std::to_string(i) + "]"; }
std::string num(uint64_t v) { return std::to_string(v); }

std::string bufferLabel(const Program& p, int b) {
    return "buffer " + std::to_string(b) + " '" + p.buffers[static_cast<size_t>(b)].value + "'";
}
std::string taskLabel(const Program& p, int t) {
    return "task " + std::to_string(t) + " '" + p.tasks[static_cast<size_t>(t)].name + "'";
}
bool contains(const std::vector<int>& ids, int id) { return std::find(ids.begin(), ids.end(), id) != ids.end(); }

/// What any program moves at least once: the weights its Tasks read, the graph inputs and the
/// graph outputs (as the SRAM planner counts MemoryStats::compulsoryBytes).
uint64_t compulsoryBytesOf(const Program& p) {
    std::vector<bool> read(p.buffers.size(), false);
    for (const Task& t : p.tasks)
        for (int b : t.inputs)
            read[static_cast<size_t>(b)] = true;
    uint64_t bytes = 0;
    for (const Buffer& b : p.buffers)
        if (b.kind == BufferKind::Input || b.kind == BufferKind::Output ||
            (b.kind == BufferKind::Weight && read[static_cast<size_t>(b.id)]))
            bytes += storedBytes(b.type, p.target.c0);
    return bytes;
}

uint64_t dmaBytesOf(const Program& p) {
    uint64_t bytes = 0;
    for (const Task& t : p.tasks)
        bytes += t.dmaBytes;
    return bytes;
}

/// A version 1 artifact has no SRAM plan: each Task's working set sat alone in its core's SRAM
/// (one Task at a time per core, nothing resident), so a core's peak and lower bound are its
/// largest Task's sram_bytes. The traffic is the Tasks' dma_bytes.
Status recomputeFigures(const Manifest& m, Program& p) {
    for (const Buffer& b : p.buffers)
        if (b.level == MemLevel::Sram)
            return m.err(at("buffers", static_cast<size_t>(b.id)) + ".level",
                         "is sram in a version 1 artifact, which has no SRAM plan to hold '" + b.value + "'");
    p.memory.sram.assign(static_cast<size_t>(std::max(p.target.numCores, 0)), SramStats{p.target.sramBytes, 0, 0});
    for (const Task& t : p.tasks) {
        SramStats& s = p.memory.sram[static_cast<size_t>(t.core)];
        s.peak = s.lowerBound = std::max(s.peak, t.tiling.sramBytes);
    }
    p.memory.dramTrafficBytes = dmaBytesOf(p);
    p.memory.compulsoryBytes = compulsoryBytesOf(p);
    return {};
}

Expected<SramRole> parseRole(const Manifest& m, const std::string& s, const std::string& path) {
    for (SramRole r : kRoles)
        if (s == sramRoleName(r))
            return r;
    return m.err(path, "has unknown SRAM role '" + s + "'");
}

/// A resident: one buffer from the Task that writes its tensor, where that tensor's buffer is.
Status checkResident(const Manifest& m, const SramBuffer& sb, const std::string& path, const Program& p) {
    const Task& task = p.tasks[static_cast<size_t>(sb.task)];
    if (sb.pair != -1)
        return m.err(path + ".pair", "is " + std::to_string(sb.pair) +
                                         ": a resident tensor is one buffer, not a ping-pong pair");
    if (sb.task != sb.firstTask)
        return m.err(path + ".task", "is " + std::to_string(sb.task) +
                                         ": a resident lives from the Task that writes it (first_task " +
                                         std::to_string(sb.firstTask) + ")");
    if (sb.buffer < 0)
        return m.err(path + ".buffer", "is -1: a resident SRAM buffer holds a tensor");
    const Buffer& b = p.buffers[static_cast<size_t>(sb.buffer)];
    if (!contains(task.outputs, sb.buffer))
        return m.err(path + ".buffer", "names " + bufferLabel(p, sb.buffer) + ", which its " +
                                           taskLabel(p, sb.task) + " does not write");
    if (b.level != MemLevel::Sram && b.stripes.empty()) // a halo buffer is at level dram with stripes
        return m.err(path + ".buffer", "names " + bufferLabel(p, sb.buffer) +
                                           ", which is at level dram, not kept on chip");
    // A whole tensor is where its buffer says; a striped one has a stripe on this core there.
    const Buffer::Stripe* st = b.stripeOn(sb.core);
    const int core = b.stripes.empty() ? b.core : (st ? st->core : -1);
    const uint64_t offset = b.stripes.empty() ? b.offset : (st ? st->offset : 0);
    const uint64_t size = b.stripes.empty() ? b.size : (st ? st->size : 0);
    if (core != sb.core || offset != sb.offset || size > sb.size)
        return m.err(path + ".offset", "holds " + bufferLabel(p, sb.buffer) + " at offset " + num(sb.offset) +
                                           " of core " + std::to_string(sb.core) + " (" + num(sb.size) +
                                           " bytes), but the buffer " +
                                           (b.stripes.empty() ? "is at offset " + num(b.offset) + " of core " +
                                                                    std::to_string(b.core) + " (" + num(b.size) +
                                                                    " bytes)"
                                                              : std::string(st ? "has its stripe of core " +
                                                                                     std::to_string(sb.core) +
                                                                                     " at offset " + num(st->offset)
                                                                               : "has no stripe on that core")));
    return {};
}

/// A tile slot: one Task long, a ping-pong half only for a double-buffered Task, on a DRAM
/// tensor that Task reads (or, for an output tile or accumulator, writes).
Status checkTileSlot(const Manifest& m, const SramBuffer& sb, const std::string& path, const Program& p) {
    const Task& task = p.tasks[static_cast<size_t>(sb.task)];
    const std::string role(sramRoleName(sb.role));
    if (sb.firstTask != sb.task || sb.lastTask != sb.task)
        return m.err(path + ".last_task", "makes the " + role + " live over tasks " + std::to_string(sb.firstTask) +
                                              ".." + std::to_string(sb.lastTask) +
                                              ": a tile slot lives for its one Task (" + std::to_string(sb.task) + ")");
    if (task.tiling.doubleBuffered != (sb.pair >= 0))
        return m.err(path + ".pair", "is " + std::to_string(sb.pair) + ", but " + taskLabel(p, sb.task) + " is " +
                                         (task.tiling.doubleBuffered ? "" : "not ") + "double-buffered");
    if (sb.buffer >= 0) {
        const bool output = sb.role == SramRole::OutputTile || sb.role == SramRole::Accumulator;
        if (!contains(output ? task.outputs : task.inputs, sb.buffer))
            return m.err(path + ".buffer", "names " + bufferLabel(p, sb.buffer) + ", which " + taskLabel(p, sb.task) +
                                               " does not " + (output ? "write" : "read"));
        if (p.buffers[static_cast<size_t>(sb.buffer)].level == MemLevel::Sram)
            return m.err(path + ".buffer", "names " + bufferLabel(p, sb.buffer) +
                                               ", which is kept in SRAM: a tile slot streams a DRAM tensor");
    }
    return {};
}

/// sram_buffers[i]: typed and in range, aligned inside its core's SRAM, its Tasks on its core;
/// a resident where its buffer says, a tile slot one Task long on a buffer that Task uses.
Expected<SramBuffer> parseSramBuffer(const Manifest& m, const json& j, size_t i, const Program& p) {
    const Target& tg = p.target;
    const std::string path = at("sram_buffers", i);
    const int64_t nt = static_cast<int64_t>(p.tasks.size()), nb = static_cast<int64_t>(p.buffers.size());
    const uint64_t align = std::max<uint64_t>(tg.sramAlign, 1);
    SramBuffer sb;
    SX_ASSIGN(sb.id, m.intIn(j, "id", path, static_cast<int64_t>(i), static_cast<int64_t>(i)));
    SX_ASSIGN(sb.core, m.intIn(j, "core", path, 0, tg.numCores - 1));
    SX_ASSIGN(sb.offset, m.u64(j, "offset", path));
    SX_ASSIGN(sb.size, m.u64(j, "size", path));
    SX_ASSIGN(std::string role, m.str(j, "role", path));
    SX_ASSIGN(sb.role, parseRole(m, role, path + ".role"));
    SX_ASSIGN(sb.pair, m.intIn(j, "pair", path, -1, 1));
    SX_ASSIGN(sb.task, m.intIn(j, "task", path, -1, nt - 1));
    SX_ASSIGN(sb.buffer, m.intIn(j, "buffer", path, -1, nb - 1));
    SX_ASSIGN(sb.firstTask, m.intIn(j, "first_task", path, 0, nt - 1));
    SX_ASSIGN(sb.lastTask, m.intIn(j, "last_task", path, 0, nt - 1));

    if (sb.offset % align != 0)
        return m.err(path + ".offset", "is " + num(sb.offset) + ", not a multiple of the target's sram_align (" +
                                           num(align) + ")");
    if (sb.size % align != 0)
        return m.err(path + ".size", "is " + num(sb.size) + ", not a multiple of the target's sram_align (" +
                                         num(align) + ")");
    if (sb.offset > tg.sramBytes || sb.size > tg.sramBytes - sb.offset)
        return m.err(path + ".offset", "puts the " + role + " at [" + num(sb.offset) + ", " + num(sb.offset + sb.size) +
                                           "), past the " + num(tg.sramBytes) + " bytes of SRAM of core " +
                                           std::to_string(sb.core));
    if (sb.lastTask < sb.firstTask)
        return m.err(path + ".last_task", "is " + std::to_string(sb.lastTask) + ", before first_task " +
                                              std::to_string(sb.firstTask));
    for (const auto& [key, t] : {std::pair<const char*, int>{"first_task", sb.firstTask}, {"last_task", sb.lastTask},
                                 {"task", sb.task}}) {
        if (t < 0)
            continue;
        const int core = p.tasks[static_cast<size_t>(t)].core;
        if (core != sb.core)
            return m.err(path + "." + key, "is " + taskLabel(p, t) + " on core " + std::to_string(core) +
                                               ", not on the buffer's core " + std::to_string(sb.core));
    }
    if (sb.task < 0)
        return m.err(path + ".task", "is -1: every SRAM buffer belongs to a Task");

    SX_TRY(sb.role == SramRole::Resident ? checkResident(m, sb, path, p) : checkTileSlot(m, sb, path, p));
    return sb;
}

/// Across the SRAM buffers: ping-pong halves side by side, one resident per buffer at level
/// sram, and each Task's tiling.sram_bytes equal to its slots.
Status checkSramBuffers(const Manifest& m, const Program& p) {
    const std::vector<SramBuffer>& sbs = p.sramBuffers;
    std::vector<int> residentOf(p.buffers.size(), -1);
    std::vector<uint64_t> slotBytes(p.tasks.size(), 0);
    std::vector<std::set<int>> coresHolding(p.buffers.size());
    for (size_t i = 0; i < sbs.size(); ++i) {
        const SramBuffer& sb = sbs[i];
        if (sb.pair == 0) {
            const SramBuffer* other = i + 1 < sbs.size() ? &sbs[i + 1] : nullptr;
            if (!other || other->pair != 1 || other->task != sb.task || other->role != sb.role ||
                other->buffer != sb.buffer || other->size != sb.size)
                return m.err(at("sram_buffers", i) + ".pair",
                             "is 0, but the next SRAM buffer is not the other half of its ping-pong pair (pair 1 "
                             "of the same Task, role, tensor and size)");
        }
        if (sb.pair == 1 && (i == 0 || sbs[i - 1].pair != 0))
            return m.err(at("sram_buffers", i) + ".pair", "is 1, without the pair 0 half before it");
        if (sb.role != SramRole::Resident) {
            slotBytes[static_cast<size_t>(sb.task)] += sb.size;
            continue;
        }
        // Once per buffer, or once per stripe (core) of a striped one.
        int& r = residentOf[static_cast<size_t>(sb.buffer)];
        const bool striped = !p.buffers[static_cast<size_t>(sb.buffer)].stripes.empty();
        if (r >= 0 && (!striped || !coresHolding[static_cast<size_t>(sb.buffer)].insert(sb.core).second))
            return m.err(at("sram_buffers", i) + ".buffer", "holds " + bufferLabel(p, sb.buffer) +
                                                                ", which sram_buffers[" + std::to_string(r) +
                                                                "] already holds");
        if (r < 0 && striped)
            coresHolding[static_cast<size_t>(sb.buffer)].insert(sb.core);
        r = static_cast<int>(i);
    }
    for (const Buffer& b : p.buffers) {
        if (b.level == MemLevel::Sram && residentOf[static_cast<size_t>(b.id)] < 0)
            return m.err(at("buffers", static_cast<size_t>(b.id)) + ".level",
                         "is sram, but no resident SRAM buffer holds '" + b.value + "'");
        for (const Buffer::Stripe& st : b.stripes)
            if (!coresHolding[static_cast<size_t>(b.id)].count(st.core))
                return m.err(at("buffers", static_cast<size_t>(b.id)) + ".stripes",
                             "puts a stripe of '" + b.value + "' on core " + std::to_string(st.core) +
                                 ", where no resident SRAM buffer holds it");
    }
    for (const Task& t : p.tasks)
        if (t.tiling.sramBytes != slotBytes[static_cast<size_t>(t.id)])
            return m.err(at("tasks", static_cast<size_t>(t.id)) + ".tiling.sram_bytes",
                         "is " + num(t.tiling.sramBytes) + ", but the Task's SRAM slots hold " +
                             num(slotBytes[static_cast<size_t>(t.id)]));
    return {};
}

/// transfers[i]: one of its Task's own DRAM buffers to or from one of its slots of that tensor.
Expected<Transfer> parseTransfer(const Manifest& m, const json& j, size_t i, const Program& p) {
    const std::string path = at("transfers", i);
    const int64_t nt = static_cast<int64_t>(p.tasks.size()), nb = static_cast<int64_t>(p.buffers.size());
    const int64_t ns = static_cast<int64_t>(p.sramBuffers.size());
    Transfer tr;
    SX_ASSIGN(tr.task, m.intIn(j, "task", path, 0, nt - 1));
    SX_ASSIGN(std::string direction, m.str(j, "direction", path));
    if (direction != "load" && direction != "store")
        return m.err(path + ".direction", "is '" + direction + "', expected 'load' or 'store'");
    tr.load = direction == "load";
    SX_ASSIGN(tr.dramBuffer, m.intIn(j, "dram_buffer", path, 0, nb - 1));
    SX_ASSIGN(tr.sramBuffer, m.intIn(j, "sram_buffer", path, -1, ns - 1));
    SX_ASSIGN(tr.bytes, m.u64(j, "bytes", path));
    const Task& t = p.tasks[static_cast<size_t>(tr.task)];
    if (p.buffers[static_cast<size_t>(tr.dramBuffer)].level == MemLevel::Sram)
        return m.err(path + ".dram_buffer", "names " + bufferLabel(p, tr.dramBuffer) +
                                                ", which is kept in SRAM: no DMA moves it");
    if (!contains(tr.load ? t.inputs : t.outputs, tr.dramBuffer))
        return m.err(path + ".dram_buffer", "names " + bufferLabel(p, tr.dramBuffer) + ", which " +
                                                taskLabel(p, tr.task) + " does not " + (tr.load ? "read" : "write"));
    if (tr.sramBuffer < 0) {
        if (tr.bytes > 0)
            return m.err(path + ".sram_buffer", "is -1 for a " + direction + " of " + num(tr.bytes) +
                                                    " bytes: they need an SRAM slot");
        return tr;
    }
    const SramBuffer& sb = p.sramBuffers[static_cast<size_t>(tr.sramBuffer)];
    if (sb.task != tr.task)
        return m.err(path + ".sram_buffer", "is SRAM buffer " + std::to_string(sb.id) + ", a slot of " +
                                                taskLabel(p, sb.task) + ", not of the transfer's " +
                                                taskLabel(p, tr.task));
    const bool loadRole = sb.role == SramRole::InputTile || sb.role == SramRole::WeightTile;
    // A halo buffer's writer stores the rows other cores read from its resident stripe.
    const Buffer& db = p.buffers[static_cast<size_t>(tr.dramBuffer)];
    const bool haloStore = sb.role == SramRole::Resident && !db.stripes.empty() && db.level == MemLevel::Dram;
    const bool storeRole = sb.role == SramRole::OutputTile || sb.role == SramRole::Accumulator || haloStore;
    if ((tr.load && !loadRole) || (!tr.load && !storeRole))
        return m.err(path + ".sram_buffer", "is SRAM buffer " + std::to_string(sb.id) + ", a " +
                                                std::string(sramRoleName(sb.role)) + ", which a " + direction +
                                                " does not " + (tr.load ? "fill" : "drain"));
    if (sb.buffer != tr.dramBuffer)
        return m.err(path + ".sram_buffer", "is SRAM buffer " + std::to_string(sb.id) + ", which holds tiles of " +
                                                (sb.buffer < 0 ? std::string("no tensor") : bufferLabel(p, sb.buffer)) +
                                                ", not of " + bufferLabel(p, tr.dramBuffer));
    return tr;
}

/// on_chip[i]: a buffer kept in SRAM, once each (once per stripe: per core), by buffer id then
/// core, with its resident's size.
Expected<OnChip> parseOnChip(const Manifest& m, const json& j, size_t i, const Program& p,
                             const std::map<std::pair<int, int>, int>& residentOf) {
    const std::string path = at("on_chip", i);
    OnChip oc;
    SX_ASSIGN(oc.buffer, m.intIn(j, "buffer", path, 0, static_cast<int64_t>(p.buffers.size()) - 1));
    SX_ASSIGN(oc.core, m.intIn(j, "core", path, 0, p.target.numCores - 1));
    SX_ASSIGN(oc.bytes, m.u64(j, "bytes", path));
    SX_ASSIGN(oc.savedDmaBytes, m.u64(j, "saved_dma_bytes", path));
    if (i > 0 && std::tie(oc.buffer, oc.core) <= std::tie(p.onChip.back().buffer, p.onChip.back().core))
        return m.err(path + ".buffer", "is " + std::to_string(oc.buffer) + " on core " + std::to_string(oc.core) +
                                           ", not after on_chip[" + std::to_string(i - 1) + "]'s " +
                                           std::to_string(p.onChip.back().buffer) +
                                           " (the list is by buffer id then core, each once)");
    const Buffer& b = p.buffers[static_cast<size_t>(oc.buffer)];
    if (b.level != MemLevel::Sram && b.stripes.empty())
        return m.err(path + ".buffer", "names " + bufferLabel(p, oc.buffer) + ", which is at level dram");
    auto res_ = residentOf.find({oc.buffer, oc.core});
    if (res_ == residentOf.end())
        return m.err(path + ".core", "is " + std::to_string(oc.core) + ", but " + bufferLabel(p, oc.buffer) +
                                         " is not in the SRAM of that core");
    const SramBuffer& res = p.sramBuffers[static_cast<size_t>(res_->second)];
    if (oc.bytes != res.size)
        return m.err(path + ".bytes", "is " + num(oc.bytes) + ", but its resident sram_buffers[" +
                                          std::to_string(res.id) + "] is " + num(res.size) + " bytes");
    return oc;
}

/// memory.sram[c] for every core (or none, for a program without an SRAM plan): the target's
/// capacity, the peak its buffers reach, a lower bound at most the peak.
Status parseSramStats(const Manifest& m, const json& mem, Program& p) {
    SX_ASSIGN(const json* sram, m.array(mem, "sram", "memory"));
    const size_t cores = static_cast<size_t>(std::max(p.target.numCores, 0));
    if (sram->size() != cores && !(sram->empty() && p.sramBuffers.empty()))
        return m.err("memory.sram", "has " + num(sram->size()) + " entries, one per core of the target's " +
                                        num(cores));
    std::vector<uint64_t> reach(cores, 0);
    for (const SramBuffer& sb : p.sramBuffers)
        reach[static_cast<size_t>(sb.core)] = std::max(reach[static_cast<size_t>(sb.core)], sb.offset + sb.size);
    for (size_t c = 0; c < sram->size(); ++c) {
        const std::string path = at("memory.sram", c);
        SramStats s;
        SX_ASSIGN(s.capacity, m.u64((*sram)[c], "capacity", path));
        SX_ASSIGN(s.peak, m.u64((*sram)[c], "peak", path));
        SX_ASSIGN(s.lowerBound, m.u64((*sram)[c], "lower_bound", path));
        if (s.capacity != p.target.sramBytes)
            return m.err(path + ".capacity", "is " + num(s.capacity) + ", but the target's sram_bytes is " +
                                                 num(p.target.sramBytes));
        if (s.peak != reach[c])
            return m.err(path + ".peak", "is " + num(s.peak) + ", but core " + num(c) + "'s SRAM buffers reach " +
                                             num(reach[c]));
        if (s.lowerBound > s.peak)
            return m.err(path + ".lower_bound", "is " + num(s.lowerBound) + ", above the peak " + num(s.peak) +
                                                    " (no plan does better than its lower bound)");
        p.memory.sram.push_back(s);
    }
    return {};
}

} // namespace

void addSramPlan(json& doc, const Program& p, StreamedLists& lists) {
    json& mem = doc["memory"];
    mem["dram_traffic_bytes"] = p.memory.dramTrafficBytes;
    mem["compulsory_bytes"] = p.memory.compulsoryBytes;
    json sram = json::array();
    for (const SramStats& s : p.memory.sram)
        sram.push_back(json{{"capacity", s.capacity}, {"peak", s.peak}, {"lower_bound", s.lowerBound}});
    mem["sram"] = std::move(sram);
    lists["sram_buffers"] = {p.sramBuffers.size(), [&p](size_t i) {
                                 const SramBuffer& sb = p.sramBuffers[i];
                                 return json{{"id", sb.id},
                                             {"core", sb.core},
                                             {"offset", sb.offset},
                                             {"size", sb.size},
                                             {"role", std::string(sramRoleName(sb.role))},
                                             {"pair", sb.pair},
                                             {"task", sb.task},
                                             {"buffer", sb.buffer},
                                             {"first_task", sb.firstTask},
                                             {"last_task", sb.lastTask}};
                             }};
    lists["transfers"] = {p.transfers.size(), [&p](size_t i) {
                              const Transfer& tr = p.transfers[i];
                              return json{{"task", tr.task},
                                          {"direction", tr.load ? "load" : "store"},
                                          {"dram_buffer", tr.dramBuffer},
                                          {"sram_buffer", tr.sramBuffer},
                                          {"bytes", tr.bytes}};
                          }};
    json onChip = json::array();
    for (const OnChip& oc : p.onChip)
        onChip.push_back(json{{"buffer", oc.buffer},
                              {"core", oc.core},
                              {"bytes", oc.bytes},
                              {"saved_dma_bytes", oc.savedDmaBytes}});
    doc["on_chip"] = std::move(onChip);
}

Status parseSramPlan(const Manifest& m, const json& doc, int64_t version, Program& p) {
    // Halo buffers and halo reads came with version 4: an older manifest that has them was not
    // written by Sextant.
    if (version < 4) {
        for (const Buffer& b : p.buffers)
            if (b.level == MemLevel::Dram && !b.stripes.empty())
                return m.err(at("buffers", static_cast<size_t>(b.id)) + ".stripes",
                             "is given for a buffer in DRAM, which only version 4 writes (this is version " +
                                 num(static_cast<uint64_t>(version)) + ")");
        for (const Task& t : p.tasks)
            if (!t.haloReads.empty())
                return m.err(at("tasks", static_cast<size_t>(t.id)) + ".halo_reads",
                             "is present, but only version 4 writes it (this is version " +
                                 num(static_cast<uint64_t>(version)) + ")");
    }
    if (version < 2)
        return recomputeFigures(m, p);
    SX_ASSIGN(const json* sramBuffers, m.array(doc, "sram_buffers", ""));
    for (size_t i = 0; i < sramBuffers->size(); ++i) {
        SX_ASSIGN(SramBuffer sb, parseSramBuffer(m, (*sramBuffers)[i], i, p));
        p.sramBuffers.push_back(sb);
    }
    SX_ASSIGN(const json* transfers, m.array(doc, "transfers", ""));
    std::vector<uint64_t> moved(p.tasks.size(), 0);
    for (size_t i = 0; i < transfers->size(); ++i) {
        SX_ASSIGN(Transfer tr, parseTransfer(m, (*transfers)[i], i, p));
        moved[static_cast<size_t>(tr.task)] += tr.bytes;
        p.transfers.push_back(tr);
    }
    // A program lowered without an SRAM plan (built by hand, say) has neither list: its Tasks'
    // dma_bytes and its figures then stand on their own.
    const bool planned = !p.sramBuffers.empty() || !p.transfers.empty();
    if (planned) {
        SX_TRY(checkSramBuffers(m, p));
        for (const Task& t : p.tasks)
            if (moved[static_cast<size_t>(t.id)] != t.dmaBytes)
                return m.err(at("tasks", static_cast<size_t>(t.id)) + ".dma_bytes",
                             "is " + num(t.dmaBytes) + ", but the Task's transfers move " +
                                 num(moved[static_cast<size_t>(t.id)]));
    } else {
        for (const Buffer& b : p.buffers)
            if (b.level == MemLevel::Sram)
                return m.err(at("buffers", static_cast<size_t>(b.id)) + ".level",
                             "is sram, but sram_buffers is empty: no resident holds '" + b.value + "'");
    }
    std::map<std::pair<int, int>, int> residentOf; // (buffer, core) -> resident SRAM buffer
    for (const SramBuffer& sb : p.sramBuffers)
        if (sb.role == SramRole::Resident)
            residentOf[{sb.buffer, sb.core}] = sb.id;
    SX_ASSIGN(const json* onChip, m.array(doc, "on_chip", ""));
    for (size_t i = 0; i < onChip->size(); ++i) {
        SX_ASSIGN(OnChip oc, parseOnChip(m, (*onChip)[i], i, p, residentOf));
        p.onChip.push_back(oc);
    }
    for (const Buffer& b : p.buffers)
        if (b.level == MemLevel::Sram &&
            std::none_of(p.onChip.begin(), p.onChip.end(), [&](const OnChip& oc) { return oc.buffer == b.id; }))
            return m.err("on_chip", "does not list " + bufferLabel(p, b.id) + ", kept in the SRAM of core " +
                                        std::to_string(b.core));

    SX_ASSIGN(const json* mem, m.get(doc, "memory", ""));
    SX_TRY(parseSramStats(m, *mem, p));
    SX_ASSIGN(p.memory.dramTrafficBytes, m.u64(*mem, "dram_traffic_bytes", "memory"));
    SX_ASSIGN(p.memory.compulsoryBytes, m.u64(*mem, "compulsory_bytes", "memory"));
    if (!planned)
        return {};
    if (p.memory.dramTrafficBytes != dmaBytesOf(p))
        return m.err("memory.dram_traffic_bytes", "is " + num(p.memory.dramTrafficBytes) +
                                                      ", but the Tasks' dma_bytes add up to " + num(dmaBytesOf(p)));
    if (p.memory.compulsoryBytes != compulsoryBytesOf(p))
        return m.err("memory.compulsory_bytes", "is " + num(p.memory.compulsoryBytes) +
                                                    ", but the weights read, the graph inputs and outputs hold " +
                                                    num(compulsoryBytesOf(p)));
    return {};
}

} // namespace sextant::backend::artifact
