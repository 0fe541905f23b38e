#include "Bisect.h"

#include "ReferenceExecutor.h"

#include "core/ir/Printer.h"

namespace sextant::runtime {

namespace {

Expected<BisectProbe> probe(const ir::Graph& graph, passes::PipelineConfig config, const BisectBaseline& b,
                            int64_t limit) {
    config.bisectLimit = limit;
    SX_ASSIGN(passes::PipelineResult r, passes::runPipeline(graph, config));
    SX_ASSIGN(std::vector<ir::Tensor> outputs, runReference(*r.graph, b.inputs, b.compute));
    if (outputs.size() != b.expected.size() || b.atols.size() != b.expected.size())
        return makeError(ErrorKind::Invalid, "the optimised graph has " + std::to_string(outputs.size()) +
                                                 " outputs, the baseline " + std::to_string(b.expected.size()));
    BisectProbe p;
    p.limit = limit;
    for (size_t i = 0; i < outputs.size(); ++i) {
        p.comparisons.push_back(compareTensors(r.graph->outputs()[i]->name(), outputs[i], b.expected[i], b.atols[i], b.rtol));
        p.pass = p.pass && p.comparisons.back().pass;
    }
    p.applications = std::move(r.applications);
    p.text = ir::printGraph(*r.graph);
    return p;
}

} // namespace

Expected<BisectOutcome> bisectRuleApplications(const ir::Graph& graph, const passes::PipelineConfig& config,
                                               const BisectBaseline& baseline,
                                               const std::function<void(const BisectProbe&)>& onProbe,
                                               const std::atomic<bool>* cancel) {
    auto next = [&](int64_t limit) -> Expected<BisectProbe> {
        if (cancel && cancel->load())
            return makeError(ErrorKind::Cancelled, "bisection cancelled");
        SX_ASSIGN(BisectProbe p, probe(graph, config, baseline, limit));
        if (onProbe)
            onProbe(p);
        return p;
    };
    BisectOutcome out;
    SX_ASSIGN(BisectProbe all, next(-1));
    out.applications = static_cast<int64_t>(all.applications.size());
    if (all.pass) {
        out.kind = BisectOutcome::Kind::NoDrift;
        out.bad = std::move(all);
        return out;
    }
    SX_ASSIGN(BisectProbe none, next(0));
    if (!none.pass) {
        out.kind = BisectOutcome::Kind::DriftWithoutRules;
        out.bad = std::move(none);
        return out;
    }
    // Invariant: limit good.limit passes, bad.limit fails; each probe halves the range.
    out.good = std::move(none);
    out.bad = std::move(all);
    out.bad.limit = out.applications;
    while (out.bad.limit - out.good.limit > 1) {
        const int64_t mid = out.good.limit + (out.bad.limit - out.good.limit) / 2;
        SX_ASSIGN(BisectProbe p, next(mid));
        (p.pass ? out.good : out.bad) = std::move(p);
    }
    if (out.bad.applications.empty())
        return makeError(ErrorKind::Invalid, "no rule application at limit " + std::to_string(out.bad.limit));
    out.kind = BisectOutcome::Kind::Culprit;
    out.culprit = out.bad.applications.back();
    return out;
}

} // namespace sextant::runtime
