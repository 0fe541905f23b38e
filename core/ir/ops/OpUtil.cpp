#include "OpUtil.h"

#include "core/ir/Blas.h"
#include "core/ir/MathUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sextant::ir::ops {

Shape shapeOf(const Tensor& t) {
    Shape s;
    s.reserve(t.rank());
    for (int64_t d : t.shape())
        s.push_back(Dim::known(d));
    return s;
}

namespace {
Shape shapeOfDims(const std::vector<int64_t>& dims) {
    Shape s;
    for (int64_t d : dims)
        s.push_back(Dim::known(d));
    return s;
}
} // namespace

std::vector<int64_t> extents(const Shape& s) {
    std::vector<int64_t> out;
    out.reserve(s.size());
    for (const Dim& d : s)
        out.push_back(d.value);
    return out;
}

std::string shapeStr(const Shape& s) {
    std::string out = "[";
    for (size_t i = 0; i < s.size(); ++i) {
        if (i)
            out += ',';
        out += s[i].isKnown() ? std::to_string(s[i].value) : s[i].symbol.str();
    }
    return out + "]";
}

Expected<Shape> broadcastShapes(const Node& n, const Shape& a, const Shape& b) {
    size_t rank = std::max(a.size(), b.size());
    Shape out(rank);
    for (size_t i = 0; i < rank; ++i) {
        Dim da = i < rank - a.size() ? Dim::known(1) : a[i - (rank - a.size())];
        Dim db = i < rank - b.size() ? Dim::known(1) : b[i - (rank - b.size())];
        if (da.isKnown() && db.isKnown()) {
            if (da.value == db.value || db.value == 1)
                out[i] = da;
            else if (da.value == 1)
                out[i] = db;
            else
                return opError(n, "cannot broadcast shapes " + shapeStr(a) + " and " + shapeStr(b));
        } else if (da.isKnown()) {
            out[i] = da.value == 1 ? db : da;
        } else if (db.isKnown()) {
            out[i] = db.value == 1 ? da : db;
        } else {
            out[i] = (da.symbol == db.symbol && da.symbol != "?") ? da : unknownDim();
        }
    }
    return out;
}

Expected<int64_t> normaliseAxis(const Node& n, int64_t axis, int64_t rank, const char* what,
                                bool inclusive) {
    // Inclusive axes (Flatten) range over [-rank, rank]: -1 still means rank - 1, not rank.
    int64_t limit = inclusive ? rank + 1 : rank;
    int64_t a = axis < 0 ? axis + rank : axis;
    if (a < 0 || a >= limit)
        return opError(n, std::string(what) + " " + std::to_string(axis) +
                              " is out of range for rank " + std::to_string(rank));
    return a;
}

Status checkIntsAttr(const Node& n, const std::string& name, int64_t size, int64_t minValue) {
    const Attribute* a = n.attr(name);
    if (!a)
        return {};
    auto* v = std::get_if<std::vector<int64_t>>(a);
    if (!v)
        return opError(n, "attribute '" + name + "' must be a list of integers");
    if (size >= 0 && static_cast<int64_t>(v->size()) != size)
        return opError(n, "attribute '" + name + "' has " + std::to_string(v->size()) +
                              " entries, expected " + std::to_string(size));
    for (int64_t x : *v)
        if (x < minValue)
            return opError(n, "attribute '" + name + "' has value " + std::to_string(x) +
                                  ", expected at least " + std::to_string(minValue));
    return {};
}

Status checkIntAttr(const Node& n, const std::string& name, int64_t minValue, int64_t maxValue) {
    const Attribute* a = n.attr(name);
    if (!a)
        return {};
    auto* v = std::get_if<int64_t>(a);
    if (!v)
        return opError(n, "attribute '" + name + "' must be an integer");
    if (*v < minValue || *v > maxValue)
        return opError(n, "attribute '" + name + "' has value " + std::to_string(*v) +
                              ", expected " + std::to_string(minValue) + ".." +
                              std::to_string(maxValue));
    return {};
}

