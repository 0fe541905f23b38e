#include "Compiler.h"

#include "core/backend/Lower.h"
#include "core/sim/Simulator.h"

#include <algorithm>

namespace sextant::runtime {

namespace {

/// Adds what a backend rule did to the pipeline's records: applications numbered after the
/// graph rules', skips, and rejections counted by the reason's kind (the text before ':').
void recordBackendRule(passes::PipelineResult& r, const std::string& rule,
                       const std::vector<backend::OnChipDecision>& decisions) {
    auto stats = std::find_if(r.stats.begin(), r.stats.end(), [&](const passes::RuleStats& s) { return s.rule == rule; });
    if (stats == r.stats.end()) {
        r.stats.push_back(passes::RuleStats{});
        r.stats.back().rule = rule;
        stats = r.stats.end() - 1;
    }
    int seq = r.applications.empty() ? 0 : r.applications.back().seq;
    for (const backend::OnChipDecision& d : decisions) {
        switch (d.outcome) {
        case backend::OnChipDecision::Outcome::Applied:
            ++stats->matched;
            ++stats->applied;
            r.applications.push_back(passes::RuleApplication{++seq, rule, d.node, "lower"});
            break;
        case backend::OnChipDecision::Outcome::Skipped:
            ++stats->matched;
            ++stats->skipped;
            r.skipped.push_back(passes::RuleApplication{0, rule, d.node, "lower"});
            break;
        case backend::OnChipDecision::Outcome::Rejected:
            ++stats->rejected;
            ++stats->reasons[d.reason.substr(0, d.reason.find(':'))];
            r.rejections.push_back(passes::RuleRejection{rule, d.node, "lower", d.value + ": " + d.reason});
            break;
        }
    }
}

} // namespace

passes::PipelineConfig withTargetFacts(passes::PipelineConfig pipeline, const backend::Target& target) {
    pipeline.npuLayout = target.layout;
    pipeline.cubeInputs = target.cubeInputs;
    pipeline.vectorPrecision = target.vectorPrecision;
    pipeline.numCores = target.numCores;
    pipeline.c0 = target.c0;
    pipeline.taskFixedCycles = target.dispatchCycles + target.dramLatencyCycles + target.eventLatencyCycles;
    pipeline.dramBytesPerCycle = target.dramBytesPerCycle;
    pipeline.cubeMacsPerCycle = static_cast<uint64_t>(std::max(target.cubeM, 1)) *
                                static_cast<uint64_t>(std::max(target.cubeN, 1)) *
                                static_cast<uint64_t>(std::max(target.cubeK, 1));
    return pipeline;
}

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
    // units compute in. The block size (c0) is otherwise the backend's business: in the IR,
    // NC1HWC0 is a layout tag, and lowering pads the channels to the target's c0 when it sizes
    // buffers; split-global-pool only weighs how many parts a channel split gives against the
    // cores.
    const passes::PipelineConfig pipeline = withTargetFacts(options.pipeline, options.target);
    SX_ASSIGN(result.pipeline, passes::runPipeline(graph, pipeline, cancel, passProgress));
    if (cancel && cancel->load())
        return makeError(ErrorKind::Cancelled, "compilation cancelled before lowering");
    if (!result.pipeline.graph)
        return makeError(ErrorKind::Verify, "the pass pipeline produced no graph");
    if (options.pipelineDone)
        options.pipelineDone(result.pipeline);
    std::shared_ptr<const ir::Graph> finalGraph = result.pipeline.graph;
    // The backend's rules take the pipeline's switches, and what the bisect limit leaves.
    backend::LowerOptions lowerOptions;
    lowerOptions.sram.keepOnChip = passes::ruleRuns(options.pipeline, backend::kKeepOnChipRule);
    if (options.pipeline.bisectLimit >= 0)
        lowerOptions.sram.budget = std::max<int64_t>(
            0, options.pipeline.bisectLimit - static_cast<int64_t>(result.pipeline.applications.size()));
    // Where a small graph lowers more than one way, the candidates are run on the simulator,
    // timing only (async, as `run` does by default), and the fastest is kept: the schedule's
    // estimate leaves out how Tasks share DRAM and queue their loads.
    lowerOptions.measure = [](const backend::Program& p) -> Expected<uint64_t> {
        sim::SimOptions timing;
        timing.functional = false;
        SX_ASSIGN(sim::SimResult r, sim::simulate(p, {}, timing));
        return r.totalCycles;
    };
    std::vector<backend::OnChipDecision> decisions;
    Expected<backend::Program> lowered = backend::lower(finalGraph, options.target, lowerOptions, &decisions);
    if (!lowered.ok()) {
        if (!options.keepPipelineOnLoweringError)
            return lowered.takeError();
        result.loweringError = lowered.takeError();
        return result;
    }
    result.program = std::move(lowered).value();
    result.program.inputGuards = options.inputGuards;
    recordBackendRule(result.pipeline, backend::kKeepOnChipRule, decisions);
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
