// Pooling: MaxPool, AveragePool (pads, strides, dilations, ceil_mode, count_include_pad,
// auto_pad) and GlobalAveragePool.

#include "OpUtil.h"

#include <limits>

namespace sextant::ir {
namespace {

using ops::opError;
using ops::Shape;

Status verifyPool(const Node& n, bool isMax) {
    // MaxPool also takes i8/u8 (opset 12); averaging stays float-only.
    const TensorType* in = ops::inputType(n, 0);
    if (!(isMax && in && (in->dtype == DType::I8 || in->dtype == DType::U8)))
        SX_TRY(ops::requireFloatInput(n, 0, "pool input"));
    if (!n.hasAttr("kernel_shape"))
        return opError(n, "attribute 'kernel_shape' is required");
    int64_t r = static_cast<int64_t>(n.attrInts("kernel_shape").size());
    if (const TensorType* x = ops::inputType(n, 0); x && x->rank() >= 3 &&
                                                    static_cast<int64_t>(x->rank()) - 2 != r)
        return opError(n, "kernel_shape has " + std::to_string(r) + " dims but the input " +
                              x->str() + " has " + std::to_string(x->rank() - 2) + " spatial dims");
    SX_TRY(ops::verifyWindowAttrs(n, r, true));
    if (isMax) {
        SX_TRY(ops::checkIntAttr(n, "storage_order", 0, 1));
    } else {
        SX_TRY(ops::checkIntAttr(n, "count_include_pad", 0, 1));
        if (n.hasAttr("dilations"))
            for (int64_t d : n.attrInts("dilations"))
                if (d != 1)
                    return opError(n, "average pooling with dilations is not supported",
                                   ErrorKind::Unsupported);
    }
    return {};
}

Expected<Shape> poolShape(const Node& n, const Shape& x, ops::WindowGeometry* geom) {
    if (x.size() < 3)
        return opError(n, "pool input must have rank >= 3 (N, C, spatial...), got " + ops::shapeStr(x));
    std::vector<int64_t> kernel = n.attrInts("kernel_shape");
    if (kernel.size() != x.size() - 2)
        return opError(n, "kernel_shape has " + std::to_string(kernel.size()) +
                              " dims but the input " + ops::shapeStr(x) + " has " +
                              std::to_string(x.size() - 2) + " spatial dims");
    Shape spatial(x.begin() + 2, x.end());
    SX_ASSIGN(ops::WindowGeometry g, ops::windowGeometry(n, spatial, kernel, true));
    Shape out{x[0], x[1]};
    out.insert(out.end(), g.outSpatial.begin(), g.outSpatial.end());
    if (geom)
        *geom = std::move(g);
    return out;
}

Expected<std::vector<TensorType>> inferPool(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    SX_ASSIGN(Shape out, poolShape(n, x->shape, nullptr));
    TensorType y;
    y.dtype = x->dtype;
    y.shape = out;
    std::vector<TensorType> types{y};
    if (n.numOutputs() > 1) {
        TensorType idx = y;
        idx.dtype = DType::I64;
        types.push_back(idx);
    }
    return types;
}

/// Per spatial dim and output index: the input positions a window covers inside the input, and
/// how many of its positions lie inside input + pads (the count_include_pad divisor).
struct WindowTaps {
    std::vector<std::vector<std::vector<int64_t>>> inside; // [dim][out] -> positions
    std::vector<std::vector<int64_t>> padded;              // [dim][out] -> count
};

WindowTaps windowTaps(const ops::WindowGeometry& g, const std::vector<int64_t>& in,
                      const std::vector<int64_t>& out) {
    WindowTaps t;
    const size_t r = in.size();
    t.inside.resize(r);
    t.padded.resize(r);
    for (size_t d = 0; d < r; ++d) {
        t.inside[d].resize(static_cast<size_t>(out[d]));
        t.padded[d].resize(static_cast<size_t>(out[d]));
        for (int64_t o = 0; o < out[d]; ++o) {
            int64_t start = o * g.strides[d] - g.padsBegin[d];
            for (int64_t k = 0; k < g.kernel[d]; ++k) {
                int64_t p = start + k * g.dilations[d];
                if (p < in[d] + g.padsEnd[d])
                    ++t.padded[d][static_cast<size_t>(o)];
                if (p >= 0 && p < in[d])
                    t.inside[d][static_cast<size_t>(o)].push_back(p);
            }
        }
    }
    return t;
}

/// The column-major offset of the element at row-major offset `offset` in a tensor of shape `dims`.
int64_t columnMajorOffset(int64_t offset, const std::vector<int64_t>& dims) {
    int64_t result = 0, stride = 1;
    std::vector<int64_t> coord(dims.size());
    for (size_t d = dims.size(); d-- > 0;) {
        coord[d] = offset % dims[d];
        offset /= dims[d];
    }
    for (size_t d = 0; d < dims.size(); ++d) {
        result += coord[d] * stride;
        stride *= dims[d];
    }
    return result;
}

template <typename T>
std::vector<Tensor> poolImpl(const Node& n, const Tensor& xt, const std::vector<int64_t>& outShape,
                             const ops::WindowGeometry& g, bool isMax) {
    const auto& xs = xt.shape();
    const size_t r = xs.size() - 2;
    const std::vector<int64_t> in(xs.begin() + 2, xs.end()), out(outShape.begin() + 2, outShape.end());
    const int64_t planes = xs[0] * xs[1], ii = product(in), oo = product(out);
    const bool includePad = n.attrInt("count_include_pad", 0) != 0;
    const bool wantIndices = isMax && n.numOutputs() > 1;
    // storage_order 1: Indices count positions within a plane in column-major order.
    const bool columnMajor = n.attrInt("storage_order", 0) == 1;
    // Uninitialised: the loops below write y (and Indices) at every plane p and output position o.
    Tensor yt = Tensor::uninitialized(dtypeOf<T>(), outShape);
    Tensor it = wantIndices ? Tensor::uninitialized(DType::I64, outShape) : Tensor();
    WindowTaps taps = windowTaps(g, in, out);
    std::vector<int64_t> inStride(r, 1);
    for (size_t d = r - 1; d-- > 0;)
        inStride[d] = inStride[d + 1] * in[d + 1];
    const T* x = xt.data<T>();
    T* y = yt.mutableData<T>();
    int64_t* indices = wantIndices ? it.mutableData<int64_t>() : nullptr;
    std::vector<int64_t> oidx(r), kidx(r);
    std::vector<const std::vector<int64_t>*> lists(r);
    // Output positions are taken in blocks: the window offsets of a block are decomposed once
    // (they are the same for every plane), then each plane walks the block, so reads stay within
    // one plane at a time. Per output the taps are visited in the same order as always.
    constexpr int64_t kBlock = 1024;
    std::vector<int64_t> offsets, start, count, paddedCount;
    for (int64_t o0 = 0; o0 < oo; o0 += kBlock) {
        const int64_t o1 = std::min(oo, o0 + kBlock);
        offsets.clear();
        start.clear();
        count.clear();
        paddedCount.clear();
        for (int64_t o = o0; o < o1; ++o) {
            for (int64_t d = static_cast<int64_t>(r) - 1, rem = o; d >= 0; --d) {
                oidx[d] = rem % out[d];
                rem /= out[d];
            }
            int64_t taps_ = 1, padded = 1;
            for (size_t d = 0; d < r; ++d) {
                lists[d] = &taps.inside[d][static_cast<size_t>(oidx[d])];
                taps_ *= static_cast<int64_t>(lists[d]->size());
                padded *= taps.padded[d][static_cast<size_t>(oidx[d])];
            }
            start.push_back(static_cast<int64_t>(offsets.size()));
            count.push_back(taps_);
            paddedCount.push_back(padded);
            for (int64_t k = 0; k < taps_; ++k) {
                int64_t offset = 0;
                for (int64_t d = static_cast<int64_t>(r) - 1, rem = k; d >= 0; --d) {
                    int64_t sz = static_cast<int64_t>(lists[d]->size());
                    offset += (*lists[d])[static_cast<size_t>(rem % sz)] * inStride[d];
                    rem /= sz;
                }
                offsets.push_back(offset);
            }
        }
        for (int64_t p = 0; p < planes; ++p) {
            const T* xp = x + p * ii;
            for (int64_t o = o0; o < o1; ++o) {
                const size_t b = static_cast<size_t>(o - o0);
                const int64_t* offs = offsets.data() + start[b];
                const int64_t taps_ = count[b];
                if (isMax && !indices) {
                    // Values only: a select per tap instead of a data-dependent branch (the
                    // first tap is always taken, as below, so a NaN there is kept the same way).
                    T best = taps_ > 0 ? xp[offs[0]] : -std::numeric_limits<T>::infinity();
                    for (int64_t k = 1; k < taps_; ++k) {
                        const T v = xp[offs[k]];
                        best = v > best ? v : best;
                    }
                    y[p * oo + o] = best;
                    continue;
                }
                T best = -std::numeric_limits<T>::infinity();
                int64_t bestAt = -1;
                T sum = 0;
                for (int64_t k = 0; k < taps_; ++k) {
                    const int64_t offset = offs[k];
                    T v = xp[offset];
                    if (isMax) {
                        if (v > best || bestAt < 0) {
                            best = v;
                            bestAt = offset;
                        }
                    } else {
                        sum += v;
                    }
                }
                if (isMax) {
                    y[p * oo + o] = best;
                    if (indices)
                        indices[p * oo + o] =
                            bestAt < 0 ? -1 : p * ii + (columnMajor ? columnMajorOffset(bestAt, in) : bestAt);
                } else {
                    int64_t divisor = includePad ? paddedCount[b] : taps_;
                    y[p * oo + o] = divisor > 0 ? sum / static_cast<T>(divisor) : T(0);
                }
            }
        }
    }
    std::vector<Tensor> result{yt};
    if (wantIndices)
        result.push_back(it);
    return result;
}

Expected<std::vector<Tensor>> runPool(const Node& n, std::span<const Tensor> inputs, bool isMax) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    ops::WindowGeometry g;
    SX_ASSIGN(Shape out, poolShape(n, ops::shapeOf(x), &g));
    SX_TRY(ops::checkAllocation(n, ops::extents(out)));
    auto run = [&](auto tag) -> Expected<std::vector<Tensor>> {
        return poolImpl<decltype(tag)>(n, x, ops::extents(out), g, isMax);
    };
    return isMax ? ops::dispatchNumeric(n, x.dtype(), run) : ops::dispatchFloat(n, x.dtype(), run);
}

} // namespace

