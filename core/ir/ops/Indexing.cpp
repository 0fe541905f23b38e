// ONNX coverage ops that index, repeat, rearrange or scan a tensor: GatherElements, ScatterElements,
// Trilu, Tile, Expand, CumSum, Range, DepthToSpace, SpaceToDepth, plus GlobalMaxPool and
// InstanceNormalization. Elements move as raw bytes where they only move, so every dtype is exact.

#include "OpUtil.h"

#include "core/ir/Interpreter.h"

#include <algorithm>
#include <cstring>

namespace sextant::ir {

using ops::opError;
using ops::Shape;
using ops::nextIndex;
using ops::stridesOf;

namespace {

/// The integer entries of a 1-D (or scalar) i64/i32 tensor.
Expected<std::vector<int64_t>> intValues(const Node& n, const Tensor& t, const char* what) {
    if (t.dtype() != DType::I64 && t.dtype() != DType::I32)
        return opError(n, std::string(what) + " must be an integer tensor, got " +
                              std::string(dtypeName(t.dtype())));
    if (t.rank() > 1)
        return opError(n, std::string(what) + " must be 1-D, got " + t.type().str());
    std::vector<int64_t> v(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i)
        v[static_cast<size_t>(i)] =
            t.dtype() == DType::I64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
    return v;
}

/// Numpy broadcast of `x` to `target` (already the broadcast result shape) by byte copies.
Tensor broadcastTo(const Tensor& x, const std::vector<int64_t>& target) {
    Tensor y(x.dtype(), target);
    const size_t es = dtypeSize(x.dtype());
    const size_t off = target.size() - x.rank();
    const std::vector<int64_t> xs = stridesOf(x.shape());
    std::vector<int64_t> idx(target.size(), 0);
    for (int64_t k = 0; k < y.numel(); ++k) {
        int64_t src = 0;
        for (size_t i = 0; i < x.rank(); ++i)
            src += (x.shape()[i] == 1 ? 0 : idx[off + i]) * xs[i];
        std::memcpy(y.mutableBytes() + k * es, x.bytes() + src * es, es);
        nextIndex(idx, target);
    }
    return y;
}

} // namespace

// ---- GatherElements: out[i...] = data[i... with index[i...] on axis]

Status verifyGatherElements(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "axis", -64, 64));
    if (const TensorType* i = ops::inputType(n, 1); i && !isInteger(i->dtype))
        return opError(n, "gather indices must be integers, got " + i->str());
    return {};
}

Expected<std::vector<TensorType>> inferGatherElements(const Node& n) {
    const TensorType* data = ops::inputType(n, 0);
    const TensorType* indices = ops::inputType(n, 1);
    if (data->rank() != indices->rank())
        return opError(n, "data " + data->str() + " and indices " + indices->str() +
                              " must have the same rank");
    SX_TRY(ops::normaliseAxis(n, n.attrInt("axis", 0), static_cast<int64_t>(data->rank()),
                              "gather axis"));
    return std::vector<TensorType>{TensorType{data->dtype, indices->shape}};
}

Expected<std::vector<Tensor>> runGatherElements(const Node& n, std::span<const Tensor> inputs,
                                                const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& data = inputs[0];
    const Tensor& indices = inputs[1];
    if (data.rank() != indices.rank() || data.rank() == 0)
        return opError(n, "data " + data.type().str() + " and indices " + indices.type().str() +
                              " must have the same rank >= 1");
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", 0),
                                               static_cast<int64_t>(data.rank()), "gather axis"));
    for (size_t i = 0; i < data.rank(); ++i)
        if (static_cast<int64_t>(i) != axis && indices.shape()[i] > data.shape()[i])
            return opError(n, "indices " + indices.type().str() + " exceed data " +
                                  data.type().str() + " off the axis");
    Tensor y(data.dtype(), indices.shape());
    const size_t es = dtypeSize(data.dtype());
    const std::vector<int64_t> ds = stridesOf(data.shape());
    const int64_t extent = data.shape()[static_cast<size_t>(axis)];
    std::vector<int64_t> idx(indices.rank(), 0);
    for (int64_t k = 0; k < y.numel(); ++k) {
        int64_t at = static_cast<int64_t>(indices.at(k));
        if (at < 0)
            at += extent;
        if (at < 0 || at >= extent)
            return opError(n, "index " + std::to_string(static_cast<int64_t>(indices.at(k))) +
                                  " is outside 0.." + std::to_string(extent - 1) + " on axis " +
                                  std::to_string(axis));
        int64_t src = 0;
        for (size_t i = 0; i < idx.size(); ++i)
            src += (static_cast<int64_t>(i) == axis ? at : idx[i]) * ds[i];
        std::memcpy(y.mutableBytes() + k * es, data.bytes() + src * es, es);
        nextIndex(idx, indices.shape());
    }
    return std::vector<Tensor>{std::move(y)};
}

