#include "MemoryImage.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace sextant::sim {

namespace {

std::string describe(const backend::Buffer& b) {
    std::string where =
        b.level == backend::MemLevel::Dram ? "dram" : "sram of core " + std::to_string(b.core);
    return "buffer " + std::to_string(b.id) + " ('" + b.value + "', " + where + " offset " +
           std::to_string(b.offset) + " size " + std::to_string(b.size) + ")";
}

/// Bytes a buffer's tensor occupies, or -1 when its type is not concrete.
int64_t payloadBytes(const backend::Buffer& b) {
    int64_t n = b.type.numel();
    if (n < 0)
        return -1;
    return n * static_cast<int64_t>(ir::dtypeSize(b.type.dtype));
}

/// The stripe of `b` on `core` as a buffer of its own: its slice's type at the stripe's place.
Expected<backend::Buffer> stripeView(const backend::Buffer& b, int core) {
    const backend::Buffer::Stripe* st = b.stripeOn(core);
    const std::vector<int64_t> dims = b.type.dims();
    if (!st)
        return makeError(ErrorKind::Runtime, describe(b) + " has no stripe on core " + std::to_string(core));
    if (b.stripeAxis < 0 || static_cast<size_t>(b.stripeAxis) >= dims.size() || st->begin < 0 || st->end <= st->begin ||
        st->end > dims[static_cast<size_t>(b.stripeAxis)])
        return makeError(ErrorKind::Runtime, describe(b) + ": its stripe on core " + std::to_string(core) +
                                                 " is not a slice of dim " + std::to_string(b.stripeAxis) + " of " +
                                                 b.type.str());
    backend::Buffer view = b;
    view.stripes.clear();
    view.level = backend::MemLevel::Sram;
    view.core = st->core;
    view.offset = st->offset;
    view.size = st->size;
    std::vector<int64_t> sd = dims;
    sd[static_cast<size_t>(b.stripeAxis)] = st->end - st->begin;
    view.type = ir::TensorType::of(b.type.dtype, sd);
    return view;
}

/// A halo buffer's DRAM home as a plain DRAM buffer: the halo rows, stripe after stripe
/// (Buffer::haloHomeType), at its DRAM offset. A whole buffer for one without stripes.
backend::Buffer dramHome(const backend::Buffer& b) {
    backend::Buffer home = b;
    if (!b.stripes.empty())
        home.type = b.haloHomeType();
    home.stripes.clear();
    return home;
}

/// Where each stripe's halo rows sit in the home: (first row of the tensor, rows, first row of
/// the home), for its top rows and its bottom rows.
struct HaloRun {
    int64_t row, rows, homeRow;
};
std::vector<HaloRun> haloRuns(const backend::Buffer& b) {
    std::vector<HaloRun> runs;
    int64_t at = 0;
    for (const backend::Buffer::Stripe& st : b.stripes) {
        const int64_t rows = st.end - st.begin;
        const int64_t top = std::clamp<int64_t>(st.haloTop, 0, rows);
        const int64_t bottom = std::clamp<int64_t>(st.haloBottom, 0, rows - top);
        if (top > 0)
            runs.push_back(HaloRun{st.begin, top, at});
        at += top;
        if (bottom > 0)
            runs.push_back(HaloRun{st.end - bottom, bottom, at});
        at += bottom;
    }
    return runs;
}

/// Bytes before, within and after dim `axis` of a row-major tensor of `dims` with `elem`-byte
/// elements: outer count, the dim's extent, bytes per step along it.
struct Strides {
    uint64_t outer = 1, extent = 1, inner = 1;
};
Strides stridesOf(const std::vector<int64_t>& dims, size_t axis, size_t elem) {
    Strides s;
    s.inner = elem;
    for (size_t d = 0; d < dims.size(); ++d) {
        const uint64_t e = static_cast<uint64_t>(std::max<int64_t>(dims[d], 0));
        if (d < axis)
            s.outer *= e;
        else if (d == axis)
            s.extent = e;
        else
            s.inner *= e;
    }
    return s;
}

} // namespace

