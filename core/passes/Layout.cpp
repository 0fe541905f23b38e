// layout: puts the NPU's 2-D convolutions and the ops that follow them in the blocked NC1HWC0
// layout, in one forward sweep over the graph (producers first), so that a conversion back to
// plain NCHW happens only where the blocked region ends (a Transpose, Reshape, Gemm, graph
// output...) and never between two ops that can both read the blocked layout. Conversions
// therefore "sink" through elementwise, pooling and concat ops and a plain->blocked->plain
// pair around an op that could stay blocked never appears.
//
// The conversions are real nodes: sextant.TransData (src_format, dst_format). Where a plain
// activation (graph input or plain producer) enters a blocked convolution, one TransData
// NCHW->NC1HWC0 shared by every blocked reader of that value; where a blocked value is read by
// a plain node or is a graph output, one TransData NC1HWC0->NCHW shared by every plain reader
// (a graph output keeps its name: the blocked producer's value is renamed "<name>_nc1hwc0").
// Constants are never converted: weights are repacked when the program is built. Tensors stay
// logical (TransData's reference kernel is the identity); blocked values carry the type tag
// NC1HWC0, which the backend sizes with the channel padding. Inverse TransData pairs cancel.
//
// Bisection: blocked nodes form regions (connected through blocked values); the rule applies
// once per region, named by its first node in graph order, and a region the bisect limit denies
// stays entirely plain (its own conversions vanish with it, other regions are unaffected).
// With PipelineConfig::npuLayout "NCHW" (a target without the blocked layout) the pass only
// cancels inverse pairs.
//
// Two more rules, after the regions: absorb-transpose-into-transdata folds an NHWC<->NCHW
// Transpose at a region boundary into its TransData (one application per Transpose), and
// reshape-as-view marks a Reshape/Flatten/Squeeze/Unsqueeze of a plain tensor view=1 so the
// backend lowers it to no Task (one application per node).
#include "Layout.h"

#include "PassContext.h"
#include "RewriteUtil.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <set>

namespace sextant::passes {

namespace {

/// The op table's layout behaviour of a node's op (OpTable.def, column LayoutClass).
ir::LayoutClass layoutOf(ir::OpKind k) { return ir::opInfo(k).layout; }

bool isConvFamily(ir::OpKind k) { return layoutOf(k) == ir::LayoutClass::Conv; }

bool isRank4(const ir::Value* v) {
    return v && v->type().rank() == 4;
}

bool isTransData(const ir::Node* n) {
    return n && n->kind() == ir::OpKind::TransData;
}

/// True for a Transpose of a rank-4 tensor with exactly this permutation.
bool isTranspose(const ir::Node* n, const std::vector<int64_t>& perm) {
    return n && n->kind() == ir::OpKind::Transpose && n->input(0) &&
           n->input(0)->type().rank() == 4 && n->attrInts("perm") == perm;
}

/// The nodes placeRegions lists, by position (Node::scratch holds position + 1; nodes made
/// later hold 0), with a flag per position: membership without a tree or hash keyed by node.
struct NodeFlags {
    std::vector<char> flag;
    bool count(const ir::Node* n) const {
        const uint32_t s = n->scratch();
        return s != 0 && s <= flag.size() && flag[s - 1];
    }
};

/// True when every reader of `v` is a blocked convolution reading it as its activation (input
/// 0 only), so that an entry conversion replaces every use.
bool onlyConvActivationOf(const ir::Value* v, const NodeFlags& blocked) {
    for (const ir::Node* u : v->users()) {
        if (!blocked.count(u) || !isConvFamily(u->kind()))
            return false;
        for (size_t i = 1; i < u->numInputs(); ++i)
            if (u->input(i) == v)
                return false;
    }
    return true;
}

/// Union-find over node indices, for the blocked regions.
struct Regions {
    std::vector<size_t> parent;
    explicit Regions(size_t n) : parent(n) {
        for (size_t i = 0; i < n; ++i)
            parent[i] = i;
    }
    size_t find(size_t i) {
        while (parent[i] != i)
            i = parent[i] = parent[parent[i]];
        return i;
    }
    /// Joins two sets; the root is the smaller index (the region's first node in graph order).
    void join(size_t a, size_t b) {
        a = find(a);
        b = find(b);
        if (a != b)
            parent[std::max(a, b)] = std::min(a, b);
    }
};

class LayoutPass : public Pass {
public:
    std::string id() const override { return "layout"; }
    std::string summary() const override {
        return "assign the NPU's blocked NC1HWC0 layout to 2-D convolutions and the elementwise, "
               "pooling and concat ops they feed, with a sextant.TransData conversion only where "
               "a blocked region begins or ends (inverse pairs cancel)";
    }
    std::vector<RuleDescription> describeRules() const override {
        return {{kAssignLayoutRule,
                 "put each region of Conv/FusedConv and the ops reading only NC1HWC0 activations "
                 "(elementwise, pooling, BatchNormalization, Concat) in NC1HWC0, with one "
                 "TransData per value entering or leaving it (one application per region)",
                 false},
                {kAbsorbTransposeRule,
                 "absorb an NHWC<->NCHW Transpose at a region boundary into its TransData "
                 "(NHWC -> NC1HWC0 in, NC1HWC0 -> NHWC out: one reorder instead of two)",
                 false},
                {kReshapeViewRule,
                 "lower a Reshape/Flatten/Squeeze/Unsqueeze of a plain contiguous tensor as a "
                 "view: no Task, its output aliases its input's buffer (attribute view=1)",
                 false}};
    }

