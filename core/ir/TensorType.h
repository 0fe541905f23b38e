#pragma once

#include "DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sextant::ir {

/// One dimension: a concrete extent, or a symbol (ONNX dim_param) until the shape is specialised.
struct Dim {
    int64_t value = -1;  ///< >= 0 when known
    std::string symbol;  ///< non-empty when symbolic; "?" for an unnamed unknown dim

    static Dim known(int64_t v) { return Dim{v, {}}; }
    static Dim symbolic(std::string s) { return Dim{-1, std::move(s)}; }
    bool isKnown() const { return value >= 0; }
    bool operator==(const Dim&) const = default;
};

/// Memory layout tag. NC1HWC0 is the blocked NPU layout with C0 = 16.
enum class LayoutKind : uint8_t { Any, NCHW, NHWC, NC1HWC0 };
std::string_view layoutName(LayoutKind l);

/// Element type, shape and layout of a value.
struct TensorType {
    DType dtype = DType::F32;
    std::vector<Dim> shape;
    LayoutKind layout = LayoutKind::Any;

    static TensorType of(DType dt, const std::vector<int64_t>& dims);
    size_t rank() const { return shape.size(); }
    bool isStatic() const; ///< every dim known
    /// The concrete dims; only valid when isStatic().
    std::vector<int64_t> dims() const;
    /// Element count; -1 when not static.
    int64_t numel() const;
    /// "f32[1,8,28,28]" (and "@NHWC" when a layout is set).
    std::string str() const;
    bool operator==(const TensorType&) const = default;
};

/// Product of dims (1 for a scalar).
int64_t product(const std::vector<int64_t>& dims);

} // namespace sextant::ir
