// GroupNormalization (ONNX opsets 18 and 21), a float64/float32 reference kernel on the host.
// X [N, C, D1, ..., Dk] (k >= 0) is split into num_groups groups of C / num_groups consecutive
// channels; each (batch entry, group) is normalised over its channels and spatial dims:
//   Y = (X - mean) / sqrt(var + epsilon) * scale + bias     (var the biased variance)
// Opset 18 has one scale and one bias per group ([num_groups]); opset 21 made them per channel
// ([C]) and added stash_type, the precision of the statistics. The importer records the model's
// opset as "_opset"; a node without it (made by hand, or parsed from the textual IR) is read by
// its scale's length. The statistics are computed in double, so stash_type 1 (float, the
// default) and 11 (double) are both met; another is refused.

#include "OpUtil.h"

#include <cmath>
#include <limits>

namespace sextant::ir {

using ops::opError;

namespace {

constexpr int64_t kStashFloat = 1, kStashDouble = 11;

/// Whether scale and bias are per channel (opset 21) rather than per group (18), from the node's
/// opset or, without one, from the scale's length `scaleLen` (-1 when not known: per channel).
Expected<bool> perChannel(const Node& n, int64_t channels, int64_t groups, int64_t scaleLen) {
    const int64_t opset = n.attrInt("_opset", 0);
    const bool known = channels >= 0 && scaleLen >= 0;
    if (opset >= 21 || (opset == 0 && (!known || scaleLen == channels)))
        return true;
    if (opset != 0 || !known || scaleLen == groups)
        return false;
    return opError(n, "group normalization scale has " + std::to_string(scaleLen) + " entries, expected " +
                          std::to_string(groups) + " (one per group, opset 18) or " + std::to_string(channels) +
                          " (one per channel, opset 21)");
}

/// Checks X's rank, the channel count against num_groups and the lengths of scale and bias.
Status checkShapes(const Node& n, const ops::Shape& x, const ops::Shape& scale, const ops::Shape& bias) {
    if (x.size() < 2)
        return opError(n, "group normalization input must be [N, C, ...], got " + ops::shapeStr(x));
    const int64_t groups = n.attrInt("num_groups", 0);
    const int64_t channels = x[1].isKnown() ? x[1].value : -1;
    if (channels >= 0 && channels % groups != 0)
        return opError(n, "group normalization channels " + std::to_string(channels) +
                              " do not divide into num_groups " + std::to_string(groups));
    for (const auto* s : {&scale, &bias})
        if (s->size() != 1)
            return opError(n, std::string(s == &scale ? "scale" : "bias") + " must be 1-D, got " + ops::shapeStr(*s));
    const int64_t scaleLen = scale[0].isKnown() ? scale[0].value : -1;
    SX_ASSIGN(bool channelwise, perChannel(n, channels, groups, scaleLen));
    const int64_t want = channelwise ? channels : groups;
    for (const auto* s : {&scale, &bias})
        if (want >= 0 && (*s)[0].isKnown() && (*s)[0].value != want)
            return opError(n, std::string(s == &scale ? "scale" : "bias") + " must have " + std::to_string(want) +
                                  " entries (one per " + (channelwise ? "channel" : "group") +
                                  (n.hasAttr("_opset") ? " at opset " + std::to_string(n.attrInt("_opset", 0)) : "") +
                                  "), got " + ops::shapeStr(*s));
    return {};
}

} // namespace

Status verifyGroupNormalization(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "epsilon"));
    SX_TRY(ops::checkIntAttr(n, "_opset", 1, 1000));
    if (!n.hasAttr("num_groups"))
        return opError(n, "group normalization needs attribute num_groups");
    SX_TRY(ops::checkIntAttr(n, "num_groups", 1, std::numeric_limits<int64_t>::max()));
    SX_TRY(ops::checkIntAttr(n, "stash_type", 0, 1000));
    if (n.hasAttr("stash_type")) {
        if (n.attrInt("_opset", 21) < 21)
            return opError(n, "group normalization has no stash_type before opset 21");
        const int64_t stash = n.attrInt("stash_type", kStashFloat);
        if (stash != kStashFloat && stash != kStashDouble)
            return opError(n, "group normalization stash_type " + std::to_string(stash) +
                                  " is not supported (1 float or 11 double; the statistics are computed in double)",
                           ErrorKind::Unsupported);
    }
    for (size_t i = 0; i < 3; ++i)
        SX_TRY(ops::requireFloatInput(n, i, "group normalization input"));
    return {};
}

Expected<std::vector<TensorType>> inferGroupNormalization(const Node& n) {
    SX_TRY(verifyGroupNormalization(n));
    const TensorType& x = *ops::inputType(n, 0);
    SX_TRY(checkShapes(n, x.shape, ops::inputType(n, 1)->shape, ops::inputType(n, 2)->shape));
    return std::vector<TensorType>{x};
}

Expected<std::vector<Tensor>> runGroupNormalization(const Node& n, std::span<const Tensor> inputs,
                                                    const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor& scale = inputs[1];
    const Tensor& bias = inputs[2];
    SX_TRY(checkShapes(n, ops::shapeOf(x), ops::shapeOf(scale), ops::shapeOf(bias)));
    const int64_t batch = x.shape()[0], channels = x.shape()[1];
    const int64_t groups = n.attrInt("num_groups", 1);
    SX_ASSIGN(bool channelwise, perChannel(n, channels, groups, scale.numel()));
    const int64_t perGroup = channels / groups;
    const int64_t spatial = batch * channels == 0 ? 0 : x.numel() / (batch * channels);
    const int64_t count = perGroup * spatial; // elements of one (batch entry, group)
    const double eps = n.attrFloat("epsilon", 1e-5);
    Tensor y(x.dtype(), x.shape());
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t g = 0; g < groups; ++g) {
            const int64_t base = (b * channels + g * perGroup) * spatial;
            double mean = 0, var = 0;
            for (int64_t i = 0; i < count; ++i)
                mean += x.at(base + i);
            mean /= static_cast<double>(count ? count : 1);
            for (int64_t i = 0; i < count; ++i)
                var += (x.at(base + i) - mean) * (x.at(base + i) - mean);
            var /= static_cast<double>(count ? count : 1);
            const double inv = 1 / std::sqrt(var + eps);
            for (int64_t c = 0; c < perGroup; ++c) {
                const int64_t p = channelwise ? g * perGroup + c : g;
                const double mul = scale.at(p) * inv, add = bias.at(p);
                const int64_t at = base + c * spatial;
                for (int64_t i = 0; i < spatial; ++i)
                    y.set(at + i, (x.at(at + i) - mean) * mul + add);
            }
        }
    return std::vector<Tensor>{std::move(y)};
}

} // namespace sextant::ir
