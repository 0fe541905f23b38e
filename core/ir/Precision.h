#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace sextant::ir {

/// The precision the NPU computes a node in, as the `precision` pass chooses it (Node::precision).
enum class Precision : uint8_t {
    Unset,     ///< not chosen (the pass did not run): the unit's default applies
    F32,       ///< f32 throughout (accuracy-critical ops, or a target without f16 units)
    F16,       ///< vector ops: every float operand and the results in f16
    F16AccF32, ///< cube ops: f16 data and weights, f32 accumulation
};

/// The text the IR printer and the target JSON use: "f32", "f16", "f16-acc-f32" ("" for Unset).
std::string_view precisionName(Precision p);
/// Parses a name precisionName gives (not ""); nullopt for anything else.
std::optional<Precision> parsePrecision(std::string_view name);

/// The activation layout of an NPU's compute units (Target::layout, PipelineConfig::npuLayout).
enum class NpuLayout : uint8_t {
    NC1HWC0, ///< blocked: C split into C1 blocks of C0 channels; the layout pass builds regions
    NCHW,    ///< plain: no regions, no conversions
};

/// "NC1HWC0" or "NCHW", as the target JSON spells it.
std::string_view npuLayoutName(NpuLayout l);
/// Parses a name npuLayoutName gives; nullopt for anything else.
std::optional<NpuLayout> parseNpuLayout(std::string_view name);

} // namespace sextant::ir
