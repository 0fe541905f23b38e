#include "CoreSplit.h"

#include "CostModel.h"

#include <algorithm>

namespace sextant::backend {

Expected<SplitPlan> chooseSplit(const Group& group, const Target& t, const TaskCost& whole, int maxParts,
                                TileOptions tiles) {
    SplitPlan plan;
    const ir::Node& n = *group.nodes.front();
    if (t.numCores < 2 || maxParts < 2 || group.nodes.size() != 1 || n.numOutputs() != 1)
        return plan;
    SX_ASSIGN(WorkModel model, workModel(group, t));
    const std::vector<int64_t>& od = model.outDims;
    // The two outermost dims the model can split (a convolution's channels and rows, say).
    std::vector<size_t> axes;
    for (int a : model.splitAxes)
        if (static_cast<size_t>(a) < od.size() && od[static_cast<size_t>(a)] >= 2 && axes.size() < 2)
            axes.push_back(static_cast<size_t>(a));
    const int most = std::min(t.numCores, maxParts);
    std::vector<int> tries;
    for (int k = 2; k <= most; k *= 2)
        tries.push_back(k);
    if (most >= 2 && tries.back() != most)
        tries.push_back(most);
    uint64_t best = whole.estCycles;
    // Pass 0 tries 2, 4, ... parts (at most one per unit) on both axes; pass 1, on the axis pass
    // 0 chose, one unit per part where there are fewer units than cores (6 C0 blocks of channels
    // on 8 cores, which pass 0 can only cut into 3). Pass 1 never changes the axis: a split
    // along the axis the neighbours use keeps their stripes on chip, which this local figure
    // does not see.
    for (int pass = 0; pass < 2; ++pass)
        for (size_t axis : axes) {
            if (pass == 1 && (plan.axis < 0 || static_cast<size_t>(plan.axis) != axis))
                continue;
            // A blocked output's channels split in whole C0 blocks.
            const int64_t unit =
                n.output(0)->type().layout == ir::LayoutKind::NC1HWC0 && axis == 1 ? std::max(t.c0, 1) : 1;
            const int64_t extent = od[axis];
            const int64_t units = ceilDivExtent(extent, unit);
            for (int tried : tries) {
                if (pass == 0 && tried > units)
                    break;
                if (pass == 1 && (tried <= units || tried != tries.back()))
                    continue;
                const int64_t k = std::min<int64_t>(tried, units);
                const int64_t per = ceilDivExtent(units, k) * unit;
                const int64_t parts = ceilDivExtent(extent, per);
                if (parts < 2 || (plan.axis >= 0 && static_cast<size_t>(plan.axis) == axis &&
                                  static_cast<int64_t>(plan.ranges.size()) == parts))
                    continue;
                OutputSlice first{axis, per};
                Expected<TaskCost> cost = chooseTiling(group, t, &first, tiles);
                if (!cost.ok())
                    continue;
                const uint64_t total = cost->estCycles + t.eventLatencyCycles + t.dispatchCycles;
                if (total >= best)
                    continue;
                const int64_t lastExtent = extent - (parts - 1) * per;
                OutputSlice last{axis, lastExtent};
                Expected<TaskCost> lastCost = lastExtent == per ? cost : chooseTiling(group, t, &last, tiles);
                if (!lastCost.ok())
                    continue;
                SplitPlan candidate;
                candidate.axis = static_cast<int>(axis);
                for (int64_t p = 0; p < parts; ++p) {
                    candidate.ranges.emplace_back(p * per, std::min(extent, (p + 1) * per));
                    candidate.costs.push_back(p + 1 == parts ? *lastCost : *cost);
                }
                best = total;
                plan = std::move(candidate);
            }
        }
    return plan;
}

std::optional<SplitPlan> splitAlong(const Group& group, const Target& t, int axis,
                                    const std::vector<std::pair<int64_t, int64_t>>& ranges, TileOptions tiles) {
    if (group.nodes.size() != 1 || group.nodes.front()->numOutputs() != 1 || ranges.size() < 2 || axis < 0)
        return std::nullopt;
    Expected<WorkModel> model = workModel(group, t);
    if (!model.ok() || std::find(model->splitAxes.begin(), model->splitAxes.end(), axis) == model->splitAxes.end())
        return std::nullopt;
    const std::vector<int64_t>& od = model->outDims;
    const size_t a = static_cast<size_t>(axis);
    const int64_t per = ranges.front().second - ranges.front().first;
    if (a >= od.size() || ranges.front().first != 0 || ranges.back().second != od[a] || per <= 0)
        return std::nullopt;
    for (size_t p = 0; p < ranges.size(); ++p)
        if (ranges[p].first != static_cast<int64_t>(p) * per ||
            ranges[p].second != std::min(od[a], static_cast<int64_t>(p + 1) * per))
            return std::nullopt;
    const ir::Node& n = *group.nodes.front();
    if (n.output(0)->type().layout == ir::LayoutKind::NC1HWC0 && axis == 1 && per % std::max(t.c0, 1) != 0)
        return std::nullopt; // a blocked output's channels split in whole C0 blocks
    OutputSlice first{a, per};
    Expected<TaskCost> cost = chooseTiling(group, t, &first, tiles);
    const int64_t lastExtent = ranges.back().second - ranges.back().first;
    OutputSlice last{a, lastExtent};
    Expected<TaskCost> lastCost = lastExtent == per ? cost : chooseTiling(group, t, &last, tiles);
    if (!cost.ok() || !lastCost.ok())
        return std::nullopt;
    SplitPlan plan;
    plan.axis = axis;
    plan.ranges = ranges;
    for (size_t p = 0; p < ranges.size(); ++p)
        plan.costs.push_back(p + 1 == ranges.size() ? *lastCost : *cost);
    return plan;
}

namespace {

/// Whether an op the cost model prices as elementwise computes statistics along dim `a` of its
/// input, so that a part computing a slice of the output reads the whole input along it:
/// MeanVarianceNormalization over its axes, InstanceNormalization over the spatial dims,
/// LogSoftmax from its axis on, LRN over a window of the channels (a part's slice of them reads
/// its neighbours' edges: taken as the whole), Hardmax over every dim after the batch (its axis
/// defaults differ across opsets: taken widely), and CumSum over every dim (its axis is an input).
bool reducesAlong(const ir::Node& n, size_t rank, size_t a) {
    const auto norm = [rank](int64_t axis) { return axis < 0 ? axis + static_cast<int64_t>(rank) : axis; };
    switch (n.kind()) {
    case ir::OpKind::MeanVarianceNormalization:
        for (int64_t axis : n.attrInts("axes", {0, 2, 3}))
            if (norm(axis) == static_cast<int64_t>(a))
                return true;
        return false;
    case ir::OpKind::InstanceNormalization: return a >= 2;
    case ir::OpKind::LogSoftmax: return static_cast<int64_t>(a) >= norm(n.attrInt("axis", -1));
    case ir::OpKind::LRN: return a == 1;
    case ir::OpKind::Hardmax: return a >= 1;
    case ir::OpKind::CumSum: return true;
    default: return false;
    }
}

/// Whether convolution `n` maps input position i to output position i along spatial dim `a`
/// (>= 2): a 1-wide kernel, stride 1, no padding on either side (a pointwise convolution along
/// H or W). Such a conv reads, along `a`, exactly the rows of its output slice.
bool pointwiseAlong(const ir::Node& n, size_t a) {
    const ir::Value* w = n.numInputs() > 1 ? n.input(1) : nullptr;
    if (!w || w->type().rank() != n.output(0)->type().rank() || a < 2)
        return false;
    const size_t d = a - 2, sp = w->type().rank() - 2;
    const std::vector<int64_t> wd = w->type().dims();
    const std::vector<int64_t> strides = n.attrInts("strides");
    const std::vector<int64_t> pads = n.attrInts("pads");
    const std::string autoPad = n.attrString("auto_pad", "NOTSET");
    if (wd[a] != 1 || (autoPad != "NOTSET" && autoPad != "VALID"))
        return false;
    if (d < strides.size() && strides[d] != 1)
        return false;
    return pads.size() != 2 * sp || (pads[d] == 0 && pads[d + sp] == 0);
}

} // namespace

bool readsOwnSlice(const ir::Node& n, const ir::Value& in, int axis) {
    if (n.numOutputs() != 1 || axis < 0)
        return false;
    const std::vector<int64_t> od = n.output(0)->type().dims();
    const std::vector<int64_t> id = in.type().dims();
    const size_t a = static_cast<size_t>(axis);
    if (id.size() != od.size() || a >= od.size() || id[a] != od[a])
        return false;
    // A layout conversion between blocked and plain channels is the identity on the logical
    // tensor: each part copies its own slice. One to or from NHWC permutes the dims (NCHW
    // [1,96,8,8] to NHWC [1,8,8,96]): dim `axis` of its output is another dim of its input, even
    // where the two extents happen to agree (BlazeFace's H and W), so a part reads other slices.
    if (n.kind() == ir::OpKind::TransData)
        return n.input(0) == &in && id == od;
    // A Concat's part along any other dim copies that slice of each input.
    if (n.kind() == ir::OpKind::Concat) {
        const int64_t rank = static_cast<int64_t>(od.size());
        int64_t along = n.attrInt("axis", 0);
        along = along < 0 ? along + rank : along;
        return along != axis;
    }
    if (reducesAlong(n, id.size(), a))
        return false;
    const bool conv = n.info().work == ir::WorkModel::Conv;
    // Along N every convolution reads its own images; along H or W a pointwise one its own rows.
    const bool convDataOwn = conv && n.input(0) == &in && od.size() >= 3 && (a == 0 || pointwiseAlong(n, a));
    // A FusedConv's residual is added element by element to the part's own output slice.
    if (n.kind() == ir::OpKind::FusedConv && n.numInputs() > 3 && n.input(3) == &in)
        return n.input(0) != &in || convDataOwn;
    // A group's pooled prologue (fold-squeeze-excite) reduces or mixes all of its input.
    if (n.kind() == ir::OpKind::ElementwiseGroup && n.body())
        for (uint32_t j = 0; j < n.numInputs(); ++j)
            if (n.input(j) == &in && ir::pooledInput(*n.body(), j))
                return false;
    switch (n.info().work) {
    case ir::WorkModel::Elementwise:
    case ir::WorkModel::Group:
        return true;
    case ir::WorkModel::Pool:
    case ir::WorkModel::GlobalPool:
        return a <= 1 && n.input(0) == &in;
    case ir::WorkModel::Conv: {
        if (convDataOwn)
            return true;
        // Depthwise: every output channel reads its own input channel only.
        const int64_t groups = n.attrInt("group", 1);
        return a <= 1 && n.input(0) == &in && od.size() >= 3 && groups > 1 && groups == id[1] && groups == od[1];
    }
    default:
        return false;
    }
}

std::optional<std::pair<int64_t, int64_t>> convWindowRows(const ir::Node& conv, int axis, int64_t outBegin,
                                                          int64_t outEnd) {
    const bool transposed = conv.kind() == ir::OpKind::ConvTranspose || conv.kind() == ir::OpKind::FusedConvTranspose;
    // A local pooling reads a window like a convolution's, its extent from kernel_shape.
    const bool pool = conv.kind() == ir::OpKind::MaxPool || conv.kind() == ir::OpKind::AveragePool;
    if ((!transposed && !pool && conv.kind() != ir::OpKind::Conv && conv.kind() != ir::OpKind::FusedConv &&
         conv.kind() != ir::OpKind::Int8Conv) ||
        axis < 2 || conv.numInputs() < (pool ? 1u : 2u) || !conv.input(0) || (!pool && !conv.input(1)) ||
        outBegin >= outEnd)
        return std::nullopt;
    const std::vector<int64_t> xd = conv.input(0)->type().dims();
    std::vector<int64_t> wd = pool ? std::vector<int64_t>{} : conv.input(1)->type().dims();
    if (pool) { // as a weight's dims: [out channels, in channels, kernel...]
        const std::vector<int64_t> k = conv.attrInts("kernel_shape");
        if (k.size() != 2)
            return std::nullopt;
        wd = {1, 1, k[0], k[1]};
    }
    const size_t a = static_cast<size_t>(axis);
    if (xd.size() != 4 || wd.size() != 4 || a >= xd.size())
        return std::nullopt;
    const std::string autoPad = conv.attrString("auto_pad", "NOTSET");
    if (autoPad != "NOTSET" && autoPad != "VALID")
        return std::nullopt;
    const size_t d = a - 2, sp = 2;
    const std::vector<int64_t> strides = conv.attrInts("strides"), dil = conv.attrInts("dilations"),
                               pads = conv.attrInts("pads");
    const int64_t stride = d < strides.size() ? strides[d] : 1;
    const int64_t dilation = d < dil.size() ? dil[d] : 1;
    const int64_t padBegin = autoPad == "VALID" || pads.size() != 2 * sp ? 0 : pads[d];
    if (stride < 1 || dilation < 1 || wd[a] < 1)
        return std::nullopt;
    const int64_t reach = (wd[a] - 1) * dilation; // from the first tap to the last
    int64_t lo = 0, hi = 0;
    if (transposed) {
        // Input row i scatters into output rows i * stride - padBegin + k * dilation, k < kernel:
        // output rows [outBegin, outEnd) gather from input rows
        // ceil((outBegin + padBegin - reach) / stride) to floor((outEnd - 1 + padBegin) / stride).
        const auto floorDiv = [](int64_t x, int64_t y) { return x >= 0 ? x / y : -((-x + y - 1) / y); };
        lo = -floorDiv(-(outBegin + padBegin - reach), stride);
        hi = floorDiv(outEnd - 1 + padBegin, stride) + 1;
    } else {
        lo = outBegin * stride - padBegin;
        hi = (outEnd - 1) * stride - padBegin + reach + 1;
    }
    const int64_t b = std::max<int64_t>(lo, 0), e = std::min(hi, xd[a]);
    if (b >= e)
        return std::nullopt;
    return std::make_pair(b, e);
}

} // namespace sextant::backend
