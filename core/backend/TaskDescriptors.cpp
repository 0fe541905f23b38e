// Artifact writer and reader.
//
// tasks.bin layout (all integers little-endian; see also docs/artifact-format.md):
//
//   header, 64 bytes at offset 0
//     0  char[8] magic "SXTASKS\0"
//     8  u32     version (2; the reader also takes 1, whose level bytes below are zero)
//    12  u32     task count N
//    16  u32     header bytes (64)
//    20  u32     descriptor alignment A: the target's descriptor_align, at least 64
//    24  u64     file bytes
//    32  u64     offset of the descriptor offset table (64)
//    40  24 bytes zero
//   offset table at 64: N x u64 descriptor offsets, zero-padded to a multiple of A
//   descriptor i at its offset (a multiple of A), Task ids in order:
//     0  u32 task id             4  u32 descriptor bytes (a multiple of A)
//     8  u16 core               10  u8 unit (0 cube, 1 vector, 2 dma, 3 host)
//    11  u8  flags (bit 0: double-buffered)
//    12  u32 kernel index (into the manifest's "kernels" list)
//    16  u16 inputs  18 u16 outputs  20 u16 waits  22 u16 records
//    24  u32 tiles              28  u16 tile rank   30 u16 zero
//    32  u64 estimated cycles   40  u64 DMA bytes   48 u64 flops   56 u64 SRAM bytes
//    64  inputs then outputs: {u64 address, u64 bytes (planned), u32 buffer id, u8 dtype, u8 level,
//                              2 zero}; level 0: the address is absolute in DRAM, 1: an offset in
//                              the SRAM of the Task's core (a tensor kept on chip)
//        waits then records:  {u32 event id, u16 slot, u16 recording core}
//        tile shape:          tile rank x i64
//        zero padding to the descriptor size
#include "ArtifactInternal.h"
#include "MathUtil.h"

#include <algorithm>
#include <cstring>
#include <set>

namespace sextant::backend {

namespace artifact {

namespace {

constexpr uint64_t kHeaderBytes = 64;
constexpr uint64_t kDescFixed = 64;
constexpr uint64_t kBufferRef = 24;
constexpr uint64_t kEventRef = 8;

// Little-endian integers of `bytes` bytes at `off`.
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

/// A buffer reference's level byte: where its address points.
uint64_t levelCode(MemLevel l) { return l == MemLevel::Sram ? 1 : 0; }

/// Descriptor alignment: the target's, at least 64 bytes (the fixed part's size).
uint64_t descAlign(const Program& p) { return std::max<uint64_t>(p.target.descriptorAlign, 64); }

uint64_t descriptorBytes(const Task& t, uint64_t align) {
    return alignUp(kDescFixed + kBufferRef * (t.inputs.size() + t.outputs.size()) +
                       kEventRef * (t.waitEvents.size() + t.recordEvents.size()) + 8 * t.tiling.tileShape.size(),
                   align);
}

} // namespace

std::vector<std::string> kernelTable(const Program& p) {
    std::set<std::string> k;
    for (const Task& t : p.tasks)
        k.insert(t.kernel);
    return {k.begin(), k.end()};
}

Status checkTasksBin(const std::vector<uint8_t>& bin, const Program& p, const std::vector<std::string>& kernels,
                     const std::string& file) {
    auto bad = [&](const std::string& what) { return makeError(ErrorKind::Parse, file + ": " + what); };
    if (bin.size() < kHeaderBytes)
        return bad("too short for its header (" + std::to_string(bin.size()) + " bytes)");
    if (std::memcmp(bin.data(), kTasksMagic, 8) != 0)
        return bad("bad magic (expected \"SXTASKS\\0\")");
    uint64_t version = getU(bin, 8, 4);
    if (version < kTasksOldestVersion || version > kTasksVersion)
        return bad("unsupported version " + std::to_string(version) + " (this reader knows " +
                   std::to_string(kTasksOldestVersion) + " to " + std::to_string(kTasksVersion) + ")");
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
                const uint64_t level = version >= 2 ? levelCode(buf.level) : 0;
                if (getU(bin, c, 8) != buf.offset || getU(bin, c + 8, 8) != buf.size || getU(bin, c + 16, 4) != static_cast<uint64_t>(b) ||
                    getU(bin, c + 21, 1) != level)
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

} // namespace artifact

using artifact::kernelTable;

void artifact::Fnv1a64::add(const void* data, size_t size) {
    const auto* bytes = static_cast<const uint8_t*>(data);
    for (size_t i = 0; i < size; ++i) {
        m_hash ^= bytes[i];
        m_hash *= kPrime;
    }
}

std::string artifact::Fnv1a64::hex() const {
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(m_hash));
    return buf;
}

std::string fnv1a64Hex(const std::vector<uint8_t>& bytes) {
    artifact::Fnv1a64 h;
    h.add(bytes.data(), bytes.size());
    return h.hex();
}

std::string legacyFnv1a64Hex(const std::vector<uint8_t>& bytes) {
    artifact::Fnv1a64 h(artifact::Fnv1a64::kLegacyBasis);
    h.add(bytes.data(), bytes.size());
    return h.hex();
}

std::vector<uint8_t> encodeTasks(const Program& p) {
    using namespace artifact;
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
                putU(out, c + 21, levelCode(buf.level), 1);
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

} // namespace sextant::backend
