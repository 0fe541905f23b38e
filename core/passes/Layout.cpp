// layout: puts the NPU's 2-D convolutions and the ops around them in the blocked NC1HWC0
// layout, decided for the whole graph at once (LayoutCut.h): every 2-D convolution is blocked;
// graph inputs, graph outputs and plain-only ops (Transpose, Reshape, Gemm, ...) are plain; every
// op that can run either way (elementwise, broadcasting per channel, pooling, BatchNormalization,
// Concat, a Resize of H and W) takes the side of the minimum cut, where each activation is a group of its producer and
// its readers and costs one conversion when they are split. So a region grows through such ops
// as far as that saves a conversion, a residual chain of any length converts once in and once
// out, and a plain->blocked->plain pair around an op that could stay blocked never appears.
// Costs are lexicographic in one integer: conversions first (a conversion that absorbs an
// NHWC<->NCHW Transpose adds no grey op and counts as none), then the bytes converted and the
// channel padding a blocked op computes on (a 3-channel elementwise op before the first
// convolution stays plain). Of the minimum cuts, the one with the most blocked nodes, so the
// result does not depend on the order the flow was found in.
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
// Three more rules: read-small-channel-input lets a convolution read a plain input of at most 4
// channels as it is (no entry TransData; in the cut such a read takes no side), one application
// per convolution; absorb-transpose-into-transdata folds an NHWC<->NCHW Transpose at a region
// boundary into its TransData (one application per Transpose), and reshape-as-view marks a
// Reshape/Flatten/Squeeze/Unsqueeze of a plain tensor view=1 so the backend lowers it to no Task
// (one application per node); concat-in-place marks a Concat view=1 whose inputs can be written
// straight into their parts of its output (one application per Concat).
#include "Layout.h"

#include "LayoutCut.h"
#include "PassContext.h"
#include "RewriteUtil.h"

#include "core/ir/InPlace.h"

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

bool readsAsActivation(const ir::Node& u, size_t slot);

/// Whether every input of `u` that is `v` is read as an activation.
bool readsOnlyAsActivation(const ir::Node& u, const ir::Value& v) {
    for (size_t i = 0; i < u.numInputs(); ++i)
        if (u.input(i) == &v && !readsAsActivation(u, i))
            return false;
    return true;
}

/// Whether `u` reads its input `slot` as an activation (in its own layout): every input of an
/// elementwise, pooling or concat op; a convolution's data input and a FusedConv's residual
/// (input 3), not its weight or bias.
bool readsAsActivation(const ir::Node& u, size_t slot) {
    if (!isConvFamily(u.kind()) || slot == 0)
        return true;
    return u.kind() == ir::OpKind::FusedConv && slot == 3;
}

bool isRank4(const ir::Value* v) {
    return v && v->type().rank() == 4;
}

bool isTranspose(const ir::Node* n, const std::vector<int64_t>& perm);