// ---- Trilu: keep the upper (j - i >= k) or lower (j - i <= k) triangle of the last two dims

Status verifyTrilu(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "upper", 0, 1));
    if (const TensorType* k = ops::inputType(n, 1); k && !isInteger(k->dtype))
        return opError(n, "trilu k must be an integer, got " + k->str());
    return {};
}

Expected<std::vector<TensorType>> inferTrilu(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (x->rank() < 2)
        return opError(n, "trilu input must have rank >= 2, got " + x->str());
    return std::vector<TensorType>{*x};
}

Expected<std::vector<Tensor>> runTrilu(const Node& n, std::span<const Tensor> inputs,
                                       const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    if (x.rank() < 2)
        return opError(n, "trilu input must have rank >= 2, got " + x.type().str());
    int64_t k = 0;
    if (inputs.size() > 1 && inputs[1].valid() && n.input(1)) {
        if (inputs[1].numel() != 1)
            return opError(n, "trilu k must hold one value, got " + inputs[1].type().str());
        k = static_cast<int64_t>(inputs[1].at(0));
    }
    const bool upper = n.attrInt("upper", 1) != 0;
    const int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
    Tensor y = x.clone();
    const size_t es = dtypeSize(x.dtype());
    for (int64_t e = 0; e < y.numel(); ++e) {
        const int64_t j = e % cols, i = cols ? (e / cols) % rows : 0;
        const bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep)
            std::memset(y.mutableBytes() + e * es, 0, es);
    }
    return std::vector<Tensor>{std::move(y)};
}

// ---- Tile: repeat the input repeats[i] times along dim i

Status verifyTile(const Node& n) {
    if (const TensorType* r = ops::inputType(n, 1); r && r->dtype != DType::I64)
        return opError(n, "tile repeats must be i64, got " + r->str());
    return {};
}

