#pragma once

#include "Program.h"
#include "core/ir/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sextant::backend {

/// Format identifiers of an artifact directory (docs/artifact-format.md).
inline constexpr const char* kArtifactFormat = "sextant-artifact";
inline constexpr int kArtifactVersion = 1;
inline constexpr char kTasksMagic[8] = {'S', 'X', 'T', 'A', 'S', 'K', 'S', '\0'};
inline constexpr uint32_t kTasksVersion = 1;

/// Writes `program` into `dir` (created if needed) as three files:
///   manifest.json  everything needed to rebuild the Program (target, pipeline, buffers, Tasks,
///                  events, node<->Task map, memory stats, final graph as textual IR) plus the size
///                  and FNV-1a 64 hash of the two binary files;
///   tasks.bin      one 64-byte-aligned binary descriptor per Task (layout in Artifact.cpp and
///                  docs/artifact-format.md);
///   weights.bin    the weights region of DRAM: every constant at its planned offset.
/// Deterministic: the same Program gives byte-identical files (sorted keys, no timestamps).
Status writeArtifact(const Program& program, const std::string& dir);

/// Reads and validates an artifact directory and rebuilds its Program: files present, JSON well
/// formed, format/version, every field's type, ids and references in range, hashes and sizes of
/// the binary files, tasks.bin's magic/version/descriptors agreeing with the manifest, weights
/// within weights.bin, the graph parsing (weights from weights.bin), and the event and hazard
/// checkers passing. Each failure names the file and what is wrong.
Expected<Program> readArtifact(const std::string& dir);

/// FNV-1a 64-bit hash of `bytes` as 16 lower-case hex digits (the manifest's content hashes).
std::string fnv1a64Hex(const std::vector<uint8_t>& bytes);

/// The encoded tasks.bin and weights.bin of a Program (what writeArtifact writes).
std::vector<uint8_t> encodeTasks(const Program& program);
std::vector<uint8_t> encodeWeights(const Program& program);

} // namespace sextant::backend
