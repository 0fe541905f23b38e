// fold-constants: evaluate nodes whose inputs are all constants at compile time.
#include "FuseUtil.h"
#include "PassManager.h"
#include "Passes.h"
#include "RewriteRule.h"
#include "RewriteUtil.h"

#include "core/ir/Interpreter.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace sextant::passes {

namespace {

/// Larger results stay computed at run time: folding them would only grow weights.bin.
constexpr int64_t kMaxFoldedElements = 1 << 16;
/// A value that only feeds weight operands (Conv/Gemm weights and biases, BatchNormalization
/// parameters) has to sit in DRAM as a constant anyway, and fusion rules need it constant:
/// fold it up to this size (16 MiB of f32). Models that build weights with ConstantOfShape
/// (onnx "light" models) depend on it. A larger ConstantOfShape stays a node, and the backend
/// gives it no Task: the loader fills its buffer before the run (backend::loadTimeFill).
constexpr int64_t kMaxFoldedWeightElements = 1 << 22;

/// Why a result of `numel` elements and `dtype` may not be folded (empty if it may).
std::string sizeReason(const ir::Node& n, const ir::Value* out, int64_t numel, ir::DType dtype) {
    if (n.info().cost == ir::CostClass::DmaOnly || !ir::isFloat(dtype) ||
        numel <= kMaxFoldedElements)
        return {};
    if (ir::onlyFeedsWeights(out) && numel <= kMaxFoldedWeightElements)
        return {};
    const int64_t limit = ir::onlyFeedsWeights(out) ? kMaxFoldedWeightElements : kMaxFoldedElements;
    return "output has " + std::to_string(numel) + " elements (more than " + std::to_string(limit) +
           ")";
}

class FoldConstantNode : public RewriteRule {
public:
    std::string id() const override { return "fold-constant-node"; }
    std::string summary() const override {
        return "replace a node whose inputs are all constants by its value (small outputs, shape "
               "arithmetic, data movement), and Shape or Size of a tensor whose shape is static";
    }
    std::vector<ir::OpKind> targets() const override { return {}; }

    /// Whether fuse-qdq-conv and fuse-qdq-matmul run later in this pipeline (as
    /// PassContext::isEnabled decides for them: the fuse pass's level, unless switched off or on
    /// by id).
    void configure(const PipelineConfig& config) override {
        auto runs = [&config](const std::string& rule) {
            return !config.disabled.count(rule) && !config.disabled.count("fuse") &&
                   (config.optLevel >= 2 || config.enabled.count(rule));
        };
        m_keepConvWeights = runs(fuse::kFuseQdqConvRule);
        m_keepProductWeights = runs(fuse::kFuseQdqMatMulRule);
    }

    Match match(const ir::Node& n) const override {
        m_cache.erase(n.name());
        if (n.numInputs() == 0)
            return Match::none();
        // An int8 weight (or int32 bias) an int8 convolution will read as it is: folding it to
        // float would only be undone, at four times the bytes.
        if ((m_keepConvWeights || m_keepProductWeights) && n.kind() == ir::OpKind::DequantizeLinear &&
            fuse::keptForInt8(n, m_keepConvWeights, m_keepProductWeights))
            return Match::rejected("kept in its integer type for " + std::string(fuse::kFuseQdqConvRule) + " or " +
                                   fuse::kFuseQdqMatMulRule);
        // Shape and Size read only their input's shape: when that is static they are constants
        // too, and what exporters compute from them (a rank minus an axis, a reduced shape) then
        // folds in the next sweep.
        if (n.input(0) && !n.input(0)->isConstant()) {
            if (std::optional<ir::Tensor> value = ir::staticShapeValue(n)) {
                if (n.output(0)->isGraphOutput())
                    return Match::rejected("its output '" + n.output(0)->name() +
                                           "' is a graph output");
                m_cache[n.name()] = {std::move(*value)};
                return Match::matched();
            }
        }
        for (const ir::Value* in : n.inputs())
            if (in && !in->isConstant())
                return Match::none();
        for (const auto& [name, attr] : n.attrs())
            if (std::holds_alternative<std::shared_ptr<const ir::Graph>>(attr))
                return Match::rejected("node has a subgraph attribute '" + name + "'");
        for (const ir::Value* out : n.outputs())
            if (out->isGraphOutput())
                return Match::rejected("its output '" + out->name() + "' is a graph output");
        // Check the declared size first: evaluating a 100-million-element ConstantOfShape just
        // to reject it would cost seconds and gigabytes.
        for (const ir::Value* out : n.outputs()) {
            const ir::TensorType& t = out->type();
            if (!t.isStatic())
                continue;
            std::string why = sizeReason(n, out, t.numel(), t.dtype);
            if (!why.empty())
                return Match::rejected(why);
        }
        auto values = evaluate(n);
        if (!values.ok())
            return Match::rejected("evaluation failed: " + values.error().message);
        for (size_t i = 0; i < values->size() && i < n.numOutputs(); ++i) {
            const ir::Tensor& t = (*values)[i];
            std::string why = sizeReason(n, n.output(i), t.numel(), t.dtype());
            if (!why.empty())
                return Match::rejected(why);
        }
        m_cache[n.name()] = std::move(*values);
        return Match::matched();
    }