    Expected<bool> run(ir::Graph& graph, PassContext& ctx) override {
        bool changed = false;
        if (ctx.isEnabled(kAssignLayoutRule)) {
            auto t0 = std::chrono::steady_clock::now();
            if (ctx.config().npuLayout == ir::NpuLayout::NC1HWC0) {
                SX_ASSIGN(bool placed, placeRegions(graph, ctx));
                changed |= placed;
            }
            SX_ASSIGN(bool cancelled, cancelInversePairs(graph, ctx));
            changed |= cancelled;
            ctx.addRuleTime(kAssignLayoutRule, millisSince(t0));
        }
        // After the layouts are known: only a plain tensor can be viewed in another shape.
        if (ctx.isEnabled(kReshapeViewRule)) {
            auto t0 = std::chrono::steady_clock::now();
            changed |= markViews(graph, ctx);
            ctx.addRuleTime(kReshapeViewRule, millisSince(t0));
        }
        return changed;
    }

private:
    static bool markViews(ir::Graph& graph, PassContext& ctx) {
        bool changed = false;
        for (ir::Node* n : graph.nodes()) {
            if (layoutOf(n->kind()) != ir::LayoutClass::View)
                continue;
            if (n->isView() || n->numOutputs() != 1)
                continue;
            const ir::Value* in = n->input(0);
            const ir::Value* out = n->output(0);
            if (!in)
                continue;
            std::string why;
            if (in->type().layout == ir::LayoutKind::NC1HWC0)
                why = "input '" + in->name() + "' is NC1HWC0: its bytes are not in row-major order";
            else if (out->isGraphOutput())
                why = "output '" + out->name() + "' is a graph output, which needs its own buffer";
            else if (!in->type().isStatic() || !out->type().isStatic() ||
                     in->type().numel() != out->type().numel() ||
                     in->type().dtype != out->type().dtype)
                why = "input and output do not have the same static element count and type";
            if (!why.empty()) {
                ctx.reject(kReshapeViewRule, n->name(), why);
                continue;
            }
            if (!ctx.requestApplication(kReshapeViewRule, n->name()))
                continue;
            n->setView(true);
            changed = true;
        }
        return changed;
    }

    /// What one placeRegions sweep shares between its steps: the graph's nodes when it began
    /// (each holding its position + 1 in Node::scratch), the values read as blocked and the
    /// nodes finally placed in NC1HWC0.
    struct Sweep {
        std::vector<ir::Node*> nodes;
        std::set<const ir::Value*> blocked;
        NodeFlags blockedNodes;

        /// The position of `n` in `nodes`; nothing for a node this pass made.
        std::optional<size_t> indexOf(const ir::Node* n) const {
            const uint32_t s = n->scratch();
            if (s == 0 || s > nodes.size() || nodes[s - 1] != n)
                return std::nullopt;
            return s - 1;
        }
    };

    static Expected<bool> placeRegions(ir::Graph& graph, PassContext& ctx) {
        Sweep s = startSweep(graph);
        const std::vector<bool> isBlocked = findCandidates(s, ctx);
        Regions regions = joinRegions(s, isBlocked);
        const std::vector<char> allowed = decideRegions(s, isBlocked, regions, ctx);
        keepAllowedRegions(s, isBlocked, regions, allowed);
        bool changed = markBlocked(s);
        SX_ASSIGN(bool entered, insertEntries(graph, ctx, s));
        changed |= entered;
        SX_ASSIGN(bool exited, insertExits(graph, ctx, s));
        changed |= exited;
        return changed;
    }

