#pragma once

#include "Program.h"
#include "SramPlanner.h"
#include "Target.h"
#include "core/ir/Graph.h"

#include <functional>
#include <memory>

namespace sextant::backend {

/// "16000" or "[1, 2, 3]": the values of an input guard (Program::inputGuards), at most 16 shown,
/// as inputGuardLines and the runtime's refusal print them.
std::string guardValuesText(const ir::Tensor& values);

/// Lowers a fused, fully shaped graph to a Program for `target`:
///   grouping (one group per node; host-only ops are rejected) -> tiling (cost model, SRAM fit)
///   -> splitting a group across cores where that pays (chooseSplit: one Task per part, each
///   depending on every part of its producers) -> list scheduling over the cores -> Task order by
///   (start, id) -> events for cross-core deps -> DRAM memory plan that respects the schedule ->
///   self-checks (checkEvents, checkHazards). When the events the parts need do not fit the
///   cores' event slots, it lowers again with fewer parts and on fewer cores (down to one, which
///   needs no events), keeps the fastest program that fits and says so in Program::notes.
/// Reshape/Flatten/Identity/Dropout become DMA Tasks that copy (no aliasing), so every value has
/// its own buffer. Tasks' `inputs` list the buffers of the node's present inputs in input order
/// (an omitted optional input is skipped); `outputs` list every node output in order.
/// Errors name the node concerned.
/// After the events, the SRAM plan (planSram): every Task's tile slots in its core's SRAM and
/// the keep-on-chip rule, as `options.sram` says; what the rule did goes to `decisions`.
struct LowerOptions {
    SramPlanOptions sram;
    /// Concats the rule concat-in-place marked are lowered in place (lowersInPlace): no Task, their
    /// inputs written into their parts of the output. Off: each is a copy Task. On a graph small
    /// enough to be measured, `lower` builds the program both ways and keeps the faster, with a
    /// note when that is the copying one (in place, a reader waits for every part's writer, which
    /// can cost more cross-core events than the copy Task did).
    bool concatInPlace = true;
    /// A program's latency as measured, in cycles (the runtime passes the simulator's timing-only
    /// run: the backend cannot call the simulator, which sits above it). On a graph small enough
    /// to be lowered more than one way, `lower` keeps the candidate program this measures fastest,
    /// where without it it compares the schedule's estimates with margins for their error. When it
    /// fails on every candidate, the least estimate decides.
    std::function<Expected<uint64_t>(const Program&)> measure;
};
Expected<Program> lower(std::shared_ptr<const ir::Graph> graph, const Target& target, const LowerOptions& options = {},
                        std::vector<OnChipDecision>* decisions = nullptr);

} // namespace sextant::backend
