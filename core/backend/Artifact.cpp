// Artifact writer and reader.
//
// tasks.bin layout (all integers little-endian; see also docs/artifact-format.md):
//
//   header, 64 bytes at offset 0
//     0  char[8] magic "SXTASKS\0"
//     8  u32     version (1)
//    12  u32     task count N
//    16  u32     header bytes (64)
//    20  u32     descriptor alignment A: the target's descriptor_align, at least 64
//    24  u64     file bytes
//    32  u64     offset of the descriptor offset table (64)
//    40  24 bytes zero
//   offset table at 64: N x u64 descriptor offsets, zero-padded to a multiple of A
//   descriptor i at its offset (a multiple of A), Task ids in order:
//     0  u32 task id             4  u32 descriptor bytes (a multiple of A)
//     8  u16 core               10  u8 unit (0 cube, 1 vector, 2 dma)
//    11  u8  flags (bit 0: double-buffered)
//    12  u32 kernel index (into the manifest's "kernels" list)
//    16  u16 inputs  18 u16 outputs  20 u16 waits  22 u16 records
//    24  u32 tiles              28  u16 tile rank   30 u16 zero
//    32  u64 estimated cycles   40  u64 DMA bytes   48 u64 flops   56 u64 SRAM bytes
//    64  inputs then outputs: {u64 DRAM address, u64 bytes (planned), u32 buffer id, u8 dtype, 3 zero}
//        waits then records:  {u32 event id, u16 slot, u16 recording core}
//        tile shape:          tile rank x i64
//        zero padding to the descriptor size
#include "Artifact.h"

#include "EventAllocator.h"
#include "MathUtil.h"
#include "MemoryPlanner.h"
#include "core/ir/Parser.h"
#include "core/ir/Printer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace sextant::backend {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr uint64_t kHeaderBytes = 64;
constexpr uint64_t kDescFixed = 64;
constexpr uint64_t kBufferRef = 24;
constexpr uint64_t kEventRef = 8;

// ---- little-endian encoding

void putU(std::vector<uint8_t>& out, uint64_t off, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i)
        out[off + i] = static_cast<uint8_t>(v >> (8 * i));
}
uint64_t getU(const std::vector<uint8_t>& in, uint64_t off, int bytes) {
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i)
        v |= static_cast<uint64_t>(in[off + i]) << (8 * i);
    return v;
}

const char* kindName(BufferKind k) {
    switch (k) {
    case BufferKind::Input: return "input";
    case BufferKind::Output: return "output";
    case BufferKind::Weight: return "weight";
    case BufferKind::Intermediate: return "intermediate";
    }
    return "?";
}
const char* levelName(MemLevel l) {
    switch (l) {
    case MemLevel::Dram: return "dram";
    case MemLevel::Sram: return "sram";
    }
    return "?";
}

std::vector<std::string> kernelTable(const Program& p) {
    std::set<std::string> k;
    for (const Task& t : p.tasks)
        k.insert(t.kernel);
    return {k.begin(), k.end()};
}

/// Descriptor alignment: the target's, at least 64 bytes (the fixed part's size).
uint64_t descAlign(const Program& p) { return std::max<uint64_t>(p.target.descriptorAlign, 64); }

uint64_t descriptorBytes(const Task& t, uint64_t align) {
    return alignUp(kDescFixed + kBufferRef * (t.inputs.size() + t.outputs.size()) +
                       kEventRef * (t.waitEvents.size() + t.recordEvents.size()) + 8 * t.tiling.tileShape.size(),
                   align);
}

uint64_t tensorBytes(const ir::TensorType& t) {
    int64_t n = t.numel();
    return n < 0 ? 0 : static_cast<uint64_t>(n) * ir::dtypeSize(t.dtype);
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
    tiling["candidates"] = cands;
    j["tiling"] = tiling;
    return j;
}

Status writeFile(const fs::path& path, const void* data, size_t size) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out)
        return makeError(ErrorKind::Io, path.string() + ": cannot open for writing");
    out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out)
        return makeError(ErrorKind::Io, path.string() + ": write failed");
    return {};
}

Expected<std::vector<uint8_t>> readBytes(const fs::path& path) {
    std::error_code ec;
    if (!fs::is_regular_file(path, ec))
        return makeError(ErrorKind::Io, path.string() + ": missing");
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(ErrorKind::Io, path.string() + ": cannot open");
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return bytes;
}

} // namespace

