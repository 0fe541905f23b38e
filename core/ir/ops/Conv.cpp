// Conv: N-d convolution (ONNX opsets 1-17) as im2col + GEMM through OpenBLAS.

#include "OpUtil.h"
#include "core/ir/MathUtil.h"

#include <memory>

namespace sextant::ir {
namespace ops {

Status verifyConvAttrs(const Node& n) {
    SX_TRY(checkIntAttr(n, "group", 1, std::numeric_limits<int32_t>::max()));
    int64_t r = -1;
    if (const TensorType* w = inputType(n, 1); w && w->rank() >= 3)
        r = static_cast<int64_t>(w->rank()) - 2;
    else if (n.hasAttr("kernel_shape"))
        r = static_cast<int64_t>(n.attrInts("kernel_shape").size());
    SX_TRY(verifyWindowAttrs(n, r, false));
    for (size_t i = 0; i < 3; ++i)
        SX_TRY(requireFloatInput(n, i, i == 0 ? "conv input" : i == 1 ? "conv weight" : "conv bias"));
    return {};
}

Expected<Shape> convOutputShape(const Node& n, const Shape& x, const Shape& w, const Shape* b,
                                WindowGeometry* geomOut) {
    if (x.size() < 3)
        return opError(n, "conv input must have rank >= 3 (N, C, spatial...), got " + shapeStr(x));
    if (w.size() != x.size())
        return opError(n, "conv weight " + shapeStr(w) + " must have the same rank as the input " +
                              shapeStr(x));
    const size_t r = x.size() - 2;
    const int64_t group = n.attrInt("group", 1);
    if (group < 1)
        return opError(n, "conv group must be >= 1");
    std::vector<int64_t> kernel(r);
    std::vector<int64_t> attrKernel = n.attrInts("kernel_shape");
    for (size_t i = 0; i < r; ++i) {
        const Dim& k = w[2 + i];
        if (k.isKnown()) {
            kernel[i] = k.value;
            if (!attrKernel.empty() && attrKernel.size() == r && attrKernel[i] != k.value)
                return opError(n, "kernel_shape " + std::to_string(attrKernel[i]) +
                                      " does not match weight extent " + std::to_string(k.value) +
                                      " in spatial dim " + std::to_string(i));
        } else if (attrKernel.size() == r) {
            kernel[i] = attrKernel[i];
        } else {
            return opError(n, "conv kernel extent is unknown in spatial dim " + std::to_string(i));
        }
    }
    const Dim& c = x[1];
    const Dim& wc = w[1];
    if (c.isKnown() && wc.isKnown()) {
        int64_t expected = 0;
        if (__builtin_mul_overflow(wc.value, group, &expected))
            return opError(n, "conv weight's " + std::to_string(wc.value) + " input channels per group times group " +
                                  std::to_string(group) + " overflow a 64-bit integer");
        if (c.value != expected)
            return opError(n, "conv input has " + std::to_string(c.value) + " channels but weight expects " +
                                  std::to_string(expected) + " (group " + std::to_string(group) + ")");
    }
    const Dim& m = w[0];
    if (m.isKnown() && m.value % group != 0)
        return opError(n, "conv weight has " + std::to_string(m.value) +
                              " output channels, not divisible by group " + std::to_string(group));
    if (b) {
        if (b->size() != 1)
            return opError(n, "conv bias must be 1-D, got " + shapeStr(*b));
        if ((*b)[0].isKnown() && m.isKnown() && (*b)[0].value != m.value)
            return opError(n, "conv bias has " + std::to_string((*b)[0].value) +
                                  " entries but the weight has " + std::to_string(m.value) +
                                  " output channels");
    }
    Shape spatial(x.begin() + 2, x.end());
    SX_ASSIGN(WindowGeometry geom, windowGeometry(n, spatial, kernel, false));
    Shape out{x[0], m};
    out.insert(out.end(), geom.outSpatial.begin(), geom.outSpatial.end());
    if (geomOut)
        *geomOut = std::move(geom);
    return out;
}

Expected<std::vector<TensorType>> inferConvLike(const Node& n) {
    const TensorType* x = inputType(n, 0);
    const TensorType* w = inputType(n, 1);
    const TensorType* b = inputType(n, 2);
    if (!x || !w)
        return opError(n, "conv needs an input and a weight");
    if (w->dtype != x->dtype)
        return opError(n, "conv weight is " + std::string(dtypeName(w->dtype)) + " but input is " +
                              std::string(dtypeName(x->dtype)));
    SX_ASSIGN(Shape out, convOutputShape(n, x->shape, w->shape, b ? &b->shape : nullptr));
    TensorType t;
    t.dtype = x->dtype;
    t.shape = std::move(out);
    return std::vector<TensorType>{t};
}

namespace {

/// Index range [lo, hi) of output positions whose input position o*stride + shift lies in
/// [0, extent): the columns a kernel tap reads without touching padding.
inline void validRange(int64_t outExtent, int64_t stride, int64_t shift, int64_t extent,
                       int64_t& lo, int64_t& hi) {
    // o*stride + shift >= 0  <=>  o >= ceil(-shift / stride)
    lo = shift >= 0 ? 0 : static_cast<int64_t>(ceilDiv(-shift, stride));
    // o*stride + shift <= extent - 1  <=>  o <= floor((extent - 1 - shift) / stride)
    const int64_t last = extent - 1 - shift;
    hi = last < 0 ? 0 : std::min(outExtent, last / stride + 1);
    lo = std::min(lo, hi);
}

/// Copies the receptive fields of one group of input channels into `col`, one row per
/// (channel, kernel offset), one column per output position; padding reads as zero.
template <typename T>
void im2col(const T* x, int64_t channels, const std::vector<int64_t>& in,
            const std::vector<int64_t>& out, const WindowGeometry& g, T* col) {
    const size_t r = in.size();
    const int64_t kk = product(g.kernel), oo = product(out), ii = product(in);
    const int64_t outLast = out[r - 1], inLast = in[r - 1];
    const int64_t outer = outLast == 0 ? 0 : oo / outLast;
    std::vector<int64_t> inStride(r, 1);
    for (size_t d = r - 1; d-- > 0;)
        inStride[d] = inStride[d + 1] * in[d + 1];
    std::vector<int64_t> kidx(r), oidx(r);
    for (int64_t c = 0; c < channels; ++c) {
        const T* xc = x + c * ii;
        for (int64_t k = 0; k < kk; ++k) {
            for (int64_t d = static_cast<int64_t>(r) - 1, rem = k; d >= 0; --d) {
                kidx[d] = rem % g.kernel[d];
                rem /= g.kernel[d];
            }
            T* row = col + (c * kk + k) * oo;
            const int64_t sLast = g.strides[r - 1];
            const int64_t shiftLast = kidx[r - 1] * g.dilations[r - 1] - g.padsBegin[r - 1];
            // Output columns of this tap that read inside the row; the rest read padding.
            int64_t lo = 0, hi = 0;
            validRange(outLast, sLast, shiftLast, inLast, lo, hi);
            for (int64_t o = 0; o < outer; ++o) {
                for (int64_t d = static_cast<int64_t>(r) - 2, rem = o; d >= 0; --d) {
                    oidx[d] = rem % out[d];
                    rem /= out[d];
                }
                bool inside = true;
                int64_t offset = 0;
                for (size_t d = 0; d + 1 < r; ++d) {
                    int64_t pos = oidx[d] * g.strides[d] - g.padsBegin[d] + kidx[d] * g.dilations[d];
                    if (pos < 0 || pos >= in[d]) {
                        inside = false;
                        break;
                    }
                    offset += pos * inStride[d];
                }
                T* dst = row + o * outLast;
                if (!inside) {
                    std::fill(dst, dst + outLast, T(0));
                    continue;
                }
                const T* src = xc + offset;
                std::fill(dst, dst + lo, T(0));
                if (sLast == 1 && hi > lo)
                    std::copy(src + lo + shiftLast, src + hi + shiftLast, dst + lo);
                else
                    for (int64_t ol = lo; ol < hi; ++ol)
                        dst[ol] = src[ol * sLast + shiftLast];
                std::fill(dst + hi, dst + outLast, T(0));
            }
        }
    }
}

/// dst[i] += w * src[i] for i in [0, n): the inner loop of the depthwise convolution. GCC builds
/// it for AVX-512, AVX2 and baseline x86-64 and picks one at load time (function multi-versioning),
/// so the portable binary still uses wide vectors where the CPU has them. ISO C++ mode does not
/// contract a*b+c into FMA, so every version rounds the same way and results stay bit-identical
/// across machines.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
#define SEXTANT_VECTOR_CLONES \
    __attribute__((target_clones("avx512f", "avx2", "default"), optimize("fp-contract=off")))
#else
#define SEXTANT_VECTOR_CLONES
#endif
SEXTANT_VECTOR_CLONES void axpyRow(float* __restrict dst, const float* __restrict src, float w, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        dst[i] += w * src[i];
}
SEXTANT_VECTOR_CLONES void axpyRow(double* __restrict dst, const double* __restrict src, double w, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        dst[i] += w * src[i];
}

/// p[i] += b for i in [0, n).
template <typename T> void addBias(T* __restrict p, int64_t n, T b) {
    for (int64_t i = 0; i < n; ++i)
        p[i] += b;
}

/// 2-D convolution of one input channel by `mg` filters (depthwise when mg == 1): a direct
/// loop, each kernel tap added over whole output rows, which the compiler vectorises when the
/// stride is 1. The im2col + GEMM path would call BLAS with a single output row per channel,
/// which is mostly overhead. Summation order is fixed (taps in row-major order), so results are
/// the same on every run.
template <typename T>
void depthwise2d(const T* x, int64_t ih, int64_t iw, const T* w, int64_t mg, const WindowGeometry& g,
                 int64_t oh, int64_t ow, T* y, const T* bias) {
    const int64_t kh = g.kernel[0], kw = g.kernel[1];
    const int64_t sh = g.strides[0], sw = g.strides[1];
    const int64_t dh = g.dilations[0], dw = g.dilations[1];
    const int64_t ph = g.padsBegin[0], pw = g.padsBegin[1];
    // Valid output column range of each horizontal tap: computed once per call.
    std::vector<int64_t> colLo(static_cast<size_t>(kw)), colHi(static_cast<size_t>(kw));
    for (int64_t kx = 0; kx < kw; ++kx)
        validRange(ow, sw, kx * dw - pw, iw, colLo[static_cast<size_t>(kx)], colHi[static_cast<size_t>(kx)]);
    for (int64_t f = 0; f < mg; ++f) {
        const T* wf = w + f * kh * kw;
        T* yf = y + f * oh * ow;
        std::fill(yf, yf + oh * ow, T(0)); // the output is uninitialised: the taps accumulate
        for (int64_t oy = 0; oy < oh; ++oy) {
            T* yrow = yf + oy * ow;
            for (int64_t ky = 0; ky < kh; ++ky) {
                const int64_t iy = oy * sh - ph + ky * dh;
                if (iy < 0 || iy >= ih)
                    continue;
                const T* xrow = x + iy * iw;
                for (int64_t kx = 0; kx < kw; ++kx) {
                    const T wv = wf[ky * kw + kx];
                    const int64_t lo = colLo[static_cast<size_t>(kx)], hi = colHi[static_cast<size_t>(kx)];
                    const int64_t shift = kx * dw - pw;
                    if (sw == 1) {
                        if (hi > lo)
                            axpyRow(yrow + lo, xrow + lo + shift, wv, hi - lo); // inside the row
                    } else {
                        for (int64_t ox = lo; ox < hi; ++ox)
                            yrow[ox] += wv * xrow[ox * sw + shift];
                    }
                }
            }
        }
        if (bias) // after the taps (the same order as a separate pass), while the plane is in cache
            addBias(yf, oh * ow, bias[f]);
    }
}

template <typename T>
Tensor convImpl(const Tensor& xt, const Tensor& wt, const Tensor* bt, const std::vector<int64_t>& outShape,
                const WindowGeometry& g, int64_t group) {
    const auto& xs = xt.shape();
    const size_t r = xs.size() - 2;
    const int64_t batch = xs[0], c = xs[1], m = outShape[1];
    const std::vector<int64_t> in(xs.begin() + 2, xs.end());
    const std::vector<int64_t> out(outShape.begin() + 2, outShape.end());
    const int64_t cg = c / group, mg = m / group;
    const int64_t kk = product(g.kernel), ii = product(in), oo = product(out);
    // Uninitialised: the depthwise loop zeroes each plane before accumulating, and GEMM with
    // beta = 0 writes every element of each [mg, oo] block, which together tile the output.
    Tensor yt = Tensor::uninitialized(dtypeOf<T>(), outShape);
    const T* x = xt.data<T>();
    const T* w = wt.data<T>();
    T* y = yt.mutableData<T>();
    const T* bias = bt ? bt->data<T>() : nullptr;
    bool pointwise = true;
    for (size_t d = 0; d < r; ++d)
        pointwise = pointwise && g.kernel[d] == 1 && g.strides[d] == 1 && g.padsBegin[d] == 0 &&
                    g.padsEnd[d] == 0;
    if (r == 2 && cg == 1) {
        // Depthwise (or channel-multiplier) convolution: one input channel per group.
        for (int64_t nb = 0; nb < batch; ++nb)
            for (int64_t gi = 0; gi < group; ++gi)
                depthwise2d(x + (nb * c + gi) * ii, in[0], in[1], w + gi * mg * kk, mg, g, out[0], out[1],
                            y + (nb * m + gi * mg) * oo, bias ? bias + gi * mg : nullptr);
    } else {
        // im2col writes every element (padding as explicit zeros): no need to clear it first.
        auto col = std::make_unique_for_overwrite<T[]>(pointwise ? 0 : static_cast<size_t>(cg * kk * oo));
        for (int64_t nb = 0; nb < batch; ++nb)
            for (int64_t gi = 0; gi < group; ++gi) {
                const T* xg = x + (nb * c + gi * cg) * ii;
                const T* cols = xg;
                if (!pointwise) {
                    im2col(xg, cg, in, out, g, col.get());
                    cols = col.get();
                }
                T* yg = y + (nb * m + gi * mg) * oo;
                ops::gemm(false, false, mg, oo, cg * kk, T(1), w + gi * mg * cg * kk, cg * kk, cols, oo,
                          T(0), yg, oo);
                if (bias) // per group, right after its product: the same sums as a separate pass
                    for (int64_t mi = 0; mi < mg; ++mi)
                        addBias(yg + mi * oo, oo, bias[gi * mg + mi]);
            }
    }
    return yt;
}

} // namespace

Expected<Tensor> convForward(const Node& n, std::span<const Tensor> inputs) {
    SX_TRY(checkKernelInputs(n, inputs));
    return convOf(n, inputs[0], inputs[1], n.input(2) && inputs.size() > 2 ? &inputs[2] : nullptr);
}

Expected<Tensor> convOf(const Node& n, const Tensor& x, const Tensor& w, const Tensor* b) {
    if (w.dtype() != x.dtype() || (b && b->dtype() != x.dtype()))
        return opError(n, "conv inputs have mixed dtypes");
    Shape bs = b ? shapeOf(*b) : Shape{};
    WindowGeometry g;
    SX_ASSIGN(Shape out, convOutputShape(n, shapeOf(x), shapeOf(w), b ? &bs : nullptr, &g));
    const int64_t group = n.attrInt("group", 1);
    SX_TRY(checkAllocation(n, extents(out)));
    SX_TRY(checkAllocation(n, {w.shape()[1], product(g.kernel), product(extents(Shape(out.begin() + 2, out.end())))}));
    auto run = [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        return std::vector<Tensor>{convImpl<T>(x, w, b, extents(out), g, group)};
    };
    SX_ASSIGN(std::vector<Tensor> ys, dispatchFloat(n, x.dtype(), run));
    return std::move(ys[0]);
}

} // namespace ops

Status verifyConv(const Node& n) { return ops::verifyConvAttrs(n); }

Expected<std::vector<TensorType>> inferConv(const Node& n) { return ops::inferConvLike(n); }

Expected<std::vector<Tensor>> runConv(const Node& n, std::span<const Tensor> inputs,
                                      const KernelContext&) {
    SX_ASSIGN(Tensor y, ops::convForward(n, inputs));
    return std::vector<Tensor>{std::move(y)};
}

} // namespace sextant::ir

