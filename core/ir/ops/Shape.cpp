// Data movement: Reshape, Flatten, Transpose, Concat, Identity, Dropout (inference = identity).

#include "OpUtil.h"

#include "core/ir/Interpreter.h"
#include "core/ir/MathUtil.h"

#include <algorithm>
#include <cstring>

namespace sextant::ir {

using ops::opError;
using ops::Shape;

namespace {

using ops::integerValues;

/// Reshape's target: 0 copies the input dim (unless allowzero), -1 takes what is left.
Expected<Shape> reshapeTarget(const Node& n, const Shape& in, const std::vector<int64_t>& target) {
    const bool allowZero = n.attrInt("allowzero", 0) != 0;
    Shape out;
    int64_t inferIdx = -1;
    for (size_t i = 0; i < target.size(); ++i) {
        int64_t t = target[i];
        if (t == 0 && !allowZero) {
            if (i >= in.size())
                return opError(n, "reshape target " + std::to_string(i) +
                                      " is 0 (copy) but the input has only " +
                                      std::to_string(in.size()) + " dims");
            out.push_back(in[i]);
        } else if (t == -1) {
            if (inferIdx >= 0)
                return opError(n, "reshape target has more than one -1");
            inferIdx = static_cast<int64_t>(i);
            out.push_back(ops::unknownDim());
        } else if (t < 0) {
            return opError(n, "reshape target has invalid extent " + std::to_string(t));
        } else {
            out.push_back(Dim::known(t));
        }
    }
    // Known extents must agree; symbolic dims cancel when both sides hold the same ones.
    int64_t inKnown = 1, outKnown = 1;
    std::vector<std::string> inSyms, outSyms;
    bool unnamed = false;
    // A hostile model may declare extents whose product overflows int64: say so, do not wrap.
    auto multiply = [&](int64_t& acc, int64_t v, const Shape& shape) -> Status {
        if (__builtin_mul_overflow(acc, v, &acc))
            return opError(n, "cannot reshape " + ops::shapeStr(in) + " to " + ops::shapeStr(out) +
                                  ": the element count of " + ops::shapeStr(shape) +
                                  " overflows int64");
        return {};
    };
    for (const Dim& d : in) {
        if (d.isKnown())
            SX_TRY(multiply(inKnown, d.value, in));
        else if (d.symbol == "?")
            unnamed = true;
        else
            inSyms.push_back(d.symbol);
    }
    for (size_t i = 0; i < out.size(); ++i) {
        if (static_cast<int64_t>(i) == inferIdx)
            continue;
        const Dim& d = out[i];
        if (d.isKnown())
            SX_TRY(multiply(outKnown, d.value, out));
        else if (d.symbol == "?")
            unnamed = true;
        else
            outSyms.push_back(d.symbol);
    }
    std::sort(inSyms.begin(), inSyms.end());
    std::sort(outSyms.begin(), outSyms.end());
    if (unnamed || inSyms != outSyms)
        return out; // cannot check or infer: leave -1 unknown
    if (inferIdx >= 0) {
        if (outKnown == 0 || inKnown % outKnown != 0)
            return opError(n, "cannot reshape " + ops::shapeStr(in) + " to " +
                                  ops::shapeStr(out) + ": element counts do not divide");
        out[static_cast<size_t>(inferIdx)] = Dim::known(inKnown / outKnown);
    } else if (inKnown != outKnown) {
        return opError(n, "cannot reshape " + ops::shapeStr(in) + " (" + std::to_string(inKnown) +
                              " elements) to " + ops::shapeStr(out) + " (" +
                              std::to_string(outKnown) + " elements)");
    }
    return out;
}

/// Product of dims [from, to), symbolic when not all known (a lone symbol times ones survives).
Dim dimProduct(const Shape& s, size_t from, size_t to) {
    int64_t known = 1;
    const Dim* symbolic = nullptr;
    int symbolicCount = 0;
    for (size_t i = from; i < to; ++i) {
        if (s[i].isKnown()) {
            known *= s[i].value;
        } else {
            symbolic = &s[i];
            ++symbolicCount;
        }
    }
    if (symbolicCount == 0)
        return Dim::known(known);
    if (symbolicCount == 1 && known == 1)
        return *symbolic;
    return ops::unknownDim();
}

Expected<std::vector<int64_t>> transposePerm(const Node& n, size_t rank) {
    std::vector<int64_t> perm = n.attrInts("perm");
    if (!n.hasAttr("perm")) {
        perm.resize(rank);
        for (size_t i = 0; i < rank; ++i)
            perm[i] = static_cast<int64_t>(rank - 1 - i);
    }
    if (perm.size() != rank)
        return opError(n, "perm has " + std::to_string(perm.size()) + " entries but the input has rank " +
                              std::to_string(rank));
    std::vector<bool> seen(rank, false);
    for (int64_t p : perm) {
        if (p < 0 || p >= static_cast<int64_t>(rank) || seen[static_cast<size_t>(p)])
            return opError(n, "perm is not a permutation of 0.." + std::to_string(rank - 1));
        seen[static_cast<size_t>(p)] = true;
    }
    return perm;
}

template <typename E>
void transposeCopy(const E* src, const std::vector<int64_t>& inShape, const std::vector<int64_t>& perm,
                   E* dst) {
    const size_t r = inShape.size();
    std::vector<int64_t> inStride(r, 1), outShape(r), srcStride(r);
    for (int64_t d = static_cast<int64_t>(r) - 2; d >= 0; --d)
        inStride[static_cast<size_t>(d)] =
            inStride[static_cast<size_t>(d) + 1] * inShape[static_cast<size_t>(d) + 1];
    for (size_t d = 0; d < r; ++d) {
        outShape[d] = inShape[static_cast<size_t>(perm[d])];
        srcStride[d] = inStride[static_cast<size_t>(perm[d])];
    }
    std::vector<int64_t> zero(r, 0);
    ops::broadcastBinary(src, srcStride, src, zero, outShape, dst, [](E x, E) { return x; });
}

} // namespace

// ---- Reshape

Status verifyReshape(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "allowzero", 0, 1));
    if (const TensorType* s = ops::inputType(n, 1); s && s->dtype != DType::I64)
        return opError(n, "reshape shape must be i64, got " + std::string(dtypeName(s->dtype)));
    return {};
}

