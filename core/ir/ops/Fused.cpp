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
    SX_ASSIGN(Tensor y, ops::convForward(n, inputs));
    return ops::withActivation(n, std::move(y));
}

} // namespace sextant::ir