Expected<ir::Tensor> MemoryImage::read(const backend::Buffer& buffer, int core) const {
    if (buffer.stripes.empty())
        return read(buffer);
    SX_ASSIGN(backend::Buffer view, stripeView(buffer, core));
    SX_ASSIGN(ir::Tensor part, read(view));
    const backend::Buffer::Stripe& st = *buffer.stripeOn(core);
    const Strides full = stridesOf(buffer.type.dims(), static_cast<size_t>(buffer.stripeAxis),
                                   ir::dtypeSize(buffer.type.dtype));
    std::vector<std::byte> bytes(full.outer * full.extent * full.inner, std::byte{0});
    // With a halo, the rows outside this core's stripe are what the DRAM home holds (the other
    // cores' writers stored there the rows this reader's window takes).
    if (buffer.level == backend::MemLevel::Dram) {
        const backend::Buffer homeBuf = dramHome(buffer);
        SX_ASSIGN(ir::Tensor home, read(homeBuf));
        const uint64_t homeRows = static_cast<uint64_t>(homeBuf.type.dims()[static_cast<size_t>(buffer.stripeAxis)]);
        for (const HaloRun& r : haloRuns(buffer))
            for (uint64_t o = 0; o < full.outer; ++o)
                std::memcpy(bytes.data() + (o * full.extent + static_cast<uint64_t>(r.row)) * full.inner,
                            home.bytes() + (o * homeRows + static_cast<uint64_t>(r.homeRow)) * full.inner,
                            static_cast<size_t>(r.rows) * full.inner);
    }
    const uint64_t run = static_cast<uint64_t>(st.end - st.begin) * full.inner;
    for (uint64_t o = 0; o < full.outer; ++o)
        std::memcpy(bytes.data() + (o * full.extent + static_cast<uint64_t>(st.begin)) * full.inner,
                    part.bytes() + o * run, run);
    return ir::Tensor::copyOf(buffer.type.dtype, buffer.type.dims(), bytes);
}

Expected<ir::Tensor> MemoryImage::readHome(const backend::Buffer& buffer) const {
    if (!buffer.homeHoldsAll())
        return makeError(ErrorKind::Runtime, describe(buffer) + " has no DRAM home holding every row");
    SX_ASSIGN(ir::Tensor home, read(dramHome(buffer)));
    return home.reshaped(buffer.type.dims());
}

Status MemoryImage::writeSlice(const backend::Buffer& buffer, const ir::Tensor& value, const backend::SliceBytes& slice,
                               int core) {
    if (buffer.stripes.empty())
        return writeSlice(buffer, value, slice);
    SX_ASSIGN(backend::Buffer view, stripeView(buffer, core));
    if (value.numel() != buffer.type.numel())
        return makeError(ErrorKind::Runtime, describe(buffer) + " holds " + buffer.type.str() + " but was given " +
                                                 value.type().str());
    const ir::Tensor encoded = value.castTo(buffer.type.dtype);
    const backend::Buffer::Stripe& st = *buffer.stripeOn(core);
    const Strides full = stridesOf(buffer.type.dims(), static_cast<size_t>(buffer.stripeAxis),
                                   ir::dtypeSize(buffer.type.dtype));
    const uint64_t run = static_cast<uint64_t>(st.end - st.begin) * full.inner;
    std::vector<std::byte> bytes(full.outer * run);
    for (uint64_t o = 0; o < full.outer; ++o)
        std::memcpy(bytes.data() + o * run,
                    encoded.bytes() + (o * full.extent + static_cast<uint64_t>(st.begin)) * full.inner, run);
    SX_TRY(write(view, ir::Tensor::copyOf(view.type.dtype, view.type.dims(), bytes)));
    if (buffer.level != backend::MemLevel::Dram)
        return {};
    // A halo buffer: the stripe's first haloTop and last haloBottom rows also go to the DRAM home.
    const backend::Buffer homeBuf = dramHome(buffer);
    const uint64_t homeRows = static_cast<uint64_t>(homeBuf.type.dims()[static_cast<size_t>(buffer.stripeAxis)]);
    std::vector<std::byte> home(full.outer * homeRows * full.inner, std::byte{0});
    for (const HaloRun& r : haloRuns(buffer)) {
        if (r.row < st.begin || r.row >= st.end)
            continue; // another stripe's rows
        for (uint64_t o = 0; o < full.outer; ++o)
            std::memcpy(home.data() + (o * homeRows + static_cast<uint64_t>(r.homeRow)) * full.inner,
                        encoded.bytes() + (o * full.extent + static_cast<uint64_t>(r.row)) * full.inner,
                        static_cast<size_t>(r.rows) * full.inner);
        const ir::Tensor homeValue = ir::Tensor::copyOf(homeBuf.type.dtype, homeBuf.type.dims(), home);
        SX_TRY(writeSlice(homeBuf, homeValue,
                          backend::SliceBytes{full.outer, homeRows * full.inner,
                                              static_cast<uint64_t>(r.homeRow) * full.inner,
                                              static_cast<uint64_t>(r.homeRow + r.rows) * full.inner}));
    }
    return {};
}

