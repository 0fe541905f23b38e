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

/// What the driver needs of a rule on every node, computed once per run: id(), targets() and
/// isEnabled() build strings and vectors, and asking them for each (node, rule) pair made
/// allocation the biggest cost of the pattern passes on large graphs.
struct RuleSlot {
    const RewriteRule* rule = nullptr;
    std::string id;
    std::vector<ir::OpKind> targets; ///< empty: every op
    bool enabled = false;
    double millis = 0;     ///< wall time in match and apply, added to the statistics at the end
    bool timed = false;    ///< whether the rule was asked at all (only those get a time entry)

    bool accepts(ir::OpKind kind) const {
        return targets.empty() || std::find(targets.begin(), targets.end(), kind) != targets.end();
    }
};

/// Adds the wall time of its scope to a slot.
class SlotTimer {
public:
    explicit SlotTimer(RuleSlot& slot) : m_slot(slot), m_start(std::chrono::steady_clock::now()) {}
    ~SlotTimer() {
        m_slot.timed = true;
        m_slot.millis += millisSince(m_start);
    }

private:
    RuleSlot& m_slot;
    std::chrono::steady_clock::time_point m_start;
};

/// Hands the slots' times to the context when the run ends, however it ends.
class FlushTimes {
public:
    FlushTimes(std::vector<RuleSlot>& slots, PassContext& ctx) : m_slots(slots), m_ctx(ctx) {}
    ~FlushTimes() {
        for (const RuleSlot& s : m_slots)
            if (s.timed)
                m_ctx.addRuleTime(s.id, s.millis);
    }

private:
    std::vector<RuleSlot>& m_slots;
    PassContext& m_ctx;
};

std::vector<RuleSlot> makeSlots(const std::vector<std::unique_ptr<RewriteRule>>& rules, PassContext& ctx) {
    std::vector<RuleSlot> slots;
    slots.reserve(rules.size());
    for (const auto& rule : rules) {
        rule->configure(ctx.config());
        RuleSlot s;
        s.rule = rule.get();
        s.id = rule->id();
        s.targets = rule->targets();
        s.enabled = ctx.isEnabled(s.id) && rule->activeNow();
        slots.push_back(std::move(s));
    }
    return slots;
}

/// The nodes one sweep walks, listed when it began. A rewrite may erase listed nodes, and the
/// replacement of an anchor takes the anchor's name, so a listed node that is gone stands for
/// whatever node now has its name (if any). Each listed node carries its position
/// (Node::scratch, 1-based; nodes made during the sweep have 0) and the graph logs the nodes it
/// erases with it (`erasedLog`), so the walk keeps the names of erased listed nodes by
/// position: no copy or lookup per node, and no hash table keyed by node (on a large graph
/// those were a good part of the pass's time).
class ListedNodes {
public:
    ListedNodes(ir::Graph& graph, std::vector<ir::ErasedNode>& erasedLog)
        : m_graph(graph), m_erasedLog(erasedLog) {}

    /// Lists the graph's nodes for a new sweep.
    void relist() {
        m_listed = m_graph.nodes();
        for (size_t i = 0; i < m_listed.size(); ++i)
            m_listed[i]->setScratch(static_cast<uint32_t>(i + 1));
        m_erasedLog.clear();
        m_erasedAt.assign(m_listed.size(), 0);
        m_erasedNames.clear();
    }

    size_t size() const { return m_listed.size(); }

    /// The node standing for the listed node at position i now.
    ir::Node* current(size_t i) {
        for (ir::ErasedNode& e : m_erasedLog) {
            const size_t at = e.scratch;
            if (at >= 1 && at <= m_listed.size() && m_listed[at - 1] == e.node && !m_erasedAt[at - 1]) {
                m_erasedNames.push_back(std::move(e.name));
                m_erasedAt[at - 1] = static_cast<uint32_t>(m_erasedNames.size());
            }
        }
        m_erasedLog.clear();
        return m_erasedAt[i] ? m_graph.findNode(m_erasedNames[m_erasedAt[i] - 1]) : m_listed[i];
    }

private:
    ir::Graph& m_graph;
    std::vector<ir::ErasedNode>& m_erasedLog;
    std::vector<ir::Node*> m_listed;
    // By position in m_listed: 0, or 1 + the index in m_erasedNames of the name the erased node
    // had (a compact array: every listed node's entry is read once per sweep).
    std::vector<uint32_t> m_erasedAt;
    std::vector<std::string> m_erasedNames;
};

/// Offers the node standing for listed position `i` to every rule in turn (the node may change
/// as rules rewrite it); true when one applied. A failing rule's error names it and the node.
Expected<bool> applyRulesAt(ir::Graph& graph, PassContext& ctx, const std::string& passId,
                            std::vector<RuleSlot>& slots, ListedNodes& listed, size_t i) {
    bool changed = false;
    ir::Node* node = listed.current(i);
    uint64_t version = graph.structureVersion();
    for (RuleSlot& slot : slots) {
        if (graph.structureVersion() != version) {
            node = listed.current(i);
            version = graph.structureVersion();
        }
        if (!node)
            break;
        if (!slot.enabled || !slot.accepts(node->kind()))
            continue;
        SlotTimer timer(slot);
        Match m = slot.rule->match(*node);
        if (m.kind == Match::Kind::NoMatch)
            continue;
        if (m.kind == Match::Kind::Rejected) {
            ctx.reject(slot.id, node->name(), m.reason);
            continue;
        }
        const std::string name = node->name();
        if (!ctx.requestApplication(slot.id, name))
            continue;
        RewriteContext rc(passId + "/" + slot.id, ctx);
        Status s = slot.rule->apply(graph, *node, m, rc);
        if (!s.ok()) {
            Error e = s.takeError();
            e.message = "rule '" + slot.id + "' at node '" + name + "': " + e.message;
            e.subject = slot.id;
            return e;
        }
        changed = true;
    }
    return changed;
}
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
    std::vector<RuleSlot> slots = makeSlots(m_rules, ctx);
    FlushTimes flush(slots, ctx);
    // Each sweep walks the nodes as they were listed when it began (ListedNodes says how).
    std::vector<ir::ErasedNode> erasedLog;
    struct DetachLog {
        ir::Graph& g;
        ~DetachLog() { g.setEraseLog(nullptr); }
    } detach{graph};
    graph.setEraseLog(&erasedLog);
    ListedNodes listed(graph, erasedLog);
    bool changedAny = false;
    for (int sweep = 0; sweep < kMaxSweeps; ++sweep) {
        bool changed = false;
        listed.relist();
        for (size_t i = 0; i < listed.size(); ++i) {
            SX_ASSIGN(bool applied, applyRulesAt(graph, ctx, m_id, slots, listed, i));
            changed |= applied;
        }
        if (!changed)
            break;
        changedAny = true;
    }
    return changedAny;
}

} // namespace sextant::passes
