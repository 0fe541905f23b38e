#include "PassManager.h"

#include "PassContext.h"
#include "Passes.h"
#include "RewriteRule.h"

#include "core/ir/Verifier.h"

#include <algorithm>
#include <chrono>

namespace sextant::passes {

namespace {

/// The gate a rule has on its own, inside its pass: accuracy-trading rules need O3.
int ownRuleLevel(const RuleDescription& r) {
    return r.tradesAccuracy ? 3 : 0;
}

/// The backend's rules: listed, switched and counted like graph rules, applied by the lowering.
const std::vector<RuleInfo>& backendRuleList() {
    static const std::vector<RuleInfo> rules{
        RuleInfo{"keep-on-chip",
                 "keep a feature map in its core's SRAM from producer to last consumer when they run on one "
                 "core and it fits beside their tile slots (no DRAM write, no DRAM read)",
                 "lower", false, 2},
    };
    return rules;
}

std::vector<RuleInfo> rulesOf(const std::vector<std::unique_ptr<Pass>>& passes) {
    std::vector<RuleInfo> out;
    for (const auto& p : passes)
        for (const RuleDescription& r : p->describeRules())
            out.push_back(RuleInfo{r.id, r.summary, p->id(), r.tradesAccuracy,
                                   std::max(p->minLevel(), ownRuleLevel(r))});
    for (const RuleInfo& r : backendRuleList())
        out.push_back(r);
    return out;
}

/// Pass id -> its level, rule id -> its own gate (the pass's gate applies separately).
std::map<std::string, int> levelsOf(const std::vector<std::unique_ptr<Pass>>& passes) {
    std::map<std::string, int> levels;
    for (const auto& p : passes) {
        levels[p->id()] = p->minLevel();
        for (const RuleDescription& r : p->describeRules())
            levels[r.id] = ownRuleLevel(r);
    }
    for (const RuleInfo& r : backendRuleList())
        levels[r.id] = r.minLevel;
    return levels;
}

} // namespace

std::vector<PassInfo> listPasses() {
    std::vector<PassInfo> out;
    for (const auto& p : defaultPipeline())
        out.push_back(PassInfo{p->id(), p->summary(), p->ruleIds(), p->minLevel()});
    return out;
}

std::vector<RuleInfo> listRules() {
    return rulesOf(defaultPipeline());
}

std::vector<RuleInfo> backendRules() {
    return backendRuleList();
}

bool ruleRuns(const PipelineConfig& config, const std::string& id) {
    PassContext probe(config, levelsOf(defaultPipeline()));
    return probe.isEnabled(id);
}

namespace {
size_t editDistance(const std::string& a, const std::string& b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
        }
    }
    return row[b.size()];
}
} // namespace

std::string closestId(const std::string& id, const std::vector<std::string>& candidates) {
    std::string best;
    size_t bestDist = 0;
    for (const std::string& c : candidates) {
        size_t d = editDistance(id, c);
        if (best.empty() || d < bestDist) {
            best = c;
            bestDist = d;
        }
    }
    return best;
}

namespace {

Status validateAgainst(const PipelineConfig& config,
                       const std::vector<std::unique_ptr<Pass>>& passes) {
    std::vector<RuleInfo> rules = rulesOf(passes);
    std::vector<std::string> allIds;
    for (const auto& p : passes)
        allIds.push_back(p->id());
    for (const RuleInfo& r : rules)
        allIds.push_back(r.id);
    auto isPass = [&](const std::string& id) {
        for (const auto& p : passes)
            if (p->id() == id)
                return true;
        return false;
    };
    auto ruleInfo = [&](const std::string& id) -> const RuleInfo* {
        for (const RuleInfo& r : rules)
            if (r.id == id)
                return &r;
        return nullptr;
    };
    auto unknown = [&](const std::string& id, const std::string& where) {
        return makeError(ErrorKind::Invalid,
                         "unknown pass or rule id '" + id + "'" + where + " (did you mean '" +
                             closestId(id, allIds) + "'? see 'sextant-cli rules' for the list)",
                         id);
    };
    if (config.optLevel < 0 || config.optLevel > 3)
        return makeError(ErrorKind::Invalid, "optimisation level must be 0..3, got " +
                                                 std::to_string(config.optLevel));
    for (const std::string& id : config.disabled)
        if (!isPass(id) && !ruleInfo(id))
            return unknown(id, " in the disabled ids");
    for (const std::string& id : config.enabled) {
        if (!isPass(id) && !ruleInfo(id))
            return unknown(id, " in the switched-on ids");
        if (config.disabled.count(id))
            return makeError(ErrorKind::Invalid,
                             "'" + id + "' is both disabled and switched on", id);
    }
    if (!config.stopAfter.empty() && !isPass(config.stopAfter))
        return makeError(ErrorKind::Invalid,
                         "unknown pass id '" + config.stopAfter + "' in stop-after (did you mean '" +
                             closestId(config.stopAfter, allIds) + "'?)",
                         config.stopAfter);
    if (config.bisectLimit < -1)
        return makeError(ErrorKind::Invalid, "bisect limit must be >= 0 (or -1 for none), got " +
                                                 std::to_string(config.bisectLimit));
    // A rule switched on must have a pass that runs, or the switch silently does nothing.
    PassContext probe(config, levelsOf(passes));
    for (const std::string& id : config.enabled) {
        const RuleInfo* r = ruleInfo(id);
        if (!r || probe.isEnabled(r->pass))
            continue;
        int passLevel = 0;
        for (const auto& p : passes)
            if (p->id() == r->pass)
                passLevel = p->minLevel();
        const std::string why = config.disabled.count(r->pass)
                                    ? "is disabled"
                                    : "does not run at -O" + std::to_string(config.optLevel) +
                                          " (it needs -O" + std::to_string(passLevel) +
                                          " or the pass switched on too)";
        return makeError(ErrorKind::Invalid,
                         "rule '" + id + "' is switched on but its pass '" + r->pass + "' " + why,
                         id);
    }
    return {};
}

} // namespace

