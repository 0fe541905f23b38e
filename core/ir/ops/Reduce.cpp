// Reductions: ReduceMean (axes as an attribute before opset 18, as input 1 from 18 on).

#include "OpUtil.h"

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
        const size_t r = x.rank();
        std::vector<int64_t> idx(r, 0);
        int64_t off = 0;
        for (int64_t i = 0; i < x.numel(); ++i) {
            dst[off] += src[i];
            for (size_t d = r; d-- > 0;) {
                ++idx[d];
                off += strides[d];
                if (idx[d] < x.shape()[d])
                    break;
                off -= strides[d] * x.shape()[d];
                idx[d] = 0;
            }
        }
        if (count > 0)
            for (int64_t i = 0; i < y.numel(); ++i)
                dst[i] /= static_cast<T>(count);
        return std::vector<Tensor>{y};
    });
}

} // namespace sextant::ir
