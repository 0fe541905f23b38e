#pragma once

// The memory plan of a Program as CSV, for spreadsheets, scripts and other planners
// (docs/memory-export.md): every buffer where it lives and when, and the DRAM arena's planning
// problem in MiniMalloc's id,lower,upper,size format with its alignment and the conflicts
// beyond the lifetimes (which `sextant-cli plan-offsets` reads).

#include "Program.h"

#include <string>

namespace sextant::backend {

/// Version of the memory plan CSV's columns (docs/memory-export.md); a later version only
/// appends columns.
inline constexpr int kMemoryCsvVersion = 1;

/// One row per buffer and place: level dram (weights, inputs and outputs, the intermediates'
/// arena), sram (a tensor kept on chip: one row per core it is striped over, with the DRAM home
/// of a halo tensor as a dram row of its own) or host (a tensor only the run sizes, no address);
/// its offset and size, the Tasks that write it first and read it last, and their scheduled
/// cycles. Deterministic: the same Program gives the same bytes.
std::string memoryPlanCsv(const Program& program);

/// The problem planMemory solved for the DRAM arena (dramArenaProblem), as CSV: one row per item
/// (a buffer, or buffers that share their addresses slice by slice, under the first one's id):
/// `id,lower,upper,size,alignment,conflicts`, the lifetime from its first write's scheduled start
/// to its last access's scheduled end (half-open, at least one cycle), and, once per pair on the
/// first of its rows, the ids of the items it conflicts with although the lifetimes do not meet
/// (their Tasks are not ordered). `sextant-cli plan-offsets` reads it back as the same problem.
/// An error when the pairs or a row would be too many to write (readIntervalCsv's limits).
/// Deterministic: the same Program gives the same bytes.
Expected<std::string> offsetProblemCsv(const Program& program);

} // namespace sextant::backend
