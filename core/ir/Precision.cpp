#include "Precision.h"

namespace sextant::ir {

std::string_view precisionName(Precision p) {
    switch (p) {
    case Precision::Unset: return "";
    case Precision::F32: return "f32";
    case Precision::F16: return "f16";
    case Precision::F16AccF32: return "f16-acc-f32";
    }
    return "";
}

std::optional<Precision> parsePrecision(std::string_view name) {
    for (Precision p : {Precision::F32, Precision::F16, Precision::F16AccF32})
        if (name == precisionName(p))
            return p;
    return std::nullopt;
}

std::string_view npuLayoutName(NpuLayout l) {
    switch (l) {
    case NpuLayout::NC1HWC0: return "NC1HWC0";
    case NpuLayout::NCHW: return "NCHW";
    }
    return "";
}

std::optional<NpuLayout> parseNpuLayout(std::string_view name) {
    for (NpuLayout l : {NpuLayout::NC1HWC0, NpuLayout::NCHW})
        if (name == npuLayoutName(l))
            return l;
    return std::nullopt;
}

} // namespace sextant::ir
