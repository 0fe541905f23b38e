// Resize (opsets 10-17): nearest and n-linear modes with the ONNX coordinate transformation
// and nearest rounding modes. Cubic and tf_crop_and_resize are reported as unsupported.

#include "OpUtil.h"

#include <cmath>

namespace sextant::ir {

using ops::opError;
using ops::Shape;

namespace {

/// Inputs: opset 10 is (X, scales); opset 11+ is (X, roi, scales, sizes) with empty optionals.
struct ResizeInputs {
    const Tensor* scales = nullptr;
    const Tensor* sizes = nullptr;
};

/// Finds the scales / sizes tensors, from the kernel's inputs or (for inference) constants.
/// Returns false in `known` when a needed one is not a constant.
Expected<ResizeInputs> resizeInputs(const Node& n, std::span<const Tensor> runtime, bool& known) {
    known = true;
    auto get = [&](size_t i) -> const Tensor* {
        if (!n.input(i))
            return nullptr;
        if (i < runtime.size())
            return &runtime[i];
        const Tensor* c = n.input(i)->constant();
        if (!c && n.input(i)->type().numel() != 0)
            known = false;
        return c;
    };
    ResizeInputs r;
    if (n.numInputs() == 2) {
        r.scales = get(1);
    } else {
        r.scales = get(2);
        r.sizes = get(3);
    }
    if (r.scales && r.scales->numel() == 0)
        r.scales = nullptr;
    if (r.sizes && r.sizes->numel() == 0)
        r.sizes = nullptr;
    if (known && !r.scales && !r.sizes)
        return opError(n, "resize needs non-empty scales or sizes");
    if (r.scales && r.sizes)
        return opError(n, "resize takes scales or sizes, not both");
    return r;
}

/// Output extents and the per-dim scale used by the coordinate transformation.
Expected<Shape> resizeShape(const Node& n, const Shape& in, const ResizeInputs& r, std::vector<double>* scalesOut) {
    const size_t rank = in.size();
    const Tensor* t = r.scales ? r.scales : r.sizes;
    if (t->numel() != static_cast<int64_t>(rank))
        return opError(n, std::string(r.scales ? "scales" : "sizes") + " has " + std::to_string(t->numel()) +
                              " entries for an input of rank " + std::to_string(rank));
    if (r.sizes && !isInteger(r.sizes->dtype()))
        return opError(n, "resize sizes must be i64");
    if (r.scales && !isFloat(r.scales->dtype()))
        return opError(n, "resize scales must be float");
    Shape out(rank);
    std::vector<double> scales(rank, 1.0);
    for (size_t i = 0; i < rank; ++i) {
        const double v = t->at(static_cast<int64_t>(i));
        if (r.sizes) {
            if (v < 0)
                return opError(n, "resize size " + std::to_string(static_cast<int64_t>(v)) + " is negative");
            out[i] = Dim::known(static_cast<int64_t>(v));
            scales[i] = in[i].isKnown() && in[i].value > 0 ? v / static_cast<double>(in[i].value) : 1.0;
        } else {
            if (!(v > 0))
                return opError(n, "resize scale " + std::to_string(v) + " must be positive");
            scales[i] = v;
            out[i] = in[i].isKnown() ? Dim::known(static_cast<int64_t>(std::floor(static_cast<double>(in[i].value) * v)))
                                     : (v == 1.0 ? in[i] : ops::unknownDim());
        }
    }
    if (scalesOut)
        *scalesOut = std::move(scales);
    return out;
}

/// Maps an output coordinate to an input coordinate.
double sourceCoord(const std::string& mode, double x, double scale, int64_t inLen, int64_t outLen) {
    if (mode == "asymmetric")
        return x / scale;
    if (mode == "align_corners")
        return outLen == 1 ? 0.0 : x * static_cast<double>(inLen - 1) / static_cast<double>(outLen - 1);
    if (mode == "pytorch_half_pixel")
        return outLen > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    if (mode == "tf_half_pixel_for_nn")
        return (x + 0.5) / scale;
    return (x + 0.5) / scale - 0.5; // half_pixel
}

int64_t nearestIndex(const std::string& mode, double x, int64_t inLen) {
    double f = std::floor(x);
    int64_t i;
    if (mode == "floor")
        i = static_cast<int64_t>(f);
    else if (mode == "ceil")
        i = static_cast<int64_t>(std::ceil(x));
    else if (mode == "round_prefer_ceil")
        i = static_cast<int64_t>(x - f >= 0.5 ? f + 1 : f);
    else // round_prefer_floor
        i = static_cast<int64_t>(x - f > 0.5 ? f + 1 : f);
    return std::clamp<int64_t>(i, 0, inLen - 1);
}

} // namespace

Status verifyResize(const Node& n) {
    SX_TRY(ops::checkStringAttr(n, "mode", {"nearest", "linear"}));
    SX_TRY(ops::checkStringAttr(n, "coordinate_transformation_mode",
                                {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nn"}));
    SX_TRY(ops::checkStringAttr(n, "nearest_mode", {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}));
    if (n.hasAttr("axes") || n.attrInt("antialias", 0) != 0 || n.hasAttr("keep_aspect_ratio_policy"))
        return opError(n, "resize axes / antialias / keep_aspect_ratio_policy (opset 18+) are not supported",
                       ErrorKind::Unsupported);
    if (n.numInputs() == 2 && !ops::inputType(n, 1))
        return opError(n, "resize needs scales");
    return ops::requireFloatInput(n, 0, "resize input");
}

Expected<std::vector<TensorType>> inferResize(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    bool known = true;
    SX_ASSIGN(ResizeInputs r, resizeInputs(n, {}, known));
    TensorType t;
    t.dtype = x->dtype;
    if (!known) {
        t.shape.assign(x->rank(), ops::unknownDim());
        return std::vector<TensorType>{t};
    }
    SX_ASSIGN(t.shape, resizeShape(n, x->shape, r, nullptr));
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runResize(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    bool known = true;
    SX_ASSIGN(ResizeInputs r, resizeInputs(n, inputs, known));
    std::vector<double> scales;
    SX_ASSIGN(Shape outShape, resizeShape(n, ops::shapeOf(x), r, &scales));
    const std::vector<int64_t> out = ops::extents(outShape);
    SX_TRY(ops::checkAllocation(n, out));
    const std::vector<int64_t>& in = x.shape();
    const size_t rank = in.size();
    // Opset 10 Resize behaves as asymmetric + floor for nearest.
    const bool opset10 = n.numInputs() == 2;
    const std::string coord = opset10 ? "asymmetric" : n.attrString("coordinate_transformation_mode", "half_pixel");
    const std::string nearest = opset10 ? "floor" : n.attrString("nearest_mode", "round_prefer_floor");
    const bool linear = n.attrString("mode", "nearest") == "linear";
    for (size_t d = 0; d < rank; ++d)
        if (in[d] == 0 && out[d] > 0)
            return opError(n, "cannot resize an empty dim to " + std::to_string(out[d]));
    // Per dim and output index: two source taps and the weight of the second.
    std::vector<std::vector<int64_t>> lo(rank), hi(rank);
    std::vector<std::vector<double>> frac(rank);
    for (size_t d = 0; d < rank; ++d) {
        lo[d].resize(static_cast<size_t>(out[d]));
        hi[d].resize(static_cast<size_t>(out[d]));
        frac[d].resize(static_cast<size_t>(out[d]));
        for (int64_t o = 0; o < out[d]; ++o) {
            double src = sourceCoord(coord, static_cast<double>(o), scales[d], in[d], out[d]);
            if (!linear) {
                lo[d][static_cast<size_t>(o)] = hi[d][static_cast<size_t>(o)] = nearestIndex(nearest, src, in[d]);
                continue;
            }
            src = std::clamp(src, 0.0, static_cast<double>(in[d] - 1));
            int64_t i0 = static_cast<int64_t>(std::floor(src));
            lo[d][static_cast<size_t>(o)] = i0;
            hi[d][static_cast<size_t>(o)] = std::min<int64_t>(i0 + 1, in[d] - 1);
            frac[d][static_cast<size_t>(o)] = src - static_cast<double>(i0);
        }
    }
    std::vector<int64_t> inStride(rank, 1);
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d)
        inStride[static_cast<size_t>(d)] = inStride[static_cast<size_t>(d) + 1] * in[static_cast<size_t>(d) + 1];
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor yt(dtypeOf<T>(), out);
        const T* src = x.data<T>();
        T* y = yt.mutableData<T>();
        std::vector<int64_t> idx(rank, 0);
        const int64_t taps = linear ? (int64_t{1} << rank) : 1;
        for (int64_t o = 0; o < yt.numel(); ++o) {
            for (int64_t d = static_cast<int64_t>(rank) - 1, rem = o; d >= 0; --d) {
                idx[static_cast<size_t>(d)] = rem % out[static_cast<size_t>(d)];
                rem /= out[static_cast<size_t>(d)];
            }
            double acc = 0.0;
            for (int64_t t = 0; t < taps; ++t) {
                double w = 1.0;
                int64_t offset = 0;
                for (size_t d = 0; d < rank; ++d) {
                    const size_t oi = static_cast<size_t>(idx[d]);
                    const bool upper = linear && ((t >> d) & 1);
                    if (linear)
                        w *= upper ? frac[d][oi] : 1.0 - frac[d][oi];
                    offset += (upper ? hi[d][oi] : lo[d][oi]) * inStride[d];
                }
                if (w != 0.0)
                    acc += w * static_cast<double>(src[offset]);
            }
            y[o] = static_cast<T>(acc);
        }
        return std::vector<Tensor>{yt};
    });
}

} // namespace sextant::ir