Expected<MemoryImage> MemoryImage::forProgram(const backend::Program& program, bool allocate) {
    const backend::Target& t = program.target;
    uint64_t dramEnd = 0;
    std::vector<uint64_t> sramEnd(static_cast<size_t>(std::max(t.numCores, 0)), 0);
    for (const backend::Buffer& whole : program.buffers) {
        // A buffer kept a stripe per core is checked stripe by stripe.
        std::vector<backend::Buffer> pieces;
        if (whole.stripes.empty() || whole.level == backend::MemLevel::Dram) // a halo buffer's home too
            pieces.push_back(dramHome(whole));
        for (const backend::Buffer::Stripe& st : whole.stripes) {
            SX_ASSIGN(backend::Buffer view, stripeView(whole, st.core));
            pieces.push_back(std::move(view));
        }
        for (const backend::Buffer& b : pieces) {
        if (b.offset + b.size < b.offset)
            return makeError(ErrorKind::Runtime, describe(b) + " wraps around the address space");
        int64_t need = payloadBytes(b);
        if (need < 0) {
            // A shape only the run decides: the host holds it (m_held), so it takes no address.
            if (b.size != 0 || !b.stripes.empty() || b.level != backend::MemLevel::Dram)
                return makeError(ErrorKind::Runtime, describe(b) + " has a non-static type " + b.type.str() +
                                                         " but an address; only the host holds such a buffer");
            continue;
        }
        if (static_cast<uint64_t>(need) > b.size)
            return makeError(ErrorKind::Runtime, describe(b) + " is smaller than its tensor " +
                                                     b.type.str() + " (" + std::to_string(need) +
                                                     " bytes)");
        uint64_t end = b.offset + b.size;
        if (b.level == backend::MemLevel::Dram) {
            if (end > t.dramBytes)
                return makeError(ErrorKind::Runtime, describe(b) + " ends past the target's " +
                                                         std::to_string(t.dramBytes) +
                                                         " bytes of dram");
            dramEnd = std::max(dramEnd, end);
            continue;
        }
        if (b.core < 0 || b.core >= t.numCores)
            return makeError(ErrorKind::Runtime,
                             describe(b) + " names core " + std::to_string(b.core) +
                                 " but the target has " + std::to_string(t.numCores));
        if (end > t.sramBytes)
            return makeError(ErrorKind::Runtime, describe(b) + " ends past the core's " +
                                                     std::to_string(t.sramBytes) +
                                                     " bytes of sram");
        sramEnd[static_cast<size_t>(b.core)] = std::max(sramEnd[static_cast<size_t>(b.core)], end);
        }
    }
    MemoryImage image;
    if (!allocate)
        return image;
    image.m_dram.assign(dramEnd, std::byte{0});
    image.m_sram.resize(sramEnd.size());
    for (size_t c = 0; c < sramEnd.size(); ++c)
        image.m_sram[c].assign(sramEnd[c], std::byte{0});
    return image;
}

uint64_t MemoryImage::sramBytes(int core) const {
    if (core < 0 || static_cast<size_t>(core) >= m_sram.size())
        return 0;
    return m_sram[static_cast<size_t>(core)].size();
}

Expected<std::byte*> MemoryImage::locate(const backend::Buffer& buffer, uint64_t bytes) {
    std::vector<std::byte>* mem = nullptr;
    if (buffer.level == backend::MemLevel::Dram) {
        mem = &m_dram;
    } else {
        if (buffer.core < 0 || static_cast<size_t>(buffer.core) >= m_sram.size())
            return makeError(ErrorKind::Runtime,
                             describe(buffer) + " names a core that does not exist");
        mem = &m_sram[static_cast<size_t>(buffer.core)];
    }
    if (bytes > buffer.size || buffer.offset > mem->size() || bytes > mem->size() - buffer.offset)
        return makeError(ErrorKind::Runtime, describe(buffer) + ": access of " +
                                                 std::to_string(bytes) + " bytes is out of bounds");
    return mem->data() + buffer.offset;
}

