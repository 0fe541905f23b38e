// FusedConv: [input prologue, inputs 4 and 5: x * scale + shift per input channel, then
// "prologue_activation"] + Conv + optional bias [+ residual, input 3, added before the
// activation] + activation [+ post affine] in one kernel (made by the fusion passes).
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
    const bool scale = n.numInputs() > 4 && n.input(4), shift = n.numInputs() > 5 && n.input(5);
    if (scale != shift)
        return opError(n, "an input prologue needs both its scale (input 4) and its shift (input 5)");
    const std::string act = n.attrString("prologue_activation", "");
    if (!act.empty() && act != "Relu")
        return opError(n, "prologue_activation '" + act + "' is not one of '' and 'Relu'");
    if (n.attr("prologue_activation") && !scale)
        return opError(n, "prologue_activation without an input prologue (inputs 4 and 5)");
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

/// Why prologue operand `p` (a scale or shift) cannot act per input channel on data `x` (empty
/// when it can): x's dtype, one value per channel, broadcast against x as numpy does (right
/// aligned: [C, 1, 1] or [1, C, 1, 1] for NCHW data).
std::string prologueOperandReason(const TensorType& p, const TensorType& x) {
    if (p.dtype != x.dtype)
        return "is " + printType(p) + ", not of the data's dtype";
    if (!p.isStatic() || !x.isStatic() || x.rank() < 2 || p.rank() > x.rank())
        return "is " + printType(p) + ", not one value per channel of data " + printType(x);
    const std::vector<int64_t> pd = p.dims(), xd = x.dims();
    bool perChannel = p.numel() == xd[1];
    for (size_t j = 0; j < pd.size() && perChannel; ++j) {
        const size_t axis = xd.size() - pd.size() + j;
        perChannel = pd[j] == 1 || (axis == 1 && pd[j] == xd[1]);
    }
    if (!perChannel)
        return "is " + printType(p) + ", not one value per channel of data " + printType(x);
    return {};
}

} // namespace

Expected<std::vector<TensorType>> inferFusedConv(const Node& n) {
    SX_ASSIGN(std::vector<TensorType> out, ops::inferConvLike(n));
    if (hasInputPrologue(n))
        for (size_t i : {size_t{4}, size_t{5}})
            if (std::string why = prologueOperandReason(n.input(i)->type(), n.input(0)->type()); !why.empty())
                return opError(n, std::string(i == 4 ? "prologue scale '" : "prologue shift '") + n.input(i)->name() +
                                      "' " + why);
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

namespace {

/// x * scale[c] + shift[c] per channel c of x (dim 1), then Relu when `relu`, in the dtype of x:
/// what the ElementwiseGroup [Mul, Add, Relu] of fuse-batchnorm-chain computes.
template <typename T> Tensor prologueOf(const Tensor& x, const Tensor& scale, const Tensor& shift, bool relu) {
    Tensor y = Tensor::uninitialized(x.dtype(), x.shape());
    const T* src = x.data<T>();
    const T* s = scale.data<T>();
    const T* t = shift.data<T>();
    T* dst = y.mutableData<T>();
    const int64_t batch = x.shape()[0], channels = x.shape()[1];
    const int64_t inner = batch * channels > 0 ? x.numel() / (batch * channels) : 0;
    for (int64_t b = 0; b < batch; ++b)
        for (int64_t c = 0; c < channels; ++c) {
            const int64_t at = (b * channels + c) * inner;
            for (int64_t i = at; i < at + inner; ++i) {
                const T v = src[i] * s[c] + t[c]; // no FMA: the build targets baseline x86-64
                dst[i] = relu && !(v > T(0)) ? T(0) : v; // as Relu: NaN gives 0
            }
        }
    return y;
}

} // namespace

Expected<std::vector<Tensor>> runFusedConv(const Node& n, std::span<const Tensor> inputs,
                                           const KernelContext&) {
    std::vector<Tensor> operands(inputs.begin(), inputs.end());
    if (hasInputPrologue(n)) {
        if (inputs.size() < 6)
            return opError(n, "the input prologue's scale and shift (inputs 4 and 5) are missing");
        const Tensor &x = inputs[0], &s = inputs[4], &t = inputs[5];
        if (x.rank() < 2 || s.dtype() != x.dtype() || t.dtype() != x.dtype() || s.numel() != x.shape()[1] ||
            t.numel() != x.shape()[1])
            return opError(n, "the input prologue's scale and shift do not give one value per channel of the data");
        const bool relu = n.attrString("prologue_activation", "") == "Relu";
        if (x.dtype() == DType::F64)
            operands[0] = prologueOf<double>(x, s, t, relu);
        else if (x.dtype() == DType::F32)
            operands[0] = prologueOf<float>(x, s, t, relu);
        else
            return opError(n, "an input prologue needs float data", ErrorKind::Unsupported);
        // On the NPU the prologue runs in f32 lanes and the cube reads its result in f16, as
        // it would have read the result of the f16 group the prologue replaces.
        if (n.precision() == Precision::F16AccF32 && x.dtype() == DType::F32)
            operands[0] = operands[0].castTo(DType::F16).castTo(DType::F32);
    }
    SX_ASSIGN(Tensor y, ops::convForward(n, operands));
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
