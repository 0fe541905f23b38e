#pragma once

#include "Pass.h"

#include "core/ir/Error.h"
#include "core/ir/Graph.h"

#include <cassert>
#include <memory>
#include <string>
#include <vector>

namespace sextant::passes {

class PassContext;
struct PipelineConfig;

/// What a rule's apply() gets besides the graph: the provenance tag for the nodes it creates,
/// and a place to record where the constants it creates came from (an ir::Value has no
/// provenance of its own; PipelineResult::constantProvenance collects these).
class RewriteContext {
public:
    RewriteContext(std::string createdBy, PassContext& pass)
        : m_createdBy(std::move(createdBy)), m_pass(pass) {}
    /// "<pass-id>/<rule-id>", for Provenance::createdBy of new nodes.
    const std::string& createdBy() const { return m_createdBy; }
    /// Records that constant `name` was computed from `from`: the union of their origins and of
    /// the origins noted for constants they read (so a weight folded twice keeps both sources).
    void noteConstant(const std::string& name, const std::vector<const ir::Node*>& from);
    /// Records that `node` is removed and why, when no node or constant that stays takes over
    /// its origins (removing an Identity, cancelling a Transpose pair). Call before erasing.
    void noteRemoved(const ir::Node& node, const std::string& reason);

private:
    std::string m_createdBy;
    PassContext& m_pass;
};

/// What a rule's match() found, handed to its apply(): the nodes and values the rewrite will
/// touch, so apply() acts on what was checked instead of looking for it again (and can never find
/// something else). Each rule that needs one derives its own plan type from this.
struct MatchPlan {
    virtual ~MatchPlan() = default;
};

/// The outcome of RewriteRule::match on one node.
struct Match {
    enum class Kind { NoMatch, Matched, Rejected };
    Kind kind = Kind::NoMatch;
    std::string reason; ///< why a node of the rule's op kinds cannot be rewritten (Rejected)
    /// Matched: what apply() rewrites, as the rule that matched built it (null for rules whose
    /// rewrite needs nothing beyond the anchor).
    std::unique_ptr<const MatchPlan> plan;

    static Match none() { return {Kind::NoMatch, {}, nullptr}; }
    static Match matched(std::unique_ptr<const MatchPlan> plan = nullptr) {
        return {Kind::Matched, {}, std::move(plan)};
    }
    static Match rejected(std::string why) { return {Kind::Rejected, std::move(why), nullptr}; }

    /// The plan as the type the matching rule gave it; only that rule's apply() asks.
    template <typename P> const P& planAs() const {
        assert(dynamic_cast<const P*>(plan.get()) && "the plan is not of the rule's own type");
        return static_cast<const P&>(*plan);
    }
};

/// Runs a rule's planner, `planner(anchor, P&) -> Match`, and when it matched hands the plan it
/// filled on in the Match: the one place a rule's match() and apply() meet.
template <typename P, typename Planner> Match matchWithPlan(const ir::Node& anchor, Planner&& planner) {
    auto plan = std::make_unique<P>();
    Match m = planner(anchor, *plan);
    if (m.kind == Match::Kind::Matched)
        m.plan = std::move(plan);
    return m;
}

/// A local rewrite anchored at one node, in the style of onnxruntime's rewrite rules: it names
/// the op kinds it targets, checks its condition cheaply (match), then rewrites (apply).
/// A rule that replaces the anchor keeps the anchor's name on the new node and records
/// provenance (union of origins, createdBy "<pass>/<rule>").
class RewriteRule {
public:
    virtual ~RewriteRule() = default;
    /// Permanent kebab-case id ("fuse-conv-bn").
    virtual std::string id() const = 0;
    virtual std::string summary() const = 0;
    /// The op kinds an anchor may have; empty means every op.
    virtual std::vector<ir::OpKind> targets() const = 0;
    /// True for rules that change numerics beyond rounding (e.g. softmax without
    /// max-subtraction, BatchNorm folded in f16). They run only at -O3 (or when a fusion switch
    /// turns them on), and their summary() must say what they trade.
    virtual bool tradesAccuracy() const { return false; }
    /// False while the rule cannot match anything whatever the node (the fuse pass's rules
    /// outside their phase): the driver then does not offer it nodes at all.
    virtual bool activeNow() const { return true; }
    /// Called once per pass run, before any match: a rule that depends on the target facts the
    /// pipeline carries (PipelineConfig::numCores, c0, taskFixedCycles, ...) takes them here.
    virtual void configure(const PipelineConfig&) {}
    /// Cheap check, no graph changes. Rejected (with a reason) when the node looks like this
    /// rule's pattern but some condition fails, NoMatch when it is simply not the pattern.
    virtual Match match(const ir::Node& anchor) const = 0;
    /// Rewrites the graph around `anchor` as `match` (what match() returned for it, Matched, with
    /// nothing changed since) found it. New nodes get `rc.createdBy()` in their provenance; new
    /// constants are reported with rc.noteConstant. An error here is an internal failure of the
    /// rule.
    virtual Status apply(ir::Graph& graph, ir::Node& anchor, const Match& match, RewriteContext& rc) const = 0;
};

/// A pass that drives a list of rules over the graph to a fixed point: every node, in graph
/// order, is offered to every enabled rule (in list order) that targets its op kind.
class PatternRewritePass : public Pass {
public:
    PatternRewritePass(std::string id, std::string summary,
                       std::vector<std::unique_ptr<RewriteRule>> rules);

    std::string id() const override { return m_id; }
    std::string summary() const override { return m_summary; }
    std::vector<RuleDescription> describeRules() const override;
    const std::vector<std::unique_ptr<RewriteRule>>& rules() const { return m_rules; }
    Expected<bool> run(ir::Graph& graph, PassContext& ctx) override;

private:
    std::string m_id;
    std::string m_summary;
    std::vector<std::unique_ptr<RewriteRule>> m_rules;
};

} // namespace sextant::passes
