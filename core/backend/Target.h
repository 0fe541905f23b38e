#pragma once

#include "core/ir/Error.h"
#include "core/ir/Precision.h"

#include <cstdint>
#include <string>

namespace sextant::backend {

/// The NPU a Program is compiled for. Loaded from a JSON file (resources/targets/*.json) and
/// validated: every field present (except the optional layout fields), positive, and consistent.
/// See resources/targets/npu-a.json and docs/target-format.md.
struct Target {
    std::string name = "npu-a";
    double clockGhz = 1.0;
    int numCores = 8;
    // Per core.
    int cubeM = 16, cubeN = 16, cubeK = 16; ///< f16 MACs per cycle = M*N*K, f32 accumulate
    /// int8 MACs per cycle = M*N*cubeKInt8, int32 accumulate (JSON "cube_k_int8", optional): the
    /// cube takes twice the reduction depth in int8 on the usual NPU.
    int cubeKInt8 = 32;
    int vectorLanesF16 = 128;
    int vectorLanesF32 = 64;
    /// Lanes per cycle of the vector unit on int8 values (JSON "vector_lanes_int8", optional): a
    /// MaxPool of int8 data compares bytes. Arithmetic on quantized values (QuantizeLinear,
    /// DequantizeLinear, the int8 cube ops' requantisation) runs in the f32 lanes.
    int vectorLanesInt8 = 256;
    uint64_t sramBytes = 512 * 1024;
    uint64_t sramAlign = 32;
    uint64_t dmaBytesPerCycle = 64;
    // Shared.
    uint64_t dramBytes = 16ull << 30;
    uint64_t dramBytesPerCycle = 512;
    uint64_t dramLatencyCycles = 400;
    uint64_t dramAlign = 64;
    int eventSlotsPerCore = 64;
    uint64_t eventLatencyCycles = 200;
    uint64_t dispatchCycles = 100;
    uint64_t descriptorAlign = 64;
    // Data layout (optional in the JSON; these defaults when absent).
    /// Activation layout of the NPU's compute units, JSON "layout": "NC1HWC0" (blocked: C split
    /// into C1 blocks of c0 channels, the last zero-padded; the layout pass builds blocked regions
    /// and inserts TransData at their boundaries) or "NCHW" (plain: no regions, no conversions).
    ir::NpuLayout layout = ir::NpuLayout::NC1HWC0;
    /// Channels per NC1HWC0 block (C0), a power of two: NC1HWC0 buffers hold ceil(C/c0)*c0 channels.
    int c0 = 16;
    // Precision policy (optional in the JSON; these defaults when absent).
    /// What the cube unit reads, JSON "cube_inputs": F16 ("f16": data and weights in f16, f32
    /// accumulation) or F32 ("f32"). parseTarget accepts no other value.
    ir::Precision cubeInputs = ir::Precision::F16;
    /// What non-critical vector ops compute in, JSON "vector_precision": F16 or F32 (softmax,
    /// normalisation, reductions and exp/log stay f32 either way, rule keep-f32-critical).
    ir::Precision vectorPrecision = ir::Precision::F16;

    /// Cycles to microseconds at this target's clock.
    double cyclesToMicros(uint64_t cycles) const { return static_cast<double>(cycles) / (clockGhz * 1000.0); }
};

/// Parses and validates a target description. Errors name the file and the offending field.
Expected<Target> parseTarget(const std::string& jsonText, const std::string& sourceName);
/// Reads a target file.
Expected<Target> loadTarget(const std::string& path);
/// The built-in default target, npu-a (the same content as resources/targets/npu-a.json).
const Target& defaultTarget();
/// The target as JSON (sorted keys, stable formatting), as written into an artifact's manifest.
std::string targetToJson(const Target& t);
/// The target as resources/targets/npu-a.json lays it out, for people to read and edit: format
/// and version first, then the fields in the order docs/target-format.md lists them.
std::string targetToFileJson(const Target& t);
/// Which of the target's units compute in f16, as its fields say it (`cube_inputs "f16",
/// vector_precision "f16"`); empty when it computes in f32 throughout.
std::string f16Units(const Target& t);
/// The note that follows an NPU result out of tolerance on a target with f16 units (empty on an
/// all-f32 one): much of the difference may be that precision; `howToChange` says where the user
/// sets the fields ("in a --target file").
std::string f16Note(const Target& t, const std::string& howToChange);

} // namespace sextant::backend