Expected<std::vector<TensorType>> inferReshape(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    const Value* shapeValue = n.input(1);
    TensorType t;
    t.dtype = x->dtype;
    if (std::optional<Tensor> c = knownValue(shapeValue)) {
        SX_ASSIGN(std::vector<int64_t> target, integerValues(n, *c, "reshape shape"));
        SX_ASSIGN(t.shape, reshapeTarget(n, x->shape, target));
        return std::vector<TensorType>{t};
    }
    const TensorType& st = shapeValue->type();
    if (st.rank() != 1 || !st.shape[0].isKnown())
        return opError(n, "reshape shape '" + shapeValue->name() + "' is not a constant and its rank is unknown",
                       ErrorKind::Unsupported);
    t.shape.assign(static_cast<size_t>(st.shape[0].value), ops::unknownDim());
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runReshape(const Node& n, std::span<const Tensor> inputs,
                                         const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    SX_ASSIGN(std::vector<int64_t> target, integerValues(n, inputs[1], "reshape shape"));
    SX_ASSIGN(Shape out, reshapeTarget(n, ops::shapeOf(inputs[0]), target));
    return std::vector<Tensor>{inputs[0].reshaped(ops::extents(out))};
}

// ---- Flatten

Status verifyFlatten(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "axis", std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max()));
    if (const TensorType* x = ops::inputType(n, 0))
        SX_TRY(ops::normaliseAxis(n, n.attrInt("axis", 1), static_cast<int64_t>(x->rank()),
                                  "flatten axis", true));
    return {};
}

Expected<std::vector<TensorType>> inferFlatten(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", 1), static_cast<int64_t>(x->rank()),
                                               "flatten axis", true));
    TensorType t;
    t.dtype = x->dtype;
    t.shape = {dimProduct(x->shape, 0, static_cast<size_t>(axis)),
               dimProduct(x->shape, static_cast<size_t>(axis), x->rank())};
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runFlatten(const Node& n, std::span<const Tensor> inputs,
                                         const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", 1), static_cast<int64_t>(x.rank()),
                                               "flatten axis", true));
    int64_t outer = 1;
    for (int64_t i = 0; i < axis; ++i)
        outer *= x.shape()[static_cast<size_t>(i)];
    int64_t inner = outer == 0 ? 0 : x.numel() / outer;
    if (outer == 0)
        inner = product(std::vector<int64_t>(x.shape().begin() + axis, x.shape().end()));
    return std::vector<Tensor>{x.reshaped({outer, inner})};
}

// ---- Transpose

Status verifyTranspose(const Node& n) {
    SX_TRY(ops::checkIntsAttr(n, "perm", -1, 0));
    if (const TensorType* x = ops::inputType(n, 0))
        SX_TRY(transposePerm(n, x->rank()));
    return {};
}

