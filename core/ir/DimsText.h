#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sextant::ir {

/// "[2,3,4]": a tensor's dims as messages print them.
inline std::string dimsText(const std::vector<int64_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i)
        s += (i ? "," : "") + std::to_string(dims[i]);
    return s + "]";
}

} // namespace sextant::ir
