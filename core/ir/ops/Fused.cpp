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

namespace {

/// Whether residual `r` fits output `y`: the same dtype and dims, or fewer channels (dim 1), the
/// rest the same: a residual padded with zero channels read without them (fold-zero-channel-pad),
/// added to the first channels only.
bool residualFits(const TensorType& r, const TensorType& y) {
    if (r.dtype != y.dtype || r.shape.size() != y.shape.size())
        return false;
    if (r.shape == y.shape)
        return true;
    if (!r.isStatic() || !y.isStatic() || r.rank() < 2)
        return false;
    const std::vector<int64_t> rd = r.dims(), yd = y.dims();
    return rd[1] <= yd[1] && rd[0] == yd[0] && std::equal(rd.begin() + 2, rd.end(), yd.begin() + 2);
}

} // namespace

Expected<std::vector<TensorType>> inferFusedConv(const Node& n) {
    SX_ASSIGN(std::vector<TensorType> out, ops::inferConvLike(n));
    if (n.numInputs() > 3 && n.input(3)) {
        const TensorType& r = n.input(3)->type();
        if (!residualFits(r, out[0]))
            return opError(n, "residual '" + n.input(3)->name() + "' is " + printType(r) + " but the convolution computes " +
                                  printType(out[0]));
    }
    return out;
}

namespace {

/// y += r, r having y's dims or fewer channels (added to y's first ones).
template <typename T> void addResidual(Tensor& y, const Tensor& r) {
    T* d = y.mutableData<T>();
    const T* s = r.data<T>();
    if (r.shape() == y.shape()) {
        for (int64_t i = 0; i < y.numel(); ++i)
            d[i] += s[i];
        return;
    }
    const int64_t batch = y.shape()[0], cy = y.shape()[1], cr = r.shape()[1];
    const int64_t inner = cy > 0 ? y.numel() / (batch * cy) : 0;
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t i = 0; i < cr * inner; ++i)
            d[(b * cy) * inner + i] += s[(b * cr) * inner + i];
}

} // namespace

Expected<std::vector<Tensor>> runFusedConv(const Node& n, std::span<const Tensor> inputs,
                                           const KernelContext&) {
    SX_ASSIGN(Tensor y, ops::convForward(n, inputs));
    if (inputs.size() > 3 && n.input(3)) {
        const Tensor& r = inputs[3];
        if (!residualFits(TensorType::of(r.dtype(), r.shape()), TensorType::of(y.dtype(), y.shape())))
            return opError(n, "residual tensor does not match the convolution's output");
        if (y.dtype() == DType::F64)
            addResidual<double>(y, r);
        else if (y.dtype() == DType::F32)
            addResidual<float>(y, r);
        else
            return opError(n, "a residual needs a float convolution", ErrorKind::Unsupported);
    }
    return ops::withActivation(n, std::move(y));
}

} // namespace sextant::ir