Expected<std::vector<TensorType>> inferTile(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    TensorType t{x->dtype, Shape(x->rank(), ops::unknownDim())};
    if (std::optional<Tensor> c = knownValue(n.input(1))) {
        SX_ASSIGN(std::vector<int64_t> reps, intValues(n, *c, "tile repeats"));
        if (reps.size() != x->rank())
            return opError(n, "tile repeats has " + std::to_string(reps.size()) +
                                  " entries for an input of rank " + std::to_string(x->rank()));
        for (size_t i = 0; i < reps.size(); ++i) {
            if (reps[i] < 0)
                return opError(n, "tile repeats must be >= 0, got " + std::to_string(reps[i]));
            if (x->shape[i].isKnown())
                t.shape[i] = Dim::known(x->shape[i].value * reps[i]);
        }
    }
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runTile(const Node& n, std::span<const Tensor> inputs,
                                      const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    SX_ASSIGN(std::vector<int64_t> reps, intValues(n, inputs[1], "tile repeats"));
    if (reps.size() != x.rank())
        return opError(n, "tile repeats has " + std::to_string(reps.size()) +
                              " entries for an input of rank " + std::to_string(x.rank()));
    std::vector<int64_t> out(x.rank());
    for (size_t i = 0; i < out.size(); ++i) {
        if (reps[i] < 0)
            return opError(n, "tile repeats must be >= 0, got " + std::to_string(reps[i]));
        out[i] = x.shape()[i] * reps[i];
    }
    SX_TRY(ops::checkAllocation(n, out));
    Tensor y(x.dtype(), out);
    const size_t es = dtypeSize(x.dtype());
    const std::vector<int64_t> xs = stridesOf(x.shape());
    std::vector<int64_t> idx(out.size(), 0);
    for (int64_t k = 0; k < y.numel(); ++k) {
        int64_t src = 0;
        for (size_t i = 0; i < out.size(); ++i)
            src += (idx[i] % x.shape()[i]) * xs[i];
        std::memcpy(y.mutableBytes() + k * es, x.bytes() + src * es, es);
        nextIndex(idx, out);
    }
    return std::vector<Tensor>{std::move(y)};
}

// ---- Expand: numpy-broadcast the input against a shape

Status verifyExpand(const Node& n) {
    if (const TensorType* s = ops::inputType(n, 1); s && s->dtype != DType::I64)
        return opError(n, "expand shape must be i64, got " + s->str());
    return {};
}

Expected<std::vector<TensorType>> inferExpand(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    const Value* shapeValue = n.input(1);
    TensorType t;
    t.dtype = x->dtype;
    if (std::optional<Tensor> c = knownValue(shapeValue)) {
        SX_ASSIGN(std::vector<int64_t> target, intValues(n, *c, "expand shape"));
        Shape s;
        for (int64_t d : target)
            s.push_back(Dim::known(d));
        SX_ASSIGN(t.shape, ops::broadcastShapes(n, x->shape, s));
        return std::vector<TensorType>{t};
    }
    const TensorType& st = shapeValue->type();
    if (st.rank() != 1 || !st.shape[0].isKnown())
        return opError(n, "expand shape '" + shapeValue->name() +
                              "' is not a constant and its length is unknown",
                       ErrorKind::Unsupported);
    t.shape.assign(std::max<size_t>(x->rank(), static_cast<size_t>(st.shape[0].value)),
                   ops::unknownDim());
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runExpand(const Node& n, std::span<const Tensor> inputs,
                                        const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    SX_ASSIGN(std::vector<int64_t> target, intValues(n, inputs[1], "expand shape"));
    Shape s;
    for (int64_t d : target)
        s.push_back(Dim::known(d));
    SX_ASSIGN(Shape out, ops::broadcastShapes(n, ops::shapeOf(x), s));
    const std::vector<int64_t> dims = ops::extents(out);
    SX_TRY(ops::checkAllocation(n, dims));
    return std::vector<Tensor>{broadcastTo(x, dims)};
}

// ---- CumSum: running sum along an axis (exclusive and reverse attributes)

Status verifyCumSum(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "exclusive", 0, 1));
    SX_TRY(ops::checkIntAttr(n, "reverse", 0, 1));
    if (const TensorType* a = ops::inputType(n, 1); a && !isInteger(a->dtype))
        return opError(n, "cumsum axis must be an integer, got " + a->str());
    return {};
}

Expected<std::vector<TensorType>> inferCumSum(const Node& n) {
    return std::vector<TensorType>{*ops::inputType(n, 0)};
}

Expected<std::vector<Tensor>> runCumSum(const Node& n, std::span<const Tensor> inputs,
                                        const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    if (inputs[1].numel() != 1)
        return opError(n, "cumsum axis must hold one value, got " + inputs[1].type().str());
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, static_cast<int64_t>(inputs[1].at(0)),
                                               std::max<int64_t>(1, static_cast<int64_t>(x.rank())),
                                               "cumsum axis"));
    const bool exclusive = n.attrInt("exclusive", 0) != 0, reverse = n.attrInt("reverse", 0) != 0;
    int64_t outer = 1, len = 1, inner = 1;
    for (size_t i = 0; i < x.rank(); ++i)
        (static_cast<int64_t>(i) < axis ? outer : static_cast<int64_t>(i) == axis ? len : inner) *=
            x.shape()[i];
    Tensor y(x.dtype(), x.shape());
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            double sum = 0;
            for (int64_t s = 0; s < len; ++s) {
                const int64_t a = reverse ? len - 1 - s : s;
                const int64_t at = (o * len + a) * inner + i;
                const double v = x.at(at);
                if (!exclusive)
                    sum += v;
                y.set(at, sum);
                if (exclusive)
                    sum += v;
            }
        }
    return std::vector<Tensor>{std::move(y)};
}

