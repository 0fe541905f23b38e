#pragma once

#include "core/backend/Program.h"
#include "core/backend/Target.h"
#include "core/ir/Error.h"
#include "core/ir/Graph.h"
#include "core/passes/PassManager.h"

#include <atomic>
#include <functional>
#include <optional>
#include <string>

namespace sextant::runtime {

/// What to compile for and how: the target and the pass pipeline configuration.
struct CompileOptions {
    backend::Target target = backend::defaultTarget();
    passes::PipelineConfig pipeline;
    /// When lowering fails (an op the NPU cannot run, a tile that does not fit), return the
    /// pipeline's result anyway, with CompileResult::loweringError set and no Program, instead of
    /// the error: the GUI still shows the passes and graphs of a model the NPU cannot run.
    bool keepPipelineOnLoweringError = false;
    /// Called once the pass pipeline finished, before lowering (which may take much longer on a
    /// large graph): the GUI shows the passes and graphs meanwhile.
    std::function<void(const passes::PipelineResult&)> pipelineDone;
    /// Inputs the graph was bound to (bindControlInputs): the Program refuses other values.
    std::vector<backend::InputGuard> inputGuards;
};

/// Everything a compilation produced: the pipeline's snapshots and rule records (for the pass
/// stepper and --print-changed) and the lowered Program (for the artifact and the simulator).
struct CompileResult {
    passes::PipelineResult pipeline;
    backend::Program program;
    /// With CompileOptions::keepPipelineOnLoweringError: why lowering failed (then `program` is
    /// empty); nullopt when it succeeded.
    std::optional<Error> loweringError;
};

/// `pipeline` with the facts of `target` its passes use: the activation layout, the precision
/// policy, the core count and the channel block (PipelineConfig's target fields).
passes::PipelineConfig withTargetFacts(passes::PipelineConfig pipeline, const backend::Target& target);

/// Runs the pass pipeline on `graph`, then lowers its final graph for `options.target`.
/// Progress reports each pass, then one final step named "lower"; `cancel` is polled between
/// passes and before lowering. Program::pipeline lists the passes that ran and
/// Program::disabledRules the ids switched off.
Expected<CompileResult> compileGraph(const ir::Graph& graph, const CompileOptions& options,
                                     const std::atomic<bool>* cancel = nullptr,
                                     std::function<void(int, int, const std::string&)> progress = {});

} // namespace sextant::runtime
