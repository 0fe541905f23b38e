#pragma once

#include "Grouping.h"
#include "Program.h"
#include "Target.h"

#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>

namespace sextant::backend {

/// The cost-model view of one Task after tiling.
struct TaskCost {
    Tiling tiling;
    uint64_t flops = 0;
    uint64_t dmaBytes = 0;   ///< DRAM<->SRAM bytes over all tiles
    uint64_t estCycles = 0;  ///< the chosen tiling's estimate (no dispatch)
    uint64_t computeCycles = 0; ///< the unit's busy cycles over all tiles (no DMA)
    /// One tile's DRAM pieces, for the SRAM plan (SramPlanner.h): bytes per activation input
    /// value, the weights (reloaded every tile when weightsSplit) and the output.
    std::vector<std::pair<const ir::Value*, uint64_t>> inputTile;
    uint64_t weightTile = 0;
    bool weightsSplit = false;
    uint64_t outTile = 0;
    /// The f32 sums of an output tile over a chunked reduction (TileWork::accBytes); 0: none.
    uint64_t accumulatorTile = 0;
};

/// How the tile search prices a double-buffered Task's DRAM latency.
enum class TilePricing {
    /// Once per tile: a tile's loads wait out the latency before its compute can use them (two
    /// slots cannot hide it behind a tile that moves fewer bytes than the latency covers).
    LatencyPerTile,
    /// Once per Task, as the simulator times a stream: the requests queue and each one's latency
    /// passes under the bytes before it. It favours more, smaller tiles.
    LatencyOnce,
};

class TileCache;

/// What the tile search may choose and how it prices it.
struct TileOptions {
    TilePricing pricing = TilePricing::LatencyPerTile;
    /// Whether a dense convolution may take its input channels in chunks, each summed into an
    /// f32 accumulator that holds the output tile until the last (CostModel.cpp, convModel).
    bool chunkReductions = true;
    /// Answers already found for the same graph (see TileCache); none: every call searches.
    TileCache* cache = nullptr;
};

/// A tiled Task's cycles, as the tile search prices them: `tiles` tiles pipelined (double
/// buffered when more than one), each computing `computeCycles / tiles` and moving its share of
/// `dmaBytes` at the DMA rate, plus the DRAM latency (none when it moves nothing) as `pricing`
/// says: per tile, tiles * max(compute, dma + latency) + min(compute, dma + latency); once,
/// max(compute, dma) + min(compute, dma) / tiles + latency. One tile: compute + dma + latency.
uint64_t pipelinedCycles(uint64_t tiles, uint64_t computeCycles, uint64_t dmaBytes, const Target& target,
                         TilePricing pricing = TilePricing::LatencyPerTile);

/// Chooses the output tile for a group so that its SRAM working set (input + weights + output
/// tiles, doubled when double-buffered) fits the core's SRAM, minimising estimated cycles.
///
/// Candidates split the output along its outermost non-reduction dims, halving one dim at a time;
/// a global pooling then also splits the dims it reduces (Tiling::reduceChunks). A tile loads the
/// input its outputs need: the receptive window of a convolution or pooling, the region a Resize
/// samples, the window that scatters into a transposed convolution's tile.
/// Per tile: compute cycles on the group's unit (cube: ceil(M/16)*ceil(N/16)*ceil(K/16) per output
/// matrix, convolution via its im2col dims, transposed convolution with K = input channels x the
/// kernel taps reaching one output; vector: ceil(elements/lanes) per elementwise step) and
/// DMA cycles (bytes in + out / DMA bytes per cycle + DRAM latency). With double buffering the
/// tiles pipeline: cycles = tiles * max(compute, dma) + min(compute, dma).
/// Fails, naming the node, when not even the smallest tile fits.
/// A slice of a group's output: the first `extent` elements of dim `axis` (the rest as they are).
struct OutputSlice {
    size_t axis = 0;
    int64_t extent = 0;
};
/// chooseTiling's answers for one graph and target. `lower` builds a small graph's program many
/// ways (Concats in place and copied, up to nine candidates each), and each tiles the same groups
/// and slices again; the answer depends only on the group's nodes, the slice and the options, so
/// it is looked up instead. Shared by the candidates lowered on two threads.
class TileCache {
public:
    using Key = std::tuple<std::vector<const ir::Node*>, size_t, int64_t, bool, int, bool>;
    std::optional<TaskCost> find(const Key& key) {
        std::lock_guard<std::mutex> lock(m_mutex);
        auto it = m_costs.find(key);
        return it == m_costs.end() ? std::nullopt : std::optional<TaskCost>(it->second);
    }
    void put(Key key, const TaskCost& cost) {
        std::lock_guard<std::mutex> lock(m_mutex);
        m_costs.emplace(std::move(key), cost);
    }
    size_t size() {
        std::lock_guard<std::mutex> lock(m_mutex);
        return m_costs.size();
    }

private:
    std::mutex m_mutex;
    std::map<Key, TaskCost> m_costs;
};

/// With `slice`, the tiling and cost of computing only that slice (one part of a split group).
/// `options` says which tiles may be taken and how they are priced.
Expected<TaskCost> chooseTiling(const Group& group, const Target& target, const OutputSlice* slice = nullptr,
                                TileOptions options = {});

/// The cost of a host group (UnitKind::Host): one host step's fixed cost (the interrupt and the
/// relaunch), its flops at one host core's rate and the DRAM bytes it reads and writes, all in
/// NPU cycles (HostCost.cpp). No tiles, no SRAM pieces, no DMA.
TaskCost hostCost(const Group& group);

/// What a host Task moves across the host/NPU boundary: the bytes of the DRAM buffers it reads
/// (its inputs, each once) and writes (its outputs). A buffer the host holds (a shape only the
/// run decides: size 0, no DRAM address) moves nothing counted.
struct HostTransfer {
    uint64_t read = 0, written = 0;
};
/// `sizeOf` gives a buffer's size by its id.
HostTransfer hostTransfer(const Task& t, const std::function<uint64_t(int)>& sizeOf);
/// The NPU cycles the host takes to read or write `bytes` of DRAM (the rate hostCost prices them at).
uint64_t hostTransferCycles(uint64_t bytes);

} // namespace sextant::backend
