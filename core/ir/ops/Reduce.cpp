// Reductions: ReduceMean (axes as an attribute before opset 18, as input 1 from 18 on).

#include "OpUtil.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace sextant::ir {

using ops::opError;


Status verifyReduceMean(const Node& n) {
    SX_TRY(ops::checkIntsAttr(n, "axes", -1, std::numeric_limits<int64_t>::min()));
    SX_TRY(ops::checkIntAttr(n, "keepdims", 0, 1));
    SX_TRY(ops::checkIntAttr(n, "noop_with_empty_axes", 0, 1));
    return ops::requireFloatInput(n, 0, "reduce input");
}

Expected<std::vector<TensorType>> inferReduceMean(const Node& n) { return ops::inferReduction(n); }

Expected<std::vector<Tensor>> runReduceMean(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    SX_ASSIGN(auto reduced, ops::reducedAxes(n, x.rank(), n.input(1) ? &inputs[1] : nullptr));
    const std::vector<int64_t> keep = ops::extents(ops::reducedShape(ops::shapeOf(x), *reduced, true));
    const std::vector<int64_t> out = ops::extents(ops::reducedShape(ops::shapeOf(x), *reduced, n.attrInt("keepdims", 1) != 0));
    const int64_t count = product(keep) == 0 ? 0 : x.numel() / product(keep);
    return ops::dispatchFloat(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        Tensor y(dtypeOf<T>(), out);
        T* dst = y.mutableData<T>();
        const T* src = x.data<T>();
        // Walk the input in order; each element adds into its output cell (reduced dims stride 0).
        const std::vector<int64_t> strides = ops::broadcastStrides(keep, x.shape());
        ops::forEachElement(x, strides, [&](int64_t i, int64_t off) { dst[off] += src[i]; });
        if (count > 0)
            for (int64_t i = 0; i < y.numel(); ++i)
                dst[i] /= static_cast<T>(count);
        return std::vector<Tensor>{y};
    });
}

} // namespace sextant::ir

// ---- ReduceSum, ReduceMin, ReduceProd, ReduceL1, ReduceL2, ReduceLogSum, ReduceLogSumExp,
// ReduceSumSquare (axes as input 1 from opset 13 for ReduceSum, 18 for the others, else the
// attribute), and ArgMax / ArgMin.