    /// Numbers the graph's nodes (Node::scratch = position + 1) and collects the values already
    /// blocked by an earlier run (a TransData into NC1HWC0): they are read as blocked.
    static Sweep startSweep(const ir::Graph& graph) {
        Sweep s;
        s.nodes = graph.nodes();
        for (const ir::Node* n : s.nodes)
            if (isTransData(n) && n->attrString("dst_format", "") == "NC1HWC0")
                s.blocked.insert(n->output(0));
        for (size_t i = 0; i < s.nodes.size(); ++i)
            s.nodes[i]->setScratch(static_cast<uint32_t>(i + 1));
        return s;
    }

    /// Step 1: which nodes can be blocked, regardless of bisection (by position). Their outputs
    /// join the blocked values; a node of a kind that could be blocked but is not is rejected.
    static std::vector<bool> findCandidates(Sweep& s, PassContext& ctx) {
        std::vector<bool> isBlocked(s.nodes.size(), false);
        for (size_t i = 0; i < s.nodes.size(); ++i) {
            ir::Node* n = s.nodes[i];
            std::string why;
            const bool candidate = wantsBlocked(*n, s.blocked, why);
            if (!why.empty())
                ctx.reject(kAssignLayoutRule, n->name(), why);
            if (candidate) {
                isBlocked[i] = true;
                s.blocked.insert(n->output(0));
            }
        }
        return isBlocked;
    }

    /// Step 2: the regions, blocked nodes joined through the blocked values they read.
    static Regions joinRegions(const Sweep& s, const std::vector<bool>& isBlocked) {
        Regions regions(s.nodes.size());
        for (size_t i = 0; i < s.nodes.size(); ++i) {
            if (!isBlocked[i])
                continue;
            for (const ir::Value* v : s.nodes[i]->inputs()) {
                const ir::Node* p = v ? v->producer() : nullptr;
                const std::optional<size_t> at = p ? s.indexOf(p) : std::nullopt;
                if (at && isBlocked[*at])
                    regions.join(i, *at);
            }
        }
        return regions;
    }

    /// Step 3: one application per region, in the order of their first nodes; a denied region
    /// stays plain as a whole. A region the pass placed before (every node already marked) is
    /// not applied again. Returns, indexed by region root (the region's first node), whether
    /// the region is blocked.
    static std::vector<char> decideRegions(const Sweep& s, const std::vector<bool>& isBlocked,
                                           Regions& regions, PassContext& ctx) {
        const std::vector<ir::Node*>& nodes = s.nodes;
        std::vector<char> placedBefore(nodes.size(), 1);
        for (size_t i = 0; i < nodes.size(); ++i)
            if (isBlocked[i] && nodes[i]->attrString(kLayoutAttr, "") != "NC1HWC0")
                placedBefore[regions.find(i)] = 0;
        enum : char { kUndecided, kAllowed, kDenied };
        std::vector<char> allowed(nodes.size(), kUndecided);
        for (size_t i = 0; i < nodes.size(); ++i) {
            if (!isBlocked[i])
                continue;
            const size_t root = regions.find(i);
            if (allowed[root] != kUndecided)
                continue;
            allowed[root] = placedBefore[root] ||
                                    ctx.requestApplication(kAssignLayoutRule, nodes[root]->name())
                                ? kAllowed
                                : kDenied;
        }
        for (char& a : allowed)
            a = a == kAllowed;
        return allowed;
    }

    /// Lists the candidates of the allowed regions as the blocked nodes; the outputs of those of
    /// denied regions are plain again.
    static void keepAllowedRegions(Sweep& s, const std::vector<bool>& isBlocked, Regions& regions,
                                   const std::vector<char>& allowed) {
        s.blockedNodes.flag.assign(s.nodes.size(), 0);
        for (size_t i = 0; i < s.nodes.size(); ++i) {
            if (isBlocked[i] && allowed[regions.find(i)])
                s.blockedNodes.flag[i] = 1;
            else if (isBlocked[i])
                s.blocked.erase(s.nodes[i]->output(0));
        }
    }

