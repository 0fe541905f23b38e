// split-global-pool: a global pooling whose channel blocks leave cores idle, reduced in two
// steps so that its first, large step splits by rows as well.
#include "FuseUtil.h"
#include "PassManager.h"

#include <string>

namespace sextant::passes::fuse {

namespace {

using ir::OpKind;

/// A GlobalAveragePool (or GlobalMaxPool) over an [N, C, H, W] map splits across the cores only
/// by channel block (the reduced H and W leave nothing else to split): a 24-channel map in blocks
/// of 16 is read by two cores, each moving half the map, however many cores there are. Reduced
/// in two steps, AveragePool (MaxPool) with a window of H / k whole rows to [N, C, k, 1] and the
/// global pooling of that, the first step splits by rows too and takes the whole machine (each
/// part reading its rows, on the core that computed them where the producer split the same way);
/// the second is k values per channel. The mean of k equal-sized means is the mean (the maximum
/// of maxima the maximum): the numbers are the same up to rounding.
/// k is the largest divisor of H up to the core count. It applies where the channel blocks give
/// fewer parts than there are cores and the map has at least kMinPositions positions per
/// channel: below that a channel block's map moves in fewer cycles than the second Task costs.
class SplitGlobalPool : public FusionRule {
public:
    static constexpr int64_t kMinPositions = 32 * 32;

    std::string id() const override { return "split-global-pool"; }
    std::string summary() const override {
        return "reduce a GlobalAveragePool/GlobalMaxPool whose channel blocks leave cores idle in two steps: "
               "an AveragePool/MaxPool over whole-row windows (which splits by rows across the cores), "
               "then the global pooling of its few rows";
    }
    Phase phase() const override { return Phase::Late; }
    std::vector<OpKind> targets() const override { return {OpKind::GlobalAveragePool, OpKind::GlobalMaxPool}; }
    void configure(const PipelineConfig& config) override {
        m_cores = config.numCores;
        m_c0 = config.c0;
    }

    struct Plan : MatchPlan {
        int64_t rows = 0; ///< k: the first step's output rows
    };

    Match matchHere(const ir::Node& pool) const override {
        const ir::Value* x = pool.input(0);
        if (!x || pool.numOutputs() != 1 || !ir::isFloat(x->type().dtype))
            return Match::none();
        // The second step of an earlier application: not a candidate (nor a rejection) of its own.
        if (const ir::Node* p = x->producer(); p && p->provenance().createdBy == "fuse/" + id())
            return Match::none();
        const ir::TensorType& t = x->type();
        if (t.rank() != 4 || !t.isStatic())
            return Match::rejected("input '" + x->name() + "' is not a static 4-D map");
        const std::vector<int64_t> d = t.dims();
        const int64_t n = d[0], c = d[1], h = d[2], w = d[3];
        if (m_cores < 2)
            return Match::rejected("the target has one core");
        const int64_t blocks = n * ((c + std::max(m_c0, 1) - 1) / std::max(m_c0, 1));
        if (blocks >= m_cores)
            return Match::rejected(std::to_string(blocks) + " channel blocks already give each of the " +
                                   std::to_string(m_cores) + " cores a part");
        if (h * w < kMinPositions)
            return Match::rejected("a " + std::to_string(h) + "x" + std::to_string(w) + " map (" + std::to_string(h * w) +
                                   " positions, fewer than " + std::to_string(kMinPositions) +
                                   ") moves faster than a second Task costs");
        int64_t k = 0;
        for (int64_t r = std::min<int64_t>(m_cores, h); r >= 2; --r)
            if (h % r == 0) {
                k = r;
                break;
            }
        if (k == 0)
            return Match::rejected("height " + std::to_string(h) + " has no divisor from 2 to " + std::to_string(m_cores));
        auto plan = std::make_unique<Plan>();
        plan->rows = k;
        return Match::matched(std::move(plan));
    }

    Status apply(ir::Graph& g, ir::Node& pool, const Match& match, RewriteContext& rc) const override {
        const int64_t k = match.planAs<Plan>().rows;
        ir::Value* x = pool.input(0);
        const std::vector<int64_t> d = x->type().dims();
        ir::AttributeMap attrs;
        attrs["kernel_shape"] = std::vector<int64_t>{d[2] / k, d[3]};
        attrs["strides"] = std::vector<int64_t>{d[2] / k, d[3]};
        attrs["pads"] = std::vector<int64_t>{0, 0, 0, 0};
        const OpKind kind = pool.kind() == OpKind::GlobalMaxPool ? OpKind::MaxPool : OpKind::AveragePool;
        SX_ASSIGN(ir::Node * rows, g.addNode(kind, g.uniqueName(pool.name() + "_rows"), {x},
                                             {g.uniqueName(x->name() + "_rows")}, std::move(attrs), &pool));
        ir::TensorType rt = ir::TensorType::of(x->type().dtype, {d[0], d[1], k, 1});
        rt.layout = x->type().layout;
        rows->output(0)->setType(rt);
        rows->mutableProvenance() = {pool.provenance().origins, rc.createdBy()};
        g.setInput(&pool, 0, rows->output(0));
        pool.mutableProvenance().createdBy = rc.createdBy();
        return {};
    }

private:
    int m_cores = 1;
    int m_c0 = 16;
};

} // namespace

std::vector<std::unique_ptr<FusionRule>> splitRules() {
    std::vector<std::unique_ptr<FusionRule>> r;
    r.push_back(std::make_unique<SplitGlobalPool>());
    return r;
}

} // namespace sextant::passes::fuse
