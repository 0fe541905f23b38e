#include "ArtifactInternal.h"

#include "MathUtil.h"
#include "core/ir/Printer.h"

#include <algorithm>
#include <tuple>

namespace sextant::backend::artifact {

namespace {

const char* levelName(MemLevel l) {
    switch (l) {
    case MemLevel::Dram: return "dram";
    case MemLevel::Sram: return "sram";
    }
    return "?";
}

json shapeJson(const std::vector<int64_t>& dims) { return json(dims); }

json taskJson(const Task& t) {
    json j;
    j["id"] = t.id;
    j["name"] = t.name;
    j["kernel"] = t.kernel;
    j["core"] = t.core;
    j["unit"] = std::string(unitName(t.unit));
    j["nodes"] = t.nodes;
    j["inputs"] = t.inputs;
    j["outputs"] = t.outputs;
    j["deps"] = t.deps;
    j["wait_events"] = t.waitEvents;
    j["record_events"] = t.recordEvents;
    j["flops"] = t.flops;
    j["dma_bytes"] = t.dmaBytes;
    j["est_cycles"] = t.estCycles;
    j["compute_cycles"] = t.computeCycles;
    if (t.parts > 1) // a split group's part: present only then
        j["split"] = json{{"part", t.part}, {"parts", t.parts}, {"axis", t.sliceAxis}, {"begin", t.sliceBegin},
                          {"end", t.sliceEnd}};
    if (!t.sliceLocalInputs.empty()) // present only when some are
        j["slice_local_inputs"] = t.sliceLocalInputs;
    if (!t.haloReads.empty()) { // version 4, present only when some are
        json halo = json::array();
        for (const Task::HaloRead& h : t.haloReads)
            halo.push_back(json{{"buffer", h.buffer}, {"begin", h.begin}, {"end", h.end}});
        j["halo_reads"] = std::move(halo);
    }
    j["est_start"] = t.estStart;
    j["est_end"] = t.estEnd;
    json tiling;
    tiling["tile_shape"] = shapeJson(t.tiling.tileShape);
    tiling["num_tiles"] = t.tiling.numTiles;
    if (t.tiling.reduceChunks > 1) // written only when split: other artifacts stay as they were
        tiling["reduce_chunks"] = t.tiling.reduceChunks;
    tiling["double_buffered"] = t.tiling.doubleBuffered;
    tiling["sram_bytes"] = t.tiling.sramBytes;
    tiling["est_cycles"] = t.tiling.estCycles;
    json cands = json::array();
    for (const Tiling::Candidate& c : t.tiling.candidates) {
        json cj{{"tile_shape", shapeJson(c.tileShape)},
                {"est_cycles", c.estCycles},
                {"rejected_because", c.rejectedBecause}};
        if (c.reduceChunks > 1)
            cj["reduce_chunks"] = c.reduceChunks;
        cands.push_back(std::move(cj));
    }
    tiling["candidates"] = std::move(cands);
    j["tiling"] = std::move(tiling);
    return j;
}

Expected<BufferKind> parseKind(const Manifest& m, const std::string& s, const std::string& path) {
    for (BufferKind k : {BufferKind::Input, BufferKind::Output, BufferKind::Weight, BufferKind::Intermediate})
        if (s == bufferKindName(k))
            return k;
    return m.err(path, "has unknown buffer kind '" + s + "'");
}
Expected<MemLevel> parseLevel(const Manifest& m, const std::string& s, const std::string& path) {
    for (MemLevel l : {MemLevel::Dram, MemLevel::Sram})
        if (s == levelName(l))
            return l;
    return m.err(path, "has unknown memory level '" + s + "'");
}
Expected<UnitKind> parseUnit(const Manifest& m, const std::string& s, const std::string& path) {
    for (UnitKind u : {UnitKind::Cube, UnitKind::Vector, UnitKind::Dma, UnitKind::Host})
        if (s == unitName(u))
            return u;
    return m.err(path, "has unknown unit '" + s + "'");
}
Expected<ir::LayoutKind> parseLayout(const Manifest& m, const std::string& s, const std::string& path) {
    for (ir::LayoutKind l : {ir::LayoutKind::Any, ir::LayoutKind::NCHW, ir::LayoutKind::NHWC, ir::LayoutKind::NC1HWC0})
        if (s == ir::layoutName(l))
            return l;
    return m.err(path, "has unknown layout '" + s + "'");
}


uint64_t saturatingAdd(uint64_t a, uint64_t b) {
    uint64_t sum = 0;
    return __builtin_add_overflow(a, b, &sum) ? UINT64_MAX : sum;
}
uint64_t saturatingMul(uint64_t a, uint64_t b) {
    uint64_t product = 0;
    return __builtin_mul_overflow(a, b, &product) ? UINT64_MAX : product;
}

/// The memory block: the DRAM regions, which must follow one another inside the target's DRAM.
Status parseMemory(const Manifest& m, const json& doc, Program& p) {
    SX_ASSIGN(const json* mem, m.get(doc, "memory", ""));
    SX_ASSIGN(p.memory.dramPeak, m.u64(*mem, "dram_peak", "memory"));
    SX_ASSIGN(p.memory.dramLowerBound, m.u64(*mem, "dram_lower_bound", "memory"));
    SX_ASSIGN(p.memory.weightBytes, m.u64(*mem, "weight_bytes", "memory"));
    SX_ASSIGN(p.memory.ioBytes, m.u64(*mem, "io_bytes", "memory"));
    SX_ASSIGN(p.memory.weightsBase, m.u64(*mem, "weights_base", "memory"));
    SX_ASSIGN(p.memory.ioBase, m.u64(*mem, "io_base", "memory"));
    SX_ASSIGN(p.memory.arenaBase, m.u64(*mem, "arena_base", "memory"));
    SX_ASSIGN(p.memory.dramTotal, m.u64(*mem, "dram_total", "memory"));
    const MemoryStats& ms = p.memory;
    // Each region starts where the one before it ends at the latest, all inside the target's DRAM;
    // the sums saturate, so that 2^64-1 is past the end instead of wrapping to a small address.
    const std::string dram = std::to_string(p.target.dramBytes);
    if (ms.dramTotal > p.target.dramBytes)
        return m.err("memory.dram_total", "is " + std::to_string(ms.dramTotal) + ", more than the target's " + dram +
                                              " bytes of DRAM");
    if (ms.weightsBase > ms.dramTotal)
        return m.err("memory.weights_base", "is " + std::to_string(ms.weightsBase) + ", past dram_total " +
                                                std::to_string(ms.dramTotal));
    if (saturatingAdd(ms.weightsBase, ms.weightBytes) > ms.ioBase)
        return m.err(ms.ioBase < ms.weightsBase ? "memory.io_base" : "memory.weight_bytes",
                     "puts the weights region [" + std::to_string(ms.weightsBase) + ", +" +
                         std::to_string(ms.weightBytes) + ") past io_base " + std::to_string(ms.ioBase));
    if (ms.ioBase > ms.arenaBase)
        return m.err("memory.io_base", "is " + std::to_string(ms.ioBase) + ", past arena_base " +
                                           std::to_string(ms.arenaBase));
    if (saturatingAdd(ms.ioBase, ms.ioBytes) > ms.arenaBase)
        return m.err("memory.io_bytes", "is " + std::to_string(ms.ioBytes) + ": the I/O region from io_base " +
                                            std::to_string(ms.ioBase) + " ends past arena_base " +
                                            std::to_string(ms.arenaBase));
    if (saturatingAdd(ms.arenaBase, ms.dramPeak) != ms.dramTotal)
        return m.err(ms.arenaBase > ms.dramTotal ? "memory.arena_base" : "memory.dram_peak",
                     "makes the arena end at arena_base + dram_peak = " +
                         std::to_string(saturatingAdd(ms.arenaBase, ms.dramPeak)) + ", not at dram_total " +
                         std::to_string(ms.dramTotal));
    return {};
}

/// buffers[i].stripes: an SRAM buffer kept a stripe per core, each a slice of dim `axis` on its
/// core, inside its SRAM and large enough for its slice; the slices in order and disjoint.
Status parseStripes(const Manifest& m, const json& j, const std::string& path, const Program& p, Buffer& b) {
    const std::string sp = path + ".stripes";
    SX_ASSIGN(const json* stripes, m.get(j, "stripes", path));
    // In DRAM: a halo buffer (version 4), whose stripes say which rows they also store there.
    const bool halo = b.level == MemLevel::Dram;
    if (halo && b.kind != BufferKind::Intermediate)
        return m.err(sp, "is given for the " + std::string(bufferKindName(b.kind)) + " '" + b.value +
                             "': only intermediates stay on chip");
    const int rank = static_cast<int>(b.type.rank());
    SX_ASSIGN(b.stripeAxis, m.intIn(*stripes, "axis", sp, 0, std::max(rank - 1, 0)));
    SX_ASSIGN(const json* parts, m.get(*stripes, "parts", sp));
    if (!parts->is_array() || parts->empty() || parts->size() > 65536)
        return m.err(sp + ".parts", "must be a non-empty array");
    const std::vector<int64_t> dims = b.type.dims();
    const int64_t extent = dims.empty() ? 0 : dims[static_cast<size_t>(b.stripeAxis)];
    uint64_t perStep = ir::dtypeSize(b.type.dtype);
    for (size_t d = 0; d < dims.size(); ++d)
        if (static_cast<int>(d) != b.stripeAxis)
            perStep *= static_cast<uint64_t>(std::max<int64_t>(dims[d], 0));
    int64_t at = 0;
    for (size_t k = 0; k < parts->size(); ++k) {
        const std::string kp = sp + ".parts[" + std::to_string(k) + "]";
        const json& part = (*parts)[k];
        Buffer::Stripe st;
        SX_ASSIGN(st.core, m.intIn(part, "core", kp, 0, p.target.numCores - 1));
        SX_ASSIGN(st.offset, m.u64(part, "offset", kp));
        SX_ASSIGN(st.size, m.u64(part, "size", kp));
        SX_ASSIGN(st.begin, m.intIn(part, "begin", kp, at, std::max<int64_t>(extent - 1, at)));
        SX_ASSIGN(st.end, m.intIn(part, "end", kp, st.begin + 1, std::max<int64_t>(extent, st.begin + 1)));
        if (st.offset > p.target.sramBytes || st.size > p.target.sramBytes - st.offset)
            return m.err(kp + ".offset", "puts the stripe outside the " + std::to_string(p.target.sramBytes) +
                                             " bytes of SRAM of core " + std::to_string(st.core));
        if (static_cast<uint64_t>(st.end - st.begin) * perStep > st.size)
            return m.err(kp + ".size", "is smaller than its slice of " + b.type.str());
        if (b.stripeOn(st.core))
            return m.err(kp + ".core", "holds a second stripe of '" + b.value + "' on core " + std::to_string(st.core));
        if (halo) {
            const int64_t rows = st.end - st.begin;
            SX_ASSIGN(st.haloTop, m.intIn(part, "halo_top", kp, 0, rows));
            SX_ASSIGN(st.haloBottom, m.intIn(part, "halo_bottom", kp, 0, rows - st.haloTop));
        }
        at = st.end;
        b.stripes.push_back(st);
    }
    if (halo) {
        if (std::none_of(b.stripes.begin(), b.stripes.end(),
                         [](const Buffer::Stripe& st) { return st.haloTop + st.haloBottom > 0; }))
            return m.err(sp, "is given for a buffer in DRAM, but no stripe stores rows there (halo_top, halo_bottom)");
        return {};
    }
    const Buffer::Stripe& first = b.stripes.front();
    if (b.core != first.core || b.offset != first.offset || b.size != first.size)
        return m.err(path, "does not name its first stripe (core, offset and size)");
    return {};
}

/// A DRAM buffer whose tensor fits it: its size is the tensor's stored bytes rounded up to
/// dram_align (as the lowering gives every buffer), and it lies in the region of its kind.
Status checkDramBuffer(const Manifest& m, const Buffer& b, const std::string& path, const Program& p) {
    const MemoryStats& ms = p.memory;
    const uint64_t align = std::max<uint64_t>(p.target.dramAlign, 1);
    // A halo buffer's DRAM home holds its stripes' halo rows only.
    const ir::TensorType held = b.stripes.empty() ? b.type : b.haloHomeType();
    const uint64_t expected = std::max(alignUp(storedBytes(held, p.target.c0), align), align);
    if (b.size != expected)
        return m.err(path + ".size", "is " + std::to_string(b.size) + ", but the " + b.type.str() + " tensor '" +
                                         b.value + "' takes " + std::to_string(expected) +
                                         " bytes (its bytes rounded up to the target's dram_align " +
                                         std::to_string(align) + ")");
    uint64_t lo = ms.arenaBase, hi = ms.dramTotal;
    const char* region = "arena";
    switch (b.kind) {
    case BufferKind::Weight:
        if (b.fill) // after weights.bin's bytes, before the I/O region
            lo = saturatingAdd(ms.weightsBase, ms.weightBytes), hi = ms.ioBase, region = "region of filled weights";
        else
            lo = ms.weightsBase, hi = ms.weightsBase + ms.weightBytes, region = "weights region";
        break;
    case BufferKind::Input:
    case BufferKind::Output:
        lo = ms.ioBase, hi = ms.ioBase + ms.ioBytes, region = "I/O region";
        break;
    case BufferKind::Intermediate: break;
    }
    if (b.offset < lo || b.offset > hi || b.size > hi - b.offset)
        return m.err(path + ".offset", "puts " + std::string(bufferKindName(b.kind)) + " '" + b.value + "' at [" +
                                           std::to_string(b.offset) + ", " + std::to_string(saturatingAdd(b.offset, b.size)) +
                                           "), outside the program's " + region + " [" + std::to_string(lo) + ", " +
                                           std::to_string(hi) + ")");
    return {};
}

/// buffers[i].shape: the dims; null for one only the run decides (a buffer the host holds).
Expected<ir::TensorType> parseBufferShape(const Manifest& m, const json& j, const std::string& path, ir::DType dt) {
    SX_ASSIGN(const json* a, m.array(j, "shape", path));
    ir::TensorType t;
    t.dtype = dt;
    for (size_t i = 0; i < a->size(); ++i) {
        const json& v = (*a)[i];
        if (v.is_null()) {
            t.shape.push_back(ir::Dim::symbolic("?"));
            continue;
        }
        if (!v.is_number_unsigned() || v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
            return m.err(path + ".shape[" + std::to_string(i) + "]", "must be a non-negative integer or null");
        t.shape.push_back(ir::Dim::known(v.get<int64_t>()));
    }
    return t;
}

/// A buffer the host holds: a host Task's value whose shape only the run decides. No address,
/// size 0, never on chip.
Status checkHeldBuffer(const Manifest& m, const Buffer& b, const std::string& path) {
    if (b.level != MemLevel::Dram || b.core != -1 || !b.stripes.empty())
        return m.err(path + ".level", "puts buffer '" + b.value + "' of shape " + b.type.str() +
                                          " on chip; a shape only the run decides is held by the host");
    if (b.size != 0 || b.offset != 0)
        return m.err(path + ".size", "is " + std::to_string(b.size) + " at offset " + std::to_string(b.offset) +
                                         " for buffer '" + b.value + "' of shape " + b.type.str() +
                                         ", which the host holds (size 0, offset 0)");
    if (b.kind == BufferKind::Weight || b.kind == BufferKind::Input)
        return m.err(path + ".shape", "is " + b.type.str() + " for " + std::string(bufferKindName(b.kind)) + " '" + b.value +
                                          "'; weights and inputs have static shapes");
    return {};
}

/// buffers[i]: a DRAM or SRAM buffer of the program, inside its region.
Expected<Buffer> parseBuffer(const Manifest& m, const json& j, int64_t i, const Program& p, int64_t nt) {
    const MemoryStats& ms = p.memory;
    std::string path = "buffers[" + std::to_string(i) + "]";
    Buffer b;
    SX_ASSIGN(b.id, m.intIn(j, "id", path, i, i));
    SX_ASSIGN(b.value, m.str(j, "value", path));
    SX_ASSIGN(std::string kind, m.str(j, "kind", path));
    SX_ASSIGN(b.kind, parseKind(m, kind, path + ".kind"));
    SX_ASSIGN(std::string level, m.str(j, "level", path));
    SX_ASSIGN(b.level, parseLevel(m, level, path + ".level"));
    SX_ASSIGN(b.core, m.intIn(j, "core", path, -1, p.target.numCores - 1));
    SX_ASSIGN(b.offset, m.u64(j, "offset", path));
    SX_ASSIGN(b.size, m.u64(j, "size", path));
    SX_ASSIGN(std::string dtype, m.str(j, "dtype", path));
    std::optional<ir::DType> dt = ir::parseDType(dtype);
    if (!dt)
        return m.err(path + ".dtype", "has unknown dtype '" + dtype + "'");
    SX_ASSIGN(b.type, parseBufferShape(m, j, path, *dt));
    SX_ASSIGN(std::string layout, m.str(j, "layout", path));
    SX_ASSIGN(b.type.layout, parseLayout(m, layout, path + ".layout"));
    SX_ASSIGN(b.firstTask, m.intIn(j, "first_task", path, -1, nt - 1));
    SX_ASSIGN(b.lastTask, m.intIn(j, "last_task", path, -1, nt - 1));
    if (b.level == MemLevel::Sram) {
        // A tensor kept on chip: its offset is in its core's SRAM (the SRAM plan says where).
        const Target& tg = p.target;
        if (b.core < 0)
            return m.err(path + ".core", "is -1, but buffer '" + b.value + "' is in SRAM, which is per core");
        if (b.kind != BufferKind::Intermediate)
            return m.err(path + ".level", "is sram for the " + std::string(bufferKindName(b.kind)) + " '" + b.value +
                                              "': only intermediates stay on chip");
        if (b.offset > tg.sramBytes || b.size > tg.sramBytes - b.offset)
            return m.err(path + ".offset", "puts buffer '" + b.value + "' at [" + std::to_string(b.offset) + ", " +
                                               std::to_string(saturatingAdd(b.offset, b.size)) + "), outside the " +
                                               std::to_string(tg.sramBytes) + " bytes of SRAM of core " +
                                               std::to_string(b.core));
        if (b.offset % std::max<uint64_t>(tg.sramAlign, 1) != 0)
            return m.err(path + ".offset", "is " + std::to_string(b.offset) + ", not a multiple of the target's "
                                           "sram_align (" + std::to_string(tg.sramAlign) + ")");
    } else if (b.offset > ms.dramTotal || b.size > ms.dramTotal - b.offset) {
        return m.err(path + ".offset", "puts buffer '" + b.value + "' at [" + std::to_string(b.offset) + ", " +
                                           std::to_string(saturatingAdd(b.offset, b.size)) + "), outside the program's " +
                                           std::to_string(ms.dramTotal) + " bytes of DRAM");
    }
    if (!b.type.isStatic()) {
        if (j.contains("stripes"))
            return m.err(path + ".stripes", "splits buffer '" + b.value + "', which the host holds");
        SX_TRY(checkHeldBuffer(m, b, path));
        return b;
    }
    if (j.contains("stripes"))
        SX_TRY(parseStripes(m, j, path, p, b));
    if (j.contains("in_place")) { // version 6: written in place into an in-place Concat's output
        SX_ASSIGN(const json* ip, m.get(j, "in_place", path));
        SX_ASSIGN(b.inPlaceOf, m.intIn(*ip, "of", path + ".in_place", 0, INT32_MAX));
        SX_ASSIGN(b.inPlaceOffset, m.u64(*ip, "offset", path + ".in_place"));
        if (b.inPlaceOf == b.id)
            return m.err(path + ".in_place.of", "names buffer '" + b.value + "' itself");
        if (b.level != MemLevel::Dram || b.kind != BufferKind::Intermediate || j.contains("stripes"))
            return m.err(path + ".in_place", "is given for '" + b.value + "', which is not a DRAM intermediate");
    }
    if (j.contains("fill")) { // version 7: a weight the loader fills with one value
        SX_ASSIGN(double fill, m.number(j, "fill", path));
        b.fill = fill;
        if (b.level != MemLevel::Dram || b.kind != BufferKind::Weight || j.contains("stripes") || b.inPlaceOf >= 0)
            return m.err(path + ".fill", "is given for '" + b.value + "', which is not a DRAM weight");
        if (!ir::isFloat(b.type.dtype))
            return m.err(path + ".fill", "is given for '" + b.value + "' of dtype " + dtype +
                                             "; only a float weight is filled by the loader");
    }
    if (!j.contains("stripes") && (tensorBytes(b.type) > b.size || storedBytes(b.type, p.target.c0) > b.size))
        return m.err(path + ".size", "is smaller than the tensor " + b.type.str());
    if (b.level == MemLevel::Dram)
        SX_TRY(checkDramBuffer(m, b, path, p));
    return b;
}

/// A Task's tiling, with its runner-up candidates.
Status parseTiling(const Manifest& m, const json& tiling, const std::string& tp, Tiling& out) {
    SX_ASSIGN(out.tileShape, m.dims(tiling, "tile_shape", tp));
    SX_ASSIGN(out.numTiles, m.intIn(tiling, "num_tiles", tp, 1, INT32_MAX));
    if (tiling.contains("reduce_chunks")) {
        SX_ASSIGN(out.reduceChunks, m.intIn(tiling, "reduce_chunks", tp, 1, INT32_MAX));
        if (out.numTiles % out.reduceChunks != 0)
            return m.err(tp + ".reduce_chunks", "is " + std::to_string(out.reduceChunks) +
                                                    ", which does not divide num_tiles (" +
                                                    std::to_string(out.numTiles) + ")");
    }
    SX_ASSIGN(out.doubleBuffered, m.boolean(tiling, "double_buffered", tp));
    SX_ASSIGN(out.sramBytes, m.u64(tiling, "sram_bytes", tp));
    SX_ASSIGN(out.estCycles, m.u64(tiling, "est_cycles", tp));
    SX_ASSIGN(const json* cands, m.array(tiling, "candidates", tp));
    for (size_t c = 0; c < cands->size(); ++c) {
        std::string cp = tp + ".candidates[" + std::to_string(c) + "]";
        Tiling::Candidate cand;
        SX_ASSIGN(cand.tileShape, m.dims((*cands)[c], "tile_shape", cp));
        if ((*cands)[c].contains("reduce_chunks")) {
            SX_ASSIGN(cand.reduceChunks, m.intIn((*cands)[c], "reduce_chunks", cp, 1, INT32_MAX));
        }
        SX_ASSIGN(cand.estCycles, m.u64((*cands)[c], "est_cycles", cp));
        SX_ASSIGN(cand.rejectedBecause, m.str((*cands)[c], "rejected_because", cp));
        out.candidates.push_back(std::move(cand));
    }
    return {};
}

/// A tile shape of the Task's first output: of its rank, every dim from 1 to the output's.
Status checkTileShape(const Manifest& m, const std::vector<int64_t>& tile, const std::string& path, const Buffer& out) {
    const std::vector<int64_t> dims = out.type.dims();
    if (tile.size() != dims.size())
        return m.err(path, "has rank " + std::to_string(tile.size()) + ", but the Task's output '" + out.value +
                               "' is " + out.type.str());
    for (size_t d = 0; d < dims.size(); ++d)
        if (tile[d] < 1 || tile[d] > std::max<int64_t>(dims[d], 1))
            return m.err(path + "[" + std::to_string(d) + "]", "is " + std::to_string(tile[d]) +
                                                                   ", outside [1, " +
                                                                   std::to_string(std::max<int64_t>(dims[d], 1)) +
                                                                   "] (dim " + std::to_string(d) + " of the output '" +
                                                                   out.value + "', " + out.type.str() + ")");
    return {};
}

/// The chosen tile shape and every candidate's fit the Task's output, and num_tiles is at most
/// the tiles that cover it (times the reduction chunks).
Status checkTileShapes(const Manifest& m, const Task& t, const std::string& path, const Program& p) {
    const std::string tp = path + ".tiling";
    if (t.outputs.empty())
        return m.err(path + ".outputs", "is empty: every Task writes a buffer");
    const Buffer& out = p.buffers[static_cast<size_t>(t.outputs.front())];
    if (!out.type.isStatic()) { // a host Task's output only the run sizes: no tile to check
        if (!t.tiling.tileShape.empty() || !t.tiling.candidates.empty())
            return m.err(tp + ".tile_shape", "tiles the output '" + out.value + "' (" + out.type.str() +
                                                 "), whose shape only the run decides");
        return {};
    }
    SX_TRY(checkTileShape(m, t.tiling.tileShape, tp + ".tile_shape", out));
    for (size_t c = 0; c < t.tiling.candidates.size(); ++c)
        SX_TRY(checkTileShape(m, t.tiling.candidates[c].tileShape,
                              tp + ".candidates[" + std::to_string(c) + "].tile_shape", out));
    const std::vector<int64_t> dims = out.type.dims();
    uint64_t cover = static_cast<uint64_t>(std::max(t.tiling.reduceChunks, 1));
    for (size_t d = 0; d < dims.size(); ++d)
        cover = saturatingMul(cover, ceilDiv(static_cast<uint64_t>(std::max<int64_t>(dims[d], 1)),
                                             static_cast<uint64_t>(t.tiling.tileShape[d])));
    if (static_cast<uint64_t>(t.tiling.numTiles) > cover)
        return m.err(tp + ".num_tiles", "is " + std::to_string(t.tiling.numTiles) + ", more than the " +
                                            std::to_string(cover) + " tiles of " +
                                            ir::TensorType::of(out.type.dtype, t.tiling.tileShape).str() +
                                            " that cover the output " + out.type.str() +
                                            (t.tiling.reduceChunks > 1 ? " times its reduce_chunks" : ""));
    return {};
}

/// dma_bytes: at most every tile moving all of the Task's buffers whole.
Status checkDmaBytes(const Manifest& m, const Task& t, const std::string& path, const Program& p) {
    std::vector<int> touched = t.inputs;
    touched.insert(touched.end(), t.outputs.begin(), t.outputs.end());
    std::sort(touched.begin(), touched.end());
    touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
    uint64_t bytes = 0;
    for (int b : touched)
        bytes = saturatingAdd(bytes, p.buffers[static_cast<size_t>(b)].size);
    const uint64_t bound = saturatingMul(bytes, static_cast<uint64_t>(t.tiling.numTiles));
    if (t.dmaBytes > bound)
        return m.err(path + ".dma_bytes", "is " + std::to_string(t.dmaBytes) + ", more than its " +
                                              std::to_string(t.tiling.numTiles) + " tiles moving all " +
                                              std::to_string(bytes) + " bytes of its buffers each (" +
                                              std::to_string(bound) + ")");
    return {};
}

/// tasks[i]: a Task whose buffers, dependencies (earlier Tasks only) and events are in range.
Expected<Task> parseTask(const Manifest& m, const json& j, int64_t i, const Program& p, int64_t nb, int64_t ne) {
    std::string path = "tasks[" + std::to_string(i) + "]";
    Task t;
    SX_ASSIGN(t.id, m.intIn(j, "id", path, i, i));
    SX_ASSIGN(t.name, m.str(j, "name", path));
    SX_ASSIGN(t.kernel, m.str(j, "kernel", path));
    SX_ASSIGN(t.core, m.intIn(j, "core", path, 0, hostLane(p.target)));
    SX_ASSIGN(std::string unit, m.str(j, "unit", path));
    SX_ASSIGN(t.unit, parseUnit(m, unit, path + ".unit"));
    if (!onItsLane(t, p.target))
        return m.err(path + ".core", "is " + std::to_string(t.core) + " for unit '" + unit + "': " +
                                         (t.unit == UnitKind::Host ? "a host Task runs on the host lane, " +
                                                                         std::to_string(hostLane(p.target))
                                                                   : "the host lane takes host Tasks only"));
    SX_ASSIGN(t.nodes, m.strings(j, "nodes", path));
    SX_ASSIGN(t.inputs, m.ints(j, "inputs", path, 0, nb - 1));
    SX_ASSIGN(t.outputs, m.ints(j, "outputs", path, 0, nb - 1));
    // A buffer the host holds (its shape only the run decides) has no address an NPU unit could use.
    if (t.unit != UnitKind::Host)
        for (const std::vector<int>* list : {&t.inputs, &t.outputs})
            for (int b : *list)
                if (!p.buffers[static_cast<size_t>(b)].type.isStatic())
                    return m.err(path, "is a " + unit + " Task touching buffer " + std::to_string(b) + " ('" +
                                           p.buffers[static_cast<size_t>(b)].value +
                                           "'), which the host holds; only host Tasks may");
    SX_ASSIGN(t.deps, m.ints(j, "deps", path, 0, i - 1));
    SX_ASSIGN(t.waitEvents, m.ints(j, "wait_events", path, 0, ne - 1));
    SX_ASSIGN(t.recordEvents, m.ints(j, "record_events", path, 0, ne - 1));
    SX_ASSIGN(t.flops, m.u64(j, "flops", path));
    SX_ASSIGN(t.dmaBytes, m.u64(j, "dma_bytes", path));
    SX_ASSIGN(t.estCycles, m.u64(j, "est_cycles", path));
    if (j.contains("compute_cycles")) { // absent in artifacts written before it existed
        SX_ASSIGN(t.computeCycles, m.u64(j, "compute_cycles", path));
        if (t.computeCycles > t.estCycles)
            return m.err(path + ".compute_cycles", "is " + std::to_string(t.computeCycles) +
                                                       ", more than the Task's est_cycles " +
                                                       std::to_string(t.estCycles));
    }
    if (j.contains("split")) {
        SX_ASSIGN(const json* split, m.get(j, "split", path));
        const std::string sp = path + ".split";
        SX_ASSIGN(t.parts, m.intIn(*split, "parts", sp, 2, 65536));
        SX_ASSIGN(t.part, m.intIn(*split, "part", sp, 0, t.parts - 1));
        if (t.outputs.size() != 1)
            return m.err(sp, "splits a Task with " + std::to_string(t.outputs.size()) + " outputs (one only)");
        const Buffer& out = p.buffers[static_cast<size_t>(t.outputs.front())];
        const int rank = static_cast<int>(out.type.rank());
        SX_ASSIGN(t.sliceAxis, m.intIn(*split, "axis", sp, 0, std::max(rank - 1, 0)));
        const int64_t extent = out.type.dims().empty() ? 0 : out.type.dims()[static_cast<size_t>(t.sliceAxis)];
        SX_ASSIGN(int64_t begin, m.intIn(*split, "begin", sp, 0, std::max<int64_t>(extent - 1, 0)));
        SX_ASSIGN(int64_t end, m.intIn(*split, "end", sp, begin + 1, std::max<int64_t>(extent, begin + 1)));
        t.sliceBegin = begin;
        t.sliceEnd = end;
    }
    if (j.contains("slice_local_inputs")) {
        SX_ASSIGN(t.sliceLocalInputs, m.ints(j, "slice_local_inputs", path, 0, nb - 1));
        for (int b : t.sliceLocalInputs)
            if (t.parts < 2 || std::find(t.inputs.begin(), t.inputs.end(), b) == t.inputs.end())
                return m.err(path + ".slice_local_inputs", "names buffer " + std::to_string(b) +
                                                               ", which is not an input of this part of a split");
        if (!std::is_sorted(t.sliceLocalInputs.begin(), t.sliceLocalInputs.end()))
            return m.err(path + ".slice_local_inputs", "is not in ascending order");
    }
    if (j.contains("halo_reads")) {
        SX_ASSIGN(const json* halo, m.array(j, "halo_reads", path));
        for (size_t k = 0; k < halo->size(); ++k) {
            const std::string hp = path + ".halo_reads[" + std::to_string(k) + "]";
            Task::HaloRead h;
            SX_ASSIGN(h.buffer, m.intIn((*halo)[k], "buffer", hp, 0, nb - 1));
            if (t.parts < 2 || std::find(t.inputs.begin(), t.inputs.end(), h.buffer) == t.inputs.end())
                return m.err(hp + ".buffer", "names buffer " + std::to_string(h.buffer) +
                                                 ", which is not an input of this part of a split");
            if (!t.haloReads.empty() && h.buffer <= t.haloReads.back().buffer)
                return m.err(hp + ".buffer", "is not after the previous halo read's buffer");
            const std::vector<int64_t> dims = p.buffers[static_cast<size_t>(h.buffer)].type.dims();
            const int64_t extent = static_cast<size_t>(t.sliceAxis) < dims.size() ? dims[static_cast<size_t>(t.sliceAxis)] : 0;
            SX_ASSIGN(h.begin, m.intIn((*halo)[k], "begin", hp, 0, std::max<int64_t>(extent - 1, 0)));
            SX_ASSIGN(h.end, m.intIn((*halo)[k], "end", hp, h.begin + 1, std::max<int64_t>(extent, h.begin + 1)));
            t.haloReads.push_back(h);
        }
    }
    SX_ASSIGN(t.estStart, m.u64(j, "est_start", path));
    SX_ASSIGN(t.estEnd, m.u64(j, "est_end", path));
    SX_ASSIGN(const json* tiling, m.get(j, "tiling", path));
    SX_TRY(parseTiling(m, *tiling, path + ".tiling", t.tiling));
    const std::string tp = path + ".tiling";
    if (t.tiling.sramBytes > p.target.sramBytes)
        return m.err(tp + ".sram_bytes", "is " + std::to_string(t.tiling.sramBytes) + ", more than the target's SRAM");
    SX_TRY(checkTileShapes(m, t, path, p));
    SX_TRY(checkDmaBytes(m, t, path, p));
    if (t.inputs.size() > 0xffff || t.outputs.size() > 0xffff || t.waitEvents.size() > 0xffff ||
        t.recordEvents.size() > 0xffff)
        return m.err(path, "has too many buffers or events for a descriptor");
    return t;
}

/// events[i]: an event slot record between Tasks in range.
Expected<Event> parseEvent(const Manifest& m, const json& j, int64_t i, const Program& p, int64_t nt) {
    std::string path = "events[" + std::to_string(i) + "]";
    Event e;
    SX_ASSIGN(e.id, m.intIn(j, "id", path, i, i));
    SX_ASSIGN(e.slot, m.intIn(j, "slot", path, 0, p.target.eventSlotsPerCore - 1));
    SX_ASSIGN(e.core, m.intIn(j, "core", path, 0, hostLane(p.target))); // a host Task records on its lane
    SX_ASSIGN(e.producerTask, m.intIn(j, "producer", path, 0, nt - 1));
    SX_ASSIGN(e.consumerTasks, m.ints(j, "consumers", path, 0, nt - 1));
    return e;
}

/// `inputs` and `outputs` list buffers of their kind, and every one of them (attachGraph then
/// checks that they name the graph's inputs and outputs in order).
Status checkIoLists(const Manifest& m, const Program& p) {
    for (const auto& [key, list, kind] : {std::tuple<const char*, const std::vector<int>*, BufferKind>{
                                              "inputs", &p.inputBuffers, BufferKind::Input},
                                          {"outputs", &p.outputBuffers, BufferKind::Output}}) {
        std::vector<bool> listed(p.buffers.size(), false);
        for (size_t i = 0; i < list->size(); ++i) {
            const Buffer& b = p.buffers[static_cast<size_t>((*list)[i])];
            const std::string path = std::string(key) + "[" + std::to_string(i) + "]";
            if (b.kind != kind)
                return m.err(path, "is buffer " + std::to_string(b.id) + " '" + b.value + "', an " +
                                       std::string(bufferKindName(b.kind)) + ", not a graph " + bufferKindName(kind));
            listed[static_cast<size_t>(b.id)] = true;
        }
        for (const Buffer& b : p.buffers)
            if (b.kind == kind && !listed[static_cast<size_t>(b.id)])
                return m.err(key, "does not list buffer " + std::to_string(b.id) + " '" + b.value + "', a graph " +
                                      bufferKindName(kind));
    }
    return {};
}

/// Each buffer's first_task is the first Task writing it and its last_task the last reading it,
/// as the lowering sets them (-1: the host writes it before the run, or reads it after: a graph
/// input or weight, a graph output).
Status checkLifetimes(const Manifest& m, const Program& p) {
    std::vector<int> first(p.buffers.size(), -1), last(p.buffers.size(), -1);
    for (const Task& t : p.tasks) {
        for (int b : t.outputs)
            if (first[static_cast<size_t>(b)] < 0)
                first[static_cast<size_t>(b)] = t.id;
        for (int b : t.inputs)
            last[static_cast<size_t>(b)] = std::max(last[static_cast<size_t>(b)], t.id);
    }
    for (int b : p.outputBuffers)
        last[static_cast<size_t>(b)] = -1;
    // A buffer others are written in place into lives from the first of their writes to the
    // last read of it or any of them.
    std::vector<Buffer> spans = p.buffers;
    for (Buffer& b : spans) {
        b.firstTask = first[static_cast<size_t>(b.id)];
        b.lastTask = last[static_cast<size_t>(b.id)];
    }
    holdersLifetimes(spans);
    for (const Buffer& b : spans) {
        first[static_cast<size_t>(b.id)] = b.firstTask;
        last[static_cast<size_t>(b.id)] = b.lastTask;
    }
    for (const Buffer& b : p.buffers) {
        const std::string path = "buffers[" + std::to_string(b.id) + "]";
        if (b.firstTask != first[static_cast<size_t>(b.id)])
            return m.err(path + ".first_task", "is " + std::to_string(b.firstTask) + ", but the first Task writing '" +
                                                   b.value + "' is " + std::to_string(first[static_cast<size_t>(b.id)]) +
                                                   " (-1: none, the host)");
        if (b.lastTask != last[static_cast<size_t>(b.id)])
            return m.err(path + ".last_task", "is " + std::to_string(b.lastTask) + ", but the last Task reading '" +
                                                  b.value + "' is " + std::to_string(last[static_cast<size_t>(b.id)]) +
                                                  " (-1: none, or the host after the run)");
    }
    return {};
}

} // namespace

uint64_t tensorBytes(const ir::TensorType& t) {
    return storedBytes(t, 1); // with no channel blocks: the logical bytes, saturating on overflow
}

namespace {

json bufferJson(const Buffer& b) {
    json j;
    j["id"] = b.id;
    j["value"] = b.value;
    j["kind"] = bufferKindName(b.kind);
    j["level"] = levelName(b.level);
    j["core"] = b.core;
    j["offset"] = b.offset;
    j["size"] = b.size;
    j["dtype"] = std::string(ir::dtypeName(b.type.dtype));
    json shape = json::array(); // null: a dim only the run decides (a buffer the host holds)
    for (const ir::Dim& d : b.type.shape)
        shape.push_back(d.isKnown() ? json(d.value) : json(nullptr));
    j["shape"] = std::move(shape);
    j["layout"] = std::string(ir::layoutName(b.type.layout));
    j["first_task"] = b.firstTask;
    j["last_task"] = b.lastTask;
    if (b.inPlaceOf >= 0) // version 6: present only then
        j["in_place"] = json{{"of", b.inPlaceOf}, {"offset", b.inPlaceOffset}};
    if (b.fill) // version 7: present only then
        j["fill"] = *b.fill;
    if (!b.stripes.empty()) { // kept on chip a stripe per core: present only then
        json stripes = json::array();
        for (const Buffer::Stripe& st : b.stripes) {
            json part{{"core", st.core}, {"offset", st.offset}, {"size", st.size}, {"begin", st.begin}, {"end", st.end}};
            if (b.level == MemLevel::Dram) { // version 4: a halo buffer's rows stored to its DRAM home
                part["halo_top"] = st.haloTop;
                part["halo_bottom"] = st.haloBottom;
            }
            stripes.push_back(std::move(part));
        }
        j["stripes"] = json{{"axis", b.stripeAxis}, {"parts", std::move(stripes)}};
    }
    return j;
}

json memoryJson(const MemoryStats& memory) {
    json mem;
    mem["dram_peak"] = memory.dramPeak;
    mem["dram_lower_bound"] = memory.dramLowerBound;
    mem["weight_bytes"] = memory.weightBytes;
    mem["io_bytes"] = memory.ioBytes;
    mem["weights_base"] = memory.weightsBase;
    mem["io_base"] = memory.ioBase;
    mem["arena_base"] = memory.arenaBase;
    mem["dram_total"] = memory.dramTotal;
    return mem;
}

/// `text` (a value dumped at depth 0) as it reads nested `depth` levels deep: the formatting's
/// newlines are the only raw ones (strings escape theirs), so each gains the indent.
void writeIndented(std::ostream& out, const std::string& text, int depth) {
    size_t from = 0;
    for (size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', from)) {
        out.write(text.data() + from, static_cast<std::streamsize>(nl + 1 - from));
        out << std::string(static_cast<size_t>(depth), ' ');
        from = nl + 1;
    }
    out.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
}

} // namespace

json manifestHead(const Program& p, const std::vector<uint8_t>& tasksBin, const std::vector<uint8_t>& weightsBin,
                  StreamedLists& lists) {
    json m;
    m["format"] = kArtifactFormat;
    m["version"] = kArtifactVersion;
    m["model"] = p.modelName;
    m["target"] = json::parse(targetToJson(p.target));
    m["pipeline"] = json{{"passes", p.pipeline}, {"disabled", p.disabledRules}, {"bisect_limit", p.bisectLimit}};
    m["est_cycles"] = p.estCycles;
    m["kernels"] = kernelTable(p);
    m["memory"] = memoryJson(p.memory);
    addSramPlan(m, p, lists);
    lists["buffers"] = {p.buffers.size(), [&p](size_t i) { return bufferJson(p.buffers[i]); }};
    m["inputs"] = p.inputBuffers;
    m["outputs"] = p.outputBuffers;
    lists["tasks"] = {p.tasks.size(), [&p](size_t i) { return taskJson(p.tasks[i]); }};
    json nodeTasks = json::object();
    for (const Task& t : p.tasks)
        for (const std::string& n : t.nodes) // the first Task running it (a split group's first part)
            nodeTasks.emplace(n, t.id);
    m["node_tasks"] = std::move(nodeTasks);
    lists["events"] = {p.events.size(), [&p](size_t i) {
                           const Event& e = p.events[i];
                           return json{{"id", e.id}, {"slot", e.slot}, {"core", e.core}, {"producer", e.producerTask},
                                       {"consumers", e.consumerTasks}};
                       }};
    m["graph"] = ir::printGraph(*p.graph);
    m["files"] = json{{"tasks.bin", json{{"bytes", tasksBin.size()}, {"fnv1a64", fnv1a64Hex(tasksBin)}}},
                      {"weights.bin", json{{"bytes", weightsBin.size()}, {"fnv1a64", fnv1a64Hex(weightsBin)}}}};
    return m;
}

void writeManifest(std::ostream& out, const json& head, const StreamedLists& lists) {
    // The top-level keys in the document's own (sorted) order, the lists among them.
    std::map<std::string, const json*> fields;
    for (auto it = head.begin(); it != head.end(); ++it)
        fields[it.key()] = &it.value();
    for (const auto& [key, list] : lists)
        fields.emplace(key, nullptr);
    out << "{\n";
    size_t k = 0;
    for (const auto& [key, value] : fields) {
        out << ' ' << json(key).dump() << ": ";
        if (value) {
            writeIndented(out, value->dump(1), 1);
        } else if (const StreamedList& list = lists.at(key); list.size == 0) {
            out << "[]";
        } else {
            out << "[\n";
            for (size_t i = 0; i < list.size; ++i) {
                out << "  ";
                writeIndented(out, list.element(i).dump(1), 2);
                out << (i + 1 < list.size ? ",\n" : "\n");
            }
            out << " ]";
        }
        out << (++k < fields.size() ? ",\n" : "\n");
    }
    out << "}\n";
}

Status checkFile(const Manifest& m, const json& files, const std::string& name, const std::vector<uint8_t>& bytes,
                 const std::string& binPath, int64_t version) {
    SX_ASSIGN(const json* f, m.get(files, name, "files"));
    SX_ASSIGN(uint64_t size, m.u64(*f, "bytes", "files." + name));
    SX_ASSIGN(std::string hash, m.str(*f, "fnv1a64", "files." + name));
    if (size != bytes.size())
        return makeError(ErrorKind::Parse, binPath + ": size " + std::to_string(bytes.size()) + " bytes, manifest says " +
                                               std::to_string(size) + " (truncated or wrong file)");
    const std::string actual = version >= kArtifactStandardHashVersion ? fnv1a64Hex(bytes) : legacyFnv1a64Hex(bytes);
    if (actual != hash)
        return makeError(ErrorKind::Parse, binPath + ": content hash " + actual + " does not match the manifest's " + hash +
                                               " (corrupt file)");
    return {};
}


Status parseProgramHead(const Manifest& m, const json& doc, Program& p, std::vector<std::string>& kernels) {
    SX_ASSIGN(p.modelName, m.str(doc, "model", ""));
    SX_ASSIGN(const json* target, m.get(doc, "target", ""));
    SX_ASSIGN(p.target, parseTarget(target->dump(), m.file() + " (target)"));
    SX_ASSIGN(const json* pipeline, m.get(doc, "pipeline", ""));
    SX_ASSIGN(p.pipeline, m.strings(*pipeline, "passes", "pipeline"));
    SX_ASSIGN(p.disabledRules, m.strings(*pipeline, "disabled", "pipeline"));
    SX_ASSIGN(p.bisectLimit, m.i64(*pipeline, "bisect_limit", "pipeline"));
    if (p.bisectLimit < -1)
        return m.err("pipeline.bisect_limit", "must be -1 or more");
    SX_ASSIGN(p.estCycles, m.u64(doc, "est_cycles", ""));
    SX_ASSIGN(kernels, m.strings(doc, "kernels", ""));

    return parseMemory(m, doc, p);
}

Status parseProgramTables(const Manifest& m, const json& doc, Program& p) {
    SX_ASSIGN(const json* buffers, m.array(doc, "buffers", ""));
    SX_ASSIGN(const json* tasks, m.array(doc, "tasks", ""));
    SX_ASSIGN(const json* events, m.array(doc, "events", ""));
    const int64_t nb = static_cast<int64_t>(buffers->size());
    const int64_t nt = static_cast<int64_t>(tasks->size());
    const int64_t ne = static_cast<int64_t>(events->size());
    for (int64_t i = 0; i < nb; ++i) {
        SX_ASSIGN(Buffer b, parseBuffer(m, (*buffers)[static_cast<size_t>(i)], i, p, nt));
        p.buffers.push_back(std::move(b));
    }
    for (const Buffer& b : p.buffers) { // the rest of in_place is checked with the hazards (checkInPlace)
        const std::string path = "buffers[" + std::to_string(b.id) + "].in_place.of";
        if (b.inPlaceOf >= nb)
            return m.err(path, "is " + std::to_string(b.inPlaceOf) + ", but there are " + std::to_string(nb) + " buffers");
        int64_t hops = 0;
        for (int at = b.inPlaceOf; at >= 0 && at < nb; at = p.buffers[static_cast<size_t>(at)].inPlaceOf)
            if (++hops > nb)
                return m.err(path, "makes a chain of buffers written in place into each other that never ends");
    }
    SX_ASSIGN(p.inputBuffers, m.ints(doc, "inputs", "", 0, nb - 1));
    SX_ASSIGN(p.outputBuffers, m.ints(doc, "outputs", "", 0, nb - 1));
    for (int64_t i = 0; i < nt; ++i) {
        SX_ASSIGN(Task t, parseTask(m, (*tasks)[static_cast<size_t>(i)], i, p, nb, ne));
        p.tasks.push_back(std::move(t));
    }
    for (int64_t i = 0; i < ne; ++i) {
        SX_ASSIGN(Event e, parseEvent(m, (*events)[static_cast<size_t>(i)], i, p, nt));
        p.events.push_back(std::move(e));
    }
    SX_TRY(checkIoLists(m, p));
    return checkLifetimes(m, p);
}

} // namespace sextant::backend::artifact
