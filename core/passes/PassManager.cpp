#include "PassManager.h"

#include "PassContext.h"
#include "Passes.h"
#include "RewriteRule.h"

#include "core/ir/Printer.h"
#include "core/ir/Verifier.h"

#include <chrono>

namespace sextant::passes {

namespace {
std::vector<RuleInfo> rulesOf(const std::vector<std::unique_ptr<Pass>>& passes);
} // namespace

std::vector<PassInfo> listPasses() {
    std::vector<PassInfo> out;
    for (const auto& p : defaultPipeline())
        out.push_back(PassInfo{p->id(), p->summary(), p->ruleIds()});
    return out;
}

std::vector<RuleInfo> listRules() {
    return rulesOf(defaultPipeline());
}

namespace {

std::vector<RuleInfo> rulesOf(const std::vector<std::unique_ptr<Pass>>& passes) {
    std::vector<RuleInfo> out;
    for (const auto& p : passes)
        if (const auto* rw = dynamic_cast<const PatternRewritePass*>(p.get()))
            for (const auto& r : rw->rules())
                out.push_back(RuleInfo{r->id(), r->summary(), p->id()});
    return out;
}

Status validateAgainst(const PipelineConfig& config,
                       const std::vector<std::unique_ptr<Pass>>& passes) {
    std::vector<RuleInfo> rules = rulesOf(passes);
    auto isPass = [&](const std::string& id) {
        for (const auto& p : passes)
            if (p->id() == id)
                return true;
        return false;
    };
    auto isRule = [&](const std::string& id) {
        for (const RuleInfo& r : rules)
            if (r.id == id)
                return true;
        return false;
    };
    for (const std::string& id : config.disabled)
        if (!isPass(id) && !isRule(id))
            return makeError(
                ErrorKind::Invalid,
                "unknown pass or rule id '" + id + "' (see 'sextant-cli rules' for the list)", id);
    if (!config.stopAfter.empty() && !isPass(config.stopAfter))
        return makeError(ErrorKind::Invalid,
                         "unknown pass id '" + config.stopAfter + "' in stop-after",
                         config.stopAfter);
    if (config.bisectLimit < -1)
        return makeError(ErrorKind::Invalid, "bisect limit must be >= 0 (or -1 for none), got " +
                                                 std::to_string(config.bisectLimit));
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
    // Which passes will run: up to stop-after, minus the disabled ones.
    std::vector<Pass*> plan;
    for (const auto& p : passes) {
        PassContext probe(config);
        if (probe.isEnabled(p->id()))
            plan.push_back(p.get());
        if (p->id() == config.stopAfter)
            break;
    }
    const int total = static_cast<int>(plan.size());

    std::shared_ptr<ir::Graph> graph(input.clone());
    result.graph = graph;
    PassContext ctx(config);
    ctx.exportTo(result, ruleOrder);

    if (config.verifyEach) {
        Status s = ir::verifyGraph(*graph);
        if (!s.ok()) {
            Error e = s.takeError();
            e.message = "input graph fails verification: " + e.message;
            e.subject = "input";
            return e;
        }
    }
    result.snapshots.push_back(Snapshot{"input", std::shared_ptr<const ir::Graph>(graph->clone()),
                                        ir::printGraph(*graph), false, 0.0});

    int done = 0;
    for (Pass* pass : plan) {
        const std::string id = pass->id();
        if (cancel && cancel->load())
            return makeError(ErrorKind::Cancelled, "cancelled before pass '" + id + "'", id);
        ctx.setCurrentPass(id);
        auto t0 = std::chrono::steady_clock::now();
        Expected<bool> ran = pass->run(*graph, ctx);
        double millis =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        ctx.exportTo(result, ruleOrder);
        if (!ran.ok()) {
            Error e = ran.takeError();
            e.message = "pass '" + id + "' failed: " + e.message;
            e.subject = id;
            return e;
        }
        if (config.verifyEach) {
            Status s = ir::verifyGraph(*graph);
            if (!s.ok()) {
                Error e = s.takeError();
                e.kind = ErrorKind::Verify;
                e.message = "graph fails verification after pass '" + id + "': " + e.message;
                e.subject = id;
                return e;
            }
        }
        std::string text = ir::printGraph(*graph);
        const bool changed = text != result.snapshots.back().text;
        result.snapshots.push_back(Snapshot{id, std::shared_ptr<const ir::Graph>(graph->clone()),
                                            std::move(text), changed, millis});
        ++done;
        if (progress)
            progress(done, total, id);
    }
    return {};
}

Expected<PipelineResult> runPipeline(const ir::Graph& input, const PipelineConfig& config,
                                     const std::atomic<bool>* cancel,
                                     std::function<void(int, int, const std::string&)> progress) {
    PipelineResult result;
    SX_TRY(runPipelineInto(input, config, result, cancel, std::move(progress)));
    return result;
}

} // namespace sextant::passes