// ---- Range: start, start + delta, ... up to (not including) limit

Status verifyRange(const Node& n) {
    // Range-27's accumulation type for float16 and bfloat16 inputs (1 = float, the default);
    // Sextant computes start + i * delta in float64 for every float type.
    SX_TRY(ops::checkIntAttr(n, "stash_type", 1, 23));
    const TensorType* s = ops::inputType(n, 0);
    for (size_t i = 0; i < 3; ++i) {
        const TensorType* t = ops::inputType(n, i);
        if (t && s && t->dtype != s->dtype)
            return opError(n, "range start, limit and delta must have one dtype, got " + s->str() +
                                  " and " + t->str());
        if (t && t->rank() != 0)
            return opError(n, "range inputs must be scalars, got " + t->str());
    }
    return {};
}

namespace {

Expected<int64_t> rangeCount(const Node& n, double start, double limit, double delta) {
    if (delta == 0)
        return opError(n, "range delta must not be 0");
    const double count = std::ceil((limit - start) / delta);
    if (!(count <= static_cast<double>(ops::kMaxKernelElements)))
        return opError(n, "range of " + std::to_string(count) + " elements is too large");
    return std::max<int64_t>(0, static_cast<int64_t>(count));
}

} // namespace

Expected<std::vector<TensorType>> inferRange(const Node& n) {
    TensorType t{ops::inputType(n, 0)->dtype, {ops::unknownDim()}};
    const Tensor* s = n.input(0)->constant();
    const Tensor* l = n.input(1)->constant();
    const Tensor* d = n.input(2)->constant();
    if (s && l && d && s->numel() == 1 && l->numel() == 1 && d->numel() == 1) {
        SX_ASSIGN(int64_t count, rangeCount(n, s->at(0), l->at(0), d->at(0)));
        t.shape[0] = Dim::known(count);
    }
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runRange(const Node& n, std::span<const Tensor> inputs,
                                       const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    for (size_t i = 0; i < 3; ++i)
        if (inputs[i].numel() != 1)
            return opError(n, "range inputs must be scalars, got " + inputs[i].type().str());
    const double start = inputs[0].at(0), delta = inputs[2].at(0);
    SX_ASSIGN(int64_t count, rangeCount(n, start, inputs[1].at(0), delta));
    Tensor y(inputs[0].dtype(), {count});
    for (int64_t i = 0; i < count; ++i)
        y.set(i, start + static_cast<double>(i) * delta);
    return std::vector<Tensor>{std::move(y)};
}

// ---- GlobalMaxPool: maximum over all spatial dims

Status verifyGlobalMaxPool(const Node& n) { return ops::requireFloatInput(n, 0, "global max pool input"); }

Expected<std::vector<TensorType>> inferGlobalMaxPool(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (x->rank() < 3)
        return opError(n, "global max pool input must have rank >= 3 (N, C, spatial...), got " +
                              x->str());
    TensorType t = *x;
    for (size_t i = 2; i < t.rank(); ++i)
        t.shape[i] = Dim::known(1);
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runGlobalMaxPool(const Node& n, std::span<const Tensor> inputs,
                                               const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    if (x.rank() < 3)
        return opError(n, "global max pool input must have rank >= 3, got " + x.type().str());
    std::vector<int64_t> out = x.shape();
    for (size_t i = 2; i < out.size(); ++i)
        out[i] = 1;
    const int64_t planes = x.shape()[0] * x.shape()[1];
    const int64_t inner = planes == 0 ? 0 : x.numel() / planes;
    if (inner == 0 && planes > 0)
        return opError(n, "global max pool over an empty spatial extent");
    Tensor y(x.dtype(), out);
    for (int64_t p = 0; p < planes; ++p) {
        double m = x.at(p * inner);
        for (int64_t i = 1; i < inner; ++i)
            m = std::max(m, x.at(p * inner + i));
        y.set(p, m);
    }
    return std::vector<Tensor>{std::move(y)};
}

} // namespace sextant::ir

// ---- DepthToSpace / SpaceToDepth: move blocksize x blocksize channel groups into space and back

namespace sextant::ir {

namespace {

Expected<int64_t> blockSize(const Node& n) {
    if (!n.hasAttr("blocksize"))
        return opError(n, "attribute 'blocksize' is required");
    SX_TRY(ops::checkIntAttr(n, "blocksize", 1, 1 << 20));
    return n.attrInt("blocksize", 1);
}

/// Output shape of DepthToSpace (`toSpace`) or SpaceToDepth; dims that cannot be divided are errors.
Expected<Shape> blockShape(const Node& n, const Shape& x, bool toSpace) {
    SX_ASSIGN(int64_t b, blockSize(n));
    if (x.size() != 4)
        return opError(n, "input must have rank 4 [N, C, H, W], got " + ops::shapeStr(x));
    Shape out = x;
    auto scale = [&](size_t i, bool multiply) -> Status {
        if (!x[i].isKnown()) {
            out[i] = ops::unknownDim();
            return {};
        }
        const int64_t d = x[i].value, f = i == 1 ? b * b : b;
        if (multiply == false && d % f != 0)
            return opError(n, "dim " + std::to_string(i) + " of " + ops::shapeStr(x) +
                                  " is not divisible by " + std::to_string(f));
        out[i] = Dim::known(multiply ? d * f : d / f);
        return {};
    };
    SX_TRY(scale(1, !toSpace));
    SX_TRY(scale(2, toSpace));
    SX_TRY(scale(3, toSpace));
    return out;
}

/// Moves elements between depth and space; `toSpace` picks DepthToSpace, `crd` its CRD mode.
Expected<std::vector<Tensor>> runBlockMove(const Node& n, const Tensor& x, bool toSpace, bool crd) {
    SX_ASSIGN(int64_t b, blockSize(n));
    SX_ASSIGN(Shape outShape, blockShape(n, ops::shapeOf(x), toSpace));
    const std::vector<int64_t> out = ops::extents(outShape);
    Tensor y(x.dtype(), out);
    const size_t es = dtypeSize(x.dtype());
    // Index both ways in terms of the space-side tensor [N, Cs, Hs, Ws] and depth-side [N, Cd, Hd, Wd].
    const std::vector<int64_t>& space = toSpace ? out : x.shape();
    const std::vector<int64_t>& depth = toSpace ? x.shape() : out;
    const int64_t cs = space[1];
    for (int64_t nn = 0; nn < space[0]; ++nn)
        for (int64_t c = 0; c < cs; ++c)
            for (int64_t h = 0; h < space[2]; ++h)
                for (int64_t w = 0; w < space[3]; ++w) {
                    const int64_t i = h % b, j = w % b;
                    const int64_t cd = crd ? c * b * b + i * b + j : (i * b + j) * cs + c;
                    const int64_t si = ((nn * cs + c) * space[2] + h) * space[3] + w;
                    const int64_t di = ((nn * depth[1] + cd) * depth[2] + h / b) * depth[3] + w / b;
                    const int64_t from = toSpace ? di : si, to = toSpace ? si : di;
                    std::memcpy(y.mutableBytes() + to * es, x.bytes() + from * es, es);
                }
    return std::vector<Tensor>{std::move(y)};
}

} // namespace

Status verifyDepthToSpace(const Node& n) {
    SX_TRY(ops::checkStringAttr(n, "mode", {"DCR", "CRD"}));
    SX_TRY(blockSize(n));
    return {};
}

Expected<std::vector<TensorType>> inferDepthToSpace(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    SX_ASSIGN(Shape s, blockShape(n, x->shape, true));
    return std::vector<TensorType>{TensorType{x->dtype, s}};
}

Expected<std::vector<Tensor>> runDepthToSpace(const Node& n, std::span<const Tensor> inputs,
                                              const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    return runBlockMove(n, inputs[0], true, n.attrString("mode", "DCR") == "CRD");
}

Status verifySpaceToDepth(const Node& n) {
    SX_TRY(blockSize(n));
    return {};
}

Expected<std::vector<TensorType>> inferSpaceToDepth(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    SX_ASSIGN(Shape s, blockShape(n, x->shape, false));
    return std::vector<TensorType>{TensorType{x->dtype, s}};
}

Expected<std::vector<Tensor>> runSpaceToDepth(const Node& n, std::span<const Tensor> inputs,
                                              const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    return runBlockMove(n, inputs[0], false, false);
}

// ---- InstanceNormalization: per (batch, channel) normalisation over the spatial dims

Status verifyInstanceNormalization(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "epsilon"));
    for (size_t i = 0; i < 3; ++i)
        SX_TRY(ops::requireFloatInput(n, i, "instance normalization input"));
    return {};
}

