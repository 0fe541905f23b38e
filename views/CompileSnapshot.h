#pragma once

#include "MemoryMap.h"
#include "SramMap.h"
#include "TimelineModel.h"
#include "core/backend/Program.h"
#include "core/backend/Target.h"
#include "core/ir/Specialize.h"
#include "core/passes/PassManager.h"
#include "core/runtime/Compare.h"
#include "core/sim/Simulator.h"
#include "profiler/RunCompare.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sextant::views {

/// What to compile and how.
struct CompileRequest {
    std::string modelPath;             ///< an .onnx file
    passes::PipelineConfig pipeline;   ///< pass and rule switches
    backend::Target target = backend::defaultTarget();
    /// Where to keep the run: a profile database (SQLite) the run is appended to, for File > Save
    /// profile database and for other tools. Empty: kept nowhere. The views never read it back.
    std::string profilePath;
    /// Concrete dims for inputs with symbolic ones (PaddleOCR's 'p2o.DynamicDimension.N'). Empty:
    /// the shapes of the test inputs next to the model, if it has some (see compileModel).
    ir::InputShapes shapes;
    /// The float model a quantized model came from: its tensors are compared with the quantized
    /// model's of the same name, both on the float64 reference (sextant-cli run --float-model).
    /// Empty: no such comparison.
    std::string floatModelPath;
};

/// Everything one compile-and-simulate run produced, ready for the views: what the driver's
/// runtime::RunResult holds, plus what views need on top (timeline lanes, memory map, log; the
/// graphs are laid out when shown, by the Graph tab's GraphLayoutWorker). Built once by the worker, then shared read-only (std::shared_ptr<const CompileSnapshot>) with every view, so
/// views never call the compiler and never see a half-updated state.
struct CompileSnapshot {
    std::string modelPath;
    passes::PipelineResult pipeline;          ///< snapshots [0] = "input", one per pass
    backend::Program program;
    sim::SimResult sim;
    std::string profilePath;                  ///< the SQLite database the run was written to
    /// Why the run could not be written to profilePath (then the file may be missing or hold
    /// earlier runs only); empty when it was, or when nothing was simulated.
    std::string profileError;
    std::string inputsSource;                 ///< where the inputs came from, for the log
    /// Why the final graph could not be lowered for the target (then `program` is empty and
    /// nothing was simulated: only the pipeline's views have data); empty when it was.
    std::string loweringError;
    /// The concrete shapes a model with symbolic input dims was compiled at (empty when its inputs
    /// were static), so the GUI can offer them for editing.
    ir::InputShapes inputShapes;
    TimelineModel timeline;                   ///< the simulated Tasks (profiler::taskRows of program and sim)
    /// The run as the Runs tab compares it (profiler::recordRun; `db` and the run id are where it
    /// was kept, when it was).
    profiler::LoadedRun run;
    MemoryMapData memory;
    SramMapData sram;                         ///< every core's SRAM plan over the same trace
    /// Every tensor the simulated NPU computed against the float64 reference's tensor of the same
    /// name, in graph order, with the first out of tolerance (the Accuracy tab).
    runtime::ValueDrift accuracy;
    /// With CompileRequest::floatModelPath: the quantized model's tensors against the float
    /// model's of the same name (the error quantization adds, per tensor), or why they could not
    /// be compared (floatModelError).
    std::optional<runtime::ValueDrift> floatAccuracy;
    std::string floatModelPath;
    std::string floatModelError;
    /// The simulated run's critical path (sim::criticalPath): Program Task ids, first Task first.
    std::vector<int> criticalTasks;
    std::vector<std::string> log;             ///< human-readable lines: stages, accuracy, latency
};

} // namespace sextant::views
