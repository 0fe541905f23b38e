#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <vector>

namespace sextant::ir {

/// A vector of pointers that keeps its first N elements inside the object itself: a node's
/// operands and a value's users. Almost every node has at most N of each, so a walk over the
/// graph reads them from the node's own cache lines instead of following a pointer to a
/// separate heap block per node and per value.
template <typename T, unsigned N> class InlineVector {
    static_assert(std::is_trivially_copyable_v<T>, "InlineVector holds pointers and the like");

public:
    using value_type = T;
    using iterator = T*;
    using const_iterator = const T*;

    InlineVector() = default;
    InlineVector(const InlineVector& o) { assign(o.begin(), o.end()); }
    InlineVector& operator=(const InlineVector& o) {
        if (this != &o)
            assign(o.begin(), o.end());
        return *this;
    }
    ~InlineVector() { release(); }

    InlineVector& operator=(const std::vector<T>& v) {
        assign(v.data(), v.data() + v.size());
        return *this;
    }
    /// A copy as a std::vector; explicit, so that no copy happens unnoticed.
    explicit operator std::vector<T>() const { return std::vector<T>(begin(), end()); }

    size_t size() const { return m_size; }
    /// Bytes held outside the object: 0 while the elements fit inline.
    size_t heapBytes() const { return m_data == m_inline ? 0 : m_capacity * sizeof(T); }
    bool empty() const { return m_size == 0; }
    T* data() { return m_data; }
    const T* data() const { return m_data; }
    T* begin() { return m_data; }
    T* end() { return m_data + m_size; }
    const T* begin() const { return m_data; }
    const T* end() const { return m_data + m_size; }
    T& operator[](size_t i) { return m_data[i]; }
    const T& operator[](size_t i) const { return m_data[i]; }
    T& front() { return m_data[0]; }
    const T& front() const { return m_data[0]; }
    T& back() { return m_data[m_size - 1]; }
    const T& back() const { return m_data[m_size - 1]; }

    void push_back(T v) {
        if (m_size == m_capacity)
            grow(m_capacity * 2);
        m_data[m_size++] = v;
    }
    void resize(size_t n, T fill = T{}) {
        if (n > m_capacity)
            grow(static_cast<uint32_t>(n));
        for (size_t i = m_size; i < n; ++i)
            m_data[i] = fill;
        m_size = static_cast<uint32_t>(n);
    }
    void reserve(size_t n) {
        if (n > m_capacity)
            grow(static_cast<uint32_t>(n));
    }
    T* erase(T* at) {
        std::memmove(at, at + 1, (end() - at - 1) * sizeof(T));
        --m_size;
        return at;
    }
    void clear() { m_size = 0; }

    friend bool operator==(const InlineVector& a, const InlineVector& b) {
        return std::equal(a.begin(), a.end(), b.begin(), b.end());
    }

private:
    void assign(const T* first, const T* last) {
        const size_t n = static_cast<size_t>(last - first);
        m_size = 0;
        reserve(n);
        std::copy(first, last, m_data);
        m_size = static_cast<uint32_t>(n);
    }
    void grow(uint32_t capacity) {
        T* heap = static_cast<T*>(std::malloc(capacity * sizeof(T)));
        if (!heap)
            throw std::bad_alloc();
        std::copy(m_data, m_data + m_size, heap);
        release();
        m_data = heap;
        m_capacity = capacity;
    }
    void release() {
        if (m_data != m_inline)
            std::free(m_data);
    }

    T* m_data = m_inline;
    uint32_t m_size = 0;
    uint32_t m_capacity = N;
    T m_inline[N];
};

} // namespace sextant::ir