Expected<std::vector<TensorType>> inferInstanceNormalization(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (x->rank() < 3)
        return opError(n, "instance normalization input must have rank >= 3, got " + x->str());
    return std::vector<TensorType>{*x};
}

Expected<std::vector<Tensor>> runInstanceNormalization(const Node& n, std::span<const Tensor> inputs,
                                                       const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    if (x.rank() < 3)
        return opError(n, "instance normalization input must have rank >= 3, got " + x.type().str());
    const int64_t batch = x.shape()[0], c = x.shape()[1];
    if (inputs[1].numel() != c || inputs[2].numel() != c)
        return opError(n, "scale and bias must have " + std::to_string(c) + " entries");
    const int64_t inner = batch * c == 0 ? 0 : x.numel() / (batch * c);
    const double eps = n.attrFloat("epsilon", 1e-5);
    Tensor y(x.dtype(), x.shape());
    for (int64_t p = 0; p < batch * c; ++p) {
        double mean = 0, var = 0;
        for (int64_t i = 0; i < inner; ++i)
            mean += x.at(p * inner + i);
        mean /= static_cast<double>(inner ? inner : 1);
        for (int64_t i = 0; i < inner; ++i)
            var += (x.at(p * inner + i) - mean) * (x.at(p * inner + i) - mean);
        var /= static_cast<double>(inner ? inner : 1);
        const double mul = inputs[1].at(p % c) / std::sqrt(var + eps), add = inputs[2].at(p % c);
        for (int64_t i = 0; i < inner; ++i)
            y.set(p * inner + i, (x.at(p * inner + i) - mean) * mul + add);
    }
    return std::vector<Tensor>{std::move(y)};
}