// ---- ConvTranspose: X [N, C, in...], W [C, M/group, k...] -> Y [N, M, out...], computed as
// W^T X per group (GEMM) followed by col2im accumulation.

namespace sextant::ir {

namespace {

using ops::opError;
using ops::Shape;

struct TransposeGeometry {
    std::vector<int64_t> kernel, strides, dilations, padsBegin, padsEnd;
    Shape outSpatial;
};

Expected<TransposeGeometry> transposeGeometry(const Node& n, const Shape& in, const std::vector<int64_t>& kernel) {
    const size_t r = in.size();
    SX_TRY(ops::verifyWindowAttrs(n, static_cast<int64_t>(r), false));
    SX_TRY(ops::checkIntsAttr(n, "output_padding", static_cast<int64_t>(r), 0));
    SX_TRY(ops::checkIntsAttr(n, "output_shape", -1, 0));
    TransposeGeometry g;
    g.kernel = kernel;
    g.strides = n.attrInts("strides", std::vector<int64_t>(r, 1));
    g.dilations = n.attrInts("dilations", std::vector<int64_t>(r, 1));
    std::vector<int64_t> pads = n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
    std::vector<int64_t> outPad = n.attrInts("output_padding", std::vector<int64_t>(r, 0));
    std::vector<int64_t> outShape = n.attrInts("output_shape");
    if (outShape.size() == r + 2)
        outShape.erase(outShape.begin(), outShape.begin() + 2);
    if (!outShape.empty() && outShape.size() != r)
        return opError(n, "output_shape has " + std::to_string(outShape.size()) + " entries for " +
                              std::to_string(r) + " spatial dims");
    const std::string autoPad = n.attrString("auto_pad", "NOTSET");
    g.padsBegin.assign(r, 0);
    g.padsEnd.assign(r, 0);
    g.outSpatial.assign(r, ops::unknownDim());
    for (size_t i = 0; i < r; ++i) {
        const int64_t effK = (kernel[i] - 1) * g.dilations[i] + 1;
        if (!in[i].isKnown())
            continue;
        const int64_t full = g.strides[i] * (in[i].value - 1) + outPad[i] + effK;
        int64_t target = -1;
        if (!outShape.empty())
            target = outShape[i];
        else if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER")
            target = in[i].value * g.strides[i];
        if (target >= 0) {
            const int64_t total = full - target;
            if (total < 0) {
                // A larger output_shape than the full transposed extent: the extra positions at the
                // end get no contribution (like output_padding), as onnx's reference computes.
                g.padsBegin[i] = 0;
                g.padsEnd[i] = total;
            } else {
                // SAME_UPPER puts the odd pad at the end, SAME_LOWER at the head (as for Conv).
                g.padsBegin[i] = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
                g.padsEnd[i] = total - g.padsBegin[i];
            }
        } else if (autoPad == "NOTSET") {
            g.padsBegin[i] = pads[i];
            g.padsEnd[i] = pads[i + r];
        }
        const int64_t out = full - g.padsBegin[i] - g.padsEnd[i];
        if (out <= 0)
            return opError(n, "transposed convolution output extent " + std::to_string(out) +
                                  " in spatial dim " + std::to_string(i) + " is not positive");
        g.outSpatial[i] = Dim::known(out);
    }
    return g;
}

Expected<Shape> convTransposeShape(const Node& n, const Shape& x, const Shape& w, const Shape* b,
                                   TransposeGeometry* geomOut) {
    if (x.size() < 3)
        return opError(n, "conv-transpose input must have rank >= 3 (N, C, spatial...), got " + ops::shapeStr(x));
    if (w.size() != x.size())
        return opError(n, "conv-transpose weight " + ops::shapeStr(w) + " must have the same rank as the input " +
                              ops::shapeStr(x));
    const size_t r = x.size() - 2;
    const int64_t group = n.attrInt("group", 1);
    if (group < 1)
        return opError(n, "group must be >= 1");
    std::vector<int64_t> kernel(r);
    std::vector<int64_t> attrKernel = n.attrInts("kernel_shape");
    for (size_t i = 0; i < r; ++i) {
        if (w[2 + i].isKnown())
            kernel[i] = w[2 + i].value;
        else if (attrKernel.size() == r)
            kernel[i] = attrKernel[i];
        else
            return opError(n, "conv-transpose kernel extent is unknown in spatial dim " + std::to_string(i));
    }
    if (x[1].isKnown() && w[0].isKnown() && x[1].value != w[0].value)
        return opError(n, "conv-transpose input has " + std::to_string(x[1].value) +
                              " channels but the weight expects " + std::to_string(w[0].value));
    if (w[0].isKnown() && w[0].value % group != 0)
        return opError(n, "conv-transpose weight has " + std::to_string(w[0].value) +
                              " input channels, not divisible by group " + std::to_string(group));
    Dim m = w[1].isKnown() ? Dim::known(w[1].value * group) : ops::unknownDim();
    if (b) {
        if (b->size() != 1)
            return opError(n, "conv-transpose bias must be 1-D, got " + ops::shapeStr(*b));
        if ((*b)[0].isKnown() && m.isKnown() && (*b)[0].value != m.value)
            return opError(n, "conv-transpose bias has " + std::to_string((*b)[0].value) + " entries for " +
                                  std::to_string(m.value) + " output channels");
    }
    SX_ASSIGN(TransposeGeometry g, transposeGeometry(n, Shape(x.begin() + 2, x.end()), kernel));
    Shape out{x[0], m};
    out.insert(out.end(), g.outSpatial.begin(), g.outSpatial.end());
    if (geomOut)
        *geomOut = std::move(g);
    return out;
}

/// Adds each column entry (one row per (channel, kernel offset), one column per input position)
/// into the output position it lands on.
template <typename T>
void col2im(const T* col, int64_t channels, const std::vector<int64_t>& in, const std::vector<int64_t>& out,
            const TransposeGeometry& g, T* y) {
    const size_t r = in.size();
    const int64_t kk = product(g.kernel), ii = product(in), oo = product(out);
    std::vector<int64_t> outStride(r, 1);
    for (int64_t d = static_cast<int64_t>(r) - 2; d >= 0; --d)
        outStride[static_cast<size_t>(d)] = outStride[static_cast<size_t>(d) + 1] * out[static_cast<size_t>(d) + 1];
    std::vector<int64_t> kidx(r), iidx(r);
    for (int64_t c = 0; c < channels; ++c)
        for (int64_t k = 0; k < kk; ++k) {
            for (int64_t d = static_cast<int64_t>(r) - 1, rem = k; d >= 0; --d) {
                kidx[static_cast<size_t>(d)] = rem % g.kernel[static_cast<size_t>(d)];
                rem /= g.kernel[static_cast<size_t>(d)];
            }
            const T* row = col + (c * kk + k) * ii;
            T* yc = y + c * oo;
            // Per kernel offset each input position lands on a different output position, so
            // the order within a row does not change any sum: walk rows of the last dim with the
            // range that lands inside, instead of decomposing every index.
            const int64_t inLast = in[r - 1], sLast = g.strides[r - 1];
            const int64_t shiftLast = kidx[r - 1] * g.dilations[r - 1] - g.padsBegin[r - 1];
            int64_t lo = 0, hi = 0;
            ops::validRange(inLast, sLast, shiftLast, out[r - 1], lo, hi);
            const int64_t outer = inLast == 0 ? 0 : ii / inLast;
            for (int64_t o = 0; o < outer; ++o) {
                for (int64_t d = static_cast<int64_t>(r) - 2, rem = o; d >= 0; --d) {
                    iidx[static_cast<size_t>(d)] = rem % in[static_cast<size_t>(d)];
                    rem /= in[static_cast<size_t>(d)];
                }
                int64_t offset = 0;
                bool inside = true;
                for (size_t d = 0; d + 1 < r && inside; ++d) {
                    int64_t pos = iidx[d] * g.strides[d] - g.padsBegin[d] + kidx[d] * g.dilations[d];
                    inside = pos >= 0 && pos < out[d];
                    offset += pos * outStride[d];
                }
                if (!inside)
                    continue;
                const T* src = row + o * inLast;
                T* dst = yc + offset;
                for (int64_t il = lo; il < hi; ++il)
                    dst[il * sLast + shiftLast] += src[il];
            }
        }
}

template <typename T>
Tensor convTransposeImpl(const Tensor& xt, const Tensor& wt, const Tensor* bt, const std::vector<int64_t>& outShape,
                         const TransposeGeometry& g, int64_t group) {
    const auto& xs = xt.shape();
    const int64_t batch = xs[0], c = xs[1], m = outShape[1];
    const std::vector<int64_t> in(xs.begin() + 2, xs.end()), out(outShape.begin() + 2, outShape.end());
    const int64_t cg = c / group, mg = m / group, kk = product(g.kernel), ii = product(in), oo = product(out);
    Tensor yt(dtypeOf<T>(), outShape);
    const T* x = xt.data<T>();
    const T* w = wt.data<T>();
    T* y = yt.mutableData<T>();
    // GEMM with beta = 0 writes all of col; y stays zero-filled (col2im accumulates into it).
    auto col = std::make_unique_for_overwrite<T[]>(static_cast<size_t>(mg * kk * ii));
    for (int64_t nb = 0; nb < batch; ++nb)
        for (int64_t gi = 0; gi < group; ++gi) {
            // col [mg*kk, ii] = W_g^T [mg*kk, cg] * X_g [cg, ii]
            ops::gemm(true, false, mg * kk, ii, cg, T(1), w + gi * cg * mg * kk, mg * kk, x + (nb * c + gi * cg) * ii,
                      ii, T(0), col.get(), ii);
            col2im(col.get(), mg, in, out, g, y + (nb * m + gi * mg) * oo);
        }
    if (bt)
        for (int64_t nb = 0; nb < batch; ++nb)
            for (int64_t mi = 0; mi < m; ++mi) {
                T* p = y + (nb * m + mi) * oo;
                const T bias = bt->data<T>()[mi];
                for (int64_t i = 0; i < oo; ++i)
                    p[i] += bias;
            }
    return yt;
}

} // namespace

Status verifyConvTranspose(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "group", 1, std::numeric_limits<int32_t>::max()));
    int64_t r = -1;
    if (const TensorType* w = ops::inputType(n, 1); w && w->rank() >= 3)
        r = static_cast<int64_t>(w->rank()) - 2;
    SX_TRY(ops::verifyWindowAttrs(n, r, false));
    SX_TRY(ops::checkIntsAttr(n, "output_padding", r, 0));
    for (size_t i = 0; i < 3; ++i)
        SX_TRY(ops::requireFloatInput(n, i, "conv-transpose operand"));
    return {};
}