namespace sextant::ir {

namespace {

enum class Red { Sum, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

/// Float-only reductions (their results are not integers in general).
bool floatOnly(Red op) { return op == Red::L2 || op == Red::LogSum || op == Red::LogSumExp; }

Status verifyReduction(const Node& n, Red op) {
    SX_TRY(ops::checkReduceAxes(n));
    if (floatOnly(op))
        return ops::requireFloatInput(n, 0, "reduce input");
    if (const TensorType* x = ops::inputType(n, 0); x && x->dtype == DType::Bool)
        return opError(n, "reduce input must be numeric, got bool");
    return {};
}


/// Each cell's accumulator before the first element: 0, 1 for Prod, +inf (or the largest
/// value) for Min.
template <typename Acc> std::vector<Acc> startValues(Red op, int64_t cells) {
    std::vector<Acc> acc(static_cast<size_t>(cells), Acc(0));
    if (op == Red::Prod)
        std::fill(acc.begin(), acc.end(), Acc(1));
    else if (op == Red::Min)
        std::fill(acc.begin(), acc.end(), std::numeric_limits<Acc>::has_infinity
                                              ? std::numeric_limits<Acc>::infinity()
                                              : std::numeric_limits<Acc>::max());
    return acc;
}

/// Each cell's largest input, for LogSumExp: log(sum(exp(x - max))) + max, so large inputs do
/// not overflow.
template <typename T>
std::vector<double> cellMaxima(const Tensor& x, const std::vector<int64_t>& strides, int64_t cells) {
    const T* src = x.data<T>();
    std::vector<double> peak(static_cast<size_t>(cells), -std::numeric_limits<double>::infinity());
    ops::forEachElement(x, strides, [&](int64_t i, int64_t o) {
        peak[static_cast<size_t>(o)] = std::max(peak[static_cast<size_t>(o)], static_cast<double>(src[i]));
    });
    return peak;
}

/// The reduction of `x` (element type T) into the cells of shape `out`. Accumulates in double
/// for floats, in T for integers (exact, wrapping like numpy).
template <typename T>
Tensor reduceTyped(Red op, const Tensor& x, const std::vector<int64_t>& out, const std::vector<int64_t>& strides) {
    const T* src = x.data<T>();
    const int64_t cells = product(out);
    using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
    std::vector<Acc> acc = startValues<Acc>(op, cells);
    const std::vector<double> peak = op == Red::LogSumExp ? cellMaxima<T>(x, strides, cells) : std::vector<double>{};
    ops::forEachElement(x, strides, [&](int64_t i, int64_t o) {
        Acc& a = acc[static_cast<size_t>(o)];
        const Acc v = static_cast<Acc>(src[i]);
        switch (op) {
        case Red::Sum:
        case Red::LogSum: a = static_cast<Acc>(a + v); break;
        case Red::Min: a = v < a || v != v ? v : a; break;
        case Red::Prod: a = static_cast<Acc>(a * v); break;
        case Red::L1:
            if constexpr (std::is_unsigned_v<Acc>)
                a = static_cast<Acc>(a + v);
            else
                a = static_cast<Acc>(a + (v < 0 ? -v : v));
            break;
        case Red::L2:
        case Red::SumSquare: a = static_cast<Acc>(a + v * v); break;
        case Red::LogSumExp:
            a = static_cast<Acc>(a + std::exp(static_cast<double>(v) - peak[static_cast<size_t>(o)]));
            break;
        }
    });
    Tensor y(x.dtype(), out);
    T* dst = y.mutableData<T>();
    for (int64_t c = 0; c < cells; ++c) {
        const Acc a = acc[static_cast<size_t>(c)];
        switch (op) {
        case Red::L2: dst[c] = static_cast<T>(std::sqrt(static_cast<double>(a))); break;
        case Red::LogSum: dst[c] = static_cast<T>(std::log(static_cast<double>(a))); break;
        case Red::LogSumExp:
            dst[c] = static_cast<T>(std::log(static_cast<double>(a)) + peak[static_cast<size_t>(c)]);
            break;
        default: dst[c] = static_cast<T>(a); break;
        }
    }
    return y;
}

Expected<std::vector<Tensor>> runReduction(Red op, const Node& n, std::span<const Tensor> inputs) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    SX_ASSIGN(auto reduced, ops::reducedAxes(n, x.rank(), n.input(1) ? &inputs[1] : nullptr));
    const std::vector<int64_t> keep = ops::extents(ops::reducedShape(ops::shapeOf(x), *reduced, true));
    const std::vector<int64_t> out =
        ops::extents(ops::reducedShape(ops::shapeOf(x), *reduced, n.attrInt("keepdims", 1) != 0));
    SX_TRY(ops::checkAllocation(n, out));
    // Each input element's output cell: reduced dims have stride 0 (walked in input order).
    const std::vector<int64_t> strides = ops::broadcastStrides(keep, x.shape());
    auto body = [&](auto tag) -> Expected<std::vector<Tensor>> {
        return std::vector<Tensor>{reduceTyped<decltype(tag)>(op, x, out, strides)};
    };
    return floatOnly(op) ? ops::dispatchFloat(n, x.dtype(), body) : ops::dispatchNumeric(n, x.dtype(), body);
}

/// ArgMax / ArgMin: i64 index of the extreme along `axis` (first, or last with select_last_index).
Status verifyArgExtreme(const Node& n) {
    SX_TRY(ops::checkIntAttr(n, "keepdims", 0, 1));
    SX_TRY(ops::checkIntAttr(n, "select_last_index", 0, 1));
    if (const TensorType* x = ops::inputType(n, 0)) {
        if (x->dtype == DType::Bool)
            return opError(n, "arg-max/min input must be numeric, got bool");
        SX_TRY(ops::normaliseAxis(n, n.attrInt("axis", 0), std::max<int64_t>(static_cast<int64_t>(x->rank()), 1),
                                  "arg axis"));
    }
    return {};
}

Expected<std::vector<TensorType>> inferArgExtreme(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (!x)
        return opError(n, "needs an input");
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", 0), static_cast<int64_t>(x->rank()), "arg axis"));
    std::vector<bool> reduced(x->rank(), false);
    reduced[static_cast<size_t>(axis)] = true;
    TensorType t;
    t.dtype = DType::I64;
    t.shape = ops::reducedShape(x->shape, reduced, n.attrInt("keepdims", 1) != 0);
    return std::vector<TensorType>{t};
}

Expected<std::vector<Tensor>> runArgExtreme(const Node& n, std::span<const Tensor> inputs, bool isMax) {
    SX_TRY(ops::checkKernelInputs(n, inputs));
    const Tensor& x = inputs[0];
    SX_ASSIGN(int64_t axis, ops::normaliseAxis(n, n.attrInt("axis", 0), static_cast<int64_t>(x.rank()), "arg axis"));
    const bool last = n.attrInt("select_last_index", 0) != 0;
    std::vector<bool> reduced(x.rank(), false);
    reduced[static_cast<size_t>(axis)] = true;
    const std::vector<int64_t> out =
        ops::extents(ops::reducedShape(ops::shapeOf(x), reduced, n.attrInt("keepdims", 1) != 0));
    const int64_t len = x.shape()[static_cast<size_t>(axis)];
    if (len == 0)
        return opError(n, "arg-max/min over an empty axis");
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < static_cast<int64_t>(x.rank()); ++d)
        (d < axis ? outer : inner) *= d == axis ? 1 : x.shape()[static_cast<size_t>(d)];
    return ops::dispatchNumeric(n, x.dtype(), [&](auto tag) -> Expected<std::vector<Tensor>> {
        using T = decltype(tag);
        const T* src = x.data<T>();
        Tensor y(DType::I64, out);
        int64_t* dst = y.mutableData<int64_t>();
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t i = 0; i < inner; ++i) {
                const T* p = src + o * len * inner + i;
                int64_t best = 0;
                for (int64_t a = 1; a < len; ++a) {
                    const T v = p[a * inner], b = p[best * inner];
                    const bool better = isMax ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
                    if (better)
                        best = a;
                }
                dst[o * inner + i] = best;
            }
        return std::vector<Tensor>{y};
    });
}

} // namespace

