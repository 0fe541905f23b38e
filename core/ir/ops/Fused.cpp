// FusedConv: Conv + optional bias [+ residual, input 3, added before the activation] +
// activation [+ post affine] in one kernel (made by the fusion passes).
// FusedGemm lives with Gemm in MatMul.cpp.

#include "OpUtil.h"

#include "core/ir/Printer.h"

#include <algorithm>

namespace sextant::ir {

using ops::opError;

Status verifyFusedConv(const Node& n) {
    SX_TRY(ops::verifyConvAttrs(n));
    SX_TRY(ops::readActivation(n));
    if (n.numInputs() > 3 && n.input(3) && !n.input(2))
        return opError(n, "a residual (input 3) needs the bias (input 2)");
    return {};
}

Expected<std::vector<TensorType>> inferFusedConv(const Node& n) {
    SX_ASSIGN(std::vector<TensorType> out, ops::inferConvLike(n));
    if (n.numInputs() > 3 && n.input(3)) {
        const TensorType& r = n.input(3)->type();
        if (r.dtype != out[0].dtype || r.shape != out[0].shape)
            return opError(n, "residual '" + n.input(3)->name() + "' is " + printType(r) + " but the convolution computes " +
                                  printType(out[0]));
    }
    return out;
}

Expected<std::vector<Tensor>> runFusedConv(const Node& n, std::span<const Tensor> inputs,
                                           const KernelContext&) {
    SX_ASSIGN(Tensor y, ops::convForward(n, inputs));
    if (inputs.size() > 3 && n.input(3)) {
        const Tensor& r = inputs[3];
        if (r.dtype() != y.dtype() || r.shape() != y.shape())
            return opError(n, "residual tensor does not match the convolution's output");
        if (y.dtype() == DType::F64) {
            double* d = y.mutableData<double>();
            const double* s = r.data<double>();
            for (int64_t i = 0; i < y.numel(); ++i)
                d[i] += s[i];
        } else if (y.dtype() == DType::F32) {
            float* d = y.mutableData<float>();
            const float* s = r.data<float>();
            for (int64_t i = 0; i < y.numel(); ++i)
                d[i] += s[i];
        } else {
            return opError(n, "a residual needs a float convolution", ErrorKind::Unsupported);
        }
    }
    return ops::withActivation(n, std::move(y));
}

} // namespace sextant::ir