Status validateConfig(const PipelineConfig& config) {
    return validateAgainst(config, defaultPipeline());
}

Status runPipelineInto(const ir::Graph& input, const PipelineConfig& config, PipelineResult& result,
                       const std::atomic<bool>* cancel,
                       std::function<void(int, int, const std::string&)> progress) {
    return runPassesInto(input, defaultPipeline(), config, result, cancel, std::move(progress));
}

Status runPassesInto(const ir::Graph& input, const std::vector<std::unique_ptr<Pass>>& passes,
                     const PipelineConfig& config, PipelineResult& result,
                     const std::atomic<bool>* cancel,
                     std::function<void(int, int, const std::string&)> progress) {
    result = PipelineResult{};
    SX_TRY(validateAgainst(config, passes));

    std::vector<std::string> ruleOrder;
    for (const auto& p : passes)
        for (const std::string& r : p->ruleIds())
            ruleOrder.push_back(r);
    for (const RuleInfo& r : backendRuleList()) // counted by compileGraph once the Program exists
        ruleOrder.push_back(r.id);
    // Which passes will run: up to stop-after, minus the disabled ones.
    std::map<std::string, int> levels = levelsOf(passes);
    std::vector<Pass*> plan;
    for (const auto& p : passes) {
        PassContext probe(config, levels);
        if (probe.isEnabled(p->id()))
            plan.push_back(p.get());
        if (p->id() == config.stopAfter)
            break;
    }
    const int total = static_cast<int>(plan.size());

    SX_ASSIGN(std::shared_ptr<ir::Graph> graph, input.clone());
    result.graph = graph;
    PassContext ctx(config, levels);
    // Statistics, applications and provenance go into `result` once, however this returns: a
    // failed or cancelled run still reports what the passes before it did.
    struct ExportOnReturn {
        PassContext& ctx;
        PipelineResult& result;
        const std::vector<std::string>& ruleOrder;
        ~ExportOnReturn() { ctx.exportTo(result, ruleOrder); }
    } exportOnReturn{ctx, result, ruleOrder};

    if (config.verifyEach) {
        Status s = ir::verifyGraph(*graph);
        if (!s.ok()) {
            Error e = s.takeError();
            e.message = "input graph fails verification: " + e.message;
            e.subject = "input";
            return e;
        }
    }
    result.snapshots.push_back(
        Snapshot{"input", SnapshotState::capture(*graph, nullptr), false, 0.0});

    int done = 0;
    for (Pass* pass : plan) {
        const std::string id = pass->id();
        if (cancel && cancel->load())
            return makeError(ErrorKind::Cancelled, "cancelled before pass '" + id + "'", id);
        ctx.setCurrentPass(id);
        auto t0 = std::chrono::steady_clock::now();
        Expected<bool> ran = pass->run(*graph, ctx);
        const double millis = millisSince(t0);
        if (!ran.ok()) {
            Error e = ran.takeError();
            e.message = "pass '" + id + "' failed: " + e.message;
            e.subject = id;
            return e;
        }
        // Freeze the graph against the previous snapshot: records of untouched nodes are
        // shared, and `changed` says whether anything printGraph shows differs.
        const std::shared_ptr<const SnapshotState>& previous = result.snapshots.back().state;
        bool changed = false;
        std::shared_ptr<const SnapshotState> state =
            SnapshotState::capture(*graph, previous.get(), &changed);
        // A pass that changed nothing leaves the verified graph as it was: verifying it again
        // could not find anything new.
        if (config.verifyEach && changed) {
            Status s = ir::verifyGraph(*graph);
            if (!s.ok()) {
                Error e = s.takeError();
                e.kind = ErrorKind::Verify;
                e.message = "graph fails verification after pass '" + id + "': " + e.message;
                e.subject = id;
                return e;
            }
        }
        result.snapshots.push_back(
            Snapshot{id, changed ? std::move(state) : previous, changed, millis});
        ++done;
        if (progress)
            progress(done, total, id);
    }
    return {};
}

std::shared_ptr<const ir::Graph> Snapshot::graph() const {
    return state ? state->graph() : nullptr;
}

const std::string& Snapshot::text() const {
    static const std::string kEmpty;
    return state ? state->text() : kEmpty;
}

size_t Snapshot::numNodes() const {
    return state ? state->numNodes() : 0;
}

Expected<PipelineResult> runPipeline(const ir::Graph& input, const PipelineConfig& config,
                                     const std::atomic<bool>* cancel,
                                     std::function<void(int, int, const std::string&)> progress) {
    PipelineResult result;
    SX_TRY(runPipelineInto(input, config, result, cancel, std::move(progress)));
    return result;
}

} // namespace sextant::passes