    Status apply(ir::Graph& g, ir::Node& n, const Match&, RewriteContext& rc) const override {
        auto it = m_cache.find(n.name());
        std::vector<ir::Tensor> values;
        if (it != m_cache.end()) {
            values = std::move(it->second);
            m_cache.erase(it);
        } else if (std::optional<ir::Tensor> value = ir::staticShapeValue(n)) {
            values.push_back(std::move(*value));
        } else {
            SX_ASSIGN(values, evaluate(n));
        }
        if (values.size() < n.numOutputs())
            return makeError(ErrorKind::Verify, "kernel returned too few outputs", n.name());
        std::vector<std::string> names;
        std::vector<ir::Value*> folded;
        for (size_t i = 0; i < n.numOutputs(); ++i) {
            ir::Value* out = n.output(i);
            names.push_back(out->name());
            SX_ASSIGN(ir::Value * c,
                      addDerivedConstant(g, out->name() + "__folded", std::move(values[i])));
            g.replaceAllUsesWith(out, c);
            folded.push_back(c);
        }
        for (const std::string& name : names)
            rc.noteConstant(name, {&n});
        SX_TRY(g.eraseNode(&n));
        // The constant takes the folded value's name, so users' lines in the IR do not change.
        for (size_t i = 0; i < folded.size(); ++i)
            SX_TRY(g.renameValue(folded[i], names[i]));
        refineUsers(folded);
        return {};
    }

private:
    bool m_keepConvWeights = false;
    bool m_keepProductWeights = false;

    /// A value that became constant can tell its users' shapes where their inference could not
    /// (a Resize to sizes computed from a Shape): infer them again, and theirs in turn while the
    /// types change, so that a Shape of the result folds later in this same sweep. A node whose
    /// inference still fails keeps the type it had (the interpreter checks it at run time).
    /// Whether `now` tells at least what `before` told: the same dtype and rank, and every dim
    /// `before` knew known and the same (so no refinement loses what a declaration gave).
    static bool refines(const ir::TensorType& now, const ir::TensorType& before) {
        if (now.dtype != before.dtype || now.shape.size() != before.shape.size())
            return false;
        for (size_t i = 0; i < now.shape.size(); ++i)
            if (before.shape[i].isKnown() && !(now.shape[i] == before.shape[i]))
                return false;
        return true;
    }

    static void refineUsers(const std::vector<ir::Value*>& values) {
        std::vector<ir::Node*> work;
        for (const ir::Value* v : values)
            for (ir::Node* u : v->users())
                work.push_back(u);
        while (!work.empty()) {
            ir::Node* n = work.back();
            work.pop_back();
            auto types = n->info().infer(*n);
            if (!types.ok() || types->size() < n->numOutputs())
                continue;
            for (size_t i = 0; i < n->numOutputs(); ++i) {
                ir::TensorType t = (*types)[i];
                if (t.layout == ir::LayoutKind::Any)
                    t.layout = n->output(i)->type().layout;
                if (t == n->output(i)->type() || !refines(t, n->output(i)->type()))
                    continue;
                n->output(i)->setType(std::move(t));
                for (ir::Node* u : n->output(i)->users())
                    work.push_back(u);
            }
        }
    }

    /// Runs the node's reference kernel in F32 for f32 (and narrower) results, F64 for f64 ones,
    /// and gives every float result the dtype the node declared.
    static Expected<std::vector<ir::Tensor>> evaluate(const ir::Node& n) {
        ir::KernelContext ctx;
        ctx.compute = ir::DType::F32;
        for (const ir::Value* out : n.outputs())
            if (out->type().dtype == ir::DType::F64)
                ctx.compute = ir::DType::F64;
        std::vector<ir::Tensor> inputs;
        for (const ir::Value* in : n.inputs())
            inputs.push_back(in ? *in->constant() : ir::Tensor());
        SX_ASSIGN(std::vector<ir::Tensor> outs, ir::evaluateNode(n, inputs, ctx));
        for (size_t i = 0; i < outs.size() && i < n.numOutputs(); ++i) {
            ir::DType declared = n.output(i)->type().dtype;
            if (ir::isFloat(outs[i].dtype()) && ir::isFloat(declared) &&
                outs[i].dtype() != declared)
                outs[i] = outs[i].castTo(declared);
        }
        return outs;
    }

