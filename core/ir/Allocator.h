#pragma once

namespace sextant::ir {

/// Sets the allocator up for what the compiler does with it; call it once, first thing in main(),
/// before other threads start.
///
/// Sextant's programs allocate with mimalloc (linked into this library; see the README). A pass
/// pipeline makes and frees small blocks (names, records, attribute entries) by the hundred
/// thousand and walks graphs of several megabytes: mimalloc keeps blocks of one size together in
/// pages of their own, and here it is also told to back its memory with transparent huge pages,
/// so a walk over a big graph needs far fewer TLB entries; and it takes its segments from a 1 GiB
/// arena mapped at start, so the reference executor's big tensors do not map and unmap memory
/// node after node. On a 20,000-node graph the O2 pipeline is about a third faster than with
/// glibc's malloc (BENCHMARKS.md, "Tenth round"). A user's MIMALLOC_LARGE_OS_PAGES or
/// MIMALLOC_RESERVE_OS_MEMORY setting wins over ours.
///
/// In a build without mimalloc (sanitizers, or SEXTANT_MIMALLOC=OFF) with glibc: no "fastbins".
/// glibc keeps small freed blocks unmerged in fastbins and merges all of them in one sweep the
/// next time a block of 1 KB or more is asked for; on a big graph those sweeps walk blocks
/// scattered over the whole heap. Without fastbins a block is merged when freed, while its
/// neighbours are likely still in the cache.
void tuneAllocator();

/// The allocator in use, in a few words (for the benchmarks' context line).
const char* describeAllocator();

} // namespace sextant::ir
