#pragma once

#include "core/ir/Error.h"
#include "core/ir/Graph.h"
#include "SnapshotState.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace sextant::passes {

class Pass;

/// How to run the pipeline. A plain value (no global flags) so the CLI, the GUI and tests can
/// build one, store it in an artifact and re-run exactly the same compilation.
struct PipelineConfig {
    /// Optimisation level 0..3 (TVM's opt_level, LLVM's -O): O0 infer-shapes only, O1 adds the
    /// clean-ups (canonicalize, fold-constants, dce), O2 (default) adds cse, layout and fusion,
    /// O3 adds the rules that trade accuracy for speed (RuleInfo::tradesAccuracy).
    int optLevel = 2;
    /// Pass ids and rule ids that must not run. Disabled beats everything; an unknown id is an
    /// error.
    std::set<std::string> disabled{};
    /// Pass ids and rule ids switched on whatever the level (a fusion switch file's "on").
    /// Enabled beats the level; an id both disabled and enabled is an error, and so is a rule
    /// switched on whose pass does not run.
    std::set<std::string> enabled{};
    /// Let only the first N rule applications happen (counted across all passes, in pipeline
    /// order); later matches are recorded as skipped. -1 means no limit.
    int64_t bisectLimit = -1;
    /// Stop after the pass with this id (empty: run the whole pipeline). Unknown id is an error.
    std::string stopAfter{};
    /// Run ir::verifyGraph after every pass, so a pass that breaks the graph is named at once.
    bool verifyEach = true;
    /// The NPU's activation layout, copied from the target (runtime::compileGraph does):
    /// NC1HWC0 lets the layout pass build blocked regions, NCHW means none (no conversions).
    ir::NpuLayout npuLayout = ir::NpuLayout::NC1HWC0;
    /// The target's precision policy (copied like npuLayout), F16 or F32: what the `precision`
    /// pass marks cube ops (F16: F16AccF32, F32: F32) and non-critical vector ops (F16 or F32).
    ir::Precision cubeInputs = ir::Precision::F16;
    ir::Precision vectorPrecision = ir::Precision::F16;
    /// The target's cores and channel block (copied like npuLayout): what split-global-pool
    /// weighs a reduction's parallelism against.
    int numCores = 8;
    int c0 = 16;
    /// What a Task costs beside its work (a dispatch, a DRAM latency and a cross-core event), the
    /// DRAM's bytes per cycle and one core's cube MACs per cycle (copied like npuLayout): what the
    /// rules that trade Tasks for bytes or MACs weigh (fold-channel-shuffle, split-conv-over-concat).
    /// The defaults are npu-a's.
    uint64_t taskFixedCycles = 100 + 400 + 200;
    uint64_t dramBytesPerCycle = 512;
    uint64_t cubeMacsPerCycle = 16 * 16 * 16;
};

/// The graph after one pass, as the GUI's pass stepper shows it. Snapshots are structurally
/// shared (SnapshotState.h): a snapshot holds shared immutable records of the graph's nodes and
/// values, and consecutive snapshots share every record the pass between them left alone; a pass
/// that changed nothing shares the previous snapshot's whole state. The Graph and its text are
/// produced only when asked for, so a pipeline run pays neither for a clone nor for printing.
struct Snapshot {
    std::string passId;                   ///< "input" for the first snapshot
    std::shared_ptr<const SnapshotState> state; ///< shared with the previous snapshot if unchanged
    bool changed = false;                 ///< the printed IR differs from the previous snapshot's
    double millis = 0;                    ///< wall time of the pass (0 for "input")

    /// The graph after the pass, rebuilt from the records on first use and shared while anyone
    /// holds it (hold the pointer while using its nodes). Null only if the state is missing.
    std::shared_ptr<const ir::Graph> graph() const;
    /// ir::printGraph of graph(), printed on first use and kept with the state.
    const std::string& text() const;
    /// Node count without building the graph.
    size_t numNodes() const;
};

/// Why a rule that matched a node's op did not apply there.
struct RuleRejection {
    std::string rule;
    std::string node;
    std::string pass;
    std::string reason; ///< "conv output has 2 users"
};

/// Counters for one rewrite rule over a whole pipeline run.
struct RuleStats {
    std::string rule;
    int64_t matched = 0;  ///< match() accepted the node (applied + skipped)
    int64_t applied = 0;  ///< the rewrite happened
    int64_t skipped = 0;  ///< matched but not applied because of the bisect limit
    int64_t rejected = 0; ///< the rule looked at a node of its op kinds but could not apply
    std::map<std::string, int64_t> reasons; ///< rejection reason -> count
    double millis = 0; ///< wall time in the rule's match and apply calls
};

/// One rule application, numbered globally across the pipeline (1, 2, 3, ...). A bisect limit of
/// N keeps exactly the applications with seq <= N.
struct RuleApplication {
    int seq = 0;
    std::string rule;
    std::string node; ///< the anchor node (its name is kept by the node that replaces it)
    std::string pass;
};

