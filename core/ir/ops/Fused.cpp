// FusedConv: Conv + optional bias + activation in one kernel (made by the fusion passes).
// FusedGemm lives with Gemm in MatMul.cpp.

#include "OpUtil.h"

namespace sextant::ir {

Status verifyFusedConv(const Node& n) {
    SX_TRY(ops::verifyConvAttrs(n));
    SX_TRY(ops::readActivation(n));
    return {};
}

Expected<std::vector<TensorType>> inferFusedConv(const Node& n) { return ops::inferConvLike(n); }

Expected<std::vector<Tensor>> runFusedConv(const Node& n, std::span<const Tensor> inputs,
                                           const KernelContext&) {
    SX_ASSIGN(ops::Activation act, ops::readActivation(n));
    SX_ASSIGN(Tensor y, ops::convForward(n, inputs));
    if (y.dtype() == DType::F64)
        ops::applyActivation(act, y.mutableData<double>(), y.numel());
    else
        ops::applyActivation(act, y.mutableData<float>(), y.numel());
    return std::vector<Tensor>{std::move(y)};
}

} // namespace sextant::ir
