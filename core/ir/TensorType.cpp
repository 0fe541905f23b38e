#include "TensorType.h"

namespace sextant::ir {

std::string_view layoutName(LayoutKind l) {
    switch (l) {
    case LayoutKind::Any: return "";
    case LayoutKind::NCHW: return "NCHW";
    case LayoutKind::NHWC: return "NHWC";
    case LayoutKind::NC1HWC0: return "NC1HWC0";
    }
    return "";
}

TensorType TensorType::of(DType dt, const std::vector<int64_t>& dims) {
    TensorType t;
    t.dtype = dt;
    t.shape.reserve(dims.size());
    for (int64_t d : dims)
        t.shape.push_back(Dim::known(d));
    return t;
}

bool TensorType::isStatic() const {
    for (const Dim& d : shape)
        if (!d.isKnown())
            return false;
    return true;
}

std::vector<int64_t> TensorType::dims() const {
    std::vector<int64_t> out;
    out.reserve(shape.size());
    for (const Dim& d : shape)
        out.push_back(d.value);
    return out;
}

int64_t TensorType::numel() const {
    int64_t n = 1;
    for (const Dim& d : shape) {
        if (!d.isKnown())
            return -1;
        n *= d.value;
    }
    return n;
}

std::string TensorType::str() const {
    std::string s(dtypeName(dtype));
    s += '[';
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i)
            s += ',';
        s += shape[i].isKnown() ? std::to_string(shape[i].value) : shape[i].symbol;
    }
    s += ']';
    if (layout != LayoutKind::Any) {
        s += '@';
        s += layoutName(layout);
    }
    return s;
}

int64_t product(const std::vector<int64_t>& dims) {
    int64_t n = 1;
    for (int64_t d : dims)
        n *= d;
    return n;
}

} // namespace sextant::ir