    /// Step 4: marks the blocked nodes and tags their outputs.
    static bool markBlocked(const Sweep& s) {
        bool changed = false;
        for (ir::Node* n : s.nodes) {
            if (!s.blockedNodes.count(n))
                continue;
            changed |= n->attrString(kLayoutAttr, "") != "NC1HWC0";
            n->setAttr(kLayoutAttr, std::string("NC1HWC0"));
            ir::Value* out = n->output(0);
            if (out->type().layout != ir::LayoutKind::NC1HWC0) {
                ir::TensorType t = out->type();
                t.layout = ir::LayoutKind::NC1HWC0;
                out->setType(std::move(t));
                changed = true;
            }
        }
        return changed;
    }

    /// Step 5 (entries): a plain activation read by blocked nodes converts once, before its
    /// first blocked reader. Only a convolution's input 0 can be plain (the other blocked kinds
    /// need blocked activations), and constants are repacked at compile time.
    static Expected<bool> insertEntries(ir::Graph& graph, PassContext& ctx, const Sweep& s) {
        std::map<const ir::Value*, ir::Node*> entryNode; // the TransData each plain value enters by
        std::vector<ir::Node*> absorbedEntries; // Transposes whose result no longer has readers
        bool changed = false;
        for (ir::Node* n : s.nodes) {
            if (!s.blockedNodes.count(n))
                continue;
            const size_t activations = isConvFamily(n->kind()) ? 1 : n->numInputs();
            for (size_t i = 0; i < activations; ++i) {
                ir::Value* v = n->input(i);
                if (!v || v->isConstant() || s.blocked.count(v) || !isRank4(v))
                    continue;
                auto it = entryNode.find(v);
                if (it == entryNode.end()) {
                    SX_ASSIGN(ir::Node * t, addEntry(graph, ctx, s, v, n, absorbedEntries));
                    it = entryNode.emplace(v, t).first;
                }
                graph.setInput(n, i, it->second->output(0));
                it->second->mutableProvenance().origins = unionOrigins({it->second, n});
                changed = true;
            }
        }
        for (ir::Node* tr : absorbedEntries)
            SX_TRY(graph.eraseNode(tr));
        return changed;
    }

    /// The entry conversion of plain `v` before its first blocked reader `n`. An NHWC -> NCHW
    /// Transpose feeding only the region converts in one step: the TransData reads the
    /// Transpose's input and the Transpose joins `absorbed` (erased once no longer read).
    static Expected<ir::Node*> addEntry(ir::Graph& graph, PassContext& ctx, const Sweep& s,
                                        ir::Value* v, ir::Node* n,
                                        std::vector<ir::Node*>& absorbed) {
        ir::Node* tr = v->producer();
        const bool absorb = isTranspose(tr, {0, 3, 1, 2}) && !v->isGraphOutput() &&
                            tr->input(0) && !tr->input(0)->isConstant() &&
                            onlyConvActivationOf(v, s.blockedNodes) &&
                            ctx.isEnabled(kAbsorbTransposeRule) &&
                            ctx.requestApplication(kAbsorbTransposeRule, tr->name());
        ir::Value* src = absorb ? tr->input(0) : v;
        SX_ASSIGN(ir::Node * t, addTransData(graph, src, absorb ? "NHWC" : "NCHW", "NC1HWC0",
                                             v->name() + "_nc1hwc0", n));
        if (absorb) {
            t->mutableProvenance().origins = tr->provenance().origins;
            absorbed.push_back(tr);
        }
        return t;
    }

    /// Step 6 (exits): a blocked value read by plain nodes, or a graph output, converts once.
    static Expected<bool> insertExits(ir::Graph& graph, PassContext& ctx, const Sweep& s) {
        bool changed = false;
        for (ir::Node* n : s.nodes) {
            if (!s.blockedNodes.count(n))
                continue;
            ir::Value* v = n->output(0);
            const std::vector<ir::Node*> plainReaders = plainReadersOf(*v, s.blockedNodes);
            if (plainReaders.empty() && !v->isGraphOutput())
                continue;
            // The only plain reader an NCHW -> NHWC Transpose: convert straight to NHWC.
            if (plainReaders.size() == 1 && !v->isGraphOutput() &&
                isTranspose(plainReaders[0], {0, 2, 3, 1}) &&
                ctx.isEnabled(kAbsorbTransposeRule) &&
                ctx.requestApplication(kAbsorbTransposeRule, plainReaders[0]->name()))
                SX_TRY(exitThroughTranspose(graph, *n, plainReaders[0]));
            else
                SX_TRY(exitToPlain(graph, *n, plainReaders, firstInGraphOrder(s, plainReaders)));
            changed = true;
        }
        return changed;
    }