/// Whether `u` may read its input `slot` plain under read-small-channel-input: the data input of
/// an ungrouped 2-D Conv / FusedConv / Int8Conv with at most kSmallChannels known channels. Not when that
/// input is an NHWC -> NCHW Transpose the entry conversion would absorb (`absorb`: the rule
/// absorb-transpose-into-transdata is on): one reorder into NC1HWC0 beats a Transpose.
bool smallChannelRead(const ir::Node& u, size_t slot, bool absorb) {
    if (slot != 0 ||
        (u.kind() != ir::OpKind::Conv && u.kind() != ir::OpKind::FusedConv && u.kind() != ir::OpKind::Int8Conv) ||
        u.attrInt("group", 1) != 1)
        return false;
    const ir::Value* v = u.input(0);
    if (!isRank4(v) || !isRank4(u.output(0)) || v->isConstant())
        return false;
    if (absorb && isTranspose(v->producer(), {0, 3, 1, 2}))
        return false;
    const ir::Dim& c = v->type().shape[1];
    return c.isKnown() && c.value <= kSmallChannels;
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

/// True when every reader of `v` is blocked and reads it as an activation (not a
/// convolution's weight or bias), so that an entry conversion replaces every use.
bool onlyBlockedActivationOf(const ir::Value* v, const NodeFlags& blocked) {
    for (const ir::Node* u : v->users()) {
        if (!blocked.count(u))
            return false;
        for (size_t i = 0; i < u->numInputs(); ++i)
            if (u->input(i) == v && !readsAsActivation(*u, i))
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
        return "assign the NPU's blocked NC1HWC0 layout to 2-D convolutions and, by a "
               "whole-graph minimum cut, to the elementwise, pooling and concat ops around them, "
               "with a sextant.TransData conversion only where a blocked region begins or ends "
               "(inverse pairs cancel)";
    }
    std::vector<RuleDescription> describeRules() const override {
        return {{kAssignLayoutRule,
                 "put the 2-D Conv/FusedConv and the elementwise, pooling, BatchNormalization and "
                 "Concat ops whose blocking saves conversions (fewest, then fewest bytes; a "
                 "minimum cut over the graph) in NC1HWC0, with one TransData per value entering "
                 "or leaving a region (one application per region)",
                 false},
                {kAbsorbTransposeRule,
                 "absorb an NHWC<->NCHW Transpose at a region boundary into its TransData "
                 "(NHWC -> NC1HWC0 in, NC1HWC0 -> NHWC out: one reorder instead of two)",
                 false},
                {kSmallChannelInputRule,
                 "let a 2-D convolution read a plain input of at most 4 channels (an image) as it "
                 "is: the cube's load packs the channels as it fills the window, so no TransData "
                 "pads them to C0 in DRAM (one application per convolution)",
                 false},
                {kSmallChannelOutputRule,
                 "let a 2-D convolution whose output has at most 4 channels and no blocked reader "
                 "write it plain (NCHW): no channel padding to C0 and no TransData back "
                 "(one application per convolution)",
                 false},
                {kReshapeViewRule,
                 "lower a Reshape/Flatten/Squeeze/Unsqueeze of a plain contiguous tensor as a "
                 "view: no Task, its output aliases its input's buffer (attribute view=1)",
                 false},
                {kConcatInPlaceRule,
                 "lower a Concat whose inputs are contiguous parts of its output (every dim before "
                 "the axis 1, plain layout) in place: no copy Task, each producer writes its part of "
                 "the output's DRAM buffer (attribute view=1)",
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
        if (ctx.isEnabled(kConcatInPlaceRule)) {
            auto t0 = std::chrono::steady_clock::now();
            changed |= markInPlaceConcats(graph, ctx);
            ctx.addRuleTime(kConcatInPlaceRule, millisSince(t0));
        }
        return changed;
    }

private:
    static bool markInPlaceConcats(ir::Graph& graph, PassContext& ctx) {
        bool changed = false;
        for (ir::Node* n : graph.nodes()) {
            if (n->kind() != ir::OpKind::Concat || n->isView() || n->numOutputs() != 1 || !n->output(0))
                continue;
            if (const std::string why = ir::concatInPlaceReason(*n, ctx.config().c0); !why.empty()) {
                ctx.reject(kConcatInPlaceRule, n->name(), why);
                continue;
            }
            if (!ctx.requestApplication(kConcatInPlaceRule, n->name()))
                continue;
            n->setView(true);
            changed = true;
        }
        return changed;
    }

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
        NodeFlags blockedBefore; ///< the nodes an earlier run placed in NC1HWC0
        NodeFlags plainWriters;  ///< blocked convolutions writing their output plain (write-small-channel-output)

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
        const std::vector<bool> isBlocked = findCandidates(graph, s, ctx);
        Regions regions = joinRegions(s, isBlocked);
        const std::vector<char> allowed = decideRegions(s, isBlocked, regions, ctx);
        keepAllowedRegions(s, isBlocked, regions, allowed);
        choosePlainWriters(s, ctx);
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
        s.blockedBefore.flag.assign(s.nodes.size(), 0);
        for (size_t i = 0; i < s.nodes.size(); ++i) {
            s.nodes[i]->setScratch(static_cast<uint32_t>(i + 1));
            s.blockedBefore.flag[i] = s.nodes[i]->attrString(kLayoutAttr, "") == "NC1HWC0";
        }
        return s;
    }

    /// Step 1: which nodes go blocked, regardless of bisection (by position), decided for the
    /// whole graph at once: the assignment with the fewest conversions (then the fewest bytes
    /// converted) by a minimum cut between the convolutions (blocked) and the graph's inputs,
    /// outputs and plain-only nodes (plain). Their outputs join the blocked values. A node that
    /// could be blocked but reads a blocked value and stays plain is rejected with the reason.
    static std::vector<bool> findCandidates(const ir::Graph& graph, Sweep& s, PassContext& ctx) {
        std::vector<Verdict> verdicts;
        verdicts.reserve(s.nodes.size());
        for (const ir::Node* n : s.nodes) {
            verdicts.push_back(classify(*n));
            if (verdicts.back().always)
                ctx.reject(kAssignLayoutRule, n->name(), verdicts.back().why);
        }
        const std::vector<bool> isBlocked =
            solveCut(graph, s, verdicts, ctx.isEnabled(kAbsorbTransposeRule),
                     ctx.isEnabled(kSmallChannelInputRule));
        for (size_t i = 0; i < s.nodes.size(); ++i)
            if (isBlocked[i])
                s.blocked.insert(s.nodes[i]->output(0));
        for (size_t i = 0; i < s.nodes.size(); ++i) {
            const ir::Node* n = s.nodes[i];
            const ir::LayoutClass layout = layoutOf(n->kind());
            if (isBlocked[i] || verdicts[i].always || layout == ir::LayoutClass::Plain ||
                layout == ir::LayoutClass::View)
                continue;
            const bool readsBlocked = std::any_of(
                n->inputs().begin(), n->inputs().end(),
                [&](const ir::Value* v) { return v && s.blocked.count(v) != 0; });
            if (readsBlocked)
                ctx.reject(kAssignLayoutRule, n->name(), plainReason(*n, verdicts[i], s.blocked));
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

    /// Step 3b (write-small-channel-output): the blocked convolutions whose output has at most
    /// kSmallChannels known channels and no blocked reader write it plain (not one whose only
    /// reader is an NCHW -> NHWC Transpose the exit would absorb, as read-small-channel-input). A convolution that
    /// an earlier run let write plain (blocked, its output untagged) keeps doing so without a
    /// new application. Their outputs leave the blocked values.
    static void choosePlainWriters(Sweep& s, PassContext& ctx) {
        s.plainWriters.flag.assign(s.nodes.size(), 0);
        if (!ctx.isEnabled(kSmallChannelOutputRule))
            return;
        for (size_t i = 0; i < s.nodes.size(); ++i) {
            ir::Node* n = s.nodes[i];
            if (!s.blockedNodes.count(n) || !isConvFamily(n->kind()))
                continue;
            ir::Value* out = n->output(0);
            const ir::Dim& c = out->type().shape[1];
            if (!c.isKnown() || c.value > kSmallChannels)
                continue;
            bool blockedReader = false;
            for (const ir::Node* u : out->users())
                blockedReader |= s.blockedNodes.count(u) || isTransData(u);
            // Not when the exit would absorb an NCHW -> NHWC Transpose (a head going back to
            // NHWC): one reorder out of NC1HWC0 beats a plain write and a Transpose.
            if (blockedReader || (ctx.isEnabled(kAbsorbTransposeRule) && !out->isGraphOutput() && out->users().size() == 1 &&
                                  isTranspose(out->users()[0], {0, 2, 3, 1})))
                continue;
            const bool before = s.blockedBefore.count(n) && out->type().layout != ir::LayoutKind::NC1HWC0;
            if (!before && !ctx.requestApplication(kSmallChannelOutputRule, n->name()))
                continue;
            s.plainWriters.flag[i] = 1;
            s.blocked.erase(out);
        }
    }

    /// Step 4: marks the blocked nodes and tags their outputs (not a plain writer's).
    static bool markBlocked(const Sweep& s) {
        bool changed = false;
        for (ir::Node* n : s.nodes) {
            if (!s.blockedNodes.count(n))
                continue;
            changed |= n->attrString(kLayoutAttr, "") != "NC1HWC0";
            n->setAttr(kLayoutAttr, std::string("NC1HWC0"));
            if (s.plainWriters.count(n))
                continue;
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
    /// first blocked reader, and every blocked reader shares it (a convolution's weight and
    /// bias are not converted, and constants are repacked at compile time).
    static Expected<bool> insertEntries(ir::Graph& graph, PassContext& ctx, const Sweep& s) {
        std::map<const ir::Value*, ir::Node*> entryNode; // the TransData each plain value enters by
        std::vector<ir::Node*> absorbedEntries; // Transposes whose result no longer has readers
        bool changed = false;
        for (ir::Node* n : s.nodes) {
            if (!s.blockedNodes.count(n))
                continue;
            for (size_t i = 0; i < n->numInputs(); ++i) {
                ir::Value* v = n->input(i);
                if (!readsAsActivation(*n, i) || !v || v->isConstant() || s.blocked.count(v) || !isRank4(v))
                    continue;
                // read-small-channel-input: no conversion unless another blocked reader needs one.
                // A convolution blocked by an earlier run and reading plain had the rule then.
                const bool absorb = ctx.isEnabled(kAbsorbTransposeRule);
                if (ctx.isEnabled(kSmallChannelInputRule) && smallChannelRead(*n, i, absorb) &&
                    !convertedAnyway(*v, s, absorb) &&
                    (s.blockedBefore.count(n) || ctx.requestApplication(kSmallChannelInputRule, n->name())))
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

    /// Whether plain `v` has a blocked reader that needs it converted (not a small-channel
    /// read): then a small-channel convolution reads that conversion too.
    static bool convertedAnyway(const ir::Value& v, const Sweep& s, bool absorb) {
        for (const ir::Node* u : v.users()) {
            if (!s.blockedNodes.count(u))
                continue;
            for (size_t i = 0; i < u->numInputs(); ++i)
                if (u->input(i) == &v && readsAsActivation(*u, i) && !smallChannelRead(*u, i, absorb))
                    return true;
        }
        return false;
    }

    /// The entry conversion of plain `v` before its first blocked reader `n`. An NHWC -> NCHW
    /// Transpose feeding only blocked activations converts in one step: the TransData reads the
    /// Transpose's input and the Transpose joins `absorbed` (erased once no longer read).
    static Expected<ir::Node*> addEntry(ir::Graph& graph, PassContext& ctx, const Sweep& s,
                                        ir::Value* v, ir::Node* n,
                                        std::vector<ir::Node*>& absorbed) {
        ir::Node* tr = v->producer();
        const bool absorb = isTranspose(tr, {0, 3, 1, 2}) && !v->isGraphOutput() &&
                            tr->input(0) && !tr->input(0)->isConstant() &&
                            onlyBlockedActivationOf(v, s.blockedNodes) &&
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
            if (!s.blockedNodes.count(n) || s.plainWriters.count(n))
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
    /// Where the assignment may put a node.
    enum class Choice : uint8_t {
        Plain,    ///< stays NCHW: its kind, its shapes or a used second output
        Flexible, ///< runs in either layout: the whole-graph cut decides
        Blocked,  ///< a 2-D convolution: always NC1HWC0
    };

    /// A node's choice, with a rejection reason when a kind that could be blocked cannot be.
    /// `always`: report the reason whatever the neighbours (otherwise only when the node reads
    /// a blocked value, where the reason explains a conversion).
    struct Verdict {
        Choice choice = Choice::Plain;
        std::string why;
        bool always = false;
    };

    static Verdict classify(const ir::Node& n) {
        const ir::LayoutClass layout = layoutOf(n.kind());
        bool followsInput0 = false; // its activation is input 0 (the others are read as they are)
        switch (layout) {
        case ir::LayoutClass::Plain:
        case ir::LayoutClass::View: return {};
        case ir::LayoutClass::Unary:
        case ir::LayoutClass::Pooling:
        case ir::LayoutClass::Spatial: followsInput0 = true; break;
        case ir::LayoutClass::Conv:
        case ir::LayoutClass::Binary:
        case ir::LayoutClass::Concat: break;
        }
        const bool conv = layout == ir::LayoutClass::Conv;
        if (n.numOutputs() == 0 || !n.input(0))
            return {};
        if (!isRank4(n.output(0)) || ((conv || followsInput0) && !isRank4(n.input(0)))) {
            if (!conv)
                return {};
            return {Choice::Plain,
                    "convolution is not 2-D (rank " + std::to_string(n.output(0)->type().rank()) +
                        "); only 2-D convolutions are blocked",
                    true};
        }
        if (n.numOutputs() > 1 && !n.output(1)->users().empty())
            return {Choice::Plain, "second output '" + n.output(1)->name() + "' is used", true};
        if (conv)
            return {Choice::Blocked, "", false};
        if (layout == ir::LayoutClass::Spatial)
            return spatialVerdict(n);
        if (followsInput0)
            return {Choice::Flexible, "", false};
        return operandsVerdict(n, layout);
    }

    /// An op that resamples the spatial dims (Resize): flexible when N and C come out as they
    /// went in, so each packed channel block maps to the same block of the output. A
    /// crop-and-resize may take its region along C (roi), so it stays plain.
    static Verdict spatialVerdict(const ir::Node& n) {
        const ir::TensorType& in = n.input(0)->type();
        const ir::TensorType& out = n.output(0)->type();
        if (n.attrString("coordinate_transformation_mode", "") == "tf_crop_and_resize")
            return {Choice::Plain, "crop-and-resize takes a region of every dim, C too", false};
        for (size_t d = 0; d < 2; ++d)
            if (!in.shape[d].isKnown() || in.shape[d] != out.shape[d])
                return {Choice::Plain,
                        std::string(d == 0 ? "N" : "C") + " is not known to stay " +
                            (in.shape[d].isKnown() ? std::to_string(in.shape[d].value) : "the same") +
                            ": only H and W can be resampled in NC1HWC0",
                        false};
        return {Choice::Flexible, "", false};
    }

    /// Binary elementwise and Concat: flexible when every activation operand can be read
    /// blocked. Constants are repacked at compile time; an activation may broadcast over N, H
    /// and W (its packed channels line up with the output's), not along the channels. A channel
    /// Concat whose inputs are not multiples of C0 = 16 still writes NC1HWC0: the concat is a
    /// copy either way and shifts the lanes while it copies (BlazeFace pads 24 channels to 32
    /// this way in every residual block).
    static Verdict operandsVerdict(const ir::Node& n, ir::LayoutClass layout) {
        const ir::TensorType& out = n.output(0)->type();
        for (size_t i = 0; i < n.numInputs(); ++i) {
            const ir::Value* v = n.input(i);
            if (!v || v->isConstant() || layout == ir::LayoutClass::Concat ||
                v->type().shape == out.shape)
                continue;
            if (isRank4(v) && v->type().shape[1] == out.shape[1])
                continue;
            return {Choice::Plain,
                    "operand " + std::to_string(i) + " '" + v->name() +
                        "' is broadcast to the output shape along the packed channel axis",
                    false};
        }
        return {Choice::Flexible, "", false};
    }

    /// The cost model's unit: a conversion costs kPerConversion plus the bytes it reads and
    /// writes, so fewer grey ops always win and, among as many, the fewest bytes moved or
    /// computed on as channel padding. A conversion that absorbs a Transpose replaces a grey op
    /// and costs only its bytes.
    static constexpr int64_t kPerConversion = int64_t{1} << 40;
    static constexpr int64_t kC0 = 16;

    static int64_t plainBytes(const ir::TensorType& t) {
        return t.isStatic() ? t.numel() * static_cast<int64_t>(ir::dtypeSize(t.dtype)) : 0;
    }

    /// Bytes in NC1HWC0: the channels rounded up to C0.
    static int64_t blockedBytes(const ir::TensorType& t) {
        if (!t.isStatic() || t.rank() != 4 || t.numel() == 0)
            return plainBytes(t);
        const int64_t c = t.dims()[1];
        return plainBytes(t) / c * ((c + kC0 - 1) / kC0 * kC0);
    }

    /// The cut vertex of a node by its choice: its own for a flexible one, else a terminal.
    static uint32_t vertexOf(const std::vector<Verdict>& verdicts, size_t i) {
        switch (verdicts[i].choice) {
        case Choice::Plain: return LayoutCut::kSink;
        case Choice::Flexible: return static_cast<uint32_t>(i + 2);
        case Choice::Blocked: return LayoutCut::kSource;
        }
        return LayoutCut::kSink;
    }

    /// The layout `v` is produced in, as a cut vertex (a TransData's by its destination).
    static uint32_t producerVertex(const Sweep& s, const std::vector<Verdict>& verdicts,
                                   const ir::Value& v) {
        const ir::Node* p = v.producer();
        const std::optional<size_t> at = p ? s.indexOf(p) : std::nullopt;
        if (!at || p->output(0) != &v)
            return LayoutCut::kSink;
        if (isTransData(p))
            return p->attrString("dst_format", "") == "NC1HWC0" ? LayoutCut::kSource
                                                                : LayoutCut::kSink;
        return vertexOf(verdicts, *at);
    }

    /// The layout reader `u` reads its input `slot` in, as a cut vertex; nothing for a
    /// convolution's weight or bias (repacked or read as it is, never converted).
    static std::optional<uint32_t> readerVertex(const Sweep& s, const std::vector<Verdict>& verdicts,
                                                const ir::Node& u, size_t slot, bool absorb,
                                                bool smallChannels) {
        const std::optional<size_t> at = s.indexOf(&u);
        if (!at)
            return LayoutCut::kSink;
        if (isTransData(&u))
            return u.attrString("src_format", "") == "NC1HWC0" ? LayoutCut::kSource
                                                               : LayoutCut::kSink;
        if (!readsAsActivation(u, slot) && verdicts[*at].choice == Choice::Blocked)
            return std::nullopt;
        // Reads either layout at no cost (read-small-channel-input): no side in the cut.
        if (smallChannels && smallChannelRead(u, slot, absorb) && verdicts[*at].choice == Choice::Blocked)
            return std::nullopt;
        return vertexOf(verdicts, *at);
    }

    /// One group per rank-4 activation: its producer, its readers and (for a graph output) the
    /// plain host, split when some read it in the other layout (one shared conversion).
    static void addValueGroup(LayoutCut& cut, const Sweep& s, const std::vector<Verdict>& verdicts,
                              const ir::Value* v, bool absorb, bool smallChannels) {
        if (!v || v->isConstant() || !isRank4(v))
            return;
        std::vector<uint32_t> members{producerVertex(s, verdicts, *v)};
        for (const ir::Node* u : v->users())
            for (size_t i = 0; i < u->numInputs(); ++i)
                if (u->input(i) == v)
                    if (std::optional<uint32_t> r = readerVertex(s, verdicts, *u, i, absorb, smallChannels))
                        members.push_back(*r);
        if (v->isGraphOutput())
            members.push_back(LayoutCut::kSink);
        const int64_t bytes = plainBytes(v->type()) + blockedBytes(v->type());
        cut.addGroup(members, absorbsTranspose(*v, absorb) ? bytes : kPerConversion + bytes);
    }

    /// Whether a conversion of `v` would absorb an NHWC <-> NCHW Transpose (so it adds no grey
    /// op): `v` is the result of Transpose NHWC -> NCHW read only as an activation, or its only
    /// reader is Transpose NCHW -> NHWC; not a graph output either way.
    static bool absorbsTranspose(const ir::Value& v, bool absorb) {
        if (!absorb || v.isGraphOutput() || v.users().empty())
            return false;
        const ir::Node* p = v.producer();
        if (isTranspose(p, {0, 3, 1, 2}) && p->input(0) && !p->input(0)->isConstant())
            return std::all_of(v.users().begin(), v.users().end(), [&](const ir::Node* u) {
                const ir::LayoutClass c = layoutOf(u->kind());
                return c != ir::LayoutClass::Plain && c != ir::LayoutClass::View &&
                       readsOnlyAsActivation(*u, v);
            });
        return v.users().size() == 1 && isTranspose(v.users()[0], {0, 2, 3, 1});
    }

    /// The whole-graph assignment: per node, whether the minimum cut puts it blocked. Besides
    /// the conversions, a flexible node pays the channel padding it would compute on when
    /// blocked, so it follows the convolutions when that is free and not when it is not.
    static std::vector<bool> solveCut(const ir::Graph& graph, const Sweep& s,
                                      const std::vector<Verdict>& verdicts, bool absorb, bool smallChannels) {
        LayoutCut cut(static_cast<uint32_t>(s.nodes.size()));
        for (const ir::Value* v : graph.inputs())
            addValueGroup(cut, s, verdicts, v, absorb, smallChannels);
        for (const ir::Node* n : s.nodes)
            for (const ir::Value* v : n->outputs())
                addValueGroup(cut, s, verdicts, v, absorb, smallChannels);
        for (size_t i = 0; i < s.nodes.size(); ++i)
            if (verdicts[i].choice == Choice::Flexible) {
                const ir::TensorType& t = s.nodes[i]->output(0)->type();
                cut.addEdge(vertexOf(verdicts, i), LayoutCut::kSink,
                            blockedBytes(t) - plainBytes(t));
            }
        const std::vector<bool> side = cut.sourceSide();
        std::vector<bool> blocked(s.nodes.size());
        for (size_t i = 0; i < s.nodes.size(); ++i)
            blocked[i] = side[vertexOf(verdicts, i)];
        return blocked;
    }

    /// Why a node that reads a blocked value stays plain: its own reason, or the cut's.
    static std::string plainReason(const ir::Node& n, const Verdict& verdict,
                                   const std::set<const ir::Value*>& blocked) {
        if (!verdict.why.empty())
            return verdict.why;
        for (size_t i = 0; i < n.numInputs(); ++i) {
            const ir::Value* v = n.input(i);
            if (v && !v->isConstant() && isRank4(v) && !blocked.count(v))
                return "operand " + std::to_string(i) + " '" + v->name() +
                       "' is a plain (not NC1HWC0) activation, and converting it costs more "
                       "than converting the blocked ones back";
        }
        return "its output is read in plain NCHW, and converting it costs more than converting "
               "its blocked operands back";
    }
};

} // namespace

std::unique_ptr<Pass> makeLayoutPass() {
    return std::make_unique<LayoutPass>();
}

} // namespace sextant::passes
