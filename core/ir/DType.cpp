#include "DType.h"

namespace sextant::ir {

std::string_view dtypeName(DType t) {
    switch (t) {
    case DType::F64: return "f64";
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I64: return "i64";
    case DType::I32: return "i32";
    case DType::I8: return "i8";
    case DType::U8: return "u8";
    case DType::Bool: return "bool";
    case DType::I16: return "i16";
    case DType::U16: return "u16";
    case DType::U32: return "u32";
    case DType::U64: return "u64";
    case DType::I4: return "i4";
    case DType::U4: return "u4";
    }
    return "?";
}

std::optional<DType> parseDType(std::string_view name) {
    for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::I64, DType::I32,
                    DType::I8, DType::U8, DType::Bool, DType::I16, DType::U16, DType::U32, DType::U64,
                    DType::I4, DType::U4})
        if (dtypeName(t) == name)
            return t;
    return std::nullopt;
}

size_t dtypeSize(DType t) {
    switch (t) {
    case DType::F64: return 8;
    case DType::F32: return 4;
    case DType::F16: return 2;
    case DType::BF16: return 2;
    case DType::I64: return 8;
    case DType::I32: return 4;
    case DType::I8: return 1;
    case DType::U8: return 1;
    case DType::Bool: return 1;
    case DType::I16: return 2;
    case DType::U16: return 2;
    case DType::U32: return 4;
    case DType::U64: return 8;
    case DType::I4:
    case DType::U4: return 1; // one element per byte in memory (see DType)
    }
    return 1;
}

bool isFloat(DType t) {
    return t == DType::F64 || t == DType::F32 || t == DType::F16 || t == DType::BF16;
}

bool isInteger(DType t) {
    return t == DType::I64 || t == DType::I32 || t == DType::I8 || t == DType::U8 || t == DType::I16 ||
           t == DType::U16 || t == DType::U32 || t == DType::U64 || t == DType::I4 || t == DType::U4;
}

} // namespace sextant::ir
