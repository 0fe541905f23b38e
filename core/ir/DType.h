#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace sextant::ir {

/// Element types. The order is part of the artifact format (tasks.bin stores the numeric value).
/// Appended types keep the numbers of the ones before them.
/// I4 and U4 (ONNX INT4 and UINT4) are held one element per byte, sign-extended (I4) or
/// zero-extended (U4), in [-8, 7] and [0, 15]; ONNX files and test data pack them two to a byte,
/// which the frontend unpacks on import and packs on export.
enum class DType : uint8_t { F64, F32, F16, BF16, I64, I32, I8, U8, Bool, I16, U16, U32, U64, I4, U4 };

/// Short textual name used by the IR printer: "f32", "i64", "bool", ...
std::string_view dtypeName(DType t);
/// Parses a name printed by dtypeName.
std::optional<DType> parseDType(std::string_view name);
/// Size of one element in bytes.
size_t dtypeSize(DType t);
bool isFloat(DType t);
bool isInteger(DType t); ///< signed or unsigned integers, not bool

} // namespace sextant::ir
