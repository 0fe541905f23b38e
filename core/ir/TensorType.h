#pragma once

#include "DType.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace sextant::ir {

/// The name of a symbolic dim, interned: equal names share one string, so a Dim copies and
/// compares without touching the heap. The empty name is the null symbol. Interned names live
/// for the rest of the process (models name a handful of them).
class Symbol {
public:
    Symbol() = default;
    Symbol(std::string_view name);
    Symbol(const std::string& name) : Symbol(std::string_view(name)) {}
    Symbol(const char* name) : Symbol(std::string_view(name)) {}

    const std::string& str() const;
    bool empty() const { return m_name == nullptr; }
    operator const std::string&() const { return str(); }

    friend bool operator==(Symbol a, Symbol b) { return a.m_name == b.m_name; }
    friend bool operator==(Symbol a, const char* b) { return a.str() == b; }
    friend bool operator==(Symbol a, const std::string& b) { return a.str() == b; }

private:
    const std::string* m_name = nullptr;
};

/// One dimension: a concrete extent, or a symbol (ONNX dim_param) until the shape is specialised.
struct Dim {
    int64_t value = -1; ///< >= 0 when known
    Symbol symbol;      ///< non-empty when symbolic; "?" for an unnamed unknown dim

    static Dim known(int64_t v) { return Dim{v, {}}; }
    static Dim symbolic(std::string_view s) { return Dim{-1, Symbol(s)}; }
    bool isKnown() const { return value >= 0; }
    bool operator==(const Dim&) const = default;
};

/// The dims of a shape. Like std::vector<Dim>, but ranks up to kInline (every layout Sextant
/// uses, NC1HWC0 included) are stored in place: a TensorType copies without allocating, and a
/// value's shape sits next to the value instead of in a block of its own.
class DimVector {
public:
    using value_type = Dim;
    using size_type = size_t;
    using iterator = Dim*;
    using const_iterator = const Dim*;
    using reference = Dim&;
    using const_reference = const Dim&;
    static constexpr uint32_t kInline = 6;

    DimVector() = default;
    explicit DimVector(size_t n, const Dim& d = Dim{}) { assign(n, d); }
    DimVector(std::initializer_list<Dim> dims) { assign(dims.begin(), dims.end()); }
    DimVector(const Dim* first, const Dim* last) { assign(first, last); }
    DimVector(const DimVector& o) { assign(o.begin(), o.end()); }
    DimVector(DimVector&& o) noexcept { take(o); }
    DimVector& operator=(const DimVector& o);
    DimVector& operator=(DimVector&& o) noexcept;
    DimVector& operator=(std::initializer_list<Dim> dims) {
        assign(dims.begin(), dims.end());
        return *this;
    }
    ~DimVector() { freeHeap(); }

    size_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    size_t capacity() const { return m_capacity; }
    /// True when the dims live in a heap block of their own (rank above kInline).
    bool onHeap() const { return m_capacity > kInline; }
    Dim* data() { return onHeap() ? m_heap : inlineDims(); }
    const Dim* data() const { return onHeap() ? m_heap : inlineDims(); }
    Dim* begin() { return data(); }
    Dim* end() { return data() + m_size; }
    const Dim* begin() const { return data(); }
    const Dim* end() const { return data() + m_size; }
    Dim& operator[](size_t i) { return data()[i]; }
    const Dim& operator[](size_t i) const { return data()[i]; }
    Dim& front() { return data()[0]; }
    const Dim& front() const { return data()[0]; }
    Dim& back() { return data()[m_size - 1]; }
    const Dim& back() const { return data()[m_size - 1]; }

    void reserve(size_t n);
    void clear() { m_size = 0; }
    void resize(size_t n, const Dim& d = Dim{});
    void push_back(const Dim& d);
    void pop_back() { --m_size; }
    void assign(size_t n, const Dim& d);
    void assign(const Dim* first, const Dim* last);
    Dim* insert(const Dim* pos, const Dim& d) { return insert(pos, &d, &d + 1); }
    Dim* insert(const Dim* pos, const Dim* first, const Dim* last);
    Dim* erase(const Dim* pos) { return erase(pos, pos + 1); }
    Dim* erase(const Dim* first, const Dim* last);

    friend bool operator==(const DimVector& a, const DimVector& b);

private:
    Dim* inlineDims() { return reinterpret_cast<Dim*>(m_inline); }
    const Dim* inlineDims() const { return reinterpret_cast<const Dim*>(m_inline); }
    void take(DimVector& o) noexcept;
    void freeHeap() noexcept;

    uint32_t m_size = 0;
    uint32_t m_capacity = kInline;
    union {
        alignas(Dim) unsigned char m_inline[kInline * sizeof(Dim)];
        Dim* m_heap;
    };
};

/// Memory layout tag. NC1HWC0 is the blocked NPU layout with C0 = 16.
enum class LayoutKind : uint8_t { Any, NCHW, NHWC, NC1HWC0 };
std::string_view layoutName(LayoutKind l);

/// Element type, shape and layout of a value.
struct TensorType {
    DType dtype = DType::F32;
    DimVector shape;
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