    /// The readers of blocked `v` that are neither blocked nor a TransData, each once, in the
    /// order of `v`'s uses.
    static std::vector<ir::Node*> plainReadersOf(const ir::Value& v, const NodeFlags& blocked) {
        std::vector<ir::Node*> plainReaders;
        for (ir::Node* u : v.users())
            if (!blocked.count(u) && !isTransData(u) &&
                std::find(plainReaders.begin(), plainReaders.end(), u) == plainReaders.end())
                plainReaders.push_back(u);
        return plainReaders;
    }

    /// The first of `readers` in graph order; nullptr (the end of the graph) when none was
    /// there when the sweep began.
    static ir::Node* firstInGraphOrder(const Sweep& s, const std::vector<ir::Node*>& readers) {
        ir::Node* before = nullptr;
        size_t firstIndex = s.nodes.size();
        for (ir::Node* u : readers) {
            const std::optional<size_t> at = s.indexOf(u);
            if (at && *at < firstIndex) {
                firstIndex = *at;
                before = u;
            }
        }
        return before;
    }

    /// Replaces the NCHW -> NHWC Transpose `tr`, the only plain reader of blocked node `n`'s
    /// output, by one TransData NC1HWC0 -> NHWC.
    static Status exitThroughTranspose(ir::Graph& graph, const ir::Node& n, ir::Node* tr) {
        ir::Value* v = n.output(0);
        ir::Value* result = tr->output(0);
        SX_ASSIGN(ir::Node * t,
                  addTransData(graph, v, "NC1HWC0", "NHWC", result->name() + "_nhwc", tr));
        t->mutableProvenance().origins = unionOrigins({&n, tr});
        return forwardAndErase(graph, tr, result, t->output(0));
    }

    /// Converts blocked node `n`'s output back to NCHW before `before` for its plain readers;
    /// a graph output keeps its name, the blocked value takes a new one.
    static Status exitToPlain(ir::Graph& graph, const ir::Node& n,
                              const std::vector<ir::Node*>& plainReaders, ir::Node* before) {
        ir::Value* v = n.output(0);
        std::string outName = v->name() + "_nchw";
        if (v->isGraphOutput()) {
            // The model's output keeps its name: the blocked value takes a new one.
            outName = v->name();
            SX_TRY(graph.renameValue(v, graph.uniqueName(v->name() + "_nc1hwc0")));
        }
        SX_ASSIGN(ir::Node * t, addTransData(graph, v, "NC1HWC0", "NCHW", outName, before));
        t->mutableProvenance().origins = n.provenance().origins;
        ir::Value* plain = t->output(0);
        for (ir::Node* u : plainReaders)
            for (size_t i = 0; i < u->numInputs(); ++i)
                if (u->input(i) == v)
                    graph.setInput(u, i, plain);
        if (v->isGraphOutput()) {
            std::vector<ir::Value*> outs = graph.outputs();
            for (ir::Value*& o : outs)
                if (o == v)
                    o = plain;
            graph.setOutputs(std::move(outs));
        }
        return {};
    }

    /// Adds a TransData reading `v` before `before` (nullptr: at the end), its output named
    /// after `outName` (made unique) and typed as `v` with the destination's tag.
    static Expected<ir::Node*> addTransData(ir::Graph& graph, ir::Value* v, const char* src,
                                            const char* dst, const std::string& outName,
                                            ir::Node* before) {
        const std::string name = graph.uniqueName(std::string("transdata_") + v->name());
        const std::string valueName = graph.findValue(outName) ? graph.uniqueName(outName) : outName;
        SX_ASSIGN(ir::Node * t,
                  graph.addNode(ir::OpKind::TransData, name, {v}, {valueName},
                                {{"src_format", std::string(src)}, {"dst_format", std::string(dst)}},
                                before));
        SX_ASSIGN(std::vector<ir::TensorType> types, t->info().infer(*t));
        t->output(0)->setType(std::move(types.at(0)));
        t->mutableProvenance().createdBy = std::string("layout/") + kAssignLayoutRule;
        return t;
    }