Status checkFloatAttr(const Node& n, const std::string& name) {
    const Attribute* a = n.attr(name);
    if (!a || std::holds_alternative<int64_t>(*a))
        return {};
    if (const double* d = std::get_if<double>(a)) {
        if (std::isnan(*d)) // no op means anything by a NaN parameter (an epsilon of NaN makes every output NaN)
            return opError(n, "attribute '" + name + "' is NaN");
        return {};
    }
    return opError(n, "attribute '" + name + "' must be a number");
}

std::vector<int64_t> stridesOf(const std::vector<int64_t>& shape) {
    std::vector<int64_t> s(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;)
        s[i - 1] = s[i] * shape[i];
    return s;
}

void nextIndex(std::vector<int64_t>& idx, const std::vector<int64_t>& shape) {
    for (size_t i = idx.size(); i-- > 0;) {
        if (++idx[i] < shape[i])
            return;
        idx[i] = 0;
    }
}

/// How an update joins the value it lands on (ScatterND's and ScatterElements' `reduction`).
Expected<double (*)(double, double)> scatterReduction(const Node& n) {
    const std::string r = n.attrString("reduction", "none");
    if (r == "none")
        return +[](double, double u) { return u; };
    if (r == "add")
        return +[](double old, double u) { return old + u; };
    if (r == "mul")
        return +[](double old, double u) { return old * u; };
    if (r == "max")
        return +[](double old, double u) { return std::max(old, u); };
    if (r == "min")
        return +[](double old, double u) { return std::min(old, u); };
    return opError(n, "reduction '" + r + "' is not one of none, add, mul, max, min");
}


std::optional<DType> onnxDType(int64_t code) {
    switch (code) {
    case 1: return DType::F32;
    case 2: return DType::U8;
    case 3: return DType::I8;
    case 4: return DType::U16;
    case 5: return DType::I16;
    case 12: return DType::U32;
    case 13: return DType::U64;
    case 21: return DType::U4;
    case 22: return DType::I4;
    case 6: return DType::I32;
    case 7: return DType::I64;
    case 9: return DType::Bool;
    case 10: return DType::F16;
    case 11: return DType::F64;
    case 16: return DType::BF16;
    default: return std::nullopt;
    }
}

Status checkStringAttr(const Node& n, const std::string& name,
                        const std::vector<std::string>& allowed) {
    const Attribute* a = n.attr(name);
    if (!a)
        return {};
    auto* s = std::get_if<std::string>(a);
    if (!s)
        return opError(n, "attribute '" + name + "' must be a string");
    if (allowed.empty() || std::find(allowed.begin(), allowed.end(), *s) != allowed.end())
        return {};
    std::string list;
    for (const std::string& x : allowed)
        list += (list.empty() ? "" : ", ") + ("'" + x + "'");
    return opError(n, "attribute '" + name + "' is '" + *s + "', expected one of " + list,
                   ErrorKind::Unsupported);
}

Status requireFloatInput(const Node& n, size_t i, const char* what) {
    const TensorType* t = inputType(n, i);
    if (t && !isFloat(t->dtype))
        return opError(n, std::string(what) + " must be a float tensor, got " +
                              std::string(dtypeName(t->dtype)));
    return {};
}

