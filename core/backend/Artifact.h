#pragma once

#include "Program.h"
#include "core/ir/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sextant::backend {

/// Format identifiers of an artifact directory (docs/artifact-format.md).
inline constexpr const char* kArtifactFormat = "sextant-artifact";
/// The version writeArtifact writes. 2 added the SRAM plan (sram_buffers, transfers, on_chip,
/// memory.sram, memory.dram_traffic_bytes, memory.compulsory_bytes). 3 hashes with the standard
/// FNV-1a 64 (versions 1 and 2 used an offset basis one digit short, legacyFnv1a64Hex) and covers
/// manifest.json with its hash in kManifestHashFile. 4 adds halo buffers: a tensor kept on chip a
/// stripe per core whose readers' windows reach into other cores' stripes keeps a DRAM home
/// (level dram, with stripes that give halo_top / halo_bottom), and tasks[i].halo_reads. 5 adds
/// host Tasks (partitions): unit "host" on the host lane, core = the target's core count, which
/// events may be recorded on too. 6 adds Concats lowered in place (rule concat-in-place): a
/// buffer's in_place {of, offset} says it is bytes [offset, offset + size) of buffer `of`. 7 adds
/// weights the loader fills (Buffer::fill): a weight buffer's fill is the one value the loader
/// writes to it; its bytes are not in weights.bin, and it lies in [weights_base + weight_bytes,
/// io_base).
inline constexpr int kArtifactVersion = 7;
/// The first version whose hashes are standard FNV-1a 64 and whose manifest has a hash file.
inline constexpr int kArtifactStandardHashVersion = 3;
/// The file beside manifest.json holding its hash, one line as `sha256sum` prints one:
/// "<16 hex digits>  manifest.json".
inline constexpr const char* kManifestHashFile = "manifest.json.fnv1a64";
/// The oldest version readArtifact still opens (1: no SRAM plan; see docs/artifact-format.md).
inline constexpr int kArtifactOldestVersion = 1;
inline constexpr char kTasksMagic[8] = {'S', 'X', 'T', 'A', 'S', 'K', 'S', '\0'};
/// tasks.bin's version. 2 added each buffer reference's memory level (0 DRAM, 1 SRAM); the reader
/// also takes 1, whose level bytes are zero (every buffer in DRAM).
inline constexpr uint32_t kTasksVersion = 2;
inline constexpr uint32_t kTasksOldestVersion = 1;

/// Writes `program` into `dir` (created if needed) as four files:
///   manifest.json  everything needed to rebuild the Program (target, pipeline, buffers, Tasks,
///                  events, node<->Task map, memory stats, the per-core SRAM plan with its DMA
///                  transfers and kept tensors, final graph as textual IR) plus the size
///                  and FNV-1a 64 hash of the two binary files;
///   tasks.bin      one 64-byte-aligned binary descriptor per Task (layout in Artifact.cpp and
///                  docs/artifact-format.md);
///   weights.bin    the weights region of DRAM: every constant at its planned offset;
///   manifest.json.fnv1a64  the FNV-1a 64 hash of manifest.json, written last.
/// Deterministic: the same Program gives byte-identical files (sorted keys, no timestamps).
Status writeArtifact(const Program& program, const std::string& dir);

/// Reads and validates an artifact directory and rebuilds its Program: files present, JSON well
/// formed, format/version, every field's type, ids and references in range, hashes and sizes of
/// the binary files, tasks.bin's magic/version/descriptors agreeing with the manifest, weights
/// within weights.bin, the graph parsing (weights from weights.bin), the SRAM plan agreeing with
/// the buffers and Tasks, and the event, hazard and SRAM-plan checkers passing. Each failure names
/// the file and what is wrong. An artifact of version 1 (before the SRAM plan) still reads: its
/// SRAM lists are empty and the memory figures are recomputed from its Tasks.
Expected<Program> readArtifact(const std::string& dir);

/// FNV-1a 64-bit hash of `bytes` (offset basis 14695981039346656037, prime 1099511628211) as 16
/// lower-case hex digits: the content hashes of a version 3 artifact.
std::string fnv1a64Hex(const std::vector<uint8_t>& bytes);
/// The hash versions 1 and 2 wrote: FNV-1a's loop with the offset basis 1469598103934665603 (a
/// digit short), which no standard implementation reproduces. Read only, to open old artifacts.
std::string legacyFnv1a64Hex(const std::vector<uint8_t>& bytes);

/// The encoded tasks.bin and weights.bin of a Program (what writeArtifact writes).
std::vector<uint8_t> encodeTasks(const Program& program);
std::vector<uint8_t> encodeWeights(const Program& program);

} // namespace sextant::backend
