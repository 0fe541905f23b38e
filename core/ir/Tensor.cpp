#include "Tensor.h"

#include "Half.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string_view>

namespace sextant::ir {

namespace {

std::shared_ptr<void> allocate(size_t bytes, bool zero) {
    size_t n = bytes == 0 ? 64 : bytes;
    void* p = ::operator new(n, std::align_val_t{64});
    if (zero)
        std::memset(p, 0, n);
    return std::shared_ptr<void>(p, [](void* q) { ::operator delete(q, std::align_val_t{64}); });
}

// SEXTANT_POISON_TENSORS=1: uninitialised tensors are filled with 0xff bytes (read once).
bool poisonUninitialized() {
    static const bool poison = [] {
        const char* v = std::getenv("SEXTANT_POISON_TENSORS");
        return v && *v && std::string_view(v) != "0";
    }();
    return poison;
}

float bf16ToFloat(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
uint16_t floatToBf16(float f) {
    uint32_t x = std::bit_cast<uint32_t>(f);
    if (std::isnan(f))
        return static_cast<uint16_t>((x >> 16) | 0x40);
    uint32_t rounding = 0x7fff + ((x >> 16) & 1);
    return static_cast<uint16_t>((x + rounding) >> 16);
}

} // namespace

Tensor::Tensor(DType dtype, std::vector<int64_t> shape)
    : m_dtype(dtype), m_shape(std::move(shape)), m_numel(product(m_shape)) {
    auto storage = allocate(byteSize(), true);
    m_bytes = static_cast<const std::byte*>(storage.get());
    m_owner = std::move(storage);
}

Tensor Tensor::uninitialized(DType dtype, std::vector<int64_t> shape) {
    Tensor t;
    t.m_dtype = dtype;
    t.m_shape = std::move(shape);
    t.m_numel = product(t.m_shape);
    auto storage = allocate(t.byteSize(), false);
    if (poisonUninitialized())
        std::memset(storage.get(), 0xff, t.byteSize());
    t.m_bytes = static_cast<const std::byte*>(storage.get());
    t.m_owner = std::move(storage);
    return t;
}

Tensor Tensor::view(DType dtype, std::vector<int64_t> shape, std::shared_ptr<const void> owner,
                    const std::byte* bytes) {
    Tensor t;
    t.m_dtype = dtype;
    t.m_shape = std::move(shape);
    t.m_numel = product(t.m_shape);
    t.m_owner = std::move(owner);
    t.m_bytes = bytes;
    return t;
}

Tensor Tensor::copyOf(DType dtype, std::vector<int64_t> shape, std::span<const std::byte> bytes) {
    Tensor t = uninitialized(dtype, std::move(shape));
    assert(bytes.size() == t.byteSize() && "byte count mismatch");
    const size_t n = std::min(bytes.size(), t.byteSize());
    if (n)
        std::memcpy(t.mutableBytes(), bytes.data(), n);
    if (n < t.byteSize()) // a short buffer (a broken contract): zeros, not garbage
        std::memset(t.mutableBytes() + n, 0, t.byteSize() - n);
    return t;
}

Tensor Tensor::scalar(double v, DType dtype) {
    Tensor t(dtype, {});
    t.set(0, v);
    return t;
}

double Tensor::at(int64_t i) const {
    switch (m_dtype) {
    case DType::F64: return data<double>()[i];
    case DType::F32: return data<float>()[i];
    case DType::F16: return halfToFloat(data<uint16_t>()[i]);
    case DType::BF16: return bf16ToFloat(data<uint16_t>()[i]);
    case DType::I64: return static_cast<double>(data<int64_t>()[i]);
    case DType::I32: return data<int32_t>()[i];
    case DType::I8: return data<int8_t>()[i];
    case DType::U8: return data<uint8_t>()[i];
    case DType::Bool: return data<uint8_t>()[i] ? 1.0 : 0.0;
    case DType::I16: return data<int16_t>()[i];
    case DType::U16: return data<uint16_t>()[i];
    case DType::U32: return data<uint32_t>()[i];
    case DType::U64: return static_cast<double>(data<uint64_t>()[i]);
    case DType::I4: return data<int8_t>()[i];
    case DType::U4: return data<uint8_t>()[i];
    }
    return 0.0;
}

namespace {

/// double → integer without undefined behaviour: NaN becomes 0 and values outside the type's
/// range saturate at its limits (an inf from a division by zero, say, or a huge Cast input).
template <typename T> T saturatingCast(double v) {
    if (std::isnan(v))
        return 0;
    // The upper limit as a double may round up past the maximum (2^63 for int64): compare with >=.
    if (v >= static_cast<double>(std::numeric_limits<T>::max()))
        return std::numeric_limits<T>::max();
    if (v <= static_cast<double>(std::numeric_limits<T>::lowest()))
        return std::numeric_limits<T>::lowest();
    return static_cast<T>(v);
}

} // namespace

void Tensor::set(int64_t i, double v) {
    switch (m_dtype) {
    case DType::F64: mutableData<double>()[i] = v; return;
    case DType::F32: mutableData<float>()[i] = static_cast<float>(v); return;
    case DType::F16: mutableData<uint16_t>()[i] = floatToHalf(static_cast<float>(v)); return;
    case DType::BF16: mutableData<uint16_t>()[i] = floatToBf16(static_cast<float>(v)); return;
    case DType::I64: mutableData<int64_t>()[i] = saturatingCast<int64_t>(v); return;
    case DType::I32: mutableData<int32_t>()[i] = saturatingCast<int32_t>(v); return;
    case DType::I8: mutableData<int8_t>()[i] = saturatingCast<int8_t>(v); return;
    case DType::U8: mutableData<uint8_t>()[i] = saturatingCast<uint8_t>(v); return;
    case DType::Bool: mutableData<uint8_t>()[i] = v != 0.0 ? 1 : 0; return;
    case DType::I16: mutableData<int16_t>()[i] = saturatingCast<int16_t>(v); return;
    case DType::U16: mutableData<uint16_t>()[i] = saturatingCast<uint16_t>(v); return;
    case DType::U32: mutableData<uint32_t>()[i] = saturatingCast<uint32_t>(v); return;
    case DType::U64: mutableData<uint64_t>()[i] = saturatingCast<uint64_t>(v); return;
    case DType::I4: mutableData<int8_t>()[i] = static_cast<int8_t>(std::clamp<int>(saturatingCast<int8_t>(v), -8, 7)); return;
    case DType::U4: mutableData<uint8_t>()[i] = std::min<uint8_t>(saturatingCast<uint8_t>(v), 15); return;
    }
}

Tensor Tensor::castTo(DType dtype) const {
    if (dtype == m_dtype)
        return *this;
    Tensor out = uninitialized(dtype, m_shape); // every element is written below
    if (m_dtype == DType::F32 && dtype == DType::F64) {
        const float* s = data<float>();
        double* d = out.mutableData<double>();
        for (int64_t i = 0; i < m_numel; ++i)
            d[i] = s[i];
        return out;
    }
    if (m_dtype == DType::F64 && dtype == DType::F32) {
        const double* s = data<double>();
        float* d = out.mutableData<float>();
        for (int64_t i = 0; i < m_numel; ++i)
            d[i] = static_cast<float>(s[i]);
        return out;
    }
    for (int64_t i = 0; i < m_numel; ++i)
        out.set(i, at(i));
    return out;
}

Tensor Tensor::reshaped(std::vector<int64_t> shape) const {
    Tensor t = *this;
    t.m_shape = std::move(shape);
    assert(product(t.m_shape) == m_numel && "reshape changes element count");
    return t;
}

std::vector<double> Tensor::toDoubles() const {
    std::vector<double> v(static_cast<size_t>(m_numel));
    for (int64_t i = 0; i < m_numel; ++i)
        v[static_cast<size_t>(i)] = at(i);
    return v;
}

Tensor Tensor::clone() const {
    return copyOf(m_dtype, m_shape, std::span<const std::byte>(m_bytes, byteSize()));
}

std::string Tensor::digest() const {
    uint64_t h = 1469598103934665603ull;
    auto mix = [&h](const void* p, size_t n) {
        const auto* b = static_cast<const unsigned char*>(p);
        for (size_t i = 0; i < n; ++i) {
            h ^= b[i];
            h *= 1099511628211ull;
        }
    };
    uint8_t dt = static_cast<uint8_t>(m_dtype);
    mix(&dt, 1);
    for (int64_t d : m_shape)
        mix(&d, sizeof d);
    if (m_bytes)
        mix(m_bytes, byteSize());
    static const char* hex = "0123456789abcdef";
    std::string s(16, '0');
    for (int i = 15; i >= 0; --i) {
        s[static_cast<size_t>(i)] = hex[h & 0xf];
        h >>= 4;
    }
    return s;
}

bool Tensor::identical(const Tensor& other) const {
    if (m_dtype != other.m_dtype || m_shape != other.m_shape)
        return false;
    if (byteSize() == 0)
        return true;
    return std::memcmp(m_bytes, other.m_bytes, byteSize()) == 0;
}

} // namespace sextant::ir
