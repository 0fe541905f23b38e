#pragma once

#include "core/backend/Program.h"
#include "core/ir/Error.h"
#include "core/ir/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace sextant::sim {

/// The simulated memories of a device: one shared DRAM image and one SRAM image per core, sized to
/// what a Program's memory plan uses. Tensors are stored row-major in the buffer's dtype, so a plan
/// that puts two live tensors at one address really overwrites one with the other.
class MemoryImage {
public:
    /// Sizes the images to the plan (the furthest byte any buffer reaches in each memory) and
    /// checks every buffer against its target: DRAM size, SRAM size, the core it names. With
    /// `allocate` false only the checks: the image holds no bytes (a timing-only run).
    static Expected<MemoryImage> forProgram(const backend::Program& program, bool allocate = true);

    /// Decodes the tensor stored in `buffer` (its dtype and shape). Fails when the buffer is too
    /// small for its type.
    Expected<ir::Tensor> read(const backend::Buffer& buffer) const;
    /// Encodes `value` into `buffer`, converting to the buffer's dtype (rounding to f16 where the
    /// buffer is f16). The element count must match the buffer's type.
    Status write(const backend::Buffer& buffer, const ir::Tensor& value);
    /// Stores `value`, converted to the buffer's dtype, in every element of `buffer` (a weight the
    /// loader fills, Buffer::fill).
    Status fill(const backend::Buffer& buffer, double value);
    /// The same as write, but stores only the bytes `slice` names (one part of a split Task writes its
    /// slice); the rest of the buffer keeps what it held.
    Status writeSlice(const backend::Buffer& buffer, const ir::Tensor& value, const backend::SliceBytes& slice);

    /// For a Task on `core`: a buffer kept on chip a stripe per core (Buffer::stripes) reads as the
    /// whole tensor with that core's stripe in place and zeros elsewhere, and a write stores just
    /// that core's stripe (`slice` then goes unused); any other buffer as read() and writeSlice().
    /// A core without a stripe of the buffer is an error.
    Expected<ir::Tensor> read(const backend::Buffer& buffer, int core) const;
    Status writeSlice(const backend::Buffer& buffer, const ir::Tensor& value, const backend::SliceBytes& slice,
                      int core);

    /// A halo buffer whose DRAM home holds every row (Buffer::homeHoldsAll): the tensor as the
    /// home holds it, without any core's stripe.
    Expected<ir::Tensor> readHome(const backend::Buffer& buffer) const;

    uint64_t dramBytes() const { return m_dram.size(); }
    uint64_t sramBytes(int core) const;

private:
    Expected<std::byte*> locate(const backend::Buffer& buffer, uint64_t bytes);

    std::vector<std::byte> m_dram;
    std::vector<std::vector<std::byte>> m_sram; ///< one per core
    /// Buffers the host holds (a shape only the run decides: no address, size 0), by buffer id:
    /// what the host Task that wrote one gave it, in the buffer's dtype.
    std::map<int, ir::Tensor> m_held;
};

} // namespace sextant::sim
