// cse: common-subexpression elimination. Two constants with the same dtype, shape and bytes are
// one constant; two nodes with the same op, attributes and inputs compute the same values.
#include "PassContext.h"
#include "Passes.h"
#include "RewriteUtil.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <unordered_map>

namespace sextant::passes {

namespace {

const char* kConstantRule = "cse-constant";
const char* kNodeRule = "cse-node";

bool sameAttribute(const ir::Attribute& a, const ir::Attribute& b) {
    if (a.index() != b.index())
        return false;
    if (const auto* t = std::get_if<ir::Tensor>(&a))
        return t->identical(std::get<ir::Tensor>(b));
    if (const auto* g = std::get_if<std::shared_ptr<const ir::Graph>>(&a))
        return g->get() == std::get<std::shared_ptr<const ir::Graph>>(b).get();
    return std::visit(
        [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, ir::Tensor> ||
                          std::is_same_v<T, std::shared_ptr<const ir::Graph>>)
                return false; // handled above
            else
                return x == std::get<T>(b);
        },
        a);
}

/// FNV-1a over at most 64 evenly spaced bytes of `t` plus its size: equal tensors always agree,
/// different ones almost never do, and the cost does not grow with the tensor.
uint64_t sampledFingerprint(const ir::Tensor& t) {
    const size_t n = t.byteSize();
    uint64_t h = 1469598103934665603ull ^ n;
    const std::byte* bytes = t.bytes();
    if (!bytes)
        return h;
    const size_t samples = std::min<size_t>(n, 64);
    for (size_t i = 0; i < samples; ++i) {
        const size_t at = samples == n ? i : i * (n - 1) / (samples - 1);
        h = (h ^ static_cast<uint64_t>(bytes[at])) * 1099511628211ull;
    }
    return h;
}

/// Same op, same attributes and typed fields (precision, view mark, body), the same input values
/// in the same slots, as many outputs.
bool sameComputation(const ir::Node& a, const ir::Node& b) {
    if (a.kind() != b.kind() || a.inputs() != b.inputs() || a.numOutputs() != b.numOutputs() ||
        a.attrs().size() != b.attrs().size() || a.precision() != b.precision() ||
        a.isView() != b.isView() || !ir::sameBody(a.body(), b.body()))
        return false;
    auto ia = a.attrs().begin();
    auto ib = b.attrs().begin();
    for (; ia != a.attrs().end(); ++ia, ++ib)
        if (ia->first != ib->first || !sameAttribute(ia->second, ib->second))
            return false;
    return true;
}

/// The input whose users are searched for twins: the first non-constant one (constants such as
/// shape tensors can have hundreds of unrelated users), else the first one.
const ir::Value* anchorInput(const ir::Node& n) {
    const ir::Value* first = nullptr;
    for (const ir::Value* v : n.inputs()) {
        if (!v)
            continue;
        if (!v->isConstant())
            return v;
        if (!first)
            first = v;
    }
    return first;
}

class Cse : public Pass {
public:
    std::string id() const override { return "cse"; }
    std::string summary() const override {
        return "merge equal constants and nodes computing the same op on the same inputs";
    }
    std::vector<RuleDescription> describeRules() const override {
        return {{kConstantRule,
                 "merge constants with equal dtype, shape and bytes into the first one",
                 false},
                {kNodeRule,
                 "merge a node into an earlier one with the same op, attributes and inputs "
                 "(provenance is the union)",
                 false}};
    }

    Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
        bool changed = false;
        if (ctx.isEnabled(kConstantRule)) {
            auto t0 = std::chrono::steady_clock::now();
            changed |= mergeConstants(graph, ctx);
            ctx.addRuleTime(kConstantRule, millisSince(t0));
        }
        if (ctx.isEnabled(kNodeRule)) {
            auto t0 = std::chrono::steady_clock::now();
            Expected<bool> merged = mergeNodes(graph, ctx);
            ctx.addRuleTime(kNodeRule, millisSince(t0));
            if (!merged.ok())
                return merged.takeError();
            changed |= *merged;
        }
        return changed;
    }

private:
    static bool mergeConstants(ir::Graph& graph, PassContext& ctx) {
        // Group by type first so that only constants that could be equal are compared; the
        // survivor is the first in creation order, so the choice is deterministic.
        std::map<std::pair<int, std::vector<int64_t>>, std::vector<ir::Value*>> byType;
        for (ir::Value* c : graph.constants())
            byType[{static_cast<int>(c->constant()->dtype()), c->constant()->shape()}].push_back(c);
        bool changed = false;
        for (auto& [type, group] : byType) {
            if (group.size() < 2)
                continue;
            // A sampled fingerprint (not a full hash: weights are megabytes) narrows the
            // candidates; identical() then compares the bytes, stopping at the first difference.
            std::unordered_map<uint64_t, std::vector<ir::Value*>> bySample;
            for (ir::Value* c : group) {
                if (c->users().empty() && !c->isGraphOutput())
                    continue;
                std::vector<ir::Value*>& same = bySample[sampledFingerprint(*c->constant())];
                ir::Value* survivor = nullptr;
                for (ir::Value* s : same)
                    if (s->constant()->identical(*c->constant())) {
                        survivor = s;
                        break;
                    }
                if (!survivor) {
                    same.push_back(c);
                    continue;
                }
                std::string why = cannotForward(c, survivor);
                if (!why.empty()) {
                    ctx.reject(kConstantRule, c->name(), why);
                    continue;
                }
                if (!ctx.requestApplication(kConstantRule, c->name()))
                    continue;
                graph.replaceAllUsesWith(c, survivor);
                changed = true;
            }
        }
        if (changed)
            graph.removeUnusedConstants();
        return changed;
    }

