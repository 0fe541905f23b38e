#include "GraphDiff.h"

#include "core/ir/Printer.h"

#include <map>
#include <set>

namespace sextant::passes {

namespace {
std::string constantLine(const ir::Value* v) {
    return ir::printType(v->type()) + " " + v->constant()->digest();
}
} // namespace

std::vector<NodeChange> diffGraphs(const ir::Graph& before, const ir::Graph& after) {
    std::vector<NodeChange> out;
    const std::vector<ir::Node*> beforeNodes = before.nodes();
    std::map<std::string, std::vector<size_t>> byOrigin; // ONNX origin -> nodes of `before`
    for (size_t i = 0; i < beforeNodes.size(); ++i)
        for (const std::string& o : beforeNodes[i]->provenance().origins)
            byOrigin[o].push_back(i);
    for (const ir::Node* n : beforeNodes) {
        const ir::Node* m = after.findNode(n->name());
        if (!m) {
            out.push_back({NodeChange::Kind::Removed, n->name(), false, ir::printNode(*n), {}, {}});
        }
    }
    for (const ir::Node* n : after.nodes()) {
        const ir::Node* old = before.findNode(n->name());
        std::string line = ir::printNode(*n);
        if (old) {
            std::string oldLine = ir::printNode(*old);
            if (oldLine != line)
                out.push_back({NodeChange::Kind::Changed, n->name(), false, oldLine, line, {}});
            if (oldLine == line || old->provenance().origins == n->provenance().origins)
                continue;
        }
        // A new node, or one that took over a name and more origins (a fused anchor): list the
        // nodes of `before` it absorbed, found through shared ONNX origins.
        std::set<size_t> hits; // indices into beforeNodes, so the result keeps `before` order
        for (const std::string& o : n->provenance().origins) {
            auto it = byOrigin.find(o);
            if (it != byOrigin.end())
                hits.insert(it->second.begin(), it->second.end());
        }
        std::vector<std::string> replaces;
        for (size_t i : hits) {
            const ir::Node* b = beforeNodes[i];
            if (b->name() == n->name())
                continue;
            const ir::Node* survivor = after.findNode(b->name());
            if (survivor && survivor->provenance().origins == b->provenance().origins)
                continue;
            replaces.push_back(b->name());
        }
        if (!old)
            out.push_back(
                {NodeChange::Kind::Added, n->name(), false, {}, line, std::move(replaces)});
        else
            out.back().replaces = std::move(replaces);
    }
    for (const ir::Value* c : before.constants()) {
        const ir::Value* d = after.findValue(c->name());
        if (!d || !d->isConstant())
            out.push_back({NodeChange::Kind::Removed, c->name(), true, constantLine(c), {}, {}});
    }
    for (const ir::Value* c : after.constants()) {
        const ir::Value* d = before.findValue(c->name());
        if (!d || !d->isConstant()) {
            out.push_back({NodeChange::Kind::Added, c->name(), true, {}, constantLine(c), {}});
            continue;
        }
        // Snapshots share constant storage, so an untouched constant is the same bytes.
        const ir::Tensor& x = *d->constant();
        const ir::Tensor& y = *c->constant();
        if (x.bytes() == y.bytes() && x.dtype() == y.dtype() && x.shape() == y.shape())
            continue;
        std::string a = constantLine(d), b = constantLine(c);
        if (a != b)
            out.push_back({NodeChange::Kind::Changed, c->name(), true, a, b, {}});
    }
    return out;
}

ChangeCounts countChanges(const std::vector<NodeChange>& changes) {
    ChangeCounts c;
    for (const NodeChange& ch : changes) {
        const bool added = ch.kind == NodeChange::Kind::Added, removed = ch.kind == NodeChange::Kind::Removed;
        int& slot = ch.isConstant ? (added ? c.constantsAdded : removed ? c.constantsRemoved : c.constantsChanged)
                                  : (added ? c.nodesAdded : removed ? c.nodesRemoved : c.nodesChanged);
        ++slot;
    }
    return c;
}

std::string summarizeChanges(const ChangeCounts& c) {
    auto part = [](int added, int removed, int changed, const char* what) {
        return "+" + std::to_string(added) + " -" + std::to_string(removed) + " ~" + std::to_string(changed) + " " +
               what;
    };
    return part(c.nodesAdded, c.nodesRemoved, c.nodesChanged, "nodes") + ", " +
           part(c.constantsAdded, c.constantsRemoved, c.constantsChanged, "constants");
}

} // namespace sextant::passes
