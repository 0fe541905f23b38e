#include "PassContext.h"
#include "Passes.h"

namespace sextant::passes {

namespace {

/// Dead-code elimination: results nobody reads, then constants nobody reads.
class Dce : public Pass {
public:
    std::string id() const override { return "dce"; }
    std::string summary() const override {
        return "remove nodes whose results are unused, then unused constants";
    }
    Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
        bool changed = false;
        for (bool again = true; again;) {
            again = false;
            std::vector<ir::Node*> nodes = graph.nodes();
            // Walking backwards frees a whole dead chain in one sweep.
            for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
                ir::Node* n = *it;
                bool dead = true;
                for (const ir::Value* o : n->outputs())
                    if (!o->users().empty() || o->isGraphOutput())
                        dead = false;
                if (!dead)
                    continue;
                ctx.noteRemoved(*n, "", "results unused");
                SX_TRY(graph.eraseNode(n));
                again = changed = true;
            }
        }
        const size_t constantsBefore = graph.numConstants();
        graph.removeUnusedConstants();
        return changed || graph.numConstants() != constantsBefore;
    }
};

} // namespace

std::unique_ptr<Pass> makeDcePass() {
    return std::make_unique<Dce>();
}

} // namespace sextant::passes