std::string fnv1a64Hex(const std::vector<uint8_t>& bytes) {
    uint64_t h = 1469598103934665603ull;
    for (uint8_t b : bytes) {
        h ^= b;
        h *= 1099511628211ull;
    }
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

std::vector<uint8_t> encodeTasks(const Program& p) {
    const uint64_t n = p.tasks.size();
    const uint64_t align = descAlign(p);
    uint64_t size = alignUp(kHeaderBytes + 8 * n, align);
    std::vector<uint64_t> offsets;
    for (const Task& t : p.tasks) {
        offsets.push_back(size);
        size += descriptorBytes(t, align);
    }
    std::vector<uint8_t> out(size, 0);
    std::memcpy(out.data(), kTasksMagic, 8);
    putU(out, 8, kTasksVersion, 4);
    putU(out, 12, n, 4);
    putU(out, 16, kHeaderBytes, 4);
    putU(out, 20, align, 4);
    putU(out, 24, size, 8);
    putU(out, 32, kHeaderBytes, 8);
    for (uint64_t i = 0; i < n; ++i)
        putU(out, kHeaderBytes + 8 * i, offsets[i], 8);
    std::vector<std::string> kernels = kernelTable(p);
    for (uint64_t i = 0; i < n; ++i) {
        const Task& t = p.tasks[i];
        uint64_t o = offsets[i];
        putU(out, o + 0, static_cast<uint64_t>(t.id), 4);
        putU(out, o + 4, descriptorBytes(t, align), 4);
        putU(out, o + 8, static_cast<uint64_t>(t.core), 2);
        putU(out, o + 10, static_cast<uint64_t>(t.unit), 1);
        putU(out, o + 11, t.tiling.doubleBuffered ? 1 : 0, 1);
        putU(out, o + 12, static_cast<uint64_t>(std::lower_bound(kernels.begin(), kernels.end(), t.kernel) - kernels.begin()), 4);
        putU(out, o + 16, t.inputs.size(), 2);
        putU(out, o + 18, t.outputs.size(), 2);
        putU(out, o + 20, t.waitEvents.size(), 2);
        putU(out, o + 22, t.recordEvents.size(), 2);
        putU(out, o + 24, static_cast<uint64_t>(t.tiling.numTiles), 4);
        putU(out, o + 28, t.tiling.tileShape.size(), 2);
        putU(out, o + 32, t.estCycles, 8);
        putU(out, o + 40, t.dmaBytes, 8);
        putU(out, o + 48, t.flops, 8);
        putU(out, o + 56, t.tiling.sramBytes, 8);
        uint64_t c = o + kDescFixed;
        for (const std::vector<int>* list : {&t.inputs, &t.outputs})
            for (int b : *list) {
                const Buffer& buf = p.buffers[static_cast<size_t>(b)];
                putU(out, c, buf.offset, 8);
                putU(out, c + 8, buf.size, 8);
                putU(out, c + 16, static_cast<uint64_t>(b), 4);
                putU(out, c + 20, static_cast<uint64_t>(buf.type.dtype), 1);
                c += kBufferRef;
            }
        for (const std::vector<int>* list : {&t.waitEvents, &t.recordEvents})
            for (int e : *list) {
                const Event& ev = p.events[static_cast<size_t>(e)];
                putU(out, c, static_cast<uint64_t>(e), 4);
                putU(out, c + 4, static_cast<uint64_t>(ev.slot), 2);
                putU(out, c + 6, static_cast<uint64_t>(ev.core), 2);
                c += kEventRef;
            }
        for (int64_t d : t.tiling.tileShape) {
            putU(out, c, static_cast<uint64_t>(d), 8);
            c += 8;
        }
    }
    return out;
}

std::vector<uint8_t> encodeWeights(const Program& p) {
    std::vector<uint8_t> out(p.memory.weightBytes, 0);
    if (!p.graph)
        return out;
    for (const Buffer& b : p.buffers) {
        if (b.kind != BufferKind::Weight)
            continue;
        const ir::Value* v = p.graph->findValue(b.value);
        if (!v || !v->constant())
            continue;
        const ir::Tensor& t = *v->constant();
        uint64_t at = b.offset - p.memory.weightsBase;
        if (at + t.byteSize() <= out.size() && t.byteSize() > 0)
            std::memcpy(out.data() + at, t.bytes(), t.byteSize());
    }
    return out;
}

Status writeArtifact(const Program& p, const std::string& dir) {
    if (!p.graph)
        return makeError(ErrorKind::Invalid, "writeArtifact: program has no graph");
    // Refuse to write what the reader would reject.
    for (const Buffer& b : p.buffers)
        if (b.kind == BufferKind::Weight) {
            const ir::Value* v = p.graph->findValue(b.value);
            if (!v || !v->constant())
                return makeError(ErrorKind::Invalid, "weight buffer '" + b.value + "' is not a constant of the graph");
            if (b.offset < p.memory.weightsBase || b.offset + v->constant()->byteSize() > p.memory.weightsBase + p.memory.weightBytes)
                return makeError(ErrorKind::Invalid, "weight buffer '" + b.value + "' lies outside the weights region");
        }
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        return makeError(ErrorKind::Io, dir + ": cannot create directory (" + ec.message() + ")");

    std::vector<uint8_t> tasksBin = encodeTasks(p);
    std::vector<uint8_t> weightsBin = encodeWeights(p);

    json m;
    m["format"] = kArtifactFormat;
    m["version"] = kArtifactVersion;
    m["model"] = p.modelName;
    m["target"] = json::parse(targetToJson(p.target));
    m["pipeline"] = json{{"passes", p.pipeline}, {"disabled", p.disabledRules}, {"bisect_limit", p.bisectLimit}};
    m["est_cycles"] = p.estCycles;
    m["kernels"] = kernelTable(p);
    json mem;
    mem["dram_peak"] = p.memory.dramPeak;
    mem["dram_lower_bound"] = p.memory.dramLowerBound;
    mem["weight_bytes"] = p.memory.weightBytes;
    mem["io_bytes"] = p.memory.ioBytes;
    mem["weights_base"] = p.memory.weightsBase;
    mem["io_base"] = p.memory.ioBase;
    mem["arena_base"] = p.memory.arenaBase;
    mem["dram_total"] = p.memory.dramTotal;
    m["memory"] = mem;
    json buffers = json::array();
    for (const Buffer& b : p.buffers) {
        json j;
        j["id"] = b.id;
        j["value"] = b.value;
        j["kind"] = kindName(b.kind);
        j["level"] = levelName(b.level);
        j["core"] = b.core;
        j["offset"] = b.offset;
        j["size"] = b.size;
        j["dtype"] = std::string(ir::dtypeName(b.type.dtype));
        j["shape"] = shapeJson(b.type.isStatic() ? b.type.dims() : std::vector<int64_t>{});
        j["layout"] = std::string(ir::layoutName(b.type.layout));
        j["first_task"] = b.firstTask;
        j["last_task"] = b.lastTask;
        buffers.push_back(std::move(j));
    }
    m["buffers"] = buffers;
    m["inputs"] = p.inputBuffers;
    m["outputs"] = p.outputBuffers;
    json tasks = json::array();
    json nodeTasks = json::object();
    for (const Task& t : p.tasks) {
        tasks.push_back(taskJson(t));
        for (const std::string& n : t.nodes) // the first Task running it (a split group's first part)
            if (!nodeTasks.contains(n))
                nodeTasks[n] = t.id;
    }
    m["tasks"] = tasks;
    m["node_tasks"] = nodeTasks;
    json events = json::array();
    for (const Event& e : p.events)
        events.push_back(json{{"id", e.id}, {"slot", e.slot}, {"core", e.core}, {"producer", e.producerTask},
                              {"consumers", e.consumerTasks}});
    m["events"] = events;
    m["graph"] = ir::printGraph(*p.graph);
    m["files"] = json{{"tasks.bin", json{{"bytes", tasksBin.size()}, {"fnv1a64", fnv1a64Hex(tasksBin)}}},
                      {"weights.bin", json{{"bytes", weightsBin.size()}, {"fnv1a64", fnv1a64Hex(weightsBin)}}}};
    std::string text = m.dump(1) + "\n";

    fs::path d(dir);
    SX_TRY(writeFile(d / "tasks.bin", tasksBin.data(), tasksBin.size()));
    SX_TRY(writeFile(d / "weights.bin", weightsBin.data(), weightsBin.size()));
    SX_TRY(writeFile(d / "manifest.json", text.data(), text.size()));
    return {};
}

// ---------------------------------------------------------------------------------------------
// Reader

namespace {

/// Typed access to manifest fields; every error names the file and the field path.
class Manifest {
public:
    explicit Manifest(std::string file) : m_file(std::move(file)) {}

    Error err(const std::string& path, const std::string& what) const {
        return makeError(ErrorKind::Parse, m_file + ": field '" + path + "' " + what, path);
    }
    Error fail(const std::string& what) const { return makeError(ErrorKind::Parse, m_file + ": " + what); }

    Expected<const json*> get(const json& obj, const std::string& key, const std::string& path) const {
        if (!obj.is_object())
            return err(path, "is not an object");
        auto it = obj.find(key);
        if (it == obj.end())
            return err(join(path, key), "is missing");
        return &*it;
    }
    Expected<uint64_t> u64(const json& obj, const std::string& key, const std::string& path) const {
        SX_ASSIGN(const json* v, get(obj, key, path));
        if (!v->is_number_unsigned())
            return err(join(path, key), "must be a non-negative integer");
        return v->get<uint64_t>();
    }
    Expected<int64_t> i64(const json& obj, const std::string& key, const std::string& path) const {
        SX_ASSIGN(const json* v, get(obj, key, path));
        if (!v->is_number_integer())
            return err(join(path, key), "must be an integer");
        return v->get<int64_t>();
    }
    /// An int in [lo, hi].
    Expected<int> intIn(const json& obj, const std::string& key, const std::string& path, int64_t lo, int64_t hi) const {
        SX_ASSIGN(int64_t v, i64(obj, key, path));
        if (v < lo || v > hi)
            return err(join(path, key), "is " + std::to_string(v) + ", outside [" + std::to_string(lo) + ", " +
                                            std::to_string(hi) + "]");
        return static_cast<int>(v);
    }
    Expected<std::string> str(const json& obj, const std::string& key, const std::string& path) const {
        SX_ASSIGN(const json* v, get(obj, key, path));
        if (!v->is_string())
            return err(join(path, key), "must be a string");
        return v->get<std::string>();
    }
    Expected<bool> boolean(const json& obj, const std::string& key, const std::string& path) const {
        SX_ASSIGN(const json* v, get(obj, key, path));
        if (!v->is_boolean())
            return err(join(path, key), "must be true or false");
        return v->get<bool>();
    }
    Expected<const json*> array(const json& obj, const std::string& key, const std::string& path) const {
        SX_ASSIGN(const json* v, get(obj, key, path));
        if (!v->is_array())
            return err(join(path, key), "must be an array");
        return v;
    }
    /// An array of ints, each in [lo, hi].
    Expected<std::vector<int>> ints(const json& obj, const std::string& key, const std::string& path, int64_t lo,
                                    int64_t hi) const {
        SX_ASSIGN(const json* a, array(obj, key, path));
        std::vector<int> out;
        for (size_t i = 0; i < a->size(); ++i) {
            const json& v = (*a)[i];
            std::string p = join(path, key) + "[" + std::to_string(i) + "]";
            if (!v.is_number_integer())
                return err(p, "must be an integer");
            int64_t x = v.get<int64_t>();
            if (x < lo || x > hi)
                return err(p, "is " + std::to_string(x) + ", outside [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
            out.push_back(static_cast<int>(x));
        }
        return out;
    }
    Expected<std::vector<int64_t>> dims(const json& obj, const std::string& key, const std::string& path) const {
        SX_ASSIGN(const json* a, array(obj, key, path));
        std::vector<int64_t> out;
        for (size_t i = 0; i < a->size(); ++i) {
            const json& v = (*a)[i];
            if (!v.is_number_integer() || v.get<int64_t>() < 0)
                return err(join(path, key) + "[" + std::to_string(i) + "]", "must be a non-negative integer");
            out.push_back(v.get<int64_t>());
        }
        return out;
    }
    Expected<std::vector<std::string>> strings(const json& obj, const std::string& key, const std::string& path) const {
        SX_ASSIGN(const json* a, array(obj, key, path));
        std::vector<std::string> out;
        for (size_t i = 0; i < a->size(); ++i) {
            if (!(*a)[i].is_string())
                return err(join(path, key) + "[" + std::to_string(i) + "]", "must be a string");
            out.push_back((*a)[i].get<std::string>());
        }
        return out;
    }
    static std::string join(const std::string& path, const std::string& key) {
        return path.empty() ? key : path + "." + key;
    }
    const std::string& file() const { return m_file; }

private:
    std::string m_file;
};

Expected<BufferKind> parseKind(const Manifest& m, const std::string& s, const std::string& path) {
    for (BufferKind k : {BufferKind::Input, BufferKind::Output, BufferKind::Weight, BufferKind::Intermediate})
        if (s == kindName(k))
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
    for (UnitKind u : {UnitKind::Cube, UnitKind::Vector, UnitKind::Dma})
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

Status checkFile(const Manifest& m, const json& files, const std::string& name, const std::vector<uint8_t>& bytes,
                 const std::string& binPath) {
    SX_ASSIGN(const json* f, m.get(files, name, "files"));
    SX_ASSIGN(uint64_t size, m.u64(*f, "bytes", "files." + name));
    SX_ASSIGN(std::string hash, m.str(*f, "fnv1a64", "files." + name));
    if (size != bytes.size())
        return makeError(ErrorKind::Parse, binPath + ": size " + std::to_string(bytes.size()) + " bytes, manifest says " +
                                               std::to_string(size) + " (truncated or wrong file)");
    std::string actual = fnv1a64Hex(bytes);
    if (actual != hash)
        return makeError(ErrorKind::Parse, binPath + ": content hash " + actual + " does not match the manifest's " + hash +
                                               " (corrupt file)");
    return {};
}

/// Checks tasks.bin against the Program rebuilt from the manifest.
Status checkTasksBin(const std::vector<uint8_t>& bin, const Program& p, const std::vector<std::string>& kernels,
                     const std::string& file) {
    auto bad = [&](const std::string& what) { return makeError(ErrorKind::Parse, file + ": " + what); };
    if (bin.size() < kHeaderBytes)
        return bad("too short for its header (" + std::to_string(bin.size()) + " bytes)");
    if (std::memcmp(bin.data(), kTasksMagic, 8) != 0)
        return bad("bad magic (expected \"SXTASKS\\0\")");
    uint64_t version = getU(bin, 8, 4);
    if (version != kTasksVersion)
        return bad("unsupported version " + std::to_string(version) + " (this reader knows " + std::to_string(kTasksVersion) + ")");
    uint64_t n = getU(bin, 12, 4);
    if (n != p.tasks.size())
        return bad("holds " + std::to_string(n) + " tasks, manifest has " + std::to_string(p.tasks.size()));
    const uint64_t align = descAlign(p);
    if (getU(bin, 16, 4) != kHeaderBytes || getU(bin, 20, 4) != align)
        return bad("unexpected header size or descriptor alignment (expected " + std::to_string(align) + ")");
    if (getU(bin, 24, 8) != bin.size())
        return bad("header says " + std::to_string(getU(bin, 24, 8)) + " bytes, file has " + std::to_string(bin.size()));
    uint64_t table = getU(bin, 32, 8);
    if (table != kHeaderBytes || table + 8 * n > bin.size())
        return bad("descriptor table out of bounds");
    uint64_t prevEnd = alignUp(table + 8 * n, align);
    for (uint64_t i = 0; i < n; ++i) {
        const Task& t = p.tasks[i];
        std::string label = "descriptor " + std::to_string(i);
        uint64_t o = getU(bin, table + 8 * i, 8);
        if (o % align != 0 || o < prevEnd || o + kDescFixed > bin.size())
            return bad(label + " offset " + std::to_string(o) + " is misaligned or out of bounds");
        uint64_t size = getU(bin, o + 4, 4);
        if (size != descriptorBytes(t, align) || o + size > bin.size())
            return bad(label + " size " + std::to_string(size) + " disagrees with the manifest or runs past the end");
        prevEnd = o + size;
        uint64_t kernel = getU(bin, o + 12, 4);
        if (getU(bin, o, 4) != static_cast<uint64_t>(t.id) || getU(bin, o + 8, 2) != static_cast<uint64_t>(t.core) ||
            getU(bin, o + 10, 1) != static_cast<uint64_t>(t.unit) || kernel >= kernels.size() || kernels[kernel] != t.kernel ||
            getU(bin, o + 16, 2) != t.inputs.size() || getU(bin, o + 18, 2) != t.outputs.size() ||
            getU(bin, o + 20, 2) != t.waitEvents.size() || getU(bin, o + 22, 2) != t.recordEvents.size() ||
            getU(bin, o + 24, 4) != static_cast<uint64_t>(t.tiling.numTiles) ||
            getU(bin, o + 28, 2) != t.tiling.tileShape.size() || getU(bin, o + 32, 8) != t.estCycles)
            return bad(label + " (task '" + t.name + "') disagrees with the manifest's task table");
        uint64_t c = o + kDescFixed;
        for (const std::vector<int>* list : {&t.inputs, &t.outputs})
            for (int b : *list) {
                const Buffer& buf = p.buffers[static_cast<size_t>(b)];
                if (getU(bin, c, 8) != buf.offset || getU(bin, c + 8, 8) != buf.size || getU(bin, c + 16, 4) != static_cast<uint64_t>(b))
                    return bad(label + " (task '" + t.name + "') has an address for buffer " + std::to_string(b) +
                               " that disagrees with the manifest");
                c += kBufferRef;
            }
        for (const std::vector<int>* list : {&t.waitEvents, &t.recordEvents})
            for (int e : *list) {
                if (getU(bin, c, 4) != static_cast<uint64_t>(e) ||
                    getU(bin, c + 4, 2) != static_cast<uint64_t>(p.events[static_cast<size_t>(e)].slot))
                    return bad(label + " (task '" + t.name + "') has event " + std::to_string(e) + " wrong");
                c += kEventRef;
            }
    }
    return {};
}

} // namespace

Expected<Program> readArtifact(const std::string& dir) {
    fs::path d(dir);
    std::error_code ec;
    if (!fs::is_directory(d, ec))
        return makeError(ErrorKind::Io, dir + ": not an artifact directory");
    const std::string manifestPath = (d / "manifest.json").string();
    const std::string tasksPath = (d / "tasks.bin").string();
    const std::string weightsPath = (d / "weights.bin").string();
    SX_ASSIGN(std::vector<uint8_t> manifestBytes, readBytes(manifestPath));
    SX_ASSIGN(std::vector<uint8_t> tasksBin, readBytes(tasksPath));
    SX_ASSIGN(std::vector<uint8_t> weightsBin, readBytes(weightsPath));

    Manifest m(manifestPath);
    json doc;
    try {
        doc = json::parse(manifestBytes.begin(), manifestBytes.end());
    } catch (const json::parse_error& e) {
        return m.fail("invalid JSON at byte " + std::to_string(e.byte));
    }
    if (!doc.is_object())
        return m.fail("expected a JSON object");
    SX_ASSIGN(std::string format, m.str(doc, "format", ""));
    if (format != kArtifactFormat)
        return m.err("format", "is '" + format + "', expected '" + kArtifactFormat + "'");
    SX_ASSIGN(int64_t version, m.i64(doc, "version", ""));
    if (version != kArtifactVersion)
        return m.err("version", "is " + std::to_string(version) + ", this reader knows " + std::to_string(kArtifactVersion));

    SX_ASSIGN(const json* files, m.get(doc, "files", ""));
    SX_TRY(checkFile(m, *files, "tasks.bin", tasksBin, tasksPath));
    SX_TRY(checkFile(m, *files, "weights.bin", weightsBin, weightsPath));

    Program p;
    SX_ASSIGN(p.modelName, m.str(doc, "model", ""));
    SX_ASSIGN(const json* target, m.get(doc, "target", ""));
    SX_ASSIGN(p.target, parseTarget(target->dump(), manifestPath + " (target)"));
    SX_ASSIGN(const json* pipeline, m.get(doc, "pipeline", ""));
    SX_ASSIGN(p.pipeline, m.strings(*pipeline, "passes", "pipeline"));
    SX_ASSIGN(p.disabledRules, m.strings(*pipeline, "disabled", "pipeline"));
    SX_ASSIGN(p.bisectLimit, m.i64(*pipeline, "bisect_limit", "pipeline"));
    if (p.bisectLimit < -1)
        return m.err("pipeline.bisect_limit", "must be -1 or more");
    SX_ASSIGN(p.estCycles, m.u64(doc, "est_cycles", ""));
    SX_ASSIGN(std::vector<std::string> kernels, m.strings(doc, "kernels", ""));

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
    if (ms.weightsBase + ms.weightBytes > ms.ioBase || ms.ioBase + ms.ioBytes > ms.arenaBase ||
        ms.arenaBase + ms.dramPeak != ms.dramTotal || ms.dramTotal > p.target.dramBytes)
        return m.err("memory", "describes regions that overlap or exceed the target's DRAM");
    if (weightsBin.size() != ms.weightBytes)
        return makeError(ErrorKind::Parse, weightsPath + ": " + std::to_string(weightsBin.size()) +
                                               " bytes, the manifest's weights region is " + std::to_string(ms.weightBytes));

    SX_ASSIGN(const json* buffers, m.array(doc, "buffers", ""));
    SX_ASSIGN(const json* tasks, m.array(doc, "tasks", ""));
    SX_ASSIGN(const json* events, m.array(doc, "events", ""));
    const int64_t nb = static_cast<int64_t>(buffers->size());
    const int64_t nt = static_cast<int64_t>(tasks->size());
    const int64_t ne = static_cast<int64_t>(events->size());
    for (int64_t i = 0; i < nb; ++i) {
        const json& j = (*buffers)[static_cast<size_t>(i)];
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
        SX_ASSIGN(std::vector<int64_t> shape, m.dims(j, "shape", path));
        SX_ASSIGN(std::string layout, m.str(j, "layout", path));
        b.type = ir::TensorType::of(*dt, shape);
        SX_ASSIGN(b.type.layout, parseLayout(m, layout, path + ".layout"));
        SX_ASSIGN(b.firstTask, m.intIn(j, "first_task", path, -1, nt - 1));
        SX_ASSIGN(b.lastTask, m.intIn(j, "last_task", path, -1, nt - 1));
        if (b.offset > ms.dramTotal || b.size > ms.dramTotal - b.offset)
            return m.err(path + ".offset", "puts buffer '" + b.value + "' at [" + std::to_string(b.offset) + ", " +
                                               std::to_string(b.offset + b.size) + "), outside the program's " +
                                               std::to_string(ms.dramTotal) + " bytes of DRAM");
        if (tensorBytes(b.type) > b.size)
            return m.err(path + ".size", "is smaller than the tensor " + b.type.str());
        if (b.kind == BufferKind::Weight && (b.offset < ms.weightsBase || b.offset + tensorBytes(b.type) > ms.weightsBase + ms.weightBytes))
            return m.err(path + ".offset", "puts weight '" + b.value + "' outside the weights region");
        p.buffers.push_back(std::move(b));
    }
    SX_ASSIGN(p.inputBuffers, m.ints(doc, "inputs", "", 0, nb - 1));
    SX_ASSIGN(p.outputBuffers, m.ints(doc, "outputs", "", 0, nb - 1));
    for (int64_t i = 0; i < nt; ++i) {
        const json& j = (*tasks)[static_cast<size_t>(i)];
        std::string path = "tasks[" + std::to_string(i) + "]";
        Task t;
        SX_ASSIGN(t.id, m.intIn(j, "id", path, i, i));
        SX_ASSIGN(t.name, m.str(j, "name", path));
        SX_ASSIGN(t.kernel, m.str(j, "kernel", path));
        SX_ASSIGN(t.core, m.intIn(j, "core", path, 0, p.target.numCores - 1));
        SX_ASSIGN(std::string unit, m.str(j, "unit", path));
        SX_ASSIGN(t.unit, parseUnit(m, unit, path + ".unit"));
        SX_ASSIGN(t.nodes, m.strings(j, "nodes", path));
        SX_ASSIGN(t.inputs, m.ints(j, "inputs", path, 0, nb - 1));
        SX_ASSIGN(t.outputs, m.ints(j, "outputs", path, 0, nb - 1));
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
        SX_ASSIGN(t.estStart, m.u64(j, "est_start", path));
        SX_ASSIGN(t.estEnd, m.u64(j, "est_end", path));
        SX_ASSIGN(const json* tiling, m.get(j, "tiling", path));
        std::string tp = path + ".tiling";
        SX_ASSIGN(t.tiling.tileShape, m.dims(*tiling, "tile_shape", tp));
        SX_ASSIGN(t.tiling.numTiles, m.intIn(*tiling, "num_tiles", tp, 1, INT32_MAX));
        if (tiling->contains("reduce_chunks")) {
            SX_ASSIGN(t.tiling.reduceChunks, m.intIn(*tiling, "reduce_chunks", tp, 1, INT32_MAX));
            if (t.tiling.numTiles % t.tiling.reduceChunks != 0)
                return m.err(tp + ".reduce_chunks", "is " + std::to_string(t.tiling.reduceChunks) +
                                                        ", which does not divide num_tiles (" +
                                                        std::to_string(t.tiling.numTiles) + ")");
        }
        SX_ASSIGN(t.tiling.doubleBuffered, m.boolean(*tiling, "double_buffered", tp));
        SX_ASSIGN(t.tiling.sramBytes, m.u64(*tiling, "sram_bytes", tp));
        SX_ASSIGN(t.tiling.estCycles, m.u64(*tiling, "est_cycles", tp));
        SX_ASSIGN(const json* cands, m.array(*tiling, "candidates", tp));
        for (size_t c = 0; c < cands->size(); ++c) {
            std::string cp = tp + ".candidates[" + std::to_string(c) + "]";
            Tiling::Candidate cand;
            SX_ASSIGN(cand.tileShape, m.dims((*cands)[c], "tile_shape", cp));
            if ((*cands)[c].contains("reduce_chunks")) {
                SX_ASSIGN(cand.reduceChunks, m.intIn((*cands)[c], "reduce_chunks", cp, 1, INT32_MAX));
            }
            SX_ASSIGN(cand.estCycles, m.u64((*cands)[c], "est_cycles", cp));
            SX_ASSIGN(cand.rejectedBecause, m.str((*cands)[c], "rejected_because", cp));
            t.tiling.candidates.push_back(std::move(cand));
        }
        if (t.tiling.sramBytes > p.target.sramBytes)
            return m.err(tp + ".sram_bytes", "is " + std::to_string(t.tiling.sramBytes) + ", more than the target's SRAM");
        if (t.inputs.size() > 0xffff || t.outputs.size() > 0xffff || t.waitEvents.size() > 0xffff ||
            t.recordEvents.size() > 0xffff)
            return m.err(path, "has too many buffers or events for a descriptor");
        p.tasks.push_back(std::move(t));
    }
    for (int64_t i = 0; i < ne; ++i) {
        const json& j = (*events)[static_cast<size_t>(i)];
        std::string path = "events[" + std::to_string(i) + "]";
        Event e;
        SX_ASSIGN(e.id, m.intIn(j, "id", path, i, i));
        SX_ASSIGN(e.slot, m.intIn(j, "slot", path, 0, p.target.eventSlotsPerCore - 1));
        SX_ASSIGN(e.core, m.intIn(j, "core", path, 0, p.target.numCores - 1));
        SX_ASSIGN(e.producerTask, m.intIn(j, "producer", path, 0, nt - 1));
        SX_ASSIGN(e.consumerTasks, m.ints(j, "consumers", path, 0, nt - 1));
        p.events.push_back(std::move(e));
    }
    SX_TRY(checkTasksBin(tasksBin, p, kernels, tasksPath));

    // The graph: weights come from weights.bin at their planned offsets.
    std::map<std::string, ir::Tensor> weights;
    for (const Buffer& b : p.buffers) {
        if (b.kind != BufferKind::Weight)
            continue;
        uint64_t at = b.offset - ms.weightsBase;
        uint64_t bytes = tensorBytes(b.type);
        weights[b.value] = ir::Tensor::copyOf(
            b.type.dtype, b.type.dims(),
            std::span<const std::byte>(reinterpret_cast<const std::byte*>(weightsBin.data()) + at, bytes));
    }
    SX_ASSIGN(std::string graphText, m.str(doc, "graph", ""));
    Expected<std::unique_ptr<ir::Graph>> graph = ir::parseGraph(graphText, &weights);
    if (!graph.ok())
        return m.err("graph", "does not parse: " + graph.error().message);
    std::shared_ptr<const ir::Graph> g = std::move(graph).value();
    p.graph = g;
    for (const Task& t : p.tasks)
        for (const std::string& n : t.nodes)
            if (!g->findNode(n))
                return m.err("tasks[" + std::to_string(t.id) + "].nodes", "names node '" + n + "' that is not in the graph");
    for (const Buffer& b : p.buffers) {
        const ir::Value* v = g->findValue(b.value);
        if (!v)
            return m.err("buffers[" + std::to_string(b.id) + "].value", "names value '" + b.value + "' that is not in the graph");
        if (b.kind == BufferKind::Weight && !v->isConstant())
            return m.err("buffers[" + std::to_string(b.id) + "].value", "names weight '" + b.value + "' that is not a constant");
    }
    SX_ASSIGN(const json* nodeTasks, m.get(doc, "node_tasks", ""));
    if (!nodeTasks->is_object())
        return m.err("node_tasks", "must be an object");
    std::map<std::string, int> firstTaskOf;
    for (const Task& t : p.tasks)
        for (const std::string& n : t.nodes)
            firstTaskOf.emplace(n, t.id);
    for (const auto& [n, id] : firstTaskOf) {
        auto it = nodeTasks->find(n);
        if (it == nodeTasks->end() || !it->is_number_integer() || it->get<int64_t>() != id)
            return m.err("node_tasks." + n, "does not map to task " + std::to_string(id));
    }

    Status events_ = checkEvents(p);
    if (!events_.ok())
        return m.fail("events are unsound: " + events_.error().message);
    Status hazards = checkHazards(p);
    if (!hazards.ok())
        return m.fail("memory plan is unsafe: " + hazards.error().message);
    return p;
}

} // namespace sextant::backend