    // Values computed by match(), consumed by apply() of the same node.
    mutable std::map<std::string, std::vector<ir::Tensor>> m_cache;
};

/// An If whose condition is a constant runs one branch whatever the inputs: its nodes take the
/// If's place (the branch's inputs read the If's captured inputs, its constants become the
/// graph's), so they fold, fuse and lower like the rest of the graph instead of running as one
/// host step. The If's outputs keep their names.
class InlineConstantIf : public RewriteRule {
public:
    std::string id() const override { return "inline-constant-if"; }
    std::string summary() const override {
        return "replace an If whose condition is a constant by the nodes of the branch it takes";
    }
    std::vector<ir::OpKind> targets() const override { return {ir::OpKind::If}; }
    Match match(const ir::Node& n) const override {
        const ir::Tensor* c = constantOf(n.input(0));
        if (!c)
            return Match::rejected("condition '" + (n.input(0) ? n.input(0)->name() : std::string("?")) +
                                   "' is computed at run time");
        if (c->numel() != 1)
            return Match::rejected("condition holds " + std::to_string(c->numel()) + " elements");
        const ir::Graph* branch = n.attrGraph(c->at(0) != 0 ? "then_branch" : "else_branch");
        if (!branch || branch->inputs().size() + 1 != n.numInputs() || branch->outputs().size() != n.numOutputs())
            return Match::rejected("its branch does not match its inputs and outputs");
        return Match::matched();
    }
    Status apply(ir::Graph& g, ir::Node& n, const Match&, RewriteContext& rc) const override {
        const ir::Graph& b = *n.attrGraph(constantOf(n.input(0))->at(0) != 0 ? "then_branch" : "else_branch");
        std::unordered_map<const ir::Value*, ir::Value*> map;
        for (size_t i = 0; i < b.inputs().size(); ++i)
            map[b.inputs()[i]] = n.input(i + 1);
        for (const ir::Value* c : b.constants()) {
            const std::string name = g.uniqueName(c->name());
            SX_ASSIGN(ir::Value * v, g.addConstant(name, *c->constant()));
            rc.noteConstant(name, {&n});
            map[c] = v;
        }
        std::vector<ir::Value*> made; // values the inlined nodes compute
        for (const ir::Node* src : b.nodes()) {
            std::vector<ir::Value*> inputs;
            for (const ir::Value* in : src->inputs()) {
                if (!in) {
                    inputs.push_back(nullptr);
                    continue;
                }
                auto it = map.find(in);
                if (it == map.end())
                    return makeError(ErrorKind::Verify, "If '" + n.name() + "': branch node '" + src->name() +
                                                            "' reads '" + in->name() + "', which the branch does not define");
                inputs.push_back(it->second);
            }
            std::vector<std::string> outNames;
            for (const ir::Value* o : src->outputs())
                outNames.push_back(g.uniqueName(o->name()));
            SX_ASSIGN(ir::Node * copy, g.addNode(src->kind(), g.uniqueName(src->name()), std::move(inputs), outNames,
                                                  src->attrs(), &n));
            copy->mutableProvenance().origins = unionOrigins({&n, src});
            copy->mutableProvenance().createdBy = rc.createdBy();
            for (size_t k = 0; k < src->numOutputs(); ++k) {
                copy->output(k)->setType(src->output(k)->type());
                map[src->output(k)] = copy->output(k);
                made.push_back(copy->output(k));
            }
        }
        std::vector<std::pair<ir::Value*, std::string>> rename;
        for (size_t k = 0; k < n.numOutputs(); ++k) {
            ir::Value* to = map.at(b.outputs()[k]);
            ir::Value* from = n.output(k);
            const bool inlined = std::find(made.begin(), made.end(), to) != made.end();
            if (inlined && std::none_of(rename.begin(), rename.end(), [&](const auto& r) { return r.first == to; }))
                rename.emplace_back(to, from->name()); // keeps the If's output name (a graph output's, say)
            g.replaceAllUsesWith(from, to);
        }
        rc.noteRemoved(n, "its condition is a constant: the branch it takes replaced it");
        SX_TRY(g.eraseNode(&n));
        for (const auto& [v, name] : rename)
            SX_TRY(g.renameValue(v, name));
        // The branch's types were inferred for its declared inputs; the If's may be more precise.
        return g.inferTypes();
    }
};

} // namespace

std::unique_ptr<Pass> makeFoldConstantsPass() {
    std::vector<std::unique_ptr<RewriteRule>> rules;
    rules.push_back(std::make_unique<FoldConstantNode>());
    rules.push_back(std::make_unique<InlineConstantIf>());
    return std::make_unique<PatternRewritePass>(
        "fold-constants", "evaluate nodes whose inputs are all constants and store the results",
        std::move(rules));
}

} // namespace sextant::passes
