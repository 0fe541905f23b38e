#include "SramPlanner.h"

#include "Grouping.h"
#include "MathUtil.h"
#include "MemoryPlanner.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace sextant::backend {

std::string_view sramRoleName(SramRole r) {
    switch (r) {
    case SramRole::InputTile: return "input-tile";
    case SramRole::WeightTile: return "weight-tile";
    case SramRole::OutputTile: return "output-tile";
    case SramRole::Accumulator: return "accumulator";
    case SramRole::Resident: return "resident";
    }
    return "?";
}

namespace {

std::string kib(uint64_t bytes) { return std::to_string(ceilDiv(bytes, 1024)) + " KiB"; }

std::string taskName(const Program& p, int task) {
    return "task " + std::to_string(task) + " '" + p.tasks[static_cast<size_t>(task)].name + "'";
}

/// One Task's DRAM traffic by piece, per tile: what its SRAM slots hold and its transfers move.
struct TaskPieces {
    std::vector<std::pair<int, uint64_t>> inputs; ///< buffer id, bytes per tile (distinct buffers)
    int weightBuffer = -1;                        ///< the first weight it reads (-1: none)
    uint64_t weightTile = 0;
    bool weightsSplit = false;
    uint64_t outTile = 0;
    uint64_t accTile = 0; ///< the f32 sums of a chunked reduction's output tile (0: none)
    uint64_t tiles = 1, outTiles = 1;
    int copies = 1; ///< 2 when double-buffered: every slot is a ping-pong pair
};

TaskPieces piecesOf(const Program& p, const Task& t, const TaskCost& c, const std::vector<int>& bufferOf) {
    TaskPieces s;
    for (const auto& [value, bytes] : c.inputTile) {
        const ir::Value* owner = bufferOwner(value);
        if (!owner || owner->id() >= bufferOf.size() || bufferOf[owner->id()] < 0)
            continue;
        const int b = bufferOf[owner->id()];
        auto same = std::find_if(s.inputs.begin(), s.inputs.end(), [&](const auto& in) { return in.first == b; });
        if (same != s.inputs.end())
            same->second += bytes;
        else
            s.inputs.emplace_back(b, bytes);
    }
    for (int b : t.inputs)
        if (p.buffers[static_cast<size_t>(b)].kind == BufferKind::Weight) {
            s.weightBuffer = b;
            break;
        }
    s.weightTile = c.weightTile;
    s.weightsSplit = c.weightsSplit;
    s.outTile = c.outTile;
    s.accTile = c.accumulatorTile;
    s.tiles = static_cast<uint64_t>(std::max(t.tiling.numTiles, 1));
    s.outTiles = std::max<uint64_t>(1, s.tiles / static_cast<uint64_t>(std::max(t.tiling.reduceChunks, 1)));
    s.copies = t.tiling.doubleBuffered ? 2 : 1;
    return s;
}

/// Where one kept tensor (or one stripe of it) lives: on `core`, from the Task `first` that
/// writes it to the last Task `last` on that core that reads it; a stripe is the slice
/// [begin, end) of the writer's split dim.
struct ResidentSpan {
    int first = -1, last = -1, core = 0;
    uint64_t size = 0;
    int64_t begin = 0, end = 0;
    int64_t haloTop = 0, haloBottom = 0; ///< its first / last rows other cores read through DRAM
};

/// The state of the plan while keep-on-chip decides: per Task its pieces, which of its inputs
/// and whether its output are resident, and the SRAM bytes its working set holds.
struct PlanState {
    std::vector<TaskPieces> pieces;
    std::vector<std::vector<int>> residentInputs; ///< per Task: input buffers read in place
    std::vector<bool> residentOutput;             ///< per Task: it computes into a resident tensor
    std::vector<uint64_t> slotBytes;              ///< per Task: its tile slots' bytes
    std::vector<uint64_t> residentLive;           ///< per Task: bytes of residents live while it runs
    std::vector<std::vector<int>> byCore;         ///< per core: Task ids in issue order
    std::vector<int> position;                    ///< per Task: index in byCore[core]
    std::vector<int> residents;                   ///< kept buffers, in the order they were kept
    std::vector<std::vector<ResidentSpan>> spans; ///< per buffer: where it is kept (empty: not kept)
    /// Halo traffic of a striped tensor whose readers' windows reach into other cores' stripes:
    /// per Task, the rows it stores to the DRAM home (a writer) or loads from it (a reader), and
    /// per buffer what keeping it added there (to take back on release).
    std::vector<uint64_t> haloStore, haloLoad;
    std::vector<std::vector<std::pair<int, uint64_t>>> haloAdded; ///< per buffer: (Task, store or load bytes)
    std::vector<char> halo;                                         ///< per buffer: kept with a DRAM home
    /// Per Task: its slots and the residents it writes are placed clear of everything the Task
    /// before it on its core uses, so it can load while that Task computes (choosePrefetch).
    std::vector<char> prefetch;
    /// Per buffer kept a stripe per part: the readers that read its DRAM home (stripeReason).
    std::vector<std::vector<int>> homeReaders;
};

uint64_t slotSize(uint64_t bytes, uint64_t align) { return bytes == 0 ? 0 : alignUp(bytes, align); }

bool readsInPlace(const PlanState& s, int task, int buffer) {
    const auto& in = s.residentInputs[static_cast<size_t>(task)];
    return std::find(in.begin(), in.end(), buffer) != in.end();
}

/// The bytes of Task `t`'s output slot: its output tile, or the sums of a chunked reduction,
/// which stay on chip even when the output is kept there (the result then goes to the resident).
uint64_t outSlotBytes(const PlanState& s, int t) {
    const TaskPieces& pc = s.pieces[static_cast<size_t>(t)];
    return s.residentOutput[static_cast<size_t>(t)] ? pc.accTile : std::max(pc.outTile, pc.accTile);
}

/// The bytes Task `t`'s tile slots take, with what is resident left out.
uint64_t workingSet(const PlanState& s, int t, uint64_t align) {
    const TaskPieces& pc = s.pieces[static_cast<size_t>(t)];
    // The halo rows a reader loads sit in one slot of their own beside the tiles.
    uint64_t bytes = s.haloLoad.empty() ? 0 : slotSize(s.haloLoad[static_cast<size_t>(t)], align);
    for (const auto& [b, tile] : pc.inputs)
        if (!readsInPlace(s, t, b))
            bytes += slotSize(tile, align);
    bytes += slotSize(pc.weightTile, align) + slotSize(outSlotBytes(s, t), align);
    return bytes * static_cast<uint64_t>(pc.copies);
}

/// Bytes of one step of `buffer`'s stripe dim (a row of a map split by rows).
uint64_t rowBytes(const Program& p, int buffer, int axis) {
    const Buffer& buf = p.buffers[static_cast<size_t>(buffer)];
    const std::vector<int64_t> dims = buf.type.dims();
    const int64_t extent = axis >= 0 && static_cast<size_t>(axis) < dims.size() ? dims[static_cast<size_t>(axis)] : 1;
    return ceilDiv(storedBytes(buf.type, p.target.c0), static_cast<uint64_t>(std::max<int64_t>(extent, 1)));
}

/// DRAM bytes Task `t` moves with what is resident left out.
uint64_t trafficOf(const PlanState& s, int t) {
    const TaskPieces& pc = s.pieces[static_cast<size_t>(t)];
    uint64_t bytes = (pc.weightsSplit ? pc.tiles : 1) * pc.weightTile;
    for (const auto& [b, tile] : pc.inputs)
        if (!readsInPlace(s, t, b))
            bytes += pc.tiles * tile;
    if (!s.residentOutput[static_cast<size_t>(t)])
        bytes += pc.outTiles * pc.outTile;
    return bytes + s.haloStore[static_cast<size_t>(t)] + s.haloLoad[static_cast<size_t>(t)];
}

/// Bytes live on Task t's core while t runs: its slots and every resident whose span covers it.
uint64_t liveAt(const PlanState& s, int t) {
    return s.slotBytes[static_cast<size_t>(t)] + s.residentLive[static_cast<size_t>(t)];
}

/// Adds `delta` (or removes it) to the resident bytes of every Task on `core` in [first, last].
void addResident(PlanState& s, int core, int first, int last, uint64_t size, bool add) {
    const std::vector<int>& onCore = s.byCore[static_cast<size_t>(core)];
    for (int pos = s.position[static_cast<size_t>(first)]; pos <= s.position[static_cast<size_t>(last)]; ++pos) {
        uint64_t& live = s.residentLive[static_cast<size_t>(onCore[static_cast<size_t>(pos)])];
        live = add ? live + size : live - size;
    }
}

/// The readers of each buffer (Task ids, ascending) and its writers.
struct Accesses {
    std::vector<std::vector<int>> readers, writers;
};
Accesses accessesByBuffer(const Program& p) {
    Accesses a;
    a.readers.resize(p.buffers.size());
    a.writers.resize(p.buffers.size());
    for (const Task& t : p.tasks) {
        for (int b : t.inputs)
            if (a.readers[static_cast<size_t>(b)].empty() || a.readers[static_cast<size_t>(b)].back() != t.id)
                a.readers[static_cast<size_t>(b)].push_back(t.id);
        for (int b : t.outputs)
            a.writers[static_cast<size_t>(b)].push_back(t.id);
    }
    return a;
}

/// Where a kept tensor lives: its whole (one span) or, for a node split across cores, one stripe
/// per part, each on its part's core from the part to the last Task reading that slice.
std::vector<ResidentSpan> spansOf(const Program& p, const Accesses& acc, int b, const std::vector<int>& home) {
    const Buffer& buf = p.buffers[static_cast<size_t>(b)];
    const uint64_t align = std::max<uint64_t>(p.target.sramAlign, 1);
    const std::vector<int>& writers = acc.writers[static_cast<size_t>(b)];
    const std::vector<int>& readers = acc.readers[static_cast<size_t>(b)];
    const uint64_t whole = storedBytes(buf.type, p.target.c0);
    std::vector<ResidentSpan> spans;
    if (writers.size() == 1) {
        spans.push_back(ResidentSpan{writers.front(), readers.back(), p.tasks[static_cast<size_t>(writers.front())].core,
                                     slotSize(whole, align), 0, 0});
        return spans;
    }
    for (int w : writers) {
        const Task& wt = p.tasks[static_cast<size_t>(w)];
        const int64_t extent = buf.type.dims()[static_cast<size_t>(wt.sliceAxis)];
        ResidentSpan span{w, w, wt.core,
                          slotSize(ceilDiv(whole * static_cast<uint64_t>(wt.sliceEnd - wt.sliceBegin),
                                           static_cast<uint64_t>(std::max<int64_t>(extent, 1))),
                                   align),
                          wt.sliceBegin, wt.sliceEnd};
        for (int r : readers) // a reader on another core, or of the home, takes these rows from DRAM
            if (!disjointSliceRead(wt, p.tasks[static_cast<size_t>(r)], b) && p.tasks[static_cast<size_t>(r)].core == wt.core &&
                std::find(home.begin(), home.end(), r) == home.end())
                span.last = std::max(span.last, r);
        spans.push_back(span);
    }
    return spans;
}

/// Why the parts of a split node cannot keep their stripes of `b` on chip; empty if they can.
/// A reader that reads just the slice one part wrote, on that part's core, reads that stripe in
/// place; one whose window reaches into other cores' stripes reads its own and the halo rows from
/// the DRAM home. Every other reader (a whole read, another split, another core) goes to
/// `homeReaders`: it reads the DRAM home, which then holds every row (each part stores its whole
/// stripe there, as it stored it to DRAM before). Worth it only with a reader in place.
std::string stripeReason(const Program& p, const Accesses& acc, int b, std::vector<int>* homeReaders) {
    const std::vector<int>& writers = acc.writers[static_cast<size_t>(b)];
    // One stripe per core: the memory image and the artifact find a stripe by its core.
    for (size_t i = 0; i < writers.size(); ++i)
        for (size_t j = i + 1; j < writers.size(); ++j) {
            const Task& x = p.tasks[static_cast<size_t>(writers[i])];
            const Task& y = p.tasks[static_cast<size_t>(writers[j])];
            if (x.core == y.core)
                return "split across cores: parts '" + x.name + "' and '" + y.name + "' both run on core " +
                       std::to_string(x.core);
        }
    std::string firstReason;
    bool inPlace = false;
    for (int r : acc.readers[static_cast<size_t>(b)]) {
        const Task& rt = p.tasks[static_cast<size_t>(r)];
        if (const Task::HaloRead* h = rt.haloReadOf(b)) {
            // Its own core's stripe from SRAM, the other rows of its window from the DRAM home.
            const bool home = std::any_of(writers.begin(), writers.end(), [&](int w) {
                const Task& wt = p.tasks[static_cast<size_t>(w)];
                return wt.core == rt.core && wt.sliceBegin < h->end && h->begin < wt.sliceEnd;
            });
            if (!home)
                return "read on another core: the window of '" + rt.name + "' on core " + std::to_string(rt.core) +
                       " has no stripe there";
            inPlace = true;
            continue;
        }
        std::string why;
        if (!std::binary_search(rt.sliceLocalInputs.begin(), rt.sliceLocalInputs.end(), b))
            why = "split across cores: computed in " + std::to_string(writers.size()) + " parts, read whole by '" +
                  rt.name + "'";
        for (int w : writers) {
            const Task& wt = p.tasks[static_cast<size_t>(w)];
            if (!why.empty() || disjointSliceRead(wt, rt, b))
                continue;
            if (wt.sliceBegin != rt.sliceBegin || wt.sliceEnd != rt.sliceEnd)
                why = "split across cores: '" + rt.name + "' reads a slice other than '" + wt.name + "' writes";
            else if (wt.core != rt.core)
                why = "read on another core: '" + rt.name + "' on core " + std::to_string(rt.core) +
                      " reads the stripe written on core " + std::to_string(wt.core);
        }
        if (why.empty()) {
            inPlace = true;
            continue;
        }
        if (firstReason.empty())
            firstReason = why;
        if (homeReaders)
            homeReaders->push_back(r);
    }
    return inPlace ? std::string() : firstReason;
}

/// Why buffer `b`, written by `producer`, cannot stay on chip whatever the space; empty if it can.
std::string structuralReason(const Program& p, const PlanState& s, const Accesses& acc, int b, int producer,
                             std::vector<int>* homeReaders) {
    const Buffer& buf = p.buffers[static_cast<size_t>(b)];
    const Task& pt = p.tasks[static_cast<size_t>(producer)];
    if (buf.kind == BufferKind::Output)
        return "graph output: the host reads it from DRAM";
    if (buf.inPlaceOf >= 0)
        return "written in place into '" + p.buffers[static_cast<size_t>(storageOf(p, b))].value +
               "' (concat-in-place): its bytes are a part of that DRAM tensor";
    if (pt.unit == UnitKind::Host)
        return "written on the host: '" + pt.name + "' runs on the host, which reaches only DRAM";
    if (pt.outputs.size() != 1)
        return "several outputs: its Task writes " + std::to_string(pt.outputs.size());
    const std::vector<int>& readers = acc.readers[static_cast<size_t>(b)];
    if (readers.empty())
        return "no reader: no Task reads it";
    // A data-movement Task (a copy, a Concat, a TransData) is the DMA moving bytes. With its
    // input on chip it only stores, with its output on chip it only loads; with both it would
    // copy SRAM to SRAM, which the DMA model does not price: one side stays in DRAM.
    if (pt.unit == UnitKind::Dma && !s.residentInputs[static_cast<size_t>(producer)].empty())
        return "data-movement Task reads SRAM: '" + pt.name + "' already reads its input on chip";
    for (int r : readers)
        if (p.tasks[static_cast<size_t>(r)].unit == UnitKind::Host)
            return "read on the host: '" + p.tasks[static_cast<size_t>(r)].name +
                   "' runs on the host, which reaches only DRAM";
    if (acc.writers[static_cast<size_t>(b)].size() != 1)
        return stripeReason(p, acc, b, homeReaders);
    for (int r : readers) {
        const Task& rt = p.tasks[static_cast<size_t>(r)];
        if (rt.core != pt.core)
            return "read on another core: '" + rt.name + "' on core " + std::to_string(rt.core) +
                   ", written on core " + std::to_string(pt.core);
    }
    return {};
}

/// The halo of striped `b`: per stripe the first and last rows readers on other cores take from
/// the DRAM home, and per Task the bytes it stores there or loads from there. Empty when every
/// reader's window stays inside its own core's stripe.
std::vector<std::pair<int, uint64_t>> haloOf(const Program& p, const Accesses& acc, int b,
                                             std::vector<ResidentSpan>& spans, const std::vector<int>& home) {
    std::vector<std::pair<int, uint64_t>> bytes;
    if (spans.size() < 2)
        return bytes;
    const int axis = p.tasks[static_cast<size_t>(spans.front().first)].sliceAxis;
    const uint64_t row = rowBytes(p, b, axis);
    for (int r : acc.readers[static_cast<size_t>(b)]) {
        const Task& rt = p.tasks[static_cast<size_t>(r)];
        const Task::HaloRead* h = rt.haloReadOf(b);
        if (!h)
            continue;
        int64_t outside = h->end - h->begin;
        for (ResidentSpan& span : spans) {
            const int64_t x = std::max(h->begin, span.begin), y = std::min(h->end, span.end);
            if (x >= y)
                continue;
            if (span.core == rt.core) {
                outside -= y - x;
                continue;
            }
            if (x == span.begin)
                span.haloTop = std::max(span.haloTop, y - span.begin);
            if (y == span.end)
                span.haloBottom = std::max(span.haloBottom, span.end - x);
        }
        if (outside > 0)
            bytes.emplace_back(r, static_cast<uint64_t>(outside) * row);
    }
    for (ResidentSpan& span : spans) {
        const int64_t rows = span.end - span.begin;
        if (!home.empty() || span.haloTop + span.haloBottom >= rows) { // the whole stripe goes out
            span.haloTop = rows;
            span.haloBottom = 0;
        }
        if (span.haloTop + span.haloBottom > 0)
            bytes.emplace_back(-1 - span.first, static_cast<uint64_t>(span.haloTop + span.haloBottom) * row);
    }
    return bytes;
}

/// Adds (or takes back) a kept tensor's halo traffic: entries (reader, load) and (-1 - writer, store).
void applyHalo(PlanState& s, const std::vector<std::pair<int, uint64_t>>& bytes, bool add) {
    for (const auto& [who, n] : bytes) {
        uint64_t& at = who >= 0 ? s.haloLoad[static_cast<size_t>(who)] : s.haloStore[static_cast<size_t>(-1 - who)];
        at = add ? at + n : at - n;
    }
}

/// Keeps `b` resident in the plan state (its writers compute into it, its readers read it).
void keep(PlanState& s, const Accesses& acc, int b, std::vector<ResidentSpan> spans, uint64_t align,
          std::vector<std::pair<int, uint64_t>> halo, std::vector<int> home) {
    applyHalo(s, halo, true);
    s.halo[static_cast<size_t>(b)] = !halo.empty();
    s.haloAdded[static_cast<size_t>(b)] = std::move(halo);
    for (const ResidentSpan& span : spans) {
        s.residentOutput[static_cast<size_t>(span.first)] = true;
        addResident(s, span.core, span.first, span.last, span.size, true);
    }
    for (int r : acc.readers[static_cast<size_t>(b)]) // a reader of the DRAM home loads it as before
        if (std::find(home.begin(), home.end(), r) == home.end())
            s.residentInputs[static_cast<size_t>(r)].push_back(b);
    s.homeReaders[static_cast<size_t>(b)] = std::move(home);
    s.spans[static_cast<size_t>(b)] = std::move(spans);
    s.residents.push_back(b);
    for (int w : acc.writers[static_cast<size_t>(b)])
        s.slotBytes[static_cast<size_t>(w)] = workingSet(s, w, align);
    for (int r : acc.readers[static_cast<size_t>(b)])
        s.slotBytes[static_cast<size_t>(r)] = workingSet(s, r, align);
}

void release(PlanState& s, const Accesses& acc, int b, uint64_t align) {
    applyHalo(s, s.haloAdded[static_cast<size_t>(b)], false);
    s.haloAdded[static_cast<size_t>(b)].clear();
    s.halo[static_cast<size_t>(b)] = 0;
    for (const ResidentSpan& span : s.spans[static_cast<size_t>(b)]) {
        s.residentOutput[static_cast<size_t>(span.first)] = false;
        addResident(s, span.core, span.first, span.last, span.size, false);
    }
    for (int r : acc.readers[static_cast<size_t>(b)]) {
        auto& in = s.residentInputs[static_cast<size_t>(r)];
        in.erase(std::remove(in.begin(), in.end(), b), in.end());
    }
    s.spans[static_cast<size_t>(b)].clear();
    s.homeReaders[static_cast<size_t>(b)].clear();
    s.residents.erase(std::remove(s.residents.begin(), s.residents.end(), b), s.residents.end());
    for (int w : acc.writers[static_cast<size_t>(b)])
        s.slotBytes[static_cast<size_t>(w)] = workingSet(s, w, align);
    for (int r : acc.readers[static_cast<size_t>(b)])
        s.slotBytes[static_cast<size_t>(r)] = workingSet(s, r, align);
}

/// The most bytes live on a span's core over the span, and the span where that is worst.
std::pair<uint64_t, const ResidentSpan*> worstSpan(const PlanState& s, const std::vector<ResidentSpan>& spans) {
    uint64_t need = 0;
    const ResidentSpan* worst = spans.empty() ? nullptr : &spans.front();
    for (const ResidentSpan& span : spans) {
        const std::vector<int>& onCore = s.byCore[static_cast<size_t>(span.core)];
        for (int pos = s.position[static_cast<size_t>(span.first)]; pos <= s.position[static_cast<size_t>(span.last)];
             ++pos)
            if (liveAt(s, onCore[static_cast<size_t>(pos)]) > need) {
                need = liveAt(s, onCore[static_cast<size_t>(pos)]);
                worst = &span;
            }
    }
    return {need, worst};
}

/// The keep-on-chip rule over every candidate, in the order of their producing Tasks.
void decide(const Program& p, PlanState& s, const Accesses& acc, const SramPlanOptions& opt,
            std::vector<OnChipDecision>& out) {
    const uint64_t align = std::max<uint64_t>(p.target.sramAlign, 1);
    const uint64_t capacity = p.target.sramBytes;
    int64_t budget = opt.budget;
    for (const Task& t : p.tasks) {
        for (int b : t.outputs) {
            const Buffer& buf = p.buffers[static_cast<size_t>(b)];
            if (buf.kind != BufferKind::Intermediate && buf.kind != BufferKind::Output)
                continue;
            if (acc.writers[static_cast<size_t>(b)].front() != t.id)
                continue; // looked at once, with its first writer
            OnChipDecision d;
            d.value = buf.value;
            d.node = t.nodes.empty() ? t.name : t.nodes.front();
            std::vector<int> home;
            d.reason = structuralReason(p, s, acc, b, t.id, &home);
            if (!d.reason.empty()) {
                out.push_back(std::move(d));
                continue;
            }
            // What the cores hold over the spans with `b` kept: its writers and readers drop the
            // slots it replaces.
            std::vector<ResidentSpan> spans = spansOf(p, acc, b, home);
            std::vector<std::pair<int, uint64_t>> halo = haloOf(p, acc, b, spans, home);
            keep(s, acc, b, std::move(spans), align, std::move(halo), std::move(home));
            const auto [need, worst] = worstSpan(s, s.spans[static_cast<size_t>(b)]);
            if (need > capacity) {
                const uint64_t size = worst->size, core = static_cast<uint64_t>(worst->core);
                const bool striped = s.spans[static_cast<size_t>(b)].size() > 1;
                release(s, acc, b, align);
                const uint64_t others = need - size;
                d.reason = std::string("does not fit: ") + (striped ? "a stripe needs " : "needs ") + kib(size) + ", " +
                           kib(others < capacity ? capacity - others : 0) + " free on core " + std::to_string(core);
                out.push_back(std::move(d));
                continue;
            }
            if (budget == 0) {
                release(s, acc, b, align);
                d.outcome = OnChipDecision::Outcome::Skipped;
                out.push_back(std::move(d));
                continue;
            }
            if (budget > 0)
                --budget;
            d.outcome = OnChipDecision::Outcome::Applied;
            out.push_back(std::move(d));
        }
    }
}

/// Which Tasks prefetch: a Task loads its weights and the inputs other Tasks computed while the
/// Task before it on its core computes, when its slots and the residents it writes fit beside
/// everything live there. Looked at in each core's order, after keep-on-chip: the kept tensors
/// save DRAM traffic, prefetching only hides it.
void choosePrefetch(const Program& p, PlanState& s) {
    const uint64_t capacity = p.target.sramBytes;
    s.prefetch.assign(p.tasks.size(), 0);
    std::vector<uint64_t> residentFrom(p.tasks.size(), 0); // bytes of the residents each Task writes first
    for (int b : s.residents)
        for (const ResidentSpan& span : s.spans[static_cast<size_t>(b)])
            residentFrom[static_cast<size_t>(span.first)] += span.size;
    for (const std::vector<int>& onCore : s.byCore)
        for (size_t pos = 1; pos < onCore.size(); ++pos) {
            const Task& before = p.tasks[static_cast<size_t>(onCore[pos - 1])];
            const Task& t = p.tasks[static_cast<size_t>(onCore[pos])];
            const uint64_t extra = s.slotBytes[static_cast<size_t>(t.id)] + residentFrom[static_cast<size_t>(t.id)];
            if (liveAt(s, before.id) + extra <= capacity)
                s.prefetch[static_cast<size_t>(t.id)] = 1;
        }
}

/// The SRAM buffers of one core: each Task's slots (one Task long) and the residents.
std::vector<SramBuffer> buffersOfCore(const Program& p, const PlanState& s, int core) {
    const uint64_t align = std::max<uint64_t>(p.target.sramAlign, 1);
    std::vector<SramBuffer> out;
    auto slot = [&](int task, SramRole role, int buffer, uint64_t bytes, int copies) {
        if (bytes == 0)
            return;
        for (int k = 0; k < copies; ++k) {
            SramBuffer sb;
            sb.core = core;
            sb.size = slotSize(bytes, align);
            sb.role = role;
            sb.pair = copies == 2 ? k : -1;
            sb.task = task;
            sb.buffer = buffer;
            sb.firstTask = sb.lastTask = task;
            out.push_back(sb);
        }
    };
    for (int t : s.byCore[static_cast<size_t>(core)]) {
        const TaskPieces& pc = s.pieces[static_cast<size_t>(t)];
        const Task& task = p.tasks[static_cast<size_t>(t)];
        for (int b : task.outputs) // a tensor (or stripe) kept on chip lives from the Task that writes it
            for (const ResidentSpan& span : s.spans[static_cast<size_t>(b)])
                if (span.first == t) {
                    SramBuffer sb;
                    sb.core = core;
                    sb.size = span.size;
                    sb.role = SramRole::Resident;
                    sb.task = t;
                    sb.buffer = b;
                    sb.firstTask = span.first;
                    sb.lastTask = span.last;
                    out.push_back(sb);
                }
        for (const auto& [b, tile] : pc.inputs)
            if (!readsInPlace(s, t, b))
                slot(t, SramRole::InputTile, b, tile, pc.copies);
            else if (s.haloLoad[static_cast<size_t>(t)] > 0 && s.halo[static_cast<size_t>(b)])
                slot(t, SramRole::InputTile, b, s.haloLoad[static_cast<size_t>(t)], pc.copies); // its halo rows
        slot(t, SramRole::WeightTile, pc.weightBuffer, pc.weightTile, pc.copies);
        if (!s.residentOutput[static_cast<size_t>(t)])
            slot(t, task.tiling.reduceChunks > 1 ? SramRole::Accumulator : SramRole::OutputTile,
                 task.outputs.empty() ? -1 : task.outputs.front(), outSlotBytes(s, t), pc.copies);
        else // the sums of a chunked reduction whose result goes to its resident
            slot(t, SramRole::Accumulator, -1, outSlotBytes(s, t), pc.copies);
    }
    return out;
}

/// Offsets for one core's buffers: an interval problem over the core's Task positions. A Task
/// that prefetches has its own buffers start one position early, beside its predecessor's.
OffsetPlan placeCore(const PlanState& s, std::vector<SramBuffer>& bufs, uint64_t align, uint64_t capacity,
                     uint64_t steps) {
    std::vector<IntervalBuffer> iv(bufs.size());
    for (size_t i = 0; i < bufs.size(); ++i) {
        const size_t first = static_cast<size_t>(bufs[i].firstTask);
        const bool early = bufs[i].task == bufs[i].firstTask && !s.prefetch.empty() && s.prefetch[first] &&
                           s.position[first] > 0;
        iv[i].lower = static_cast<uint64_t>(s.position[first] - (early ? 1 : 0));
        iv[i].upper = static_cast<uint64_t>(s.position[static_cast<size_t>(bufs[i].lastTask)]) + 1;
        iv[i].size = bufs[i].size;
    }
    OffsetPlan plan = planOffsets(problemFromIntervals(iv, align), OffsetSearchOptions{steps, capacity});
    plan.lowerBound = std::max(plan.lowerBound, maxLiveBytes(iv));
    for (size_t i = 0; i < bufs.size(); ++i)
        bufs[i].offset = plan.offsets[i];
    return plan;
}

/// Re-times the list schedule after Task durations changed: the same cores and order, each
/// Task starting when its core is free and its deps ended (plus the event latency across cores).
/// A Task that prefetches (PlanState::prefetch) starts beside the Task before it on its core: its
/// loads of weights and of what other Tasks computed (all of them when it reads nothing of that
/// Task) overlap it, the rest of its time follows it. Its estStart is the start of its loads, or,
/// when it reads that Task's result, that Task's end: a dep always ends before its reader starts.
void retime(Program& p, const PlanState& s) {
    std::vector<uint64_t> coreFree(static_cast<size_t>(std::max(p.target.numCores, 1)) + 1, 0); // and the host lane
    std::vector<long> last(coreFree.size(), -1);
    p.estCycles = 0;
    for (Task& t : p.tasks) {
        const size_t c = static_cast<size_t>(t.core);
        const long before = last[c];
        const bool beside = before >= 0 && !s.prefetch.empty() && s.prefetch[static_cast<size_t>(t.id)];
        uint64_t ready = 0;
        bool readsBefore = false;
        for (int d : t.deps) {
            const Task& dt = p.tasks[static_cast<size_t>(d)];
            if (beside && d == before) {
                readsBefore = true;
                continue;
            }
            ready = std::max(ready, dt.estEnd + (dt.core == t.core ? 0 : p.target.eventLatencyCycles));
        }
        if (!beside) {
            t.estStart = std::max(ready, coreFree[c]);
            t.estEnd = t.estStart + p.target.dispatchCycles + t.estCycles;
        } else {
            const Task& head = p.tasks[static_cast<size_t>(before)];
            const TaskPieces& pc = s.pieces[static_cast<size_t>(t.id)];
            uint64_t early = (pc.weightsSplit ? pc.tiles : 1) * pc.weightTile;
            for (const auto& [b, tile] : pc.inputs)
                if (!readsInPlace(s, t.id, b) &&
                    (!readsBefore || std::find(head.outputs.begin(), head.outputs.end(), b) == head.outputs.end()))
                    early += pc.tiles * tile;
            const uint64_t hidden =
                early == 0 ? 0
                           : std::min(t.estCycles, p.target.dramLatencyCycles +
                                                       ceilDiv(early, std::max<uint64_t>(p.target.dmaBytesPerCycle, 1)));
            const uint64_t loads = std::max(ready, head.estStart + p.target.dispatchCycles);
            t.estEnd = std::max(loads + p.target.dispatchCycles + t.estCycles, head.estEnd + t.estCycles - hidden);
            // Reading that Task's result, it starts (as the schedule counts it) once the result is
            // there; its loads went before.
            t.estStart = readsBefore ? std::max(loads, head.estEnd) : loads;
        }
        coreFree[c] = t.estEnd;
        last[c] = t.id;
        p.estCycles = std::max(p.estCycles, t.estEnd);
    }
}

PlanState initialState(const Program& p, const std::vector<TaskCost>& costs, const std::vector<int>& bufferOf) {
    const uint64_t align = std::max<uint64_t>(p.target.sramAlign, 1);
    PlanState s;
    const size_t nt = p.tasks.size();
    s.pieces.resize(nt);
    s.residentInputs.resize(nt);
    s.residentOutput.assign(nt, false);
    s.slotBytes.assign(nt, 0);
    s.residentLive.assign(nt, 0);
    s.byCore.resize(static_cast<size_t>(std::max(p.target.numCores, 1)));
    s.position.assign(nt, 0);
    s.spans.assign(p.buffers.size(), {});
    s.haloStore.assign(nt, 0);
    s.haloLoad.assign(nt, 0);
    s.haloAdded.assign(p.buffers.size(), {});
    s.halo.assign(p.buffers.size(), 0);
    s.homeReaders.assign(p.buffers.size(), {});
    for (const Task& t : p.tasks) {
        s.pieces[static_cast<size_t>(t.id)] = piecesOf(p, t, costs[static_cast<size_t>(t.id)], bufferOf);
        s.slotBytes[static_cast<size_t>(t.id)] = workingSet(s, t.id, align);
        if (t.unit == UnitKind::Host)
            continue; // no SRAM: not in any core's plan
        auto& core = s.byCore[static_cast<size_t>(t.core)];
        s.position[static_cast<size_t>(t.id)] = static_cast<int>(core.size());
        core.push_back(t.id);
    }
    return s;
}

/// Plans every core, evicting the most recently kept tensor of a core whose plan does not fit
/// (the heuristics and the search could not pack what max-live allowed) until it does.
Expected<std::vector<std::vector<SramBuffer>>> placeAll(Program& p, PlanState& s, const Accesses& acc,
                                                        const SramPlanOptions& opt, std::vector<OnChipDecision>& out) {
    const uint64_t align = std::max<uint64_t>(p.target.sramAlign, 1);
    const uint64_t capacity = p.target.sramBytes;
    std::vector<std::vector<SramBuffer>> cores(s.byCore.size());
    p.memory.sram.assign(s.byCore.size(), SramStats{});
    for (size_t c = 0; c < s.byCore.size(); ++c) {
        while (true) {
            cores[c] = buffersOfCore(p, s, static_cast<int>(c));
            OffsetPlan plan = placeCore(s, cores[c], align, capacity, opt.searchSteps);
            if (plan.fitsCapacity && plan.peak <= capacity) {
                p.memory.sram[c] = SramStats{capacity, plan.peak, plan.lowerBound};
                break;
            }
            // Prefetching is the first thing to give up: the kept tensors save DRAM traffic.
            bool dropped = false;
            for (int t : s.byCore[c])
                if (s.prefetch[static_cast<size_t>(t)]) {
                    s.prefetch[static_cast<size_t>(t)] = 0;
                    dropped = true;
                }
            if (dropped)
                continue;
            auto kept = std::find_if(s.residents.rbegin(), s.residents.rend(), [&](int b) {
                const auto& spans = s.spans[static_cast<size_t>(b)];
                return std::any_of(spans.begin(), spans.end(),
                                   [&](const ResidentSpan& sp) { return sp.core == static_cast<int>(c); });
            });
            if (kept == s.residents.rend()) {
                for (int t : s.byCore[c])
                    if (s.slotBytes[static_cast<size_t>(t)] > capacity)
                        return makeError(ErrorKind::Unsupported,
                                         taskName(p, t) + " needs " + kib(s.slotBytes[static_cast<size_t>(t)]) +
                                             " of SRAM on core " + std::to_string(c) + ", more than its " +
                                             kib(capacity),
                                         p.tasks[static_cast<size_t>(t)].name);
                return makeError(ErrorKind::Unsupported, "the tile slots of core " + std::to_string(c) +
                                                             " do not fit its " + kib(capacity) + " of SRAM (" +
                                                             kib(plan.peak) + " planned)");
            }
            const int b = *kept;
            const std::string value = p.buffers[static_cast<size_t>(b)].value;
            uint64_t size = 0;
            for (const ResidentSpan& sp : s.spans[static_cast<size_t>(b)])
                if (sp.core == static_cast<int>(c))
                    size = std::max(size, sp.size);
            release(s, acc, b, align);
            // A stripe evicted from this core takes its siblings on cores planned before it
            // along: plan those again.
            for (size_t earlier = 0; earlier < c; ++earlier) {
                cores[earlier] = buffersOfCore(p, s, static_cast<int>(earlier));
                OffsetPlan again = placeCore(s, cores[earlier], align, capacity, opt.searchSteps);
                p.memory.sram[earlier] = SramStats{capacity, again.peak, again.lowerBound};
            }
            for (OnChipDecision& d : out)
                if (d.value == value && d.outcome == OnChipDecision::Outcome::Applied) {
                    d.outcome = OnChipDecision::Outcome::Rejected;
                    d.reason = "does not fit once placed: the tile slots beside it on core " + std::to_string(c) +
                               " leave no gap of " + kib(size) + " free";
                }
        }
    }
    return cores;
}

/// Writes the plan into the Program: SRAM buffers, kept tensors' buffers, transfers, the Tasks'
/// DMA bytes and cycles, and the memory figures.
void commit(Program& p, const PlanState& s, const Accesses& acc, std::vector<std::vector<SramBuffer>> cores,
            const std::vector<TaskCost>& costs, TilePricing pricing) {
    p.sramBuffers.clear();
    p.onChip.clear();
    p.transfers.clear();
    std::vector<std::map<std::pair<int, int>, int>> slotOf(p.tasks.size()); // (role, buffer) -> pair-0 slot
    std::map<std::pair<int, int>, int> residentOf;                           // (buffer, writer) -> resident
    for (auto& core : cores)
        for (SramBuffer& sb : core) {
            sb.id = static_cast<int>(p.sramBuffers.size());
            if (sb.role == SramRole::Resident) {
                Buffer& b = p.buffers[static_cast<size_t>(sb.buffer)];
                const Task& writer = p.tasks[static_cast<size_t>(sb.task)];
                const bool halo = s.halo[static_cast<size_t>(sb.buffer)] != 0;
                residentOf[{sb.buffer, sb.task}] = sb.id;
                // What it saves: the writer's stores and the reads on its core, less the halo
                // rows that still go through DRAM.
                uint64_t saved = s.pieces[static_cast<size_t>(sb.task)].outTiles *
                                 s.pieces[static_cast<size_t>(sb.task)].outTile;
                const std::vector<int>& home = s.homeReaders[static_cast<size_t>(sb.buffer)];
                for (int r : acc.readers[static_cast<size_t>(sb.buffer)]) {
                    const Task& rt = p.tasks[static_cast<size_t>(r)];
                    if (disjointSliceRead(writer, rt, sb.buffer) || (halo && rt.core != writer.core) ||
                        std::find(home.begin(), home.end(), r) != home.end())
                        continue;
                    for (const auto& [in, tile] : s.pieces[static_cast<size_t>(r)].inputs)
                        if (in == sb.buffer)
                            saved += s.pieces[static_cast<size_t>(r)].tiles * tile;
                    if (halo)
                        saved -= std::min(saved, s.haloLoad[static_cast<size_t>(r)]);
                }
                if (halo)
                    saved -= std::min(saved, s.haloStore[static_cast<size_t>(sb.task)]);
                p.onChip.push_back(OnChip{sb.buffer, sb.core, sb.size, saved});
                if (s.spans[static_cast<size_t>(sb.buffer)].size() > 1) { // one stripe per part
                    b.stripeAxis = writer.sliceAxis;
                    Buffer::Stripe st{sb.core, sb.offset, sb.size, writer.sliceBegin, writer.sliceEnd};
                    for (const ResidentSpan& span : s.spans[static_cast<size_t>(sb.buffer)])
                        if (span.first == sb.task) {
                            st.haloTop = span.haloTop;
                            st.haloBottom = span.haloBottom;
                        }
                    b.stripes.push_back(st);
                    // A halo buffer keeps its DRAM home (planned with DRAM); the others name
                    // their first stripe.
                    if (b.stripes.size() > 1 || halo) {
                        p.sramBuffers.push_back(sb);
                        continue;
                    }
                }
                b.level = MemLevel::Sram;
                b.core = sb.core;
                b.offset = sb.offset;
                b.size = sb.size;
            } else if (sb.pair <= 0) {
                slotOf[static_cast<size_t>(sb.task)][{static_cast<int>(sb.role), sb.buffer}] = sb.id;
            }
            p.sramBuffers.push_back(sb);
        }
    std::sort(p.onChip.begin(), p.onChip.end(),
              [](const OnChip& a, const OnChip& b) { return std::tie(a.buffer, a.core) < std::tie(b.buffer, b.core); });
    for (Buffer& b : p.buffers) { // stripes in slice order; the buffer names the first
        if (b.stripes.empty())
            continue;
        std::sort(b.stripes.begin(), b.stripes.end(),
                  [](const Buffer::Stripe& x, const Buffer::Stripe& y) { return x.begin < y.begin; });
        if (b.level == MemLevel::Dram) { // a halo buffer: its DRAM home holds the halo rows only
            const uint64_t align = std::max<uint64_t>(p.target.dramAlign, 1);
            b.size = std::max(alignUp(storedBytes(b.haloHomeType(), p.target.c0), align), align);
            continue;
        }
        b.core = b.stripes.front().core;
        b.offset = b.stripes.front().offset;
        b.size = b.stripes.front().size;
    }
    p.memory.dramTrafficBytes = 0;
    for (Task& t : p.tasks) {
        const TaskPieces& pc = s.pieces[static_cast<size_t>(t.id)];
        auto slot = [&](SramRole r, int buffer) {
            auto it = slotOf[static_cast<size_t>(t.id)].find({static_cast<int>(r), buffer});
            return it == slotOf[static_cast<size_t>(t.id)].end() ? -1 : it->second;
        };
        for (const auto& [b, tile] : pc.inputs)
            if (!readsInPlace(s, t.id, b))
                p.transfers.push_back(Transfer{t.id, true, b, slot(SramRole::InputTile, b), pc.tiles * tile});
        if (pc.weightTile > 0)
            p.transfers.push_back(Transfer{t.id, true, pc.weightBuffer, slot(SramRole::WeightTile, pc.weightBuffer),
                                           (pc.weightsSplit ? pc.tiles : 1) * pc.weightTile});
        if (!s.residentOutput[static_cast<size_t>(t.id)] && pc.outTile > 0 && !t.outputs.empty()) {
            const SramRole role = t.tiling.reduceChunks > 1 ? SramRole::Accumulator : SramRole::OutputTile;
            p.transfers.push_back(Transfer{t.id, false, t.outputs.front(), slot(role, t.outputs.front()),
                                           pc.outTiles * pc.outTile});
        }
        for (int b : t.inputs) // the halo rows of its window that other cores computed
            if (s.halo[static_cast<size_t>(b)] && s.haloLoad[static_cast<size_t>(t.id)] > 0 && readsInPlace(s, t.id, b))
                p.transfers.push_back(
                    Transfer{t.id, true, b, slot(SramRole::InputTile, b), s.haloLoad[static_cast<size_t>(t.id)]});
        for (int b : t.outputs) // its rows that other cores read
            if (s.halo[static_cast<size_t>(b)] && s.haloStore[static_cast<size_t>(t.id)] > 0)
                if (auto it = residentOf.find({b, t.id}); it != residentOf.end())
                    p.transfers.push_back(Transfer{t.id, false, b, it->second, s.haloStore[static_cast<size_t>(t.id)]});
        const uint64_t traffic = trafficOf(s, t.id);
        if (traffic != t.dmaBytes) {
            t.dmaBytes = traffic;
            t.estCycles =
                pipelinedCycles(pc.tiles, costs[static_cast<size_t>(t.id)].computeCycles, traffic, p.target, pricing);
            t.tiling.estCycles = t.estCycles;
        }
        t.tiling.sramBytes = s.slotBytes[static_cast<size_t>(t.id)];
        p.memory.dramTrafficBytes += t.dmaBytes;
    }
}

/// Weights the Tasks read, graph inputs and outputs: what any program moves at least once.
uint64_t compulsoryBytes(const Program& p, const Accesses& acc) {
    uint64_t bytes = 0;
    for (const Buffer& b : p.buffers) {
        const bool read = !acc.readers[static_cast<size_t>(b.id)].empty();
        if (b.kind == BufferKind::Input || b.kind == BufferKind::Output || (b.kind == BufferKind::Weight && read))
            bytes += storedBytes(b.type, p.target.c0);
    }
    return bytes;
}

} // namespace

