// Unique (ONNX opset 11), on the host: the distinct elements of X (no axis: X flattened) or its
// distinct slices along `axis` (compared element by element in row-major order, as numpy.unique
// compares them). sorted 1 (default) orders them ascending (slices lexicographically); sorted 0 in
// the order they first occur. Outputs: Y, the distinct values (X's shape with the axis dim the
// number of them; 1-D without axis); indices, each one's first index in X (along the axis);
// inverse_indices, for each element (slice) of X the index of its value in Y; counts, how often
// each occurs. All but inverse_indices have a length that depends on the data, as NonZero's.

#include "OpUtil.h"

#include <algorithm>
#include <numeric>

namespace sextant::ir {

using ops::opError;

namespace {

/// The axis attribute normalised, or -1 when absent (flatten).
Expected<int64_t> uniqueAxis(const Node& n, size_t rank) {
    if (!n.hasAttr("axis"))
        return int64_t{-1};
    return ops::normaliseAxis(n, n.attrInt("axis", 0), static_cast<int64_t>(rank), "unique axis");
}

template <typename T>
std::vector<Tensor> uniqueOf(const Node& n, const Tensor& x, int64_t axis) {
    const std::vector<int64_t>& shape = x.shape();
    int64_t outer = 1, count = x.numel(), inner = 1;
    if (axis >= 0) {
        const auto a = static_cast<size_t>(axis);
        outer = product(std::vector<int64_t>(shape.begin(), shape.begin() + axis));
        count = shape[a];
        inner = product(std::vector<int64_t>(shape.begin() + axis + 1, shape.end()));
    }
    const T* p = x.data<T>();
    // Slice j's element (o, i) is p[(o * count + j) * inner + i].
    auto less = [&](int64_t a, int64_t b) {
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) {
                const T va = p[(o * count + a) * inner + i], vb = p[(o * count + b) * inner + i];
                if (va < vb)
                    return true;
                if (vb < va)
                    return false;
            }
        return false;
    };
    std::vector<int64_t> order(static_cast<size_t>(count));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), less);
    // Groups of equal slices in sorted order; the first member of each is its first occurrence.
    std::vector<int64_t> firsts, counts, groupOf(static_cast<size_t>(count));
    for (size_t k = 0; k < order.size(); ++k) {
        if (k == 0 || less(order[k - 1], order[k])) {
            firsts.push_back(order[k]);
            counts.push_back(0);
        }
        ++counts.back();
        groupOf[static_cast<size_t>(order[k])] = static_cast<int64_t>(firsts.size()) - 1;
    }
    const auto u = static_cast<int64_t>(firsts.size());
    // rank[g]: the position of group g in the output.
    std::vector<int64_t> rank(static_cast<size_t>(u));
    std::iota(rank.begin(), rank.end(), int64_t{0});
    if (n.attrInt("sorted", 1) == 0) {
        std::vector<int64_t> byFirst(static_cast<size_t>(u));
        std::iota(byFirst.begin(), byFirst.end(), int64_t{0});
        std::sort(byFirst.begin(), byFirst.end(),
                  [&](int64_t a, int64_t b) { return firsts[static_cast<size_t>(a)] < firsts[static_cast<size_t>(b)]; });
        for (int64_t r = 0; r < u; ++r)
            rank[static_cast<size_t>(byFirst[static_cast<size_t>(r)])] = r;
    }
    std::vector<int64_t> yShape = {u};
    if (axis >= 0) {
        yShape = shape;
        yShape[static_cast<size_t>(axis)] = u;
    }
    Tensor y(x.dtype(), yShape);
    Tensor indices(DType::I64, {u}), inverse(DType::I64, {count}), countsT(DType::I64, {u});
    T* py = y.mutableData<T>();
    for (int64_t g = 0; g < u; ++g) {
        const int64_t r = rank[static_cast<size_t>(g)], j = firsts[static_cast<size_t>(g)];
        for (int64_t o = 0; o < outer; ++o)
            std::copy_n(p + (o * count + j) * inner, inner, py + (o * u + r) * inner);
        indices.mutableData<int64_t>()[r] = j;
        countsT.mutableData<int64_t>()[r] = counts[static_cast<size_t>(g)];
    }
    for (int64_t j = 0; j < count; ++j)
        inverse.mutableData<int64_t>()[j] = rank[static_cast<size_t>(groupOf[static_cast<size_t>(j)])];
    std::vector<Tensor> out{std::move(y), std::move(indices), std::move(inverse), std::move(countsT)};
    out.resize(n.numOutputs());
    return out;
}

} // namespace

Status verifyUnique(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "sorted", 0, 1));
    SX_TRY(ops::checkIntAttr(n, "axis", -64, 64));
    return {};
}

Expected<std::vector<TensorType>> inferUnique(const Node& n) {
    SX_TRY(verifyUnique(n));
    const TensorType* x = ops::inputType(n, 0);
    if (!x)
        return opError(n, "unique needs its input");
    SX_ASSIGN(int64_t axis, uniqueAxis(n, x->rank()));
    TensorType y{x->dtype, {ops::unknownDim()}};
    Dim slices = Dim::known(x->numel());
    if (axis >= 0) {
        y.shape = x->shape;
        y.shape[static_cast<size_t>(axis)] = ops::unknownDim();
        slices = x->shape[static_cast<size_t>(axis)];
    } else if (!x->isStatic()) {
        slices = ops::unknownDim();
    }
    const TensorType perUnique{DType::I64, {ops::unknownDim()}};
    std::vector<TensorType> out{y, perUnique, TensorType{DType::I64, {slices}}, perUnique};
    out.resize(n.numOutputs());
    return out;
}

Expected<std::vector<Tensor>> runUnique(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    SX_TRY(verifyUnique(n));
    const Tensor& x = inputs[0];
    SX_ASSIGN(int64_t axis, uniqueAxis(n, x.rank()));
    return ops::dispatchNumeric(n, x.dtype(), [&](auto t) -> Expected<std::vector<Tensor>> {
        return uniqueOf<decltype(t)>(n, x, axis);
    });
}

} // namespace sextant::ir