#define SEXTANT_REDUCTION(Id)                                                                      \
    Status verifyReduce##Id(const Node& n) { return verifyReduction(n, Red::Id); }                 \
    Expected<std::vector<TensorType>> inferReduce##Id(const Node& n) { return ops::inferReduction(n); } \
    Expected<std::vector<Tensor>> runReduce##Id(const Node& n, std::span<const Tensor> inputs,     \
                                                const KernelContext&) {                            \
        return runReduction(Red::Id, n, inputs);                                                   \
    }
SEXTANT_REDUCTION(Sum)
SEXTANT_REDUCTION(Min)
SEXTANT_REDUCTION(Prod)
SEXTANT_REDUCTION(L1)
SEXTANT_REDUCTION(L2)
SEXTANT_REDUCTION(LogSum)
SEXTANT_REDUCTION(LogSumExp)
SEXTANT_REDUCTION(SumSquare)
#undef SEXTANT_REDUCTION

Status verifyArgMax(const Node& n) { return verifyArgExtreme(n); }
Expected<std::vector<TensorType>> inferArgMax(const Node& n) { return inferArgExtreme(n); }
Expected<std::vector<Tensor>> runArgMax(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    return runArgExtreme(n, inputs, true);
}

Status verifyArgMin(const Node& n) { return verifyArgExtreme(n); }
Expected<std::vector<TensorType>> inferArgMin(const Node& n) { return inferArgExtreme(n); }
Expected<std::vector<Tensor>> runArgMin(const Node& n, std::span<const Tensor> inputs, const KernelContext&) {
    return runArgExtreme(n, inputs, false);
}

} // namespace sextant::ir
