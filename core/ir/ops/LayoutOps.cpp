// sextant.TransData: the physical layout conversion the layout pass inserts where a blocked
// NC1HWC0 region of the NPU graph begins or ends (the name Ascend's compilers use for the op).
//
// Tensors in the IR are logical (NCHW dims whatever the layout), so the conversion does not
// change a single number: the reference kernel is the identity on the logical value. What the
// node models is the reorder into or out of the padded blocked buffer (C split into C1 blocks of
// C0 lanes, the last one zero-padded), which the backend costs and sizes. Shape inference copies
// the input type and gives it the destination's layout tag.
#include "OpUtil.h"

namespace sextant::ir {

using ops::opError;

namespace {

const std::vector<std::string>& formats() {
    static const std::vector<std::string> kFormats = {"NCHW", "NC1HWC0"};
    return kFormats;
}

LayoutKind formatLayout(const std::string& f) {
    return f == "NC1HWC0" ? LayoutKind::NC1HWC0 : LayoutKind::NCHW;
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
    return std::vector<TensorType>{out};
}

Expected<std::vector<Tensor>> runTransData(const Node& n, std::span<const Tensor> inputs,
                                           const KernelContext&) {
    if (inputs.empty() || !inputs[0].valid())
        return opError(n, "missing input");
    if (inputs[0].rank() != 4)
        return opError(n, "transdata input must have rank 4, got rank " +
                              std::to_string(inputs[0].rank()));
    // Identity on the logical tensor: only the physical arrangement changes.
    return std::vector<Tensor>{inputs[0]};
}

} // namespace sextant::ir
