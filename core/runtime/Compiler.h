#pragma once

#include "core/backend/Program.h"
#include "core/backend/Target.h"
#include "core/ir/Error.h"
#include "core/ir/Graph.h"
#include "core/passes/PassManager.h"

#include <atomic>
#include <functional>
#include <string>

namespace sextant::runtime {

/// What to compile for and how: the target and the pass pipeline configuration.
struct CompileOptions {
    backend::Target target = backend::defaultTarget();
    passes::PipelineConfig pipeline;
};

/// Everything a compilation produced: the pipeline's snapshots and rule records (for the pass
/// stepper and --print-changed) and the lowered Program (for the artifact and the simulator).
struct CompileResult {
    passes::PipelineResult pipeline;
    backend::Program program;
};

/// Runs the pass pipeline on `graph`, then lowers its final graph for `options.target`.
/// Progress reports each pass, then one final step named "lower"; `cancel` is polled between
/// passes and before lowering. Program::pipeline lists the passes that ran and
/// Program::disabledRules the ids switched off.
Expected<CompileResult> compileGraph(const ir::Graph& graph, const CompileOptions& options,
                                     const std::atomic<bool>* cancel = nullptr,
                                     std::function<void(int, int, const std::string&)> progress = {});

} // namespace sextant::runtime