// ---- ScatterElements: a copy of data with updates written (or added, multiplied) at indices

Status verifyScatterElements(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "axis", -64, 64));
    SX_TRY(ops::checkStringAttr(n, "reduction", {"none", "add", "mul", "max", "min"}));
    if (const TensorType* i = ops::inputType(n, 1); i && !isInteger(i->dtype))
        return opError(n, "scatter indices must be integers, got " + i->str());
    return {};
}

Expected<std::vector<TensorType>> inferScatterElements(const Node& n) {
    const TensorType* data = ops::inputType(n, 0);
    const TensorType* updates = ops::inputType(n, 2);
    if (updates->dtype != data->dtype)
        return opError(n, "updates " + updates->str() + " and data " + data->str() +
                              " must have one dtype");
    return std::vector<TensorType>{*data};
}

Expected<std::vector<Tensor>> runScatterElements(const Node& n, std::span<const Tensor> inputs,
                                                 const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& data = inputs[0];
    const Tensor& indices = inputs[1];
    const Tensor& updates = inputs[2];
    if (indices.shape() != updates.shape() || indices.rank() != data.rank() || data.rank() == 0)
        return opError(n, "indices " + indices.type().str() + " and updates " + updates.type().str() +
                              " must have one shape of data's rank " + std::to_string(data.rank()));
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", 0),
                                               static_cast<int64_t>(data.rank()), "scatter axis"));
    for (size_t i = 0; i < data.rank(); ++i)
        if (static_cast<int64_t>(i) != axis && indices.shape()[i] > data.shape()[i])
            return opError(n, "indices " + indices.type().str() + " exceed data " +
                                  data.type().str() + " off the axis");
    SX_ASSIGN(auto reduce, ops::scatterReduction(n));
    Tensor y = data.clone();
    const std::vector<int64_t> ds = stridesOf(data.shape());
    const int64_t extent = data.shape()[static_cast<size_t>(axis)];
    std::vector<int64_t> idx(indices.rank(), 0);
    for (int64_t k = 0; k < indices.numel(); ++k) {
        int64_t at = static_cast<int64_t>(indices.at(k));
        if (at < 0)
            at += extent;
        if (at < 0 || at >= extent)
            return opError(n, "index " + std::to_string(static_cast<int64_t>(indices.at(k))) +
                                  " is outside 0.." + std::to_string(extent - 1) + " on axis " +
                                  std::to_string(axis));
        int64_t dst = 0;
        for (size_t i = 0; i < idx.size(); ++i)
            dst += (static_cast<int64_t>(i) == axis ? at : idx[i]) * ds[i];
        const double u = updates.at(k);
        y.set(dst, reduce(y.at(dst), u));
        nextIndex(idx, indices.shape());
    }
    return std::vector<Tensor>{std::move(y)};
}

} // namespace sextant::ir

