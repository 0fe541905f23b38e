// Resize (opsets 10-17): nearest, n-linear and cubic modes with every ONNX coordinate
// transformation (tf_crop_and_resize with its roi and extrapolation_value included) and nearest
// rounding mode. Nearest and linear without tf_crop_and_resize take the two-tap path; cubic and
// tf_crop_and_resize take a general separable-taps path following onnx's reference resize.

#include "OpUtil.h"

#include <array>
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

/// The resized length the coordinate transformations divide by: scale * inLen, which the ONNX
/// spec (and onnx's reference) use unfloored; the integer output length when they agree.
double resizedLength(double scale, int64_t inLen, int64_t outLen) {
    const double len = scale * static_cast<double>(inLen);
    return std::abs(len - static_cast<double>(outLen)) < 1e-6 ? static_cast<double>(outLen) : len;
}

/// Maps an output coordinate to an input coordinate (not for tf_crop_and_resize, which needs the roi).
double sourceCoord(const std::string& mode, double x, double scale, int64_t inLen, int64_t outLen) {
    const double lenResized = resizedLength(scale, inLen, outLen);
    if (mode == "asymmetric")
        return x / scale;
    if (mode == "align_corners")
        return lenResized == 1.0 ? 0.0 : x * static_cast<double>(inLen - 1) / (lenResized - 1.0);
    if (mode == "pytorch_half_pixel")
        return lenResized > 1.0 ? (x + 0.5) / scale - 0.5 : -0.5;
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

/// Cubic convolution weights of the four taps at distances 1 + r, r, 1 - r, 2 - r (Keys, with
/// coefficient a; onnx's cubic_coeffs).
std::array<double, 4> cubicCoeffs(double r, double a) {
    const double r1 = r + 1, s = 1 - r, s1 = s + 1;
    return {((a * r1 - 5 * a) * r1 + 8 * a) * r1 - 4 * a, ((a + 2) * r - (a + 3)) * r * r + 1,
            ((a + 2) * s - (a + 3)) * s * s + 1, ((a * s1 - 5 * a) * s1 + 8 * a) * s1 - 4 * a};
}

/// The input elements (and weights) one output position reads along one dim.
struct DimTaps {
    std::vector<int64_t> index;
    std::vector<double> weight;
    bool outside = false; ///< tf_crop_and_resize: the position maps outside the input
};

/// Cubic and tf_crop_and_resize resizing: separable taps per dim, summed over their product.
Expected<std::vector<Tensor>> resizeByTaps(const Node& n, std::span<const Tensor> inputs,
                                           const std::vector<int64_t>& out,
                                           const std::vector<double>& scales, const std::string& coord,
                                           const std::string& nearest, const std::string& mode) {
    const Tensor& x = inputs[0];
    const std::vector<int64_t>& in = x.shape();
    const size_t rank = in.size();
    std::vector<double> roi;
    if (coord == "tf_crop_and_resize") {
        if (n.numInputs() < 2 || !n.input(1) || inputs.size() < 2 ||
            inputs[1].numel() != static_cast<int64_t>(2 * rank))
            return opError(n, "tf_crop_and_resize needs a roi input with " + std::to_string(2 * rank) +
                                  " entries (starts, then ends)");
        roi = inputs[1].toDoubles();
    }
    const double a = n.attrFloat("cubic_coeff_a", -0.75);
    const bool excludeOutside = n.attrInt("exclude_outside", 0) != 0;
    const double extrapolation = n.attrFloat("extrapolation_value", 0.0);
    std::vector<std::vector<DimTaps>> taps(rank);
    for (size_t d = 0; d < rank; ++d) {
        taps[d].resize(static_cast<size_t>(out[d]));
        const int64_t len = in[d];
        const double lenResized = resizedLength(scales[d], len, out[d]);
        for (int64_t o = 0; o < out[d]; ++o) {
            DimTaps& t = taps[d][static_cast<size_t>(o)];
            double src;
            if (coord == "tf_crop_and_resize") {
                const double start = roi[d], end = roi[d + rank];
                src = lenResized == 1.0 ? (end - start) * static_cast<double>(len - 1) / 2
                                        : static_cast<double>(o) * (end - start) * static_cast<double>(len - 1) /
                                              (lenResized - 1.0);
                src += start * static_cast<double>(len - 1);
                if (src < 0 || src > static_cast<double>(len - 1)) {
                    t.outside = true;
                    continue;
                }
            } else {
                src = sourceCoord(coord, static_cast<double>(o), scales[d], len, out[d]);
            }
            if (mode == "nearest") {
                t.index = {nearestIndex(nearest, src, len)};
                t.weight = {1.0};
                continue;
            }
            // Taps start left of src; an integral src counts as ratio 1 of the previous cell.
            const double first = std::ceil(src) - (mode == "cubic" ? 2 : 1);
            const double r = src - (first + (mode == "cubic" ? 1 : 0));
            std::vector<double> w;
            if (mode == "cubic") {
                auto c = cubicCoeffs(r, a);
                w.assign(c.begin(), c.end());
            } else {
                w = {1 - r, r};
            }
            double sum = 0;
            for (size_t k = 0; k < w.size(); ++k) {
                const int64_t i = static_cast<int64_t>(first) + static_cast<int64_t>(k);
                if (excludeOutside && (i < 0 || i >= len))
                    w[k] = 0;
                sum += w[k];
                t.index.push_back(std::clamp<int64_t>(i, 0, len - 1)); // edge padding
            }
            if (excludeOutside && sum != 0)
                for (double& v : w)
                    v /= sum;
            t.weight = std::move(w);
        }
    }
    std::vector<int64_t> inStride(rank, 1);
    for (size_t d = rank; d-- > 1;)
        inStride[d - 1] = inStride[d] * in[d];
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor yt = Tensor::uninitialized(dtypeOf<T>(), out); // every y[o] is written below
        const T* src = x.data<T>();
        T* y = yt.mutableData<T>();
        std::vector<int64_t> idx(rank, 0);
        std::vector<size_t> k(rank, 0);
        std::vector<const DimTaps*> cur(rank);
        for (int64_t o = 0; o < yt.numel(); ++o) {
            bool outside = false;
            for (size_t d = rank, rem = static_cast<size_t>(o); d-- > 0;) {
                cur[d] = &taps[d][rem % static_cast<size_t>(out[d])];
                rem /= static_cast<size_t>(out[d]);
                outside = outside || cur[d]->outside;
            }
            if (outside) {
                y[o] = static_cast<T>(extrapolation);
                continue;
            }
            // Odometer over the tap product.
            std::fill(k.begin(), k.end(), 0);
            double acc = 0;
            while (true) {
                double w = 1;
                int64_t offset = 0;
                for (size_t d = 0; d < rank; ++d) {
                    w *= cur[d]->weight[k[d]];
                    offset += cur[d]->index[k[d]] * inStride[d];
                }
                if (w != 0)
                    acc += w * static_cast<double>(src[offset]);
                size_t d = rank;
                while (d-- > 0 && ++k[d] == cur[d]->index.size())
                    k[d] = 0;
                if (d == static_cast<size_t>(-1))
                    break;
            }
            y[o] = static_cast<T>(acc);
        }
        return std::vector<Tensor>{yt};
    });
}