Status planSram(Program& p, const std::vector<TaskCost>& costs, const std::vector<int>& bufferOf,
                const SramPlanOptions& options, std::vector<OnChipDecision>* decisions) {
    if (costs.size() != p.tasks.size())
        return makeError(ErrorKind::Invalid, "SRAM plan: " + std::to_string(costs.size()) + " tiling results for " +
                                                 std::to_string(p.tasks.size()) + " Tasks");
    const Accesses acc = accessesByBuffer(p);
    PlanState s = initialState(p, costs, bufferOf);
    std::vector<OnChipDecision> out;
    if (options.keepOnChip)
        decide(p, s, acc, options, out);
    choosePrefetch(p, s);
    SX_ASSIGN(auto cores, placeAll(p, s, acc, options, out));
    commit(p, s, acc, std::move(cores), costs, options.tilePricing);
    p.memory.compulsoryBytes = compulsoryBytes(p, acc);
    if (!p.onChip.empty() || std::find(s.prefetch.begin(), s.prefetch.end(), 1) != s.prefetch.end())
        retime(p, s);
    if (decisions)
        *decisions = std::move(out);
    return {};
}

namespace {

/// Every SRAM buffer on a real core, aligned, inside the core's SRAM, used by Tasks of its core;
/// returns each core's buffer ids.
Expected<std::vector<std::vector<int>>> sramBuffersByCore(const Program& p) {
    const Target& tg = p.target;
    const uint64_t align = std::max<uint64_t>(tg.sramAlign, 1);
    const int nt = static_cast<int>(p.tasks.size());
    std::vector<std::vector<int>> byCore(static_cast<size_t>(std::max(tg.numCores, 0)));
    for (const SramBuffer& sb : p.sramBuffers) {
        const std::string label = "SRAM buffer " + std::to_string(sb.id) + " (" + std::string(sramRoleName(sb.role)) + ")";
        if (sb.core < 0 || sb.core >= tg.numCores)
            return makeError(ErrorKind::Verify, label + " is on core " + std::to_string(sb.core) + ", which the target lacks");
        if (sb.offset % align != 0)
            return makeError(ErrorKind::Verify, label + " offset " + std::to_string(sb.offset) + " is not " +
                                                    std::to_string(align) + "-byte aligned");
        if (sb.offset + sb.size > tg.sramBytes || sb.offset + sb.size < sb.offset)
            return makeError(ErrorKind::Verify, label + " [" + std::to_string(sb.offset) + ", " +
                                                    std::to_string(sb.offset + sb.size) + ") overflows the " +
                                                    std::to_string(tg.sramBytes) + " bytes of SRAM on core " +
                                                    std::to_string(sb.core));
        if (sb.firstTask < 0 || sb.lastTask >= nt || sb.firstTask > sb.lastTask)
            return makeError(ErrorKind::Verify, label + " has Task range [" + std::to_string(sb.firstTask) + ", " +
                                                    std::to_string(sb.lastTask) + "] outside the program");
        for (int t : {sb.firstTask, sb.lastTask})
            if (p.tasks[static_cast<size_t>(t)].core != sb.core)
                return makeError(ErrorKind::Verify, label + " on core " + std::to_string(sb.core) + " is used by " +
                                                        taskName(p, t) + " on core " +
                                                        std::to_string(p.tasks[static_cast<size_t>(t)].core));
        byCore[static_cast<size_t>(sb.core)].push_back(sb.id);
    }
    return byCore;
}

/// Per core, no two buffers meet in address while their Task ranges meet.
Status checkSramOverlaps(const Program& p, std::vector<std::vector<int>> byCore) {
    // Per core, a sweep in Task order: the live buffers by address; a new one must not meet its
    // neighbours. Buffers whose Task ranges do not meet are ordered by the core's program order.
    for (std::vector<int>& ids : byCore) {
        std::sort(ids.begin(), ids.end(), [&](int a, int b) {
            return std::tie(p.sramBuffers[static_cast<size_t>(a)].firstTask, a) <
                   std::tie(p.sramBuffers[static_cast<size_t>(b)].firstTask, b);
        });
        std::map<uint64_t, int> live; // offset -> buffer id
        for (int id : ids) {
            const SramBuffer& sb = p.sramBuffers[static_cast<size_t>(id)];
            for (auto it = live.begin(); it != live.end();) // drop what ended before it begins
                it = p.sramBuffers[static_cast<size_t>(it->second)].lastTask < sb.firstTask ? live.erase(it) : std::next(it);
            auto next = live.lower_bound(sb.offset);
            const SramBuffer* clash = nullptr;
            if (next != live.end() && next->first < sb.offset + sb.size)
                clash = &p.sramBuffers[static_cast<size_t>(next->second)];
            if (!clash && next != live.begin()) {
                const SramBuffer& prev = p.sramBuffers[static_cast<size_t>(std::prev(next)->second)];
                if (prev.offset + prev.size > sb.offset)
                    clash = &prev;
            }
            if (clash)
                return makeError(ErrorKind::Verify,
                                 "hazard: SRAM buffers " + std::to_string(clash->id) + " and " + std::to_string(sb.id) +
                                     " on core " + std::to_string(sb.core) + " overlap while " + taskName(p, sb.firstTask) +
                                     " runs");
            if (sb.size > 0)
                live[sb.offset] = id;
        }
    }
    return {};
}

/// Kept tensors are where resident SRAM buffers hold them, for every Task that touches them.
Status checkKeptTensors(const Program& p) {
    // Kept tensors: each whole one, or each stripe, where a resident SRAM buffer on its core holds
    // it; every Task touching it on a core that holds it, inside that resident's Task range.
    std::map<std::pair<int, int>, int> residentOf; // (buffer, core) -> SRAM buffer id
    for (const SramBuffer& sb : p.sramBuffers)
        if (sb.role == SramRole::Resident)
            residentOf[{sb.buffer, sb.core}] = sb.id;
    auto holds = [&](const Buffer& b, int core, uint64_t offset, uint64_t size) -> const SramBuffer* {
        auto it = residentOf.find({b.id, core});
        if (it == residentOf.end())
            return nullptr;
        const SramBuffer& res = p.sramBuffers[static_cast<size_t>(it->second)];
        return res.offset == offset && res.size >= size ? &res : nullptr;
    };
    for (const Buffer& b : p.buffers) {
        if (b.level != MemLevel::Sram && b.stripes.empty())
            continue;
        bool ok = b.stripes.empty() ? holds(b, b.core, b.offset, b.size) != nullptr : b.stripeAxis >= 0;
        for (const Buffer::Stripe& st : b.stripes)
            ok = ok && holds(b, st.core, st.offset, st.size) != nullptr && st.begin < st.end;
        if (!ok)
            return makeError(ErrorKind::Verify, "buffer " + std::to_string(b.id) + " '" + b.value +
                                                    "' is in SRAM but not where a resident SRAM buffer holds it");
    }
    for (const Task& t : p.tasks) {
        auto check = [&](int id, bool reads) -> Status {
            const Buffer& b = p.buffers[static_cast<size_t>(id)];
            // A halo buffer's DRAM home serves the cores without a stripe of it, and a home that
            // holds every row any reader.
            if (b.level != MemLevel::Sram && (b.stripes.empty() || !b.stripeOn(t.core) || (reads && b.homeHoldsAll())))
                return {};
            auto it = residentOf.find({b.id, t.core});
            if (it != residentOf.end()) {
                const SramBuffer& res = p.sramBuffers[static_cast<size_t>(it->second)];
                if (t.id >= res.firstTask && t.id <= res.lastTask)
                    return {};
            }
            return makeError(ErrorKind::Verify, taskName(p, t.id) + " on core " + std::to_string(t.core) + " touches '" +
                                                    b.value + "', which no SRAM buffer of core " +
                                                    std::to_string(t.core) + " holds while it runs");
        };
        for (int id : t.inputs)
            SX_TRY(check(id, true));
        for (int id : t.outputs)
            SX_TRY(check(id, false));
    }
    return {};
}


} // namespace

Status checkSramPlan(const Program& p) {
    SX_ASSIGN(std::vector<std::vector<int>> byCore, sramBuffersByCore(p));
    SX_TRY(checkSramOverlaps(p, std::move(byCore)));
    return checkKeptTensors(p);
}
} // namespace sextant::backend
