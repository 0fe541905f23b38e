#include "TensorType.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <unordered_set>

namespace sextant::ir {

namespace {

// Dims are copied and moved as bytes below.
static_assert(std::is_trivially_copyable_v<Dim>);

struct SymbolTable {
    std::mutex mutex;
    std::unordered_set<std::string> names; // nodes never move, so pointers to keys stay valid
};

SymbolTable& symbolTable() {
    static SymbolTable* table = new SymbolTable; // never destroyed: symbols outlive static dtors
    return *table;
}

const std::string& emptyName() {
    static const std::string empty;
    return empty;
}

const std::string* unknownName() {
    static const std::string* name = &*symbolTable().names.emplace("?").first;
    return name;
}

} // namespace

Symbol::Symbol(std::string_view name) {
    if (name.empty())
        return;
    if (name == "?") { // the unnamed unknown dim: shape inference makes these all the time
        m_name = unknownName();
        return;
    }
    SymbolTable& t = symbolTable();
    std::lock_guard<std::mutex> lock(t.mutex);
    m_name = &*t.names.emplace(name).first;
}

const std::string& Symbol::str() const {
    return m_name ? *m_name : emptyName();
}

DimVector& DimVector::operator=(const DimVector& o) {
    if (this != &o)
        assign(o.begin(), o.end());
    return *this;
}

DimVector& DimVector::operator=(DimVector&& o) noexcept {
    if (this != &o) {
        freeHeap();
        take(o);
    }
    return *this;
}

void DimVector::take(DimVector& o) noexcept {
    m_size = o.m_size;
    m_capacity = o.m_capacity;
    if (o.onHeap())
        m_heap = o.m_heap;
    else
        std::memcpy(m_inline, o.m_inline, o.m_size * sizeof(Dim));
    o.m_size = 0;
    o.m_capacity = kInline;
}

void DimVector::freeHeap() noexcept {
    if (onHeap())
        ::operator delete(m_heap);
    m_capacity = kInline;
}

void DimVector::reserve(size_t n) {
    if (n <= m_capacity)
        return;
    const size_t capacity = std::max<size_t>(n, 2 * size_t(m_capacity));
    Dim* block = static_cast<Dim*>(::operator new(capacity * sizeof(Dim)));
    std::memcpy(static_cast<void*>(block), data(), m_size * sizeof(Dim));
    freeHeap();
    m_heap = block;
    m_capacity = static_cast<uint32_t>(capacity);
}

void DimVector::resize(size_t n, const Dim& d) {
    reserve(n);
    Dim* p = data();
    for (size_t i = m_size; i < n; ++i)
        p[i] = d;
    m_size = static_cast<uint32_t>(n);
}

void DimVector::push_back(const Dim& d) {
    const Dim copy = d; // d may be one of ours, and reserve may move them
    reserve(size_t(m_size) + 1);
    data()[m_size++] = copy;
}

void DimVector::assign(size_t n, const Dim& d) {
    const Dim copy = d;
    m_size = 0;
    resize(n, copy);
}

void DimVector::assign(const Dim* first, const Dim* last) {
    const size_t n = static_cast<size_t>(last - first);
    if (first >= begin() && first < end()) { // a range of our own dims
        std::memmove(static_cast<void*>(data()), first, n * sizeof(Dim));
        m_size = static_cast<uint32_t>(n);
        return;
    }
    m_size = 0;
    reserve(n);
    std::memcpy(static_cast<void*>(data()), first, n * sizeof(Dim));
    m_size = static_cast<uint32_t>(n);
}

Dim* DimVector::insert(const Dim* pos, const Dim* first, const Dim* last) {
    const size_t at = static_cast<size_t>(pos - begin());
    const size_t n = static_cast<size_t>(last - first);
    if (first < end() && last > begin()) { // inserting a range of our own dims: copy it first
        DimVector copy(first, last);
        return insert(begin() + at, copy.begin(), copy.end());
    }
    reserve(size_t(m_size) + n);
    Dim* p = data();
    std::memmove(static_cast<void*>(p + at + n), p + at, (m_size - at) * sizeof(Dim));
    std::memcpy(static_cast<void*>(p + at), first, n * sizeof(Dim));
    m_size += static_cast<uint32_t>(n);
    return p + at;
}

Dim* DimVector::erase(const Dim* first, const Dim* last) {
    Dim* p = data();
    const size_t at = static_cast<size_t>(first - p);
    const size_t n = static_cast<size_t>(last - first);
    std::memmove(static_cast<void*>(p + at), p + at + n, (m_size - at - n) * sizeof(Dim));
    m_size -= static_cast<uint32_t>(n);
    return p + at;
}

bool operator==(const DimVector& a, const DimVector& b) {
    if (a.size() != b.size())
        return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (!(a[i] == b[i]))
            return false;
    return true;
}

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

// A product that does not fit gives INT64_MAX (a hostile shape such as [99999,99999,99999,99999]
// names no real tensor), so size checks fail instead of seeing a count that wrapped around.
int64_t TensorType::numel() const {
    int64_t n = 1;
    bool overflow = false;
    for (const Dim& d : shape) {
        if (!d.isKnown())
            return -1;
        overflow = overflow || __builtin_mul_overflow(n, d.value, &n);
    }
    return overflow ? INT64_MAX : n;
}

std::string TensorType::str() const {
    std::string s(dtypeName(dtype));
    s += '[';
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i)
            s += ',';
        s += shape[i].isKnown() ? std::to_string(shape[i].value) : shape[i].symbol.str();
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