Status verifyMaxPool(const Node& n) { return verifyPool(n, true); }
Expected<std::vector<TensorType>> inferMaxPool(const Node& n) { return inferPool(n); }
Expected<std::vector<Tensor>> runMaxPool(const Node& n, std::span<const Tensor> inputs,
                                         const KernelContext&) {
    return runPool(n, inputs, true);
}

Status verifyAveragePool(const Node& n) { return verifyPool(n, false); }
Expected<std::vector<TensorType>> inferAveragePool(const Node& n) { return inferPool(n); }
Expected<std::vector<Tensor>> runAveragePool(const Node& n, std::span<const Tensor> inputs,
                                             const KernelContext&) {
    return runPool(n, inputs, false);
}

// ---- GlobalAveragePool

Status verifyGlobalAveragePool(const Node& n) {
    return ops::requireFloatInput(n, 0, "pool input");
}

Expected<std::vector<TensorType>> inferGlobalAveragePool(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (x->rank() < 3)
        return opError(n, "pool input must have rank >= 3 (N, C, spatial...), got " + x->str());
    TensorType y = *x;
    for (size_t i = 2; i < y.rank(); ++i)
        y.shape[i] = Dim::known(1);
    return std::vector<TensorType>{y};
}

Expected<std::vector<Tensor>> runGlobalAveragePool(const Node& n, std::span<const Tensor> inputs,
                                                   const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    if (x.rank() < 3)
        return opError(n, "pool input must have rank >= 3 (N, C, spatial...)");
    std::vector<int64_t> outShape = x.shape();
    int64_t spatial = 1;
    for (size_t i = 2; i < outShape.size(); ++i) {
        spatial *= outShape[i];
        outShape[i] = 1;
    }
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y = Tensor::uninitialized(dtypeOf<T>(), outShape); // one element per plane, all written
        const T* src = x.data<T>();
        T* dst = y.mutableData<T>();
        const int64_t planes = x.shape()[0] * x.shape()[1];
        for (int64_t p = 0; p < planes; ++p) {
            T sum = 0;
            for (int64_t i = 0; i < spatial; ++i)
                sum += src[p * spatial + i];
            dst[p] = spatial > 0 ? sum / static_cast<T>(spatial) : T(0);
        }
        return std::vector<Tensor>{y};
    });
}

} // namespace sextant::ir
