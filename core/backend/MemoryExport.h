#pragma once

// The memory plan of a Program as CSV, for spreadsheets, scripts and other planners
// (docs/memory-export.md): every buffer where it lives and when, and the DRAM arena's planning
// problem in MiniMalloc's id,lower,upper,size format (which `sextant-cli plan-offsets` reads).

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

/// The DRAM intermediates (the arena planMemory places) as an interval problem: a buffer live
/// from its writer's scheduled start to its last access's scheduled end (half-open, at least one
/// cycle), in bytes as planned. The planner's own conflicts come from the Task order (deps), of
/// which these scheduled lifetimes are one linearisation; a plan of this problem is a plan of the
/// schedule as estimated.
std::string offsetProblemCsv(const Program& program);

} // namespace sextant::backend