Expected<std::vector<TensorType>> inferTranspose(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    SX_ASSIGN(std::vector<int64_t> perm, transposePerm(n, x->rank()));
    TensorType t;
    t.dtype = x->dtype;
    for (int64_t p : perm)
        t.shape.push_back(x->shape[static_cast<size_t>(p)]);
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runTranspose(const Node& n, std::span<const Tensor> inputs,
                                           const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    SX_ASSIGN(std::vector<int64_t> perm, transposePerm(n, x.rank()));
    std::vector<int64_t> outShape;
    for (int64_t p : perm)
        outShape.push_back(x.shape()[static_cast<size_t>(p)]);
    if (x.rank() == 0 || x.numel() == 0)
        return std::vector<Tensor>{x.clone()};
    Tensor y = Tensor::uninitialized(x.dtype(), outShape); // transposeCopy writes every element
    switch (dtypeSize(x.dtype())) {
    case 1: transposeCopy(x.data<uint8_t>(), x.shape(), perm, y.mutableData<uint8_t>()); break;
    case 2: transposeCopy(x.data<uint16_t>(), x.shape(), perm, y.mutableData<uint16_t>()); break;
    case 4: transposeCopy(x.data<uint32_t>(), x.shape(), perm, y.mutableData<uint32_t>()); break;
    case 8: transposeCopy(x.data<uint64_t>(), x.shape(), perm, y.mutableData<uint64_t>()); break;
    default: return opError(n, "unsupported element size", ErrorKind::Unsupported);
    }
    return std::vector<Tensor>{y};
}

// ---- Concat

Status verifyConcat(const Node& n) {
    if (!n.hasAttr("axis"))
        return opError(n, "attribute 'axis' is required");
    return ops::checkIntAttr(n, "axis", std::numeric_limits<int32_t>::min(),
                             std::numeric_limits<int32_t>::max());
}

namespace {

Expected<Shape> concatShape(const Node& n, const std::vector<const Shape*>& shapes,
                            const std::vector<DType>& dtypes, int64_t* axisOut) {
    const Shape& first = *shapes[0];
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", 0), static_cast<int64_t>(first.size()),
                                               "concat axis"));
    Shape out = first;
    int64_t total = 0;
    bool known = true;
    for (size_t i = 0; i < shapes.size(); ++i) {
        const Shape& s = *shapes[i];
        if (dtypes[i] != dtypes[0])
            return opError(n, "concat input " + std::to_string(i) + " is " +
                                  std::string(dtypeName(dtypes[i])) + " but input 0 is " +
                                  std::string(dtypeName(dtypes[0])));
        if (s.size() != first.size())
            return opError(n, "concat input " + std::to_string(i) + " " + ops::shapeStr(s) +
                                  " has a different rank than input 0 " + ops::shapeStr(first));
        for (size_t d = 0; d < s.size(); ++d) {
            if (static_cast<int64_t>(d) == axis)
                continue;
            if (s[d].isKnown() && out[d].isKnown() && s[d].value != out[d].value)
                return opError(n, "concat input " + std::to_string(i) + " " + ops::shapeStr(s) +
                                      " does not match input 0 " + ops::shapeStr(first) +
                                      " outside axis " + std::to_string(axis));
            if (!out[d].isKnown() && s[d].isKnown())
                out[d] = s[d];
        }
        const Dim& a = s[static_cast<size_t>(axis)];
        if (a.isKnown())
            total += a.value;
        else
            known = false;
    }
    out[static_cast<size_t>(axis)] = known ? Dim::known(total) : ops::unknownDim();
    if (axisOut)
        *axisOut = axis;
    return out;
}

} // namespace

Expected<std::vector<TensorType>> inferConcat(const Node& n) {
    std::vector<const Shape*> shapes;
    std::vector<DType> dtypes;
    for (size_t i = 0; i < n.numInputs(); ++i) {
        const TensorType* t = ops::inputType(n, i);
        if (!t)
            return opError(n, "concat input " + std::to_string(i) + " is missing");
        shapes.push_back(&t->shape);
        dtypes.push_back(t->dtype);
    }
    TensorType t;
    t.dtype = dtypes[0];
    SX_ASSIGN(t.shape, concatShape(n, shapes, dtypes, nullptr));
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runConcat(const Node& n, std::span<const Tensor> inputs,
                                        const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    std::vector<Shape> shapes;
    std::vector<const Shape*> ptrs;
    std::vector<DType> dtypes;
    for (const Tensor& t : inputs) {
        shapes.push_back(ops::shapeOf(t));
        dtypes.push_back(t.dtype());
    }
    for (const Shape& s : shapes)
        ptrs.push_back(&s);
    int64_t axis = 0;
    SX_ASSIGN(Shape outShape, concatShape(n, ptrs, dtypes, &axis));
    const std::vector<int64_t> out = ops::extents(outShape);
    // Uninitialised: the inputs' chunks along the axis add up to the output's extent, so the
    // copies below cover every row.
    Tensor y = Tensor::uninitialized(dtypes[0], out);
    const size_t esz = dtypeSize(dtypes[0]);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
        outer *= out[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(axis) + 1; d < out.size(); ++d)
        inner *= out[d];
    const size_t rowBytes = static_cast<size_t>(out[static_cast<size_t>(axis)] * inner) * esz;
    size_t offset = 0;
    for (const Tensor& t : inputs) {
        const size_t chunk = static_cast<size_t>(t.shape()[static_cast<size_t>(axis)] * inner) * esz;
        for (int64_t o = 0; o < outer; ++o)
            if (chunk)
                std::memcpy(y.mutableBytes() + static_cast<size_t>(o) * rowBytes + offset,
                            t.bytes() + static_cast<size_t>(o) * chunk, chunk);
        offset += chunk;
    }
    return std::vector<Tensor>{y};
}

// ---- Identity

Status verifyIdentity(const Node&) { return {}; }

Expected<std::vector<TensorType>> inferIdentity(const Node& n) {
    return std::vector<TensorType>{*ops::inputType(n, 0)};
}

Expected<std::vector<Tensor>> runIdentity(const Node& n, std::span<const Tensor> inputs,
                                          const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    return std::vector<Tensor>{inputs[0]};
}

// ---- Dropout (inference: identity, mask all true)

Status verifyDropout(const Node& n) {
    SX_TRY(ops::checkFloatAttr(n, "ratio"));
    if (const Value* training = n.input(2); training && training->constant()) {
        const Tensor* t = training->constant();
        if (t->numel() > 0 && t->at(0) != 0.0)
            return opError(n, "training-mode dropout is not supported", ErrorKind::Unsupported);
    }
    return {};
}

Expected<std::vector<TensorType>> inferDropout(const Node& n) {
    std::vector<TensorType> types{*ops::inputType(n, 0)};
    if (n.numOutputs() > 1) {
        TensorType mask = types[0];
        mask.dtype = DType::Bool;
        types.push_back(mask);
    }
    return types;
}

Expected<std::vector<Tensor>> runDropout(const Node& n, std::span<const Tensor> inputs,
                                         const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    std::vector<Tensor> outs{inputs[0]};
    if (n.numOutputs() > 1) {
        Tensor mask(DType::Bool, inputs[0].shape());
        std::fill(mask.mutableData<uint8_t>(), mask.mutableData<uint8_t>() + mask.numel(), 1);
        outs.push_back(mask);
    }
    return outs;
}

} // namespace sextant::ir