/// Nearest and linear resizing: per dim and output index, two source taps and the weight of
/// the second (nearest: both taps the nearest element).
struct TwoTaps {
    std::vector<std::vector<int64_t>> lo, hi;
    std::vector<std::vector<double>> frac;
};

TwoTaps twoTaps(const std::string& coord, const std::string& nearest, bool linear,
                const std::vector<double>& scales, const std::vector<int64_t>& in,
                const std::vector<int64_t>& out) {
    const size_t rank = in.size();
    TwoTaps taps;
    std::vector<std::vector<int64_t>>& lo = taps.lo;
    std::vector<std::vector<int64_t>>& hi = taps.hi;
    std::vector<std::vector<double>>& frac = taps.frac;
    lo.resize(rank);
    hi.resize(rank);
    frac.resize(rank);
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
    return taps;
}

/// Nearest: every output element is one input element. Walks the output rows with an odometer
/// over the outer dims and a precomputed source offset per position, instead of decomposing
/// every output index (PaddleOCR det spends a fifth of its time here). Rank 1 or more, and a
/// non-empty output.
template <typename T>
void resizeNearestRows(const T* src, Tensor& yt, const TwoTaps& taps, const std::vector<int64_t>& inStride) {
    const std::vector<int64_t>& out = yt.shape();
    const size_t rank = out.size();
    const std::vector<std::vector<int64_t>>& lo = taps.lo;
    T* y = yt.mutableData<T>();
    std::vector<std::vector<int64_t>> off(rank);
    for (size_t d = 0; d < rank; ++d) {
        off[d].resize(lo[d].size());
        for (size_t o = 0; o < lo[d].size(); ++o)
            off[d][o] = lo[d][o] * inStride[d];
    }
    const int64_t last = out[rank - 1];
    const int64_t* lastOff = off[rank - 1].data();
    std::vector<int64_t> idx(rank, 0);
    for (int64_t o = 0; o < yt.numel(); o += last) {
        int64_t base = 0;
        for (size_t d = 0; d + 1 < rank; ++d)
            base += off[d][static_cast<size_t>(idx[d])];
        const T* s = src + base;
        T* dst = y + o;
        for (int64_t i = 0; i < last; ++i)
            dst[i] = static_cast<T>(static_cast<double>(s[lastOff[i]]));
        for (size_t d = rank - 1; d-- > 0;) {
            if (++idx[d] < out[d])
                break;
            idx[d] = 0;
        }
    }
}

