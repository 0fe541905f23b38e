#include "PassContext.h"

namespace sextant::passes {

PassContext::PassContext(const PipelineConfig& config, std::map<std::string, int> levels)
    : m_config(config), m_levels(std::move(levels)) {}

bool PassContext::isEnabled(const std::string& id) const {
    if (m_config.disabled.count(id))
        return false;
    if (m_config.enabled.count(id))
        return true;
    auto it = m_levels.find(id);
    return it == m_levels.end() || it->second <= m_config.optLevel;
}

void PassContext::addRuleTime(const std::string& rule, double millis) {
    statsFor(rule).millis += millis;
}

RuleStats& PassContext::statsFor(const std::string& rule) {
    RuleStats& s = m_stats[rule];
    s.rule = rule;
    return s;
}

bool PassContext::requestApplication(const std::string& rule, const std::string& node) {
    if (m_config.bisectLimit >= 0 && m_seq >= m_config.bisectLimit) {
        // A later sweep of the same pass meets the same match again: count it once.
        if (!m_seenSkips.emplace(m_pass, rule, node).second)
            return false;
        RuleStats& s = statsFor(rule);
        ++s.matched;
        ++s.skipped;
        m_skipped.push_back(RuleApplication{0, rule, node, m_pass});
        return false;
    }
    RuleStats& s = statsFor(rule);
    ++s.matched;
    ++s.applied;
    m_applications.push_back(RuleApplication{++m_seq, rule, node, m_pass});
    return true;
}

void PassContext::reject(const std::string& rule, const std::string& node,
                         const std::string& reason) {
    if (!m_seenRejections.emplace(m_pass, rule, node, reason).second)
        return;
    RuleStats& s = statsFor(rule);
    ++s.rejected;
    ++s.reasons[reason];
    m_rejections.push_back(RuleRejection{rule, node, m_pass, reason});
}

void PassContext::noteConstant(const std::string& name, ir::Provenance provenance) {
    m_constants[name] = std::move(provenance);
}

void PassContext::noteRemoved(const ir::Node& node, const std::string& rule,
                              const std::string& reason) {
    m_removals.push_back(NodeRemoval{node.name(), node.provenance().origins, m_pass, rule, reason});
}

const ir::Provenance* PassContext::constantProvenance(const std::string& name) const {
    auto it = m_constants.find(name);
    return it == m_constants.end() ? nullptr : &it->second;
}

void PassContext::exportTo(PipelineResult& result, const std::vector<std::string>& ruleOrder) {
    result.stats.clear();
    for (const std::string& id : ruleOrder) {
        auto it = m_stats.find(id);
        RuleStats s = it == m_stats.end() ? RuleStats{} : it->second;
        s.rule = id;
        result.stats.push_back(std::move(s));
    }
    result.applications = std::move(m_applications);
    result.skipped = std::move(m_skipped);
    result.rejections = std::move(m_rejections);
    result.constantProvenance = std::move(m_constants);
    result.removals = std::move(m_removals);
}

} // namespace sextant::passes