// ---- ops added for the model zoo: Unsqueeze, Squeeze, Slice, Gather, Shape, ConstantOfShape

namespace sextant::ir {

namespace {

/// Integer values of input `i` when it is present and its value is known before the graph runs
/// (a constant, or shape arithmetic on constants and static shapes: ops::knownValue); nullopt
/// otherwise.
Expected<std::optional<std::vector<int64_t>>> constantInts(const Node& n, size_t i, const char* what) {
    std::optional<Tensor> known = knownValue(n.input(i));
    if (!known)
        return std::optional<std::vector<int64_t>>{};
    SX_ASSIGN(std::vector<int64_t> vals, integerValues(n, *known, what));
    return std::optional<std::vector<int64_t>>{std::move(vals)};
}

/// The axes of Unsqueeze/Squeeze: input 1 when present (opset 13), else attribute "axes".
/// `runtime` supplies the input tensors when called from a kernel.
Expected<std::optional<std::vector<int64_t>>> axesOf(const Node& n, std::span<const Tensor> runtime) {
    if (n.input(1)) {
        if (runtime.size() > 1) {
            SX_ASSIGN(std::vector<int64_t> v, integerValues(n, runtime[1], "axes"));
            return std::optional<std::vector<int64_t>>{v};
        }
        return constantInts(n, 1, "axes");
    }
    if (n.hasAttr("axes"))
        return std::optional<std::vector<int64_t>>{n.attrInts("axes")};
    return std::optional<std::vector<int64_t>>{};
}

/// The number of axes in a non-constant axes input (input 1), from its static 1-D type.
Expected<size_t> runtimeAxesCount(const Node& n, const std::string& op) {
    const TensorType* a = ops::inputType(n, 1);
    if (!a || a->rank() != 1 || !a->shape[0].isKnown())
        return opError(n, op + " axes '" + n.input(1)->name() +
                              "' are not a constant and their count is unknown",
                       ErrorKind::Unsupported);
    return static_cast<size_t>(a->shape[0].value);
}

Expected<Shape> unsqueezeShape(const Node& n, const Shape& in, const std::vector<int64_t>& axes) {
    const int64_t outRank = static_cast<int64_t>(in.size() + axes.size());
    std::vector<bool> inserted(static_cast<size_t>(outRank), false);
    for (int64_t a : axes) {
        SX_ASSIGN(int64_t ax, ops::normaliseAxis(n, a, outRank, "unsqueeze axis"));
        if (inserted[static_cast<size_t>(ax)])
            return opError(n, "unsqueeze axis " + std::to_string(a) + " is given twice");
        inserted[static_cast<size_t>(ax)] = true;
    }
    Shape out;
    size_t next = 0;
    for (int64_t i = 0; i < outRank; ++i)
        out.push_back(inserted[static_cast<size_t>(i)] ? Dim::known(1) : in[next++]);
    return out;
}

Expected<Shape> squeezeShape(const Node& n, const Shape& in, const std::optional<std::vector<int64_t>>& axes) {
    std::vector<bool> drop(in.size(), false);
    if (axes) {
        for (int64_t a : *axes) {
            SX_ASSIGN(int64_t ax, ops::normaliseAxis(n, a, static_cast<int64_t>(in.size()), "squeeze axis"));
            const Dim& d = in[static_cast<size_t>(ax)];
            if (d.isKnown() && d.value != 1)
                return opError(n, "cannot squeeze axis " + std::to_string(a) + " of extent " +
                                      std::to_string(d.value));
            drop[static_cast<size_t>(ax)] = true;
        }
    } else {
        for (size_t i = 0; i < in.size(); ++i) {
            if (!in[i].isKnown())
                return opError(n, "squeeze without axes needs known dims, got " + ops::shapeStr(in),
                               ErrorKind::Unsupported);
            drop[i] = in[i].value == 1;
        }
    }
    Shape out;
    for (size_t i = 0; i < in.size(); ++i)
        if (!drop[i])
            out.push_back(in[i]);
    return out;
}

struct SliceParams {
    std::vector<int64_t> starts, ends, axes, steps;
};

/// Slice parameters: attributes when the node has one input (before opset 10), else inputs
/// 1..4. From a kernel, `runtime` holds the tensors; from inference only constants are read and
/// nullopt means "not known".
Expected<std::optional<SliceParams>> sliceParams(const Node& n, std::span<const Tensor> runtime, size_t rank) {
    SliceParams p;
    if (n.numInputs() == 1) {
        if (!n.hasAttr("starts") || !n.hasAttr("ends"))
            return opError(n, "slice needs 'starts' and 'ends'");
        p.starts = n.attrInts("starts");
        p.ends = n.attrInts("ends");
        p.axes = n.attrInts("axes");
    } else {
        std::vector<int64_t>* dst[] = {&p.starts, &p.ends, &p.axes, &p.steps};
        const char* names[] = {"slice starts", "slice ends", "slice axes", "slice steps"};
        for (size_t i = 1; i < 5 && i < n.numInputs(); ++i) {
            if (!n.input(i))
                continue;
            if (i < runtime.size()) {
                SX_ASSIGN(*dst[i - 1], integerValues(n, runtime[i], names[i - 1]));
                continue;
            }
            SX_ASSIGN(auto c, constantInts(n, i, names[i - 1]));
            if (!c)
                return std::optional<SliceParams>{};
            *dst[i - 1] = std::move(*c);
        }
    }
    if (p.ends.size() != p.starts.size())
        return opError(n, "slice starts and ends have different lengths");
    if (p.axes.empty())
        for (size_t i = 0; i < p.starts.size(); ++i)
            p.axes.push_back(static_cast<int64_t>(i));
    if (p.steps.empty())
        p.steps.assign(p.starts.size(), 1);
    if (p.axes.size() != p.starts.size() || p.steps.size() != p.starts.size())
        return opError(n, "slice axes/steps lengths do not match starts");
    std::vector<bool> seen(rank, false);
    for (int64_t& a : p.axes) {
        SX_ASSIGN(a, ops::normaliseAxis(n, a, static_cast<int64_t>(rank), "slice axis"));
        if (seen[static_cast<size_t>(a)])
            return opError(n, "slice axis " + std::to_string(a) + " is given twice");
        seen[static_cast<size_t>(a)] = true;
    }
    for (int64_t s : p.steps)
        if (s == 0)
            return opError(n, "slice step must not be 0");
    return std::optional<SliceParams>{p};
}

/// Clamped start and element count of one sliced axis (ONNX rules).
std::pair<int64_t, int64_t> sliceRange(int64_t start, int64_t end, int64_t step, int64_t dim) {
    if (start < 0)
        start += dim;
    if (end < 0)
        end += dim;
    if (step > 0) {
        start = std::clamp<int64_t>(start, 0, dim);
        end = std::clamp<int64_t>(end, 0, dim);
        return {start, end > start ? static_cast<int64_t>(ceilDiv(end - start, step)) : 0};
    }
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
    return {start, start > end ? static_cast<int64_t>(ceilDiv(start - end, -step)) : 0};
}

template <typename E>
void stridedCopy(const E* src, const std::vector<int64_t>& strides, const std::vector<int64_t>& shape, E* dst) {
    std::vector<int64_t> zero(shape.size(), 0);
    ops::broadcastBinary(src, strides, src, zero, shape, dst, [](E x, E) { return x; });
}

Status copyStrided(const Node& n, const Tensor& x, int64_t base, const std::vector<int64_t>& strides, Tensor& y) {
    if (y.numel() == 0)
        return {};
    if (y.rank() == 0) {
        std::memcpy(y.mutableBytes(), x.bytes() + base * static_cast<int64_t>(dtypeSize(x.dtype())),
                    dtypeSize(x.dtype()));
        return {};
    }
    switch (dtypeSize(x.dtype())) {
    case 1: stridedCopy(x.data<uint8_t>() + base, strides, y.shape(), y.mutableData<uint8_t>()); return {};
    case 2: stridedCopy(x.data<uint16_t>() + base, strides, y.shape(), y.mutableData<uint16_t>()); return {};
    case 4: stridedCopy(x.data<uint32_t>() + base, strides, y.shape(), y.mutableData<uint32_t>()); return {};
    case 8: stridedCopy(x.data<uint64_t>() + base, strides, y.shape(), y.mutableData<uint64_t>()); return {};
    default: return opError(n, "unsupported element size", ErrorKind::Unsupported);
    }
}

} // namespace

// ---- Unsqueeze

Status verifyUnsqueeze(const Node& n) {
    SX_TRY(ops::checkIntsAttr(n, "axes", -1, std::numeric_limits<int64_t>::min()));
    if (!n.input(1) && !n.hasAttr("axes"))
        return opError(n, "unsqueeze needs axes (attribute or input 1)");
    return {};
}

Expected<std::vector<TensorType>> inferUnsqueeze(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    SX_ASSIGN(auto axes, axesOf(n, {}));
    TensorType t;
    t.dtype = x->dtype;
    if (!axes) {
        // Axes computed at run time: the rank still follows from their count.
        SX_ASSIGN(size_t count, runtimeAxesCount(n, "unsqueeze"));
        t.shape.assign(x->rank() + count, ops::unknownDim());
        return std::vector<TensorType>{t};
    }
    SX_ASSIGN(t.shape, unsqueezeShape(n, x->shape, *axes));
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runUnsqueeze(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    SX_ASSIGN(auto axes, axesOf(n, inputs));
    if (!axes)
        return opError(n, "unsqueeze needs axes (attribute or input 1)");
    SX_ASSIGN(Shape out, unsqueezeShape(n, ops::shapeOf(inputs[0]), *axes));
    return std::vector<Tensor>{inputs[0].reshaped(ops::extents(out))};
}

// ---- Squeeze

Status verifySqueeze(const Node& n) {
    return ops::checkIntsAttr(n, "axes", -1, std::numeric_limits<int64_t>::min());
}

Expected<std::vector<TensorType>> inferSqueeze(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    SX_ASSIGN(auto axes, axesOf(n, {}));
    TensorType t;
    t.dtype = x->dtype;
    if (!axes && n.input(1)) {
        // Axes computed at run time: each removes one dim (ONNX forbids repeats).
        SX_ASSIGN(size_t count, runtimeAxesCount(n, "squeeze"));
        if (count > x->rank())
            return opError(n, "squeeze axes '" + n.input(1)->name() + "' has " + std::to_string(count) +
                                  " entries for an input of rank " + std::to_string(x->rank()));
        t.shape.assign(x->rank() - count, ops::unknownDim());
        return std::vector<TensorType>{t};
    }
    SX_ASSIGN(t.shape, squeezeShape(n, x->shape, axes));
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runSqueeze(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    SX_ASSIGN(auto axes, axesOf(n, inputs));
    SX_ASSIGN(Shape out, squeezeShape(n, ops::shapeOf(inputs[0]), axes));
    return std::vector<Tensor>{inputs[0].reshaped(ops::extents(out))};
}

// ---- Slice

Status verifySlice(const Node& n) {
    for (const char* a : {"starts", "ends", "axes"})
        SX_TRY(ops::checkIntsAttr(n, a, -1, std::numeric_limits<int64_t>::min()));
    if (n.numInputs() == 1 && (!n.hasAttr("starts") || !n.hasAttr("ends")))
        return opError(n, "slice needs 'starts' and 'ends' (attributes or inputs 1 and 2)");
    if (n.numInputs() == 2)
        return opError(n, "slice needs both starts and ends inputs");
    return {};
}

Expected<std::vector<TensorType>> inferSlice(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    TensorType t;
    t.dtype = x->dtype;
    SX_ASSIGN(auto p, sliceParams(n, {}, x->rank()));
    if (!p) {
        t.shape.assign(x->rank(), ops::unknownDim());
        return std::vector<TensorType>{t};
    }
    t.shape = x->shape;
    for (size_t i = 0; i < p->axes.size(); ++i) {
        Dim& d = t.shape[static_cast<size_t>(p->axes[i])];
        d = d.isKnown() ? Dim::known(sliceRange(p->starts[i], p->ends[i], p->steps[i], d.value).second)
                        : ops::unknownDim();
    }
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runSlice(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    SX_ASSIGN(auto p, sliceParams(n, inputs, x.rank()));
    const size_t r = x.rank();
    std::vector<int64_t> inStride(r, 1);
    for (int64_t d = static_cast<int64_t>(r) - 2; d >= 0; --d)
        inStride[static_cast<size_t>(d)] = inStride[static_cast<size_t>(d) + 1] * x.shape()[static_cast<size_t>(d) + 1];
    std::vector<int64_t> outShape = x.shape(), strides = inStride;
    int64_t base = 0;
    for (size_t i = 0; i < p->axes.size(); ++i) {
        size_t a = static_cast<size_t>(p->axes[i]);
        auto [start, count] = sliceRange(p->starts[i], p->ends[i], p->steps[i], x.shape()[a]);
        outShape[a] = count;
        if (count > 0)
            base += start * inStride[a];
        strides[a] = inStride[a] * p->steps[i];
    }
    Tensor y = Tensor::uninitialized(x.dtype(), outShape); // copyStrided writes every element
    SX_TRY(copyStrided(n, x, base, strides, y));
    return std::vector<Tensor>{y};
}

// ---- Gather

Status verifyGather(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "axis", std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
    if (const TensorType* idx = ops::inputType(n, 1); idx && idx->dtype != DType::I64 && idx->dtype != DType::I32)
        return opError(n, "gather indices must be i64 or i32, got " + std::string(dtypeName(idx->dtype)));
    return {};
}

Expected<std::vector<TensorType>> inferGather(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    const TensorType* idx = ops::inputType(n, 1);
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", 0), static_cast<int64_t>(x->rank()), "gather axis"));
    TensorType t;
    t.dtype = x->dtype;
    t.shape.assign(x->shape.begin(), x->shape.begin() + axis);
    t.shape.insert(t.shape.end(), idx->shape.begin(), idx->shape.end());
    t.shape.insert(t.shape.end(), x->shape.begin() + axis + 1, x->shape.end());
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runGather(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const Tensor& idx = inputs[1];
    if (idx.dtype() != DType::I64 && idx.dtype() != DType::I32)
        return opError(n, "gather indices must be i64 or i32");
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", 0), static_cast<int64_t>(x.rank()), "gather axis"));
    std::vector<int64_t> outShape(x.shape().begin(), x.shape().begin() + axis);
    outShape.insert(outShape.end(), idx.shape().begin(), idx.shape().end());
    outShape.insert(outShape.end(), x.shape().begin() + axis + 1, x.shape().end());
    const int64_t axisLen = x.shape()[static_cast<size_t>(axis)];
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
        outer *= x.shape()[static_cast<size_t>(d)];
    for (size_t d = static_cast<size_t>(axis) + 1; d < x.rank(); ++d)
        inner *= x.shape()[d];
    SX_TRY(ops::checkAllocation(n, outShape));
    // Uninitialised: one chunk per (outer, index) pair, which tile the output (or an error).
    Tensor y = Tensor::uninitialized(x.dtype(), outShape);
    const size_t chunk = static_cast<size_t>(inner) * dtypeSize(x.dtype());
    for (int64_t j = 0; j < idx.numel(); ++j) {
        int64_t k = static_cast<int64_t>(idx.at(j));
        if (k < 0)
            k += axisLen;
        if (k < 0 || k >= axisLen)
            return opError(n, "gather index " + std::to_string(static_cast<int64_t>(idx.at(j))) +
                                  " is out of range for extent " + std::to_string(axisLen));
        for (int64_t o = 0; o < outer; ++o)
            if (chunk)
                std::memcpy(y.mutableBytes() + static_cast<size_t>(o * idx.numel() + j) * chunk,
                            x.bytes() + static_cast<size_t>(o * axisLen + k) * chunk, chunk);
    }
    return std::vector<Tensor>{y};
}

// ---- Shape

std::pair<int64_t, int64_t> ops::shapeRange(const Node& n, int64_t rank) {
    int64_t start = n.attrInt("start", 0), end = n.attrInt("end", rank);
    if (start < 0)
        start += rank;
    if (end < 0)
        end += rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    return {start, end};
}

Status verifyShape(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "start", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()));
    return ops::checkIntAttr(n, "end", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
}

Expected<std::vector<TensorType>> inferShape(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    auto [start, end] = ops::shapeRange(n, static_cast<int64_t>(x->rank()));
    return std::vector<TensorType>{TensorType::of(DType::I64, {end - start})};
}

Expected<std::vector<Tensor>> runShape(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const auto& s = inputs[0].shape();
    auto [start, end] = ops::shapeRange(n, static_cast<int64_t>(s.size()));
    return std::vector<Tensor>{Tensor::fromVector<int64_t>({end - start}, std::vector<int64_t>(s.begin() + start, s.begin() + end))};
}

// ---- ConstantOfShape

namespace {
Expected<Tensor> fillValue(const Node& n) {
    const Attribute* a = n.attr("value");
    if (!a)
        return Tensor::scalar(0.0, DType::F32);
    auto* t = std::get_if<Tensor>(a);
    if (!t || t->numel() != 1)
        return opError(n, "attribute 'value' must be a one-element tensor");
    return *t;
}
} // namespace

Status verifyConstantOfShape(const Node& n) {
    SX_TRY(fillValue(n));
    if (const TensorType* s = ops::inputType(n, 0); s && (s->dtype != DType::I64 || s->rank() != 1))
        return opError(n, "constant-of-shape input must be a 1-D i64 tensor, got " + s->str());
    return {};
}

Expected<std::vector<TensorType>> inferConstantOfShape(const Node& n) {
    SX_ASSIGN(Tensor value, fillValue(n));
    TensorType t;
    t.dtype = value.dtype();
    SX_ASSIGN(auto dims, constantInts(n, 0, "constant-of-shape input"));
    if (dims) {
        for (int64_t d : *dims) {
            if (d < 0)
                return opError(n, "constant-of-shape extent " + std::to_string(d) + " is negative");
            t.shape.push_back(Dim::known(d));
        }
        return std::vector<TensorType>{t};
    }
    const TensorType& st = *ops::inputType(n, 0);
    if (st.rank() != 1 || !st.shape[0].isKnown())
        return opError(n, "constant-of-shape input is not a constant and its length is unknown", ErrorKind::Unsupported);
    t.shape.assign(static_cast<size_t>(st.shape[0].value), ops::unknownDim());
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runConstantOfShape(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    SX_ASSIGN(Tensor value, fillValue(n));
    SX_ASSIGN(std::vector<int64_t> dims, integerValues(n, inputs[0], "constant-of-shape input"));
    SX_TRY(ops::checkAllocation(n, dims));
    Tensor y(value.dtype(), dims);
    const size_t esz = dtypeSize(value.dtype());
    for (int64_t i = 0; i < y.numel(); ++i)
        std::memcpy(y.mutableBytes() + static_cast<size_t>(i) * esz, value.bytes(), esz);
    return std::vector<Tensor>{y};
}

} // namespace sextant::ir

// ---- Pad: attributes pads/value before opset 11, inputs pads/constant_value[/axes] after.

namespace sextant::ir {

namespace {

/// Begin/end pads per dim (2 * rank, ONNX order); nullopt when the pads input is not constant.
Expected<std::optional<std::vector<int64_t>>> padAmounts(const Node& n, size_t rank, std::span<const Tensor> runtime) {
    std::vector<int64_t> pads;
    if (n.input(1)) {
        if (runtime.size() > 1) {
            SX_ASSIGN(pads, integerValues(n, runtime[1], "pads"));
        } else {
            SX_ASSIGN(auto c, constantInts(n, 1, "pads"));
            if (!c)
                return std::optional<std::vector<int64_t>>{};
            pads = std::move(*c);
        }
    } else {
        pads = n.attrInts("pads");
    }
    std::vector<int64_t> axes;
    if (n.input(3)) {
        if (runtime.size() > 3) {
            SX_ASSIGN(axes, integerValues(n, runtime[3], "pad axes"));
        } else {
            SX_ASSIGN(auto c, constantInts(n, 3, "pad axes"));
            if (!c)
                return std::optional<std::vector<int64_t>>{};
            axes = std::move(*c);
        }
    } else {
        for (size_t i = 0; i < rank; ++i)
            axes.push_back(static_cast<int64_t>(i));
    }
    if (pads.size() != 2 * axes.size())
        return opError(n, "pads has " + std::to_string(pads.size()) + " entries, expected " +
                              std::to_string(2 * axes.size()));
    std::vector<int64_t> full(2 * rank, 0);
    for (size_t i = 0; i < axes.size(); ++i) {
        SX_ASSIGN(int64_t a, ops::normaliseAxis(n, axes[i], static_cast<int64_t>(rank), "pad axis"));
        full[static_cast<size_t>(a)] = pads[i];
        full[static_cast<size_t>(a) + rank] = pads[i + axes.size()];
    }
    return std::optional<std::vector<int64_t>>{full};
}

} // namespace

Status verifyPad(const Node& n) {
    SX_TRY(ops::checkStringAttr(n, "mode", {"constant", "reflect", "edge"}));
    SX_TRY(ops::checkIntsAttr(n, "pads", -1, std::numeric_limits<int64_t>::min()));
    SX_TRY(ops::checkFloatAttr(n, "value"));
    if (!n.input(1) && !n.hasAttr("pads"))
        return opError(n, "pad needs pads (attribute or input 1)");
    return {};
}

Expected<std::vector<TensorType>> inferPad(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    SX_ASSIGN(auto pads, padAmounts(n, x->rank(), {}));
    TensorType t;
    t.dtype = x->dtype;
    t.shape = x->shape;
    for (size_t i = 0; i < x->rank(); ++i) {
        Dim& d = t.shape[i];
        if (!pads || !d.isKnown()) {
            if (!pads || (*pads)[i] != 0 || (*pads)[i + x->rank()] != 0)
                d = ops::unknownDim();
            continue;
        }
        int64_t v = d.value + (*pads)[i] + (*pads)[i + x->rank()];
        if (v < 0)
            return opError(n, "padding makes dim " + std::to_string(i) + " negative");
        d = Dim::known(v);
    }
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runPad(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    const size_t r = x.rank();
    SX_ASSIGN(auto pads, padAmounts(n, r, inputs));
    const std::string mode = n.attrString("mode", "constant");
    std::vector<int64_t> out(r);
    for (size_t i = 0; i < r; ++i) {
        out[i] = x.shape()[i] + (*pads)[i] + (*pads)[i + r];
        if (out[i] < 0)
            return opError(n, "padding makes dim " + std::to_string(i) + " negative");
        if (mode != "constant" && x.shape()[i] == 0 && out[i] > 0)
            return opError(n, "cannot " + mode + "-pad an empty dim");
    }
    SX_TRY(ops::checkAllocation(n, out));
    // Source index per dim and output index; -1 reads the constant.
    std::vector<std::vector<int64_t>> src(r);
    for (size_t d = 0; d < r; ++d) {
        const int64_t len = x.shape()[d];
        for (int64_t o = 0; o < out[d]; ++o) {
            int64_t s = o - (*pads)[d];
            if (s < 0 || s >= len) {
                if (mode == "edge") {
                    s = std::clamp<int64_t>(s, 0, len - 1);
                } else if (mode == "reflect") {
                    if (len == 1) {
                        s = 0;
                    } else {
                        const int64_t period = 2 * (len - 1);
                        s = ((s % period) + period) % period;
                        if (s >= len)
                            s = period - s;
                    }
                } else {
                    s = -1;
                }
            }
            src[d].push_back(s);
        }
    }
    Tensor y = Tensor::uninitialized(x.dtype(), out); // every element is copied below
    Tensor fill(x.dtype(), {});
    double value = n.attrFloat("value", 0.0);
    if (n.input(2) && inputs.size() > 2 && inputs[2].numel() > 0)
        value = inputs[2].at(0);
    fill.set(0, value);
    const size_t esz = dtypeSize(x.dtype());
    std::vector<int64_t> inStride(r, 1);
    for (int64_t d = static_cast<int64_t>(r) - 2; d >= 0; --d)
        inStride[static_cast<size_t>(d)] = inStride[static_cast<size_t>(d) + 1] * x.shape()[static_cast<size_t>(d) + 1];
    std::vector<int64_t> idx(r, 0);
    for (int64_t o = 0; o < y.numel(); ++o) {
        int64_t offset = 0;
        bool constant = false;
        for (int64_t d = static_cast<int64_t>(r) - 1, rem = o; d >= 0; --d) {
            const size_t du = static_cast<size_t>(d);
            const int64_t s = src[du][static_cast<size_t>(rem % out[du])];
            rem /= out[du];
            if (s < 0)
                constant = true;
            else
                offset += s * inStride[du];
        }
        std::memcpy(y.mutableBytes() + static_cast<size_t>(o) * esz,
                    constant ? fill.bytes() : x.bytes() + static_cast<size_t>(offset) * esz, esz);
    }
    return std::vector<Tensor>{y};
}

} // namespace sextant::ir