// ---- OneHot, TopK, NonZero

namespace sextant::ir {

namespace {

/// OneHot's depth from its tensor: one positive value (any numeric type).
Expected<int64_t> oneHotDepth(const Node& n, const Tensor& t) {
    if (t.numel() != 1)
        return opError(n, "one-hot depth must hold one value, got " + t.type().str());
    const double d = t.at(0);
    if (!(d >= 1 && d <= static_cast<double>(ops::kMaxKernelElements)))
        return opError(n, "one-hot depth " + std::to_string(d) + " is out of range");
    return static_cast<int64_t>(d);
}

/// TopK's k from its tensor: one value in 0..extent.
Expected<int64_t> topK(const Node& n, const Tensor& t, int64_t extent) {
    if (t.numel() != 1 || !isInteger(t.dtype()))
        return opError(n, "topk k must be one integer, got " + t.type().str());
    const auto k = static_cast<int64_t>(t.at(0));
    if (k < 0 || (extent >= 0 && k > extent))
        return opError(n, "topk k = " + std::to_string(k) + " is outside 0.." + std::to_string(extent));
    return k;
}

} // namespace

Status verifyOneHot(const Node& n) { return ops::checkIntAttr(n, "axis", -64, 64); }

Expected<std::vector<TensorType>> inferOneHot(const Node& n) {
    const TensorType* indices = ops::inputType(n, 0);
    const TensorType* values = ops::inputType(n, 2);
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", -1),
                                               static_cast<int64_t>(indices->rank()) + 1,
                                               "one-hot axis"));
    Dim depth = ops::unknownDim();
    if (const Tensor* c = n.input(1)->constant()) {
        SX_ASSIGN(int64_t d, oneHotDepth(n, *c));
        depth = Dim::known(d);
    }
    TensorType t{values->dtype, indices->shape};
    t.shape.insert(t.shape.begin() + axis, depth);
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runOneHot(const Node& n, std::span<const Tensor> inputs,
                                        const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& indices = inputs[0];
    const Tensor& values = inputs[2];
    if (values.numel() != 2)
        return opError(n, "one-hot values must be [off, on], got " + values.type().str());
    SX_ASSIGN(int64_t depth, oneHotDepth(n, inputs[1]));
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", -1),
                                               static_cast<int64_t>(indices.rank()) + 1,
                                               "one-hot axis"));
    std::vector<int64_t> out = indices.shape();
    out.insert(out.begin() + axis, depth);
    SX_TRY(ops::checkAllocation(n, out));
    int64_t inner = 1;
    for (size_t i = static_cast<size_t>(axis); i < indices.rank(); ++i)
        inner *= indices.shape()[i];
    Tensor y(values.dtype(), out);
    const size_t es = dtypeSize(values.dtype());
    for (int64_t k = 0; k < indices.numel(); ++k) {
        auto at = static_cast<int64_t>(indices.at(k));
        if (at < 0)
            at += depth;
        const int64_t o = inner ? k / inner : 0, i = inner ? k % inner : 0;
        for (int64_t d = 0; d < depth; ++d)
            std::memcpy(y.mutableBytes() + ((o * depth + d) * inner + i) * es,
                        values.bytes() + (d == at ? 1 : 0) * es, es);
    }
    return std::vector<Tensor>{std::move(y)};
}

