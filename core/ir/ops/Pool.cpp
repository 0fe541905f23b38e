// Pooling: MaxPool, AveragePool (pads, strides, dilations, ceil_mode, count_include_pad,
// auto_pad), LpPool (the p-norm of each window: opsets 2, 11, 18 and 22) and GlobalAveragePool,
// GlobalLpPool.

#include "OpUtil.h"

#include "core/ir/Interpreter.h"

#include <cmath>
#include <limits>

namespace sextant::ir {
namespace {

using ops::opError;
using ops::Shape;

enum class PoolMode { Max, Average, Lp };

Status verifyPool(const Node& n, PoolMode mode) {
    const bool isMax = mode == PoolMode::Max;
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
    } else if (mode == PoolMode::Lp) {
        // p is an integer >= 1 (ONNX gives no upper end; past 64 every power of a number above 1
        // overflows float32 before the root is taken).
        SX_TRY(ops::checkIntAttr(n, "p", 1, 64));
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

/// |a|^p, the term of an Lp norm.
template <typename T> T lpPower(T a, int64_t p) {
    a = a < 0 ? -a : a;
    return p == 1 ? a : p == 2 ? a * a : static_cast<T>(std::pow(a, static_cast<T>(p)));
}

/// The p-th root of a sum of p-th powers.
template <typename T> T lpRoot(T sum, int64_t p) {
    if (p == 1)
        return sum;
    if (p == 2)
        return std::sqrt(sum);
    return static_cast<T>(std::pow(sum, T(1) / static_cast<T>(p)));
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
                             const ops::WindowGeometry& g, PoolMode mode) {
    const bool isMax = mode == PoolMode::Max;
    const int64_t lpP = n.attrInt("p", 2);
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
                    } else if (mode == PoolMode::Lp) {
                        // Padding adds zeros, which add nothing to the sum of |x|^p.
                        sum += lpPower(v, lpP);
                    } else {
                        sum += v;
                    }
                }
                if (isMax) {
                    y[p * oo + o] = best;
                    if (indices)
                        indices[p * oo + o] =
                            bestAt < 0 ? -1 : p * ii + (columnMajor ? columnMajorOffset(bestAt, in) : bestAt);
                } else if (mode == PoolMode::Lp) {
                    y[p * oo + o] = lpRoot(sum, lpP);
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

Expected<std::vector<Tensor>> runPool(const Node& n, std::span<const Tensor> inputs, PoolMode mode) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    ops::WindowGeometry g;
    SX_ASSIGN(Shape out, poolShape(n, ops::shapeOf(x), &g));
    SX_TRY(ops::checkAllocation(n, ops::extents(out)));
    auto run = [&](auto tag) -> Expected<std::vector<Tensor>> {
        return poolImpl<decltype(tag)>(n, x, ops::extents(out), g, mode);
    };
    return mode == PoolMode::Max ? ops::dispatchNumeric(n, x.dtype(), run) : ops::dispatchFloat(n, x.dtype(), run);
}

} // namespace

Status verifyMaxPool(const Node& n) { return verifyPool(n, PoolMode::Max); }
Expected<std::vector<TensorType>> inferMaxPool(const Node& n) { return inferPool(n); }
Expected<std::vector<Tensor>> runMaxPool(const Node& n, std::span<const Tensor> inputs,
                                         const KernelContext&) {
    return runPool(n, inputs, PoolMode::Max);
}

Status verifyAveragePool(const Node& n) { return verifyPool(n, PoolMode::Average); }
Expected<std::vector<TensorType>> inferAveragePool(const Node& n) { return inferPool(n); }
Expected<std::vector<Tensor>> runAveragePool(const Node& n, std::span<const Tensor> inputs,
                                             const KernelContext&) {
    return runPool(n, inputs, PoolMode::Average);
}

Status verifyLpPool(const Node& n) { return verifyPool(n, PoolMode::Lp); }
Expected<std::vector<TensorType>> inferLpPool(const Node& n) { return inferPool(n); }
Expected<std::vector<Tensor>> runLpPool(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    return runPool(n, inputs, PoolMode::Lp);
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

namespace {

/// GlobalAveragePool (lp 0) or GlobalLpPool (the lp-norm of each plane).
Expected<std::vector<Tensor>> runGlobalPool(const Node& n, std::span<const Tensor> inputs, int64_t lp) {
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
            if (lp == 0) {
                for (int64_t i = 0; i < spatial; ++i)
                    sum += src[p * spatial + i];
                dst[p] = spatial > 0 ? sum / static_cast<T>(spatial) : T(0);
                continue;
            }
            for (int64_t i = 0; i < spatial; ++i)
                sum += lpPower(src[p * spatial + i], lp);
            dst[p] = lpRoot(sum, lp);
        }
        return std::vector<Tensor>{y};
    });
}

} // namespace