    static Expected<bool> mergeNodes(ir::Graph& graph, PassContext& ctx) {
        // Positions in the node order, kept on the nodes (the pass adds no node, so every user
        // met below is listed here; an erased node is no longer anyone's user).
        const std::vector<ir::Node*> order = graph.nodes();
        for (size_t i = 0; i < order.size(); ++i)
            order[i]->setScratch(static_cast<uint32_t>(i));
        auto position = [](const ir::Node* x) { return x->scratch(); };
        bool changed = false;
        for (ir::Node* n : order) {
            const ir::Value* key = anchorInput(*n);
            if (!key)
                continue;
            // The earliest live twin survives; it was visited before n, so it is already final.
            ir::Node* survivor = nullptr;
            for (ir::Node* u : key->users()) {
                if (u == n || position(u) > position(n))
                    continue;
                if (survivor && position(u) >= position(survivor))
                    continue;
                if (sameComputation(*u, *n))
                    survivor = u;
            }
            if (!survivor)
                continue;
            std::string why;
            for (size_t i = 0; i < n->numOutputs() && why.empty(); ++i)
                why = cannotForward(n->output(i), survivor->output(i));
            if (!why.empty()) {
                ctx.reject(kNodeRule, n->name(), why);
                continue;
            }
            if (!ctx.requestApplication(kNodeRule, n->name()))
                continue;
            std::vector<std::pair<ir::Value*, std::string>> renames;
            for (size_t i = 0; i < n->numOutputs(); ++i) {
                if (n->output(i)->isGraphOutput())
                    renames.emplace_back(survivor->output(i), n->output(i)->name());
                graph.replaceAllUsesWith(n->output(i), survivor->output(i));
            }
            ir::Provenance& p = survivor->mutableProvenance();
            p.origins = unionOrigins({survivor, n});
            SX_TRY(graph.eraseNode(n));
            for (auto& [v, newName] : renames)
                SX_TRY(graph.renameValue(v, newName));
            changed = true;
        }
        return changed;
    }
};

} // namespace

std::unique_ptr<Pass> makeCsePass() {
    return std::make_unique<Cse>();
}

} // namespace sextant::passes