Status verifyTopK(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "axis", -64, 64));
    SX_TRY(ops::checkIntAttr(n, "largest", 0, 1));
    SX_TRY(ops::checkIntAttr(n, "sorted", 0, 1));
    return {};
}

Expected<std::vector<TensorType>> inferTopK(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", -1),
                                               static_cast<int64_t>(x->rank()), "topk axis"));
    Shape s = x->shape;
    s[static_cast<size_t>(axis)] = ops::unknownDim();
    if (const Tensor* c = n.input(1)->constant()) {
        const Dim& e = x->shape[static_cast<size_t>(axis)];
        SX_ASSIGN(int64_t k, topK(n, *c, e.isKnown() ? e.value : -1));
        s[static_cast<size_t>(axis)] = Dim::known(k);
    }
    return std::vector<TensorType>{TensorType{x->dtype, s}, TensorType{DType::I64, s}};
}

Expected<std::vector<Tensor>> runTopK(const Node& n, std::span<const Tensor> inputs,
                                      const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", -1),
                                               static_cast<int64_t>(x.rank()), "topk axis"));
    const int64_t len = x.shape()[static_cast<size_t>(axis)];
    SX_ASSIGN(int64_t k, topK(n, inputs[1], len));
    const bool largest = n.attrInt("largest", 1) != 0;
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < x.rank(); ++i)
        if (static_cast<int64_t>(i) < axis)
            outer *= x.shape()[i];
        else if (static_cast<int64_t>(i) > axis)
            inner *= x.shape()[i];
    std::vector<int64_t> out = x.shape();
    out[static_cast<size_t>(axis)] = k;
    Tensor values(x.dtype(), out), indices(DType::I64, out);
    const size_t es = dtypeSize(x.dtype());
    std::vector<int64_t> order(static_cast<size_t>(len));
    for (int64_t o = 0; o < outer; ++o)
        for (int64_t i = 0; i < inner; ++i) {
            auto src = [&](int64_t a) { return (o * len + a) * inner + i; };
            for (int64_t a = 0; a < len; ++a)
                order[static_cast<size_t>(a)] = a;
            // Ties keep the lower index first, as ONNX specifies.
            std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
                const double va = x.at(src(a)), vb = x.at(src(b));
                return largest ? va > vb : va < vb;
            });
            for (int64_t j = 0; j < k; ++j) {
                const int64_t dst = (o * k + j) * inner + i, a = order[static_cast<size_t>(j)];
                std::memcpy(values.mutableBytes() + dst * es, x.bytes() + src(a) * es, es);
                indices.mutableData<int64_t>()[dst] = a;
            }
        }
    return std::vector<Tensor>{std::move(values), std::move(indices)};
}

Status verifyNonZero(const Node&) { return {}; }

Expected<std::vector<TensorType>> inferNonZero(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    return std::vector<TensorType>{
        TensorType{DType::I64, {Dim::known(static_cast<int64_t>(x->rank())), ops::unknownDim()}}};
}

Expected<std::vector<Tensor>> runNonZero(const Node& n, std::span<const Tensor> inputs,
                                         const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    std::vector<int64_t> hits;
    for (int64_t k = 0; k < x.numel(); ++k)
        if (x.at(k) != 0)
            hits.push_back(k);
    const auto count = static_cast<int64_t>(hits.size());
    const auto rank = static_cast<int64_t>(x.rank());
    Tensor y(DType::I64, {rank, count});
    const std::vector<int64_t> strides = stridesOf(x.shape());
    for (int64_t h = 0; h < count; ++h)
        for (int64_t d = 0; d < rank; ++d)
            y.mutableData<int64_t>()[d * count + h] =
                hits[static_cast<size_t>(h)] / strides[static_cast<size_t>(d)] %
                x.shape()[static_cast<size_t>(d)];
    return std::vector<Tensor>{std::move(y)};
}

} // namespace sextant::ir