Expected<std::vector<Tensor>> runGlobalAveragePool(const Node& n, std::span<const Tensor> inputs,
                                                   const KernelContext&) {
    return runGlobalPool(n, inputs, 0);
}

// ---- GlobalLpPool: the p-norm of each plane

Status verifyGlobalLpPool(const Node& n) {
    SX_TRY(ops::requireFloatInput(n, 0, "pool input"));
    return ops::checkIntAttr(n, "p", 1, 64);
}

Expected<std::vector<TensorType>> inferGlobalLpPool(const Node& n) { return inferGlobalAveragePool(n); }

Expected<std::vector<Tensor>> runGlobalLpPool(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    return runGlobalPool(n, inputs, n.attrInt("p", 2));
}

} // namespace sextant::ir

// ---- MaxUnpool (opsets 9, 11, 22): MaxPool's values put back at the indices it gave

namespace sextant::ir {
namespace {

/// The shape MaxPool's window geometry inverts to: each spatial dim (in - 1) * stride + kernel -
/// pads. The indices are flat positions in a tensor of this shape.
Expected<Shape> unpoolInferred(const Node& n, const Shape& x) {
    if (x.size() < 3)
        return opError(n, "unpool input must have rank >= 3 (N, C, spatial...), got " + ops::shapeStr(x));
    const size_t r = x.size() - 2;
    const std::vector<int64_t> kernel = n.attrInts("kernel_shape");
    const std::vector<int64_t> strides = n.attrInts("strides", std::vector<int64_t>(r, 1));
    const std::vector<int64_t> pads = n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
    if (kernel.size() != r || strides.size() != r || pads.size() != 2 * r)
        return opError(n, "kernel_shape, strides and pads must have " + std::to_string(r) + ", " +
                              std::to_string(r) + " and " + std::to_string(2 * r) + " values for the input " +
                              ops::shapeStr(x));
    Shape out{x[0], x[1]};
    for (size_t d = 0; d < r; ++d) {
        if (!x[d + 2].isKnown()) {
            out.push_back(ops::unknownDim());
            continue;
        }
        const int64_t e = (x[d + 2].value - 1) * strides[d] + kernel[d] - pads[d] - pads[d + r];
        if (e < 0)
            return opError(n, "the pads leave spatial dim " + std::to_string(d) + " an extent of " + std::to_string(e));
        out.push_back(Dim::known(e));
    }
    return out;
}

/// The output shape: `output_shape` when given, which must hold the inferred shape (the unpooled
/// values sit at its origin, zeros around them, as ONNX's reference and node tests have it;
/// onnxruntime instead reads the indices as flat positions in output_shape, which differs only
/// when the two shapes do), else the inferred shape.
Expected<Shape> unpoolShape(const Node& n, const Shape& inferred, const std::optional<Tensor>& given) {
    if (!given)
        return inferred;
    SX_ASSIGN(std::vector<int64_t> dims, ops::integerValues(n, *given, "output_shape"));
    if (dims.size() != inferred.size())
        return opError(n, "output_shape has " + std::to_string(dims.size()) + " dims but the output has " +
                              std::to_string(inferred.size()));
    Shape out;
    for (int64_t d : dims)
        out.push_back(Dim::known(d));
    for (size_t d = 0; d < dims.size(); ++d)
        if (dims[d] < 0 || (inferred[d].isKnown() && dims[d] < inferred[d].value))
            return opError(n, "output_shape " + ops::shapeStr(out) + " is smaller than the unpooled " +
                                  ops::shapeStr(inferred) + " in dim " + std::to_string(d));
    return out;
}

} // namespace

Status verifyMaxUnpool(const Node& n) {
    SX_TRY(ops::requireFloatInput(n, 0, "unpool input"));
    if (const TensorType* i = ops::inputType(n, 1); i && i->dtype != DType::I64)
        return opError(n, "indices must be an i64 tensor, got " + std::string(dtypeName(i->dtype)));
    if (!n.hasAttr("kernel_shape"))
        return opError(n, "attribute 'kernel_shape' is required");
    for (const char* name : {"kernel_shape", "strides"})
        if (n.hasAttr(name))
            for (int64_t v : n.attrInts(name))
                if (v < 1)
                    return opError(n, "attribute '" + std::string(name) + "' holds " + std::to_string(v) +
                                          ", expected values >= 1");
    if (n.hasAttr("pads"))
        for (int64_t v : n.attrInts("pads"))
            if (v < 0)
                return opError(n, "attribute 'pads' holds " + std::to_string(v) + ", expected values >= 0");
    return {};
}

Expected<std::vector<TensorType>> inferMaxUnpool(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    const TensorType* i = ops::inputType(n, 1);
    if (x->isStatic() && i->isStatic() && x->dims() != i->dims())
        return opError(n, "indices " + i->str() + " must have the shape of the input " + x->str());
    TensorType y;
    y.dtype = x->dtype;
    SX_ASSIGN(Shape inferred, unpoolInferred(n, x->shape));
    std::optional<Tensor> given;
    if (n.numInputs() > 2 && n.input(2)) {
        given = knownValue(n.input(2));
        if (!given) { // known when the run gives it: the output's rank only, until then
            y.shape.assign(inferred.size(), ops::unknownDim());
            return std::vector<TensorType>{y};
        }
    }
    SX_ASSIGN(y.shape, unpoolShape(n, inferred, given));
    return std::vector<TensorType>{y};
}

Expected<std::vector<Tensor>> runMaxUnpool(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor& idx = inputs[1];
    if (idx.dtype() != DType::I64 || idx.shape() != x.shape())
        return opError(n, "indices " + idx.type().str() + " must be i64 of the input's shape " + x.type().str());
    std::optional<Tensor> given;
    if (inputs.size() > 2 && n.numInputs() > 2 && n.input(2))
        given = inputs[2];
    SX_ASSIGN(Shape inferredShape, unpoolInferred(n, ops::shapeOf(x)));
    SX_ASSIGN(Shape outShape, unpoolShape(n, inferredShape, given));
    const std::vector<int64_t> inferred = ops::extents(inferredShape), out = ops::extents(outShape);
    SX_TRY(ops::checkAllocation(n, inferred));
    SX_TRY(ops::checkAllocation(n, out));
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        const T* src = x.data<T>();
        const int64_t* at = idx.data<int64_t>();
        const int64_t total = product(inferred);
        for (int64_t k = 0; k < x.numel(); ++k)
            if (at[k] < 0 || at[k] >= total)
                return opError(n, "index " + std::to_string(at[k]) + " at position " + std::to_string(k) +
                                      " is outside the unpooled " + ops::shapeStr(inferredShape) + "'s " +
                                      std::to_string(total) + " elements");
        Tensor y(dtypeOf<T>(), out); // zeros where no index points
        T* dst = y.mutableData<T>();
        // A flat position in the inferred shape, as a position in the output (the same
        // coordinates: the inferred block sits at the output's origin).
        const std::vector<int64_t> outStrides = ops::stridesOf(out);
        for (int64_t k = 0; k < x.numel(); ++k) {
            int64_t rem = at[k], pos = 0;
            for (size_t d = inferred.size(); d-- > 0;) {
                pos += (rem % inferred[d]) * outStrides[d];
                rem /= inferred[d];
            }
            dst[pos] = src[k];
        }
        return std::vector<Tensor>{y};
    });
}

} // namespace sextant::ir
