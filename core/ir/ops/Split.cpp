// Split (cut a tensor into pieces along an axis: sizes from attribute "split" before opset 13,
// from optional input 1 after, else equal pieces, one per output) and Size (element count as an
// i64 scalar).

#include "OpUtil.h"

#include <cstring>

namespace sextant::ir {

using ops::opError;

namespace {

/// Extents of the pieces along the split axis (extent `dim`, possibly unknown). `splitInput` is
/// the runtime split tensor in a kernel, nullptr during inference (which reads a constant).
/// nullopt when the sizes are not known before run time.
Expected<std::optional<std::vector<int64_t>>> splitSizes(const Node& n, const Dim& dim, const Tensor* splitInput) {
    using Result = std::optional<std::vector<int64_t>>;
    const int64_t numOut = static_cast<int64_t>(n.numOutputs());
    if (numOut == 0)
        return opError(n, "split needs at least one output");
    std::vector<int64_t> sizes;
    if (n.input(1)) {
        const Tensor* t = splitInput ? splitInput : n.input(1)->constant();
        if (!t)
            return Result{};
        if (t->dtype() != DType::I64 || t->rank() > 1)
            return opError(n, "split sizes must be a 1-D i64 tensor, got " + t->type().str());
        sizes.assign(t->data<int64_t>(), t->data<int64_t>() + t->numel());
    } else {
        sizes = n.attrInts("split");
    }
    if (!sizes.empty()) {
        if (static_cast<int64_t>(sizes.size()) != numOut)
            return opError(n, "split has " + std::to_string(sizes.size()) + " sizes but the node has " +
                                  std::to_string(numOut) + " outputs");
        int64_t sum = 0;
        for (int64_t s : sizes) {
            if (s < 0)
                return opError(n, "split size " + std::to_string(s) + " is negative");
            sum += s;
        }
        if (dim.isKnown() && sum != dim.value)
            return opError(n, "split sizes sum to " + std::to_string(sum) + " but the axis has extent " +
                                  std::to_string(dim.value));
        return Result{sizes};
    }
    // Equal pieces, one per output. Opset 18's num_outputs allows a smaller last piece.
    const bool uneven = n.hasAttr("num_outputs");
    if (uneven && n.attrInt("num_outputs", 0) != numOut)
        return opError(n, "attribute 'num_outputs' is " + std::to_string(n.attrInt("num_outputs", 0)) +
                              " but the node has " + std::to_string(numOut) + " outputs");
    if (!dim.isKnown())
        return Result{};
    if (dim.value % numOut == 0)
        return Result{std::vector<int64_t>(static_cast<size_t>(numOut), dim.value / numOut)};
    if (!uneven)
        return opError(n, "axis extent " + std::to_string(dim.value) + " does not split evenly into " +
                              std::to_string(numOut) + " outputs");
    const int64_t piece = dim.value / numOut + 1;
    const int64_t last = dim.value - piece * (numOut - 1);
    if (last < 0)
        return opError(n, "axis extent " + std::to_string(dim.value) + " is too small for " +
                              std::to_string(numOut) + " pieces of " + std::to_string(piece));
    sizes.assign(static_cast<size_t>(numOut), piece);
    sizes.back() = last;
    return Result{sizes};
}

} // namespace

// ---- Split

Status verifySplit(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "axis", std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()));
    SX_TRY(ops::checkIntsAttr(n, "split", -1, 0));
    SX_TRY(ops::checkIntAttr(n, "num_outputs", 1, std::numeric_limits<int32_t>::max()));
    if (n.input(1) && n.hasAttr("split"))
        return opError(n, "split sizes are given both as attribute and as input 1");
    if (const TensorType* s = ops::inputType(n, 1); s && s->dtype != DType::I64)
        return opError(n, "split sizes must be i64, got " + std::string(dtypeName(s->dtype)));
    if (const TensorType* x = ops::inputType(n, 0))
        SX_TRY(ops::normaliseAxis(n, n.attrInt("axis", 0), static_cast<int64_t>(x->rank()), "split axis"));
    return {};
}

Expected<std::vector<TensorType>> inferSplit(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (!x)
        return opError(n, "needs an input");
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", 0), static_cast<int64_t>(x->rank()), "split axis"));
    SX_ASSIGN(auto sizes, splitSizes(n, x->shape[static_cast<size_t>(axis)], nullptr));
    std::vector<TensorType> types;
    for (size_t k = 0; k < n.numOutputs(); ++k) {
        TensorType t;
        t.dtype = x->dtype;
        t.shape = x->shape;
        t.shape[static_cast<size_t>(axis)] = sizes ? Dim::known((*sizes)[k]) : ops::unknownDim();
        types.push_back(std::move(t));
    }
    return types;
}

Expected<std::vector<Tensor>> runSplit(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", 0), static_cast<int64_t>(x.rank()), "split axis"));
    const size_t a = static_cast<size_t>(axis);
    const int64_t dim = x.shape()[a];
    SX_ASSIGN(auto sizes, splitSizes(n, Dim::known(dim), n.input(1) ? &inputs[1] : nullptr));
    if (!sizes)
        return opError(n, "split sizes have no data");
    int64_t outer = 1, inner = 1;
    for (size_t d = 0; d < a; ++d)
        outer *= x.shape()[d];
    for (size_t d = a + 1; d < x.rank(); ++d)
        inner *= x.shape()[d];
    const size_t esz = dtypeSize(x.dtype());
    std::vector<Tensor> outs;
    int64_t begin = 0;
    for (int64_t size : *sizes) {
        std::vector<int64_t> shape = x.shape();
        shape[a] = size;
        Tensor y(x.dtype(), shape);
        const size_t chunk = static_cast<size_t>(size * inner) * esz;
        if (chunk > 0)
            for (int64_t o = 0; o < outer; ++o)
                std::memcpy(y.mutableBytes() + static_cast<size_t>(o) * chunk,
                            x.bytes() + static_cast<size_t>((o * dim + begin) * inner) * esz, chunk);
        outs.push_back(std::move(y));
        begin += size;
    }
    return outs;
}

// ---- Size

Status verifySize(const Node&) { return {}; }

Expected<std::vector<TensorType>> inferSize(const Node& n) {
    if (!ops::inputType(n, 0))
        return opError(n, "needs an input");
    return std::vector<TensorType>{TensorType::of(DType::I64, {})};
}

Expected<std::vector<Tensor>> runSize(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    return std::vector<Tensor>{Tensor::fromVector<int64_t>({}, {inputs[0].numel()})};
}

} // namespace sextant::ir