Expected<std::vector<TensorType>> inferConvTranspose(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    const TensorType* w = ops::inputType(n, 1);
    const TensorType* b = ops::inputType(n, 2);
    if (w->dtype != x->dtype || (b && b->dtype != x->dtype))
        return opError(n, "conv-transpose inputs have mixed dtypes");
    TensorType t;
    t.dtype = x->dtype;
    SX_ASSIGN(t.shape, convTransposeShape(n, x->shape, w->shape, b ? &b->shape : nullptr, nullptr));
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runConvTranspose(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor& w = inputs[1];
    const Tensor* b = n.input(2) && inputs.size() > 2 ? &inputs[2] : nullptr;
    if (w.dtype() != x.dtype() || (b && b->dtype() != x.dtype()))
        return opError(n, "conv-transpose inputs have mixed dtypes");
    Shape bs = b ? ops::shapeOf(*b) : Shape{};
    TransposeGeometry g;
    SX_ASSIGN(Shape out, convTransposeShape(n, ops::shapeOf(x), ops::shapeOf(w), b ? &bs : nullptr, &g));
    const int64_t group = n.attrInt("group", 1);
    SX_TRY(ops::checkAllocation(n, ops::extents(out)));
    SX_TRY(ops::checkAllocation(n, {w.shape()[1], product(g.kernel), product(std::vector<int64_t>(x.shape().begin() + 2, x.shape().end()))}));
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        return std::vector<Tensor>{convTransposeImpl<decltype(tag)>(x, w, b, ops::extents(out), g, group)};
    });
}

// ---- sextant.FusedConvTranspose: ConvTranspose [+ bias] + activation (attribute "activation",
// as FusedConv's), applied to the transposed convolution's output in the same kernel.

Status verifyFusedConvTranspose(const Node& n) {
    SX_TRY(verifyConvTranspose(n));
    SX_TRY(ops::readActivation(n));
    return {};
}

Expected<std::vector<TensorType>> inferFusedConvTranspose(const Node& n) { return inferConvTranspose(n); }

Expected<std::vector<Tensor>> runFusedConvTranspose(const Node& n, std::span<const Tensor> inputs,
                                                    const KernelContext& ctx) {
    SX_ASSIGN(std::vector<Tensor> out, runConvTranspose(n, inputs, ctx));
    return ops::withActivation(n, std::move(out[0]));
}

} // namespace sextant::ir