Status verifyWindowAttrs(const Node& n, int64_t r, bool allowCeil) {
    SX_TRY(checkStringAttr(n, "auto_pad", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"}));
    SX_TRY(checkIntsAttr(n, "kernel_shape", r, 1));
    SX_TRY(checkIntsAttr(n, "strides", r, 1));
    SX_TRY(checkIntsAttr(n, "dilations", r, 1));
    SX_TRY(checkIntsAttr(n, "pads", r >= 0 ? 2 * r : -1, 0));
    if (allowCeil)
        SX_TRY(checkIntAttr(n, "ceil_mode", 0, 1));
    return {};
}

Expected<WindowGeometry> windowGeometry(const Node& n, const Shape& inSpatial,
                                        const std::vector<int64_t>& kernel, bool allowCeil) {
    const size_t r = inSpatial.size();
    SX_TRY(verifyWindowAttrs(n, static_cast<int64_t>(r), allowCeil));
    if (kernel.size() != r)
        return opError(n, "kernel has " + std::to_string(kernel.size()) +
                              " spatial dims but the input has " + std::to_string(r));
    WindowGeometry g;
    g.kernel = kernel;
    g.strides = n.attrInts("strides", std::vector<int64_t>(r, 1));
    g.dilations = n.attrInts("dilations", std::vector<int64_t>(r, 1));
    std::vector<int64_t> pads = n.attrInts("pads", std::vector<int64_t>(2 * r, 0));
    std::string autoPad = n.attrString("auto_pad", "NOTSET");
    bool ceilMode = allowCeil && n.attrInt("ceil_mode", 0) != 0;
    g.padsBegin.assign(r, 0);
    g.padsEnd.assign(r, 0);
    g.outSpatial.assign(r, unknownDim());
    for (size_t i = 0; i < r; ++i) {
        const int64_t k = kernel[i], s = g.strides[i], d = g.dilations[i];
        const int64_t effK = (k - 1) * d + 1;
        const Dim& in = inSpatial[i];
        if (autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER") {
            if (!in.isKnown()) {
                g.padsKnown = false;
                continue;
            }
            int64_t out = static_cast<int64_t>(ceilDiv(in.value, s));
            int64_t total = std::max<int64_t>(0, (out - 1) * s + effK - in.value);
            int64_t small = total / 2;
            g.padsBegin[i] = autoPad == "SAME_UPPER" ? small : total - small;
            g.padsEnd[i] = total - g.padsBegin[i];
            g.outSpatial[i] = Dim::known(out);
            continue;
        }
        if (autoPad == "NOTSET") {
            g.padsBegin[i] = pads[i];
            g.padsEnd[i] = pads[i + r];
        }
        if (!in.isKnown())
            continue;
        int64_t span = in.value + g.padsBegin[i] + g.padsEnd[i] - effK;
        if (span < 0)
            return opError(n, "window of extent " + std::to_string(effK) + " is larger than the " +
                                  "padded input extent " +
                                  std::to_string(in.value + g.padsBegin[i] + g.padsEnd[i]) +
                                  " in spatial dim " + std::to_string(i));
        int64_t out = span / s + 1;
        if (ceilMode) {
            out = static_cast<int64_t>(ceilDiv(span, s)) + 1;
            // The last window must start inside the input or its leading padding.
            if ((out - 1) * s >= in.value + g.padsBegin[i])
                --out;
        }
        g.outSpatial[i] = Dim::known(out);
    }
    return g;
}

Expected<Activation> readActivation(const Node& n) {
    const Attribute* a = n.attr("activation");
    Activation act;
    if (!a)
        return act;
    auto* name = std::get_if<std::string>(a);
    if (!name)
        return opError(n, "attribute 'activation' must be a string");
    const Attribute* pa = n.attr("activation_params");
    if (pa && !std::holds_alternative<std::vector<double>>(*pa))
        return opError(n, "attribute 'activation_params' must be a list of floats");
    std::vector<double> params = n.attrFloats("activation_params");
    auto param = [&](size_t i, double dflt) { return i < params.size() ? params[i] : dflt; };
    using K = Activation::Kind;
    size_t expected = 0;
    if (name->empty()) {
        act.kind = K::None;
    } else if (*name == "Relu") {
        act.kind = K::Relu;
    } else if (*name == "LeakyRelu") {
        act.kind = K::LeakyRelu;
        act.alpha = param(0, 0.01);
        expected = 1;
    } else if (*name == "Clip") {
        act.kind = K::Clip;
        act.alpha = param(0, -std::numeric_limits<double>::infinity());
        act.beta = param(1, std::numeric_limits<double>::infinity());
        expected = 2;
    } else if (*name == "Sigmoid") {
        act.kind = K::Sigmoid;
    } else if (*name == "HardSigmoid") {
        act.kind = K::HardSigmoid;
        act.alpha = param(0, 0.2);
        act.beta = param(1, 0.5);
        expected = 2;
    } else if (*name == "HardSwish") {
        act.kind = K::HardSwish;
    } else {
        return opError(n, "unsupported fused activation '" + *name + "'", ErrorKind::Unsupported);
    }
    if (pa && params.size() != expected)
        return opError(n, "activation '" + *name + "' takes " + std::to_string(expected) +
                              " parameters but 'activation_params' has " +
                              std::to_string(params.size()));
    if (const Attribute* post = n.attr("post_affine")) {
        const auto* sb = std::get_if<std::vector<double>>(post);
        if (!sb || sb->size() != 2)
            return opError(n, "attribute 'post_affine' must be two floats [scale, shift]");
        if (act.kind == K::None)
            return opError(n, "attribute 'post_affine' needs an activation to follow");
        if (!std::isfinite((*sb)[0]) || !std::isfinite((*sb)[1]))
            return opError(n, "attribute 'post_affine' must be finite");
        act.postAffine = true;
        act.postScale = (*sb)[0];
        act.postShift = (*sb)[1];
    }
    return act;
}

namespace {
template <typename T> void scaleRows(int64_t m, int64_t n, T beta, T* c, int64_t ldc) {
    for (int64_t i = 0; i < m; ++i) {
        T* row = c + i * ldc;
        if (beta == T(0))
            std::fill(row, row + n, T(0));
        else
            for (int64_t j = 0; j < n; ++j)
                row[j] *= beta;
    }
}
} // namespace

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        // C = beta * C, done here so beta = 0 provably writes every element of C (callers pass
        // uninitialised outputs) whatever the BLAS does with an empty product.
        scaleRows(m, n, beta, c, ldc);
        return;
    }
    blas::dgemm(transA, transB, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
                static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    if (m == 0 || n == 0)
        return;
    if (k == 0) {
        // C = beta * C, done here so beta = 0 provably writes every element of C (callers pass
        // uninitialised outputs) whatever the BLAS does with an empty product.
        scaleRows(m, n, beta, c, ldc);
        return;
    }
    blas::sgemm(transA, transB, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
                static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

Status checkAllocation(const Node& n, const std::vector<int64_t>& dims) {
    int64_t total = 1;
    for (int64_t d : dims) {
        if (d < 0)
            return opError(n, "output extent " + std::to_string(d) + " is negative");
        if (d != 0 && total > kMaxKernelElements / d)
            return opError(n, "output " + shapeStr(shapeOfDims(dims)) + " is too large to compute");
        total *= d;
    }
    if (total > kMaxKernelElements)
        return opError(n, "output " + shapeStr(shapeOfDims(dims)) + " is too large to compute");
    return {};
}

Status checkKernelInputs(const Node& n, std::span<const Tensor> inputs) {
    if (inputs.size() != n.numInputs())
        return opError(n, "kernel got " + std::to_string(inputs.size()) + " inputs, node has " +
                              std::to_string(n.numInputs()));
    for (size_t i = 0; i < inputs.size(); ++i)
        if (n.input(i) && !inputs[i].valid())
            return opError(n, "input " + std::to_string(i) + " has no data");
    return {};
}

// Which input dims are reduced; nullopt when the axes input is not a constant (inference only).
Expected<std::optional<std::vector<bool>>> reducedAxes(const Node& n, size_t rank, const Tensor* axesInput) {
    std::vector<int64_t> axes;
    bool given = false;
    if (n.input(1)) {
        const Tensor* t = axesInput ? axesInput : n.input(1)->constant();
        if (!t)
            return std::optional<std::vector<bool>>{};
        if (t->dtype() != DType::I64 || t->rank() > 1)
            return opError(n, "reduce axes must be a 1-D i64 tensor, got " + t->type().str());
        for (int64_t i = 0; i < t->numel(); ++i)
            axes.push_back(t->data<int64_t>()[i]);
        given = true;
    } else if (n.hasAttr("axes")) {
        axes = n.attrInts("axes");
        given = true;
    }
    std::vector<bool> reduced(rank, false);
    if (!given || axes.empty()) {
        if (n.attrInt("noop_with_empty_axes", 0) == 0)
            reduced.assign(rank, true);
        return std::optional<std::vector<bool>>{reduced};
    }
    for (int64_t a : axes) {
        SX_ASSIGN(int64_t ax, normaliseAxis(n, a, static_cast<int64_t>(rank), "reduce axis"));
        reduced[static_cast<size_t>(ax)] = true;
    }
    return std::optional<std::vector<bool>>{reduced};
}

Shape reducedShape(const Shape& in, const std::vector<bool>& reduced, bool keepDims) {
    Shape out;
    for (size_t i = 0; i < in.size(); ++i) {
        if (!reduced[i])
            out.push_back(in[i]);
        else if (keepDims)
            out.push_back(Dim::known(1));
    }
    return out;
}

Expected<std::vector<TensorType>> inferReduction(const Node& n) {
    const TensorType* x = inputType(n, 0);
    if (!x)
        return opError(n, "reduce input is missing");
    SX_ASSIGN(auto reduced, reducedAxes(n, x->rank(), nullptr));
    TensorType t;
    t.dtype = x->dtype;
    if (!reduced) {
        // Axes computed at run time: the rank still follows from keepdims and their count.
        const TensorType* a = inputType(n, 1);
        const bool keep = n.attrInt("keepdims", 1) != 0;
        if (keep) {
            t.shape.assign(x->rank(), unknownDim());
            return std::vector<TensorType>{t};
        }
        if (a && a->rank() == 1 && a->shape[0].isKnown() && a->shape[0].value > 0 &&
            static_cast<size_t>(a->shape[0].value) <= x->rank()) {
            t.shape.assign(x->rank() - static_cast<size_t>(a->shape[0].value), unknownDim());
            return std::vector<TensorType>{t};
        }
        return opError(n, "reduce axes '" + n.input(1)->name() + "' are not a constant and their count is unknown",
                       ErrorKind::Unsupported);
    }
    t.shape = reducedShape(x->shape, *reduced, n.attrInt("keepdims", 1) != 0);
    return std::vector<TensorType>{t};
}

Expected<std::vector<TensorType>> inferVariadicBroadcast(const Node& n, const char* what) {
    const TensorType* first = inputType(n, 0);
    if (!first)
        return opError(n, std::string(what) + " input 0 is missing");
    TensorType t;
    t.dtype = first->dtype;
    t.shape = first->shape;
    for (size_t i = 1; i < n.numInputs(); ++i) {
        const TensorType* in = inputType(n, i);
        if (!in)
            return opError(n, std::string(what) + " input " + std::to_string(i) + " is missing");
        if (in->dtype != t.dtype)
            return opError(n, std::string(what) + " inputs have different dtypes " +
                                  std::string(dtypeName(t.dtype)) + " and " +
                                  std::string(dtypeName(in->dtype)));
        SX_ASSIGN(t.shape, broadcastShapes(n, t.shape, in->shape));
    }
    return std::vector<TensorType>{t};
}

Expected<std::vector<int64_t>> integerValues(const Node& n, const Tensor& t, const char* what) {
    if (t.dtype() != DType::I64 && t.dtype() != DType::I32)
        return opError(n, std::string(what) + " must be an i64 tensor, got " +
                              std::string(dtypeName(t.dtype())));
    if (t.rank() != 1)
        return opError(n, std::string(what) + " must be 1-D");
    std::vector<int64_t> v(static_cast<size_t>(t.numel()));
    for (int64_t i = 0; i < t.numel(); ++i)
        v[static_cast<size_t>(i)] = t.dtype() == DType::I64 ? t.data<int64_t>()[i] : t.data<int32_t>()[i];
    return v;
}

} // namespace sextant::ir::ops
