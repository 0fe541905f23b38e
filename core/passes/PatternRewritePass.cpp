#include "PassContext.h"
#include "RewriteRule.h"
#include "RewriteUtil.h"

#include <algorithm>
#include <chrono>
#include <set>

namespace sextant::passes {

namespace {
// A safety net against two rules undoing each other forever; real rule sets converge in 2-3.
constexpr int kMaxSweeps = 32;

bool targets(const RewriteRule& rule, ir::OpKind kind) {
    std::vector<ir::OpKind> t = rule.targets();
    return t.empty() || std::find(t.begin(), t.end(), kind) != t.end();
}

/// Adds the time since construction to a rule's statistics when it goes out of scope.
class RuleTimer {
public:
    RuleTimer(PassContext& ctx, const std::string& rule)
        : m_ctx(ctx), m_rule(rule), m_start(std::chrono::steady_clock::now()) {}
    ~RuleTimer() {
        m_ctx.addRuleTime(m_rule, std::chrono::duration<double, std::milli>(
                                      std::chrono::steady_clock::now() - m_start)
                                      .count());
    }

private:
    PassContext& m_ctx;
    const std::string& m_rule;
    std::chrono::steady_clock::time_point m_start;
};
} // namespace

void RewriteContext::noteConstant(const std::string& name,
                                  const std::vector<const ir::Node*>& from) {
    std::vector<std::string> origins = unionOrigins(from);
    std::set<std::string> all(origins.begin(), origins.end());
    for (const ir::Node* n : from)
        for (const ir::Value* in : n->inputs())
            if (in && in->isConstant())
                if (const ir::Provenance* p = m_pass.constantProvenance(in->name()))
                    all.insert(p->origins.begin(), p->origins.end());
    m_pass.noteConstant(name, ir::Provenance{{all.begin(), all.end()}, m_createdBy});
}

void RewriteContext::noteRemoved(const ir::Node& node, const std::string& reason) {
    const size_t slash = m_createdBy.find('/');
    m_pass.noteRemoved(node,
                       slash == std::string::npos ? m_createdBy : m_createdBy.substr(slash + 1),
                       reason);
}

PatternRewritePass::PatternRewritePass(std::string id, std::string summary,
                                       std::vector<std::unique_ptr<RewriteRule>> rules)
    : m_id(std::move(id)), m_summary(std::move(summary)), m_rules(std::move(rules)) {}

std::vector<RuleDescription> PatternRewritePass::describeRules() const {
    std::vector<RuleDescription> out;
    for (const auto& r : m_rules)
        out.push_back(RuleDescription{r->id(), r->summary(), r->tradesAccuracy()});
    return out;
}

Expected<bool> PatternRewritePass::run(ir::Graph& graph, PassContext& ctx) {
    bool changedAny = false;
    for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
        bool changed = false;
        // Walk by name: a rewrite may erase nodes, and the replacement of an anchor keeps its
        // name, so looking the name up again finds the node that now stands there.
        std::vector<std::string> names;
        for (const ir::Node* n : graph.nodes())
            names.push_back(n->name());
        for (const std::string& name : names) {
            for (const auto& rule : m_rules) {
                ir::Node* node = graph.findNode(name);
                if (!node)
                    break;
                if (!targets(*rule, node->kind()) || !ctx.isEnabled(rule->id()))
                    continue;
                const std::string ruleId = rule->id();
                RuleTimer timer(ctx, ruleId);
                Match m = rule->match(*node);
                if (m.kind == Match::Kind::NoMatch)
                    continue;
                if (m.kind == Match::Kind::Rejected) {
                    ctx.reject(rule->id(), name, m.reason);
                    continue;
                }
                if (!ctx.requestApplication(rule->id(), name))
                    continue;
                RewriteContext rc(m_id + "/" + rule->id(), ctx);
                Status s = rule->apply(graph, *node, rc);
                if (!s.ok()) {
                    Error e = s.takeError();
                    e.message = "rule '" + rule->id() + "' at node '" + name + "': " + e.message;
                    e.subject = rule->id();
                    return e;
                }
                changed = true;
            }
        }
        if (!changed)
            break;
        changedAny = true;
    }
    return changedAny;
}

} // namespace sextant::passes
