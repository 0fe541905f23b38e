#pragma once

#include "PassManager.h"

#include <chrono>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace sextant::passes {

/// Wall milliseconds since `t0` (pass and rule statistics).
inline double millisSince(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
        .count();
}

/// The state a pipeline run carries from pass to pass: the config, rule counters, the global
/// numbering of rule applications and the bisect limit. Passes ask it; they never read the
/// config themselves, so the rule for "does this run" lives in exactly one place (isEnabled).
class PassContext {
public:
    /// `levels` maps pass and rule ids to the lowest optimisation level they run at (ids not
    /// in it run at every level).
    explicit PassContext(const PipelineConfig& config, std::map<std::string, int> levels = {});

    const PipelineConfig& config() const { return m_config; }

    /// Whether the pass or rule with this id may run: disabled beats switched on, switched on
    /// beats the optimisation level. The only place that decides; everything else asks.
    bool isEnabled(const std::string& id) const;

    /// Adds wall time spent in `rule` (its match and apply calls) to its statistics.
    void addRuleTime(const std::string& rule, double millis);

    /// The pass now running (set by the pass manager); recorded with applications.
    const std::string& currentPass() const { return m_pass; }
    void setCurrentPass(std::string passId) { m_pass = std::move(passId); }

    /// Called when `rule` matched `node`. Returns true when the rewrite may happen (it is then
    /// numbered and recorded as applied), false when the bisect limit has been reached (it is
    /// recorded as skipped and the caller must leave the graph alone).
    bool requestApplication(const std::string& rule, const std::string& node);
    /// Records that `rule` looked at `node` (one of its op kinds) but cannot apply, and why.
    /// The same (rule, node, reason) is counted once per pass run, however often it is seen.
    void reject(const std::string& rule, const std::string& node, const std::string& reason);

    /// Records where a constant created by a rewrite came from (see
    /// PipelineResult::constantProvenance). A later note for the same name replaces it.
    void noteConstant(const std::string& name, ir::Provenance provenance);
    /// The provenance noted for constant `name`, or nullptr (imported constants have none).
    const ir::Provenance* constantProvenance(const std::string& name) const;

    /// Records that `node` is being removed by `rule` (empty for a plain pass) and why; call it
    /// before erasing the node. See PipelineResult::removals.
    void noteRemoved(const ir::Node& node, const std::string& rule, const std::string& reason);

    /// How many applications have happened so far (the last seq handed out).
    int applicationCount() const { return m_seq; }

    /// Moves the records into a result (once, when the run ends); `ruleOrder` fixes the order of
    /// `stats`.
    void exportTo(PipelineResult& result, const std::vector<std::string>& ruleOrder);

private:
    RuleStats& statsFor(const std::string& rule);

    const PipelineConfig& m_config;
    std::map<std::string, int> m_levels;
    std::string m_pass;
    int m_seq = 0;
    std::map<std::string, RuleStats> m_stats;
    std::vector<RuleApplication> m_applications;
    std::vector<RuleApplication> m_skipped;
    std::vector<RuleRejection> m_rejections;
    std::map<std::string, ir::Provenance> m_constants;
    std::vector<NodeRemoval> m_removals;
    std::set<std::tuple<std::string, std::string, std::string, std::string>> m_seenRejections;
    std::set<std::tuple<std::string, std::string, std::string>> m_seenSkips;
};

} // namespace sextant::passes
