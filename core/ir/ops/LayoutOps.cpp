// sextant.TransData: the physical layout conversion the layout pass inserts where a blocked
// NC1HWC0 region of the NPU graph begins or ends (the name Ascend's compilers use for the op).
//
// Tensors in the IR are logical (NCHW dims whatever the layout), so an NCHW <-> NC1HWC0
// conversion does not change a single number: the reference kernel is the identity on the
// logical value. What the node models is the reorder into or out of the padded blocked buffer
// (C split into C1 blocks of C0 lanes, the last one zero-padded), which the backend costs and
// sizes. Shape inference copies the input type and gives it the destination's layout tag.
// One side may also be NHWC (a channels-last tensor, dims N,H,W,C): the layout pass absorbs a
// Transpose between NHWC and NCHW into the conversion, whose kernel then permutes the logical
// dims (NHWC -> NC1HWC0 gives N,C,H,W; NC1HWC0 -> NHWC gives N,H,W,C).
#include "OpUtil.h"

#include <cstring>

namespace sextant::ir {

using ops::opError;

namespace {

const std::vector<std::string>& formats() {
    static const std::vector<std::string> kFormats = {"NCHW", "NHWC", "NC1HWC0"};
    return kFormats;
}

LayoutKind formatLayout(const std::string& f) {
    return f == "NC1HWC0" ? LayoutKind::NC1HWC0 : f == "NHWC" ? LayoutKind::NHWC : LayoutKind::NCHW;
}

/// The permutation of the logical dims (output dim i = input dim perm[i]); empty for none.
std::vector<size_t> logicalPerm(const Node& n) {
    if (n.attrString("src_format", "") == "NHWC")
        return {0, 3, 1, 2};
    if (n.attrString("dst_format", "") == "NHWC")
        return {0, 2, 3, 1};
    return {};
}

} // namespace

Status verifyTransData(const Node& n) {
    for (const char* key : {"src_format", "dst_format"}) {
        if (!n.hasAttr(key))
            return opError(n, std::string("transdata needs attribute '") + key + "'");
        SX_TRY(ops::checkStringAttr(n, key, formats()));
    }
    const std::string src = n.attrString("src_format", ""), dst = n.attrString("dst_format", "");
    if (src == dst)
        return opError(n, "transdata converts " + src + " to itself");
    if (src != "NC1HWC0" && dst != "NC1HWC0")
        return opError(n, "transdata converts " + src + " to " + dst +
                              " without NC1HWC0 on either side (that is a Transpose)");
    if (const TensorType* x = ops::inputType(n, 0); x && x->rank() != 4)
        return opError(n, "transdata input must have rank 4 (N, C, H, W), got rank " +
                              std::to_string(x->rank()));
    return {};
}

Expected<std::vector<TensorType>> inferTransData(const Node& n) {
    const TensorType* x = ops::inputType(n, 0);
    if (!x)
        return opError(n, "missing input");
    if (x->rank() != 4)
        return opError(n, "transdata input must have rank 4 (N, C, H, W), got rank " +
                              std::to_string(x->rank()));
    TensorType out = *x;
    out.layout = formatLayout(n.attrString("dst_format", "NCHW"));
    if (std::vector<size_t> perm = logicalPerm(n); !perm.empty())
        for (size_t i = 0; i < 4; ++i)
            out.shape[i] = x->shape[perm[i]];
    return std::vector<TensorType>{out};
}

Expected<std::vector<Tensor>> runTransData(const Node& n, std::span<const Tensor> inputs,
                                           const KernelContext&) {
    if (inputs.empty() || !inputs[0].valid())
        return opError(n, "missing input");
    if (inputs[0].rank() != 4)
        return opError(n, "transdata input must have rank 4, got rank " +
                              std::to_string(inputs[0].rank()));
    const std::vector<size_t> perm = logicalPerm(n);
    if (perm.empty()) // identity on the logical tensor: only the physical arrangement changes
        return std::vector<Tensor>{inputs[0]};
    // NHWC on one side: permute the logical dims, element by element (any dtype, as bytes).
    const Tensor& x = inputs[0];
    const std::vector<int64_t>& in = x.shape();
    std::vector<int64_t> outShape(4);
    for (size_t i = 0; i < 4; ++i)
        outShape[i] = in[perm[i]];
    Tensor y(x.dtype(), outShape);
    const size_t elem = dtypeSize(x.dtype());
    std::vector<int64_t> inStride(4, 1);
    for (int i = 2; i >= 0; --i)
        inStride[static_cast<size_t>(i)] = inStride[static_cast<size_t>(i) + 1] * in[static_cast<size_t>(i) + 1];
    const std::byte* src = x.bytes();
    std::byte* dst = y.mutableBytes();
    int64_t o = 0;
    for (int64_t a = 0; a < outShape[0]; ++a)
        for (int64_t b = 0; b < outShape[1]; ++b)
            for (int64_t c = 0; c < outShape[2]; ++c)
                for (int64_t d = 0; d < outShape[3]; ++d, ++o) {
                    const int64_t idx[4] = {a, b, c, d};
                    int64_t off = 0;
                    for (size_t i = 0; i < 4; ++i)
                        off += idx[i] * inStride[perm[i]];
                    std::memcpy(dst + o * static_cast<int64_t>(elem), src + off * static_cast<int64_t>(elem), elem);
                }
    return std::vector<Tensor>{std::move(y)};
}

} // namespace sextant::ir
