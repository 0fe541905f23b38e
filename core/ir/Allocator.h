#pragma once

namespace sextant::ir {

/// Sets the C library's allocator up for what the compiler does with it; call it once, first
/// thing in main(), before other threads start. Currently, with glibc: no "fastbins".
///
/// glibc keeps small freed blocks (up to 128 bytes: names, operand lists, attribute entries)
/// unmerged in fastbins, and merges all of them with their neighbours in one sweep the next time
/// any block of 1 KB or more is asked for. A pass pipeline frees small blocks by the hundred
/// thousand and asks for large ones (node lists, tables) all the time, so every such sweep walks
/// blocks scattered over the whole heap: on a 20,000-node graph those sweeps alone were about a
/// fifth of the cache misses above linear growth (simulated, see BENCHMARKS.md). Without
/// fastbins a freed block is merged when it is freed, while its neighbours are likely still in
/// the cache; the per-thread cache (tcache) still serves the common small allocations first.
/// Elsewhere (another C library) this does nothing.
void tuneAllocator();

} // namespace sextant::ir
