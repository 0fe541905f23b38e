#include "Compiler.h"

#include "core/backend/Lower.h"

namespace sextant::runtime {

Expected<CompileResult> compileGraph(const ir::Graph& graph, const CompileOptions& options,
                                     const std::atomic<bool>* cancel,
                                     std::function<void(int, int, const std::string&)> progress) {
    CompileResult result;
    // The pipeline's passes plus one step for lowering, so a progress bar reaches 100% only
    // when the Program exists.
    int total = 0;
    auto passProgress = [&](int done, int passes, const std::string& passId) {
        total = passes + 1;
        if (progress)
            progress(done, total, passId);
    };
    // The layout and precision policies are the target's: the pipeline builds NC1HWC0 regions
    // only for a target whose compute units read that layout, and marks the precisions its
    // units compute in. The block size (c0) is the backend's business: in the IR, NC1HWC0 is a
    // layout tag, and lowering pads the channels to the target's c0 when it sizes buffers.
    passes::PipelineConfig pipeline = options.pipeline;
    pipeline.npuLayout = options.target.layout;
    pipeline.cubeInputs = options.target.cubeInputs;
    pipeline.vectorPrecision = options.target.vectorPrecision;
    SX_ASSIGN(result.pipeline, passes::runPipeline(graph, pipeline, cancel, passProgress));
    if (cancel && cancel->load())
        return makeError(ErrorKind::Cancelled, "compilation cancelled before lowering");
    if (!result.pipeline.graph)
        return makeError(ErrorKind::Verify, "the pass pipeline produced no graph");
    std::shared_ptr<const ir::Graph> finalGraph = result.pipeline.graph;
    Expected<backend::Program> lowered = backend::lower(finalGraph, options.target);
    if (!lowered.ok()) {
        if (!options.keepPipelineOnLoweringError)
            return lowered.takeError();
        result.loweringError = lowered.takeError();
        return result;
    }
    result.program = std::move(lowered).value();
    for (const passes::Snapshot& s : result.pipeline.snapshots)
        if (s.passId != "input")
            result.program.pipeline.push_back(s.passId);
    result.program.disabledRules.assign(options.pipeline.disabled.begin(), options.pipeline.disabled.end());
    result.program.bisectLimit = options.pipeline.bisectLimit;
    if (progress) {
        if (total == 0)
            total = 1;
        progress(total, total, "lower");
    }
    return result;
}

} // namespace sextant::runtime