Expected<ir::Tensor> MemoryImage::read(const backend::Buffer& buffer) const {
    int64_t bytes = payloadBytes(buffer);
    if (bytes < 0) {
        auto it = m_held.find(buffer.id);
        if (it == m_held.end())
            return makeError(ErrorKind::Runtime, describe(buffer) + ", which the host holds (" + buffer.type.str() +
                                                     "), is read before any Task wrote it");
        return it->second;
    }
    // locate() only hands out a pointer; reading through it does not change the image.
    SX_ASSIGN(std::byte * p,
              const_cast<MemoryImage*>(this)->locate(buffer, static_cast<uint64_t>(bytes)));
    return ir::Tensor::copyOf(buffer.type.dtype, buffer.type.dims(),
                              std::span<const std::byte>(p, static_cast<size_t>(bytes)));
}

Status MemoryImage::write(const backend::Buffer& buffer, const ir::Tensor& value) {
    return writeSlice(buffer, value, backend::SliceBytes{1, 0, 0, UINT64_MAX});
}

Status MemoryImage::fill(const backend::Buffer& buffer, double value) {
    const int64_t bytes = payloadBytes(buffer);
    const int64_t count = buffer.type.numel();
    if (bytes < 0 || count < 0 || buffer.level != backend::MemLevel::Dram || !buffer.stripes.empty() ||
        !ir::isFloat(buffer.type.dtype))
        return makeError(ErrorKind::Runtime, describe(buffer) + " cannot be filled: it is not a static float DRAM buffer");
    SX_ASSIGN(std::byte * p, locate(buffer, static_cast<uint64_t>(bytes)));
    const ir::Tensor one = ir::Tensor::scalar(value, ir::DType::F64).castTo(buffer.type.dtype);
    const size_t size = one.byteSize();
    for (int64_t i = 0; i < count; ++i) // payloadBytes is count * size
        std::memcpy(p + static_cast<size_t>(i) * size, one.bytes(), size);
    return {};
}

Status MemoryImage::writeSlice(const backend::Buffer& buffer, const ir::Tensor& value,
                               const backend::SliceBytes& slice) {
    int64_t bytes = payloadBytes(buffer);
    if (bytes < 0) {
        // Held by the host: the whole tensor, whatever its size, as long as the known dims agree.
        bool fits = value.rank() == buffer.type.rank() &&
                    ir::isFloat(buffer.type.dtype) == ir::isFloat(value.dtype());
        for (size_t d = 0; fits && d < value.rank(); ++d)
            fits = !buffer.type.shape[d].isKnown() || buffer.type.shape[d].value == value.shape()[d];
        if (!fits)
            return makeError(ErrorKind::Runtime, describe(buffer) + " holds " + buffer.type.str() +
                                                     " but was given " + value.type().str());
        m_held[buffer.id] = value.castTo(buffer.type.dtype);
        return {};
    }
    if (value.numel() != buffer.type.numel())
        return makeError(ErrorKind::Runtime, describe(buffer) + " holds " + buffer.type.str() +
                                                 " but was given " + value.type().str());
    if (ir::isFloat(buffer.type.dtype) != ir::isFloat(value.dtype()) &&
        buffer.type.dtype != value.dtype())
        return makeError(ErrorKind::Runtime, describe(buffer) + " holds " + buffer.type.str() +
                                                 " but was given " + value.type().str());
    SX_ASSIGN(std::byte * p, locate(buffer, static_cast<uint64_t>(bytes)));
    ir::Tensor encoded = value.castTo(buffer.type.dtype);
    const uint64_t total = static_cast<uint64_t>(bytes);
    for (uint64_t r = 0; r < slice.runs; ++r) {
        const uint64_t begin = std::min(total, r * slice.stride + slice.begin);
        const uint64_t end = std::min(total, r * slice.stride + slice.end);
        if (begin < end)
            std::memcpy(p + begin, encoded.bytes() + begin, static_cast<size_t>(end - begin));
    }
    return {};
}

} // namespace sextant::sim