    /// Removes TransData(a->b) directly followed by TransData(b->a): readers of the second read
    /// the first one's input. A pair whose result is a graph output that the original value
    /// cannot stand for (a graph input or constant) is left alone.
    static Expected<bool> cancelInversePairs(ir::Graph& graph, PassContext& ctx) {
        bool changed = false;
        for (ir::Node* outer : graph.nodes()) {
            if (!isTransData(outer))
                continue;
            ir::Node* inner = outer->input(0) ? outer->input(0)->producer() : nullptr;
            if (!isTransData(inner) ||
                inner->attrString("src_format", "") != outer->attrString("dst_format", "") ||
                inner->attrString("dst_format", "") != outer->attrString("src_format", ""))
                continue;
            ir::Value* original = inner->input(0);
            ir::Value* result = outer->output(0);
            if (!cannotForward(result, original).empty())
                continue;
            ctx.noteRemoved(*outer, kAssignLayoutRule,
                            "inverse of TransData '" + inner->name() + "' (" +
                                inner->attrString("src_format", "") + " -> " +
                                inner->attrString("dst_format", "") + " -> back)");
            SX_TRY(forwardAndErase(graph, outer, result, original));
            if (inner->output(0)->users().empty() && !inner->output(0)->isGraphOutput()) {
                ctx.noteRemoved(*inner, kAssignLayoutRule,
                                "its only reader converted back (inverse pair)");
                SX_TRY(graph.eraseNode(inner));
            }
            changed = true;
        }
        return changed;
    }

private:
    /// Whether `n` can run in NC1HWC0. `why` gets a rejection reason when the node is of a kind
    /// that could, but some condition fails (left empty for kinds the rule does not handle).
    static bool wantsBlocked(const ir::Node& n, const std::set<const ir::Value*>& blocked,
                             std::string& why) {
        const ir::LayoutClass layout = layoutOf(n.kind());
        bool followsInput0 = false; // stays blocked when its input 0 is blocked
        switch (layout) {
        case ir::LayoutClass::Plain:
        case ir::LayoutClass::View: return false;
        case ir::LayoutClass::Unary:
        case ir::LayoutClass::Pooling: followsInput0 = true; break;
        case ir::LayoutClass::Conv:
        case ir::LayoutClass::Binary:
        case ir::LayoutClass::Concat: break;
        }
        const bool conv = layout == ir::LayoutClass::Conv;
        if (n.numOutputs() == 0 || !n.input(0))
            return false;
        // The activation operand of a conv, unary or pooling op is input 0; binary ops and fused
        // groups may read a constant first (scale * x + bias), checked operand by operand below.
        const bool firstIsActivation = conv || followsInput0;
        if (!isRank4(n.output(0)) || (firstIsActivation && !isRank4(n.input(0)))) {
            if (conv)
                why = "convolution is not 2-D (rank " + std::to_string(n.output(0)->type().rank()) +
                      "); only 2-D convolutions are blocked";
            return false;
        }
        if (n.numOutputs() > 1 && !n.output(1)->users().empty()) {
            why = "second output '" + n.output(1)->name() + "' is used";
            return false;
        }
        if (conv)
            return true;
        if (followsInput0) {
            // Only worth it when the activation is already blocked; otherwise nothing to keep.
            return blocked.count(n.input(0)) != 0;
        }
        // Binary elementwise and Concat: every activation operand must be blocked (constants
        // are repacked at compile time). Silent when none is: nothing blocked to keep.
        bool anyBlocked = false;
        for (const ir::Value* v : n.inputs())
            anyBlocked |= v && blocked.count(v) != 0;
        if (!anyBlocked)
            return false;
        for (size_t i = 0; i < n.numInputs(); ++i) {
            const ir::Value* v = n.input(i);
            if (!v || v->isConstant())
                continue;
            if (!blocked.count(v)) {
                why = "operand " + std::to_string(i) + " '" + v->name() +
                      "' is a plain (not NC1HWC0) activation";
                return false;
            }
            if (layout != ir::LayoutClass::Concat &&
                v->type().dims() != n.output(0)->type().dims()) {
                why = "operand " + std::to_string(i) + " '" + v->name() +
                      "' is broadcast to the output shape";
                return false;
            }
        }
        // A channel Concat whose inputs are not multiples of C0 = 16 still writes NC1HWC0: the
        // concat is a copy either way and shifts the lanes while it copies, so no extra
        // conversion (BlazeFace pads 24 channels to 32 this way in every residual block).
        return true;
    }
};

} // namespace

std::unique_ptr<Pass> makeLayoutPass() {
    return std::make_unique<LayoutPass>();
}

} // namespace sextant::passes