/// Linear (every combination of the two taps per dim, weighted) or nearest (the lower tap)
/// resizing, one output element at a time.
template <typename T>
void resizeWithTwoTaps(const T* src, Tensor& yt, const TwoTaps& taps, const std::vector<int64_t>& inStride,
                       bool linear) {
    const std::vector<int64_t>& out = yt.shape();
    const size_t rank = out.size();
    const std::vector<std::vector<int64_t>>& lo = taps.lo;
    const std::vector<std::vector<int64_t>>& hi = taps.hi;
    const std::vector<std::vector<double>>& frac = taps.frac;
    T* y = yt.mutableData<T>();
    std::vector<int64_t> idx(rank, 0);
    const int64_t tapCount = linear ? (int64_t{1} << rank) : 1;
    for (int64_t o = 0; o < yt.numel(); ++o) {
        for (int64_t d = static_cast<int64_t>(rank) - 1, rem = o; d >= 0; --d) {
            idx[static_cast<size_t>(d)] = rem % out[static_cast<size_t>(d)];
            rem /= out[static_cast<size_t>(d)];
        }
        double acc = 0.0;
        for (int64_t t = 0; t < tapCount; ++t) {
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
}

} // namespace

Status verifyResize(const Node& n) {
    SX_TRY(ops::checkStringAttr(n, "mode", {"nearest", "linear", "cubic"}));
    SX_TRY(ops::checkStringAttr(n, "coordinate_transformation_mode",
                                {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel", "tf_half_pixel_for_nn",
                                 "tf_crop_and_resize"}));
    SX_TRY(ops::checkFloatAttr(n, "cubic_coeff_a"));
    SX_TRY(ops::checkFloatAttr(n, "extrapolation_value"));
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
    if (n.attrString("mode", "nearest") == "cubic" || coord == "tf_crop_and_resize")
        return resizeByTaps(n, inputs, out, scales, coord, nearest, n.attrString("mode", "nearest"));
    const TwoTaps taps = twoTaps(coord, nearest, linear, scales, in, out);
    std::vector<int64_t> inStride(rank, 1);
    for (int64_t d = static_cast<int64_t>(rank) - 2; d >= 0; --d)
        inStride[static_cast<size_t>(d)] = inStride[static_cast<size_t>(d) + 1] * in[static_cast<size_t>(d) + 1];
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor yt = Tensor::uninitialized(dtypeOf<T>(), out); // every y[o] is written below
        if (!linear && rank > 0 && yt.numel() > 0)
            resizeNearestRows(x.data<T>(), yt, taps, inStride);
        else
            resizeWithTwoTaps(x.data<T>(), yt, taps, inStride, linear);
        return std::vector<Tensor>{yt};
    });
}

} // namespace sextant::ir
