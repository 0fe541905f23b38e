#include "PassContext.h"
#include "Passes.h"

namespace sextant::passes {

namespace {

/// Recomputes every value's type from the op table's shape inference, in node order.
class InferShapes : public Pass {
public:
    std::string id() const override { return "infer-shapes"; }
    std::string summary() const override {
        return "recompute every value's dtype and shape with the ops' shape inference";
    }
    Expected<bool> run(ir::Graph& graph, PassContext&) override {
        bool changed = false;
        SX_TRY(graph.inferTypes(&changed));
        return changed;
    }
};

} // namespace

std::unique_ptr<Pass> makeInferShapesPass() {
    return std::make_unique<InferShapes>();
}

} // namespace sextant::passes
