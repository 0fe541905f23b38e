#pragma once

#include "DType.h"
#include "TensorType.h"

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace sextant::ir {

template <typename T> constexpr DType dtypeOf();
template <> constexpr DType dtypeOf<double>() { return DType::F64; }
template <> constexpr DType dtypeOf<float>() { return DType::F32; }
template <> constexpr DType dtypeOf<int64_t>() { return DType::I64; }
template <> constexpr DType dtypeOf<int32_t>() { return DType::I32; }
template <> constexpr DType dtypeOf<int8_t>() { return DType::I8; }
template <> constexpr DType dtypeOf<uint8_t>() { return DType::U8; }
template <> constexpr DType dtypeOf<int16_t>() { return DType::I16; }
template <> constexpr DType dtypeOf<uint16_t>() { return DType::U16; }
template <> constexpr DType dtypeOf<uint32_t>() { return DType::U32; }
template <> constexpr DType dtypeOf<uint64_t>() { return DType::U64; }

/// A dense row-major tensor. Copies share storage (weights are stored once and shared by every
/// snapshot); only a tensor that was just created should be written through mutableData().
/// F16/BF16 elements are stored as uint16_t bit patterns, Bool as uint8_t.
class Tensor {
public:
    Tensor() = default;
    /// A zero-filled tensor.
    Tensor(DType dtype, std::vector<int64_t> shape);
    /// A tensor whose elements are NOT initialised: for kernels that provably write every element
    /// before anything reads it (it saves the zero fill of the constructor, a pass over memory per
    /// node). Reading an element that was never written gives garbage. With SEXTANT_POISON_TENSORS=1
    /// in the environment every byte is set to 0xff instead (NaN for floats, -1 for integers), so
    /// tests run that way catch a kernel that leaves an element unwritten.
    static Tensor uninitialized(DType dtype, std::vector<int64_t> shape);
    /// A tensor viewing `bytes` kept alive by `owner` (no copy). `bytes` must be 8-byte aligned.
    static Tensor view(DType dtype, std::vector<int64_t> shape, std::shared_ptr<const void> owner,
                       const std::byte* bytes);
    /// A tensor holding a copy of `bytes`, which must be exactly numel * dtypeSize long.
    static Tensor copyOf(DType dtype, std::vector<int64_t> shape, std::span<const std::byte> bytes);
    template <typename T> static Tensor fromVector(std::vector<int64_t> shape, const std::vector<T>& v) {
        Tensor t(dtypeOf<T>(), std::move(shape));
        assert(static_cast<size_t>(t.numel()) == v.size() && "element count mismatch");
        std::copy(v.begin(), v.end(), t.mutableData<T>());
        return t;
    }
    static Tensor scalar(double v, DType dtype = DType::F32);

    bool valid() const { return m_bytes != nullptr || m_numel == 0; }
    DType dtype() const { return m_dtype; }
    const std::vector<int64_t>& shape() const { return m_shape; }
    size_t rank() const { return m_shape.size(); }
    int64_t numel() const { return m_numel; }
    size_t byteSize() const { return static_cast<size_t>(m_numel) * dtypeSize(m_dtype); }
    TensorType type() const { return TensorType::of(m_dtype, m_shape); }

    const std::byte* bytes() const { return m_bytes; }
    std::byte* mutableBytes() { return const_cast<std::byte*>(m_bytes); }
    template <typename T> const T* data() const {
        assert(sizeof(T) == dtypeSize(m_dtype) && "element type mismatch");
        return reinterpret_cast<const T*>(m_bytes);
    }
    template <typename T> T* mutableData() {
        assert(sizeof(T) == dtypeSize(m_dtype) && "element type mismatch");
        return reinterpret_cast<T*>(const_cast<std::byte*>(m_bytes));
    }

    /// Element i converted to double (any dtype).
    double at(int64_t i) const;
    /// Sets element i from a double, converting to the dtype (rounding f16, truncating ints).
    void set(int64_t i, double v);
    /// A new tensor with the same values in another dtype.
    Tensor castTo(DType dtype) const;
    /// Same storage, new shape with the same element count.
    Tensor reshaped(std::vector<int64_t> shape) const;
    /// All values as doubles.
    std::vector<double> toDoubles() const;
    /// A deep copy with its own storage.
    Tensor clone() const;

    /// Stable 64-bit content hash (FNV-1a over dtype, shape and bytes) as 16 hex digits.
    std::string digest() const;
    /// True when dtype, shape and bytes are all equal.
    bool identical(const Tensor& other) const;

private:
    DType m_dtype = DType::F32;
    std::vector<int64_t> m_shape;
    int64_t m_numel = 0;
    std::shared_ptr<const void> m_owner;
    const std::byte* m_bytes = nullptr;
};

} // namespace sextant::ir