/// A node a pass removed without a replacement that carries its origins (an Identity, a no-op,
/// an inverse Transpose pair, a dead node), with the reason, so that every original ONNX node is
/// accounted for: covered by a final node's origins, folded into a constant, or listed here.
struct NodeRemoval {
    std::string node;
    std::vector<std::string> origins;
    std::string pass;
    std::string rule; ///< empty for plain passes (dce)
    std::string reason;
};

/// Everything a pipeline run produced.
struct PipelineResult {
    std::vector<Snapshot> snapshots;           ///< [0] is "input", then one per pass that ran
    std::shared_ptr<ir::Graph> graph;          ///< the final graph
    std::vector<RuleStats> stats;              ///< one per rule, in listRules() order
    std::vector<RuleApplication> applications; ///< applied ones, in seq order
    std::vector<RuleApplication> skipped;      ///< matched but cut by the bisect limit
    std::vector<RuleRejection> rejections;     ///< in the order they were found
    /// Where constants created by rewrites came from (folded values, fused weights and biases):
    /// value name -> ONNX origins + "<pass>/<rule>". Imported constants are not listed (they are
    /// the model's own initializers); a constant a later pass removed keeps its entry, since
    /// earlier snapshots still show it.
    std::map<std::string, ir::Provenance> constantProvenance;
    std::vector<NodeRemoval> removals; ///< in the order they happened
};

/// Describes a pass for listings (`sextant-cli rules`, the GUI pipeline panel).
struct PassInfo {
    std::string id;
    std::string summary;
    std::vector<std::string> rules; ///< ids of the rules a pattern-rewrite pass drives
    int minLevel = 1;               ///< the lowest optimisation level it runs at
};

/// Describes a rewrite rule for listings.
struct RuleInfo {
    std::string id;
    std::string summary;
    std::string pass; ///< the pass that drives it
    /// The rule changes numerics beyond rounding (softmax without max-subtraction, f16 folding):
    /// it runs only at O3 or when switched on, and its summary says so.
    bool tradesAccuracy = false;
    int minLevel = 1; ///< its pass's level, or 3 when it trades accuracy
};

/// Runs the default pipeline on a copy of `input` (constants shared, never copied).
/// Instrumentation around every pass: the verifier (when verifyEach), timing, a snapshot and a
/// progress call `progress(done, total, passId)`. `cancel` is polled between passes.
/// Errors: an unknown id in `disabled` or `stopAfter` (subject = that id), a pass failing or
/// leaving a graph the verifier rejects (subject = the pass id), cancellation (Cancelled).
/// Use runPipelineInto to keep the snapshots taken before a failure.
Expected<PipelineResult>
runPipeline(const ir::Graph& input, const PipelineConfig& config,
            const std::atomic<bool>* cancel = nullptr,
            std::function<void(int done, int total, const std::string& passId)> progress = {});

/// Like runPipeline, but fills `result` as it goes, so that on an error `result` still holds the
/// snapshots (and rule records) of every pass that completed before it; `result.graph` is then
/// the graph as the failing pass left it (for a crash-reproducer style look).
Status
runPipelineInto(const ir::Graph& input, const PipelineConfig& config, PipelineResult& result,
                const std::atomic<bool>* cancel = nullptr,
                std::function<void(int done, int total, const std::string& passId)> progress = {});

/// runPipelineInto over an explicit pass list instead of the default pipeline: same
/// instrumentation, same config checks (ids are checked against these passes and their rules).
/// For tests, tools that build their own pipelines, and later the backend phases.
Status
runPassesInto(const ir::Graph& input, const std::vector<std::unique_ptr<Pass>>& passes,
              const PipelineConfig& config, PipelineResult& result,
              const std::atomic<bool>* cancel = nullptr,
              std::function<void(int done, int total, const std::string& passId)> progress = {});

/// The passes of the default pipeline, in the order they run.
std::vector<PassInfo> listPasses();
/// Every rewrite rule, grouped by pass in pipeline order, then the backend's rules.
std::vector<RuleInfo> listRules();
/// The rules of the backend phase "lower", which act on the lowered Program rather than the
/// graph (keep-on-chip). They take the same switches as graph rules, are counted in
/// PipelineResult::stats, and their applications are numbered after the graph rules' (so a
/// bisect limit covers them); runtime::compileGraph hands their switches to backend::lower.
std::vector<RuleInfo> backendRules();
/// Whether the rule `id` runs under `config` (disabled, switched on, or by level), as the pass
/// manager decides it for graph rules.
bool ruleRuns(const PipelineConfig& config, const std::string& id);
/// The id among `candidates` closest to `id` by edit distance (first of equals; empty when there
/// are no candidates), for "did you mean" hints.
std::string closestId(const std::string& id, const std::vector<std::string>& candidates);
/// Checks that every id in `config` names a pass or a rule; the error names the first unknown one.
Status validateConfig(const PipelineConfig& config);

} // namespace sextant::passes
