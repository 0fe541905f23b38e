#include "Tiling.h"

#include "CostModel.h"
#include "MathUtil.h"

#include <algorithm>
#include <cstdio>

namespace sextant::backend {

namespace {

/// "512 KiB", "1.5 KiB" or "32 bytes": a size as a user reads it, never rounded to a figure it is not.
std::string kib(uint64_t bytes) {
    if (bytes < 1024)
        return std::to_string(bytes) + " bytes";
    if (bytes % 1024 == 0)
        return std::to_string(bytes / 1024) + " KiB";
    char text[32];
    std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024.0);
    return text;
}

/// One candidate tile, priced.
struct Evaluated {
    std::vector<int64_t> tile; ///< output dims, then the model's reduceDims
    int64_t numTiles = 1;
    int64_t reduceChunks = 1;
    uint64_t sram = 0;
    uint64_t cycles = 0;
    uint64_t dmaBytes = 0;
    uint64_t flops = 0;
    uint64_t compute = 0; ///< compute cycles over all tiles
    bool fits = false;
    size_t order = 0;
    TileWork work; ///< one tile's pieces
};

/// The output dims to tile: the model's, with `slice` applied. Fails for a slice outside the
/// output and for a dynamic dim, naming the node.
Expected<std::vector<int64_t>> slicedOutput(const ir::Node& n, const WorkModel& model, const OutputSlice* slice) {
    std::vector<int64_t> od = model.outDims;
    if (slice) {
        if (slice->axis >= od.size() || slice->extent < 1 || slice->extent > od[slice->axis])
            return makeError(ErrorKind::Invalid, "node '" + n.name() + "': slice out of the output's range", n.name());
        od[slice->axis] = slice->extent;
    }
    for (int64_t d : od)
        if (d < 0)
            return makeError(ErrorKind::Unsupported, "node '" + n.name() + "' has a dynamic output shape", n.name());
    return od;
}

/// Candidates: every combination of the split axes (and the reduced dims the model lets
/// split) each halved 0, 1, 2, ... times down to 1, the whole output first. Halving one axis
/// all the way before touching the next missed the good tilings of a convolution whose
/// blocked input does not fit: split into single output channels first, every tile reloaded
/// the whole input window (BlazeFace's first convolution moved 29x the bytes it needs). A
/// rank-4 output gives a few hundred combinations; past kMaxCandidates (large ranks and
/// extents) only the whole-axis-at-a-time chains in both axis orders are tried.
std::vector<std::vector<int64_t>> candidateTiles(const std::vector<int64_t>& full, const std::vector<size_t>& axes) {
    std::vector<std::vector<int64_t>> levels; // per axis: full, halved, ..., 1
    size_t combinations = 1;
    for (size_t axis : axes) {
        std::vector<int64_t> l{full[axis]};
        while (l.back() > 1)
            l.push_back((l.back() + 1) / 2);
        combinations = std::min<size_t>(combinations * l.size(), SIZE_MAX / 64);
        levels.push_back(std::move(l));
    }
    constexpr size_t kMaxCandidates = 4096;
    std::vector<std::vector<int64_t>> tiles;
    if (combinations <= kMaxCandidates) {
        // Odometer over the levels, the last axis turning fastest.
        std::vector<size_t> at(axes.size(), 0);
        while (true) {
            std::vector<int64_t> tile = full;
            for (size_t i = 0; i < axes.size(); ++i)
                tile[axes[i]] = levels[i][at[i]];
            tiles.push_back(std::move(tile));
            size_t i = axes.size();
            while (i > 0 && ++at[i - 1] == levels[i - 1].size())
                at[--i] = 0;
            if (i == 0)
                break;
        }
        return tiles;
    }
    tiles.push_back(full);
    for (bool innerFirst : {false, true}) {
        std::vector<int64_t> cur = full;
        for (size_t k = 0; k < axes.size(); ++k) {
            const size_t i = innerFirst ? axes.size() - 1 - k : k;
            for (size_t l = 1; l < levels[i].size(); ++l) {
                cur[axes[i]] = levels[i][l];
                if (std::find(tiles.begin(), tiles.end(), cur) == tiles.end())
                    tiles.push_back(cur);
            }
        }
    }
    return tiles;
}

/// Prices one tile of `full` (whose first `rank` dims are the output's): its SRAM working set
/// (aligned pieces, doubled when double-buffered), DMA bytes and pipelined cycles.
Evaluated evaluate(const WorkModel& model, const std::vector<int64_t>& tile, const std::vector<int64_t>& full,
                   size_t rank, const Target& t, TilePricing pricing) {
    Evaluated e;
    e.tile = tile;
    for (size_t d = 0; d < full.size(); ++d) {
        const int64_t parts = e.tile[d] == 0 ? 1 : ceilDivExtent(full[d], e.tile[d]);
        e.numTiles *= parts;
        if (d >= rank)
            e.reduceChunks *= parts;
    }
    TileWork w = model.tileWork(e.tile);
    e.work = w;
    const uint64_t align = t.sramAlign;
    // Each activation input has its own slot (SramPlanner.cpp), aligned on its own.
    uint64_t inSlots = 0;
    for (const auto& in : w.inputs)
        inSlots += alignUp(in.second, align);
    if (w.inputs.empty())
        inSlots = alignUp(w.inBytes, align);
    uint64_t ws = inSlots + alignUp(w.weightBytes, align) + alignUp(std::max(w.outBytes, w.accBytes), align);
    bool doubleBuffer = e.numTiles > 1;
    e.sram = doubleBuffer ? 2 * ws : ws;
    e.fits = e.sram <= t.sramBytes;
    uint64_t tiles64 = static_cast<uint64_t>(e.numTiles);
    // An output tile is written once, after the last chunk of a split reduction.
    const uint64_t outTiles = static_cast<uint64_t>(e.numTiles / e.reduceChunks);
    e.dmaBytes = tiles64 * w.inBytes + outTiles * w.outBytes + (w.weightsSplit ? tiles64 : 1) * w.weightBytes;
    e.compute = w.computeCycles * tiles64;
    e.cycles = pipelinedCycles(tiles64, e.compute, e.dmaBytes, t, pricing);
    e.flops = w.flops * tiles64;
    return e;
}

/// Runner-ups: the cheapest other candidates, so the GUI can show what was traded away. Three
/// of them; the whole output among them when it was not chosen, since it says why the op is
/// tiled at all (the cheapest others are close variants of the chosen tile).
std::vector<Tiling::Candidate> runnerUps(const std::vector<Evaluated>& evals, const Evaluated& best, size_t rank,
                                         const Target& t) {
    std::vector<const Evaluated*> others;
    for (const Evaluated& e : evals)
        if (&e != &best && e.tile != best.tile)
            others.push_back(&e);
    // Only the first three are shown: sorted, the rest left in any order (order is unique, so
    // these three are those a full sort puts first).
    std::partial_sort(others.begin(), others.begin() + static_cast<std::ptrdiff_t>(std::min<size_t>(3, others.size())),
                      others.end(), [](const Evaluated* a, const Evaluated* b) {
                          return std::tie(a->cycles, a->order) < std::tie(b->cycles, b->order);
                      });
    if (others.size() > 3) {
        auto whole = std::find_if(others.begin(), others.end(), [](const Evaluated* e) { return e->order == 0; });
        if (whole != others.end() && whole - others.begin() >= 3) {
            const Evaluated* w = *whole;
            others.erase(whole);
            others.insert(others.begin() + 2, w);
        }
    }
    std::vector<Tiling::Candidate> out;
    for (size_t i = 0; i < others.size() && i < 3; ++i) {
        const Evaluated& e = *others[i];
        Tiling::Candidate c;
        c.tileShape.assign(e.tile.begin(), e.tile.begin() + static_cast<std::ptrdiff_t>(rank));
        c.reduceChunks = static_cast<int>(std::min<int64_t>(e.reduceChunks, INT32_MAX));
        c.estCycles = e.cycles;
        if (!e.fits)
            c.rejectedBecause = "needs " + kib(e.sram) + " SRAM > " + kib(t.sramBytes);
        else
            c.rejectedBecause = "est " + std::to_string(e.cycles) + " cycles >= " + std::to_string(best.cycles) + " chosen";
        out.push_back(std::move(c));
    }
    return out;
}

} // namespace

uint64_t pipelinedCycles(uint64_t tiles, uint64_t computeCycles, uint64_t dmaBytes, const Target& t,
                         TilePricing pricing) {
    tiles = std::max<uint64_t>(tiles, 1);
    if (pricing == TilePricing::LatencyOnce) {
        const uint64_t dma = dmaBytes == 0 ? 0 : ceilDiv(dmaBytes, std::max<uint64_t>(t.dmaBytesPerCycle, 1));
        const uint64_t latency = dmaBytes == 0 ? 0 : t.dramLatencyCycles;
        if (tiles == 1)
            return computeCycles + dma + latency;
        return std::max(computeCycles, dma) + std::min(computeCycles, dma) / tiles + latency;
    }
    const uint64_t c = computeCycles / tiles;
    const uint64_t d =
        dmaBytes == 0 ? 0 : ceilDiv(ceilDiv(dmaBytes, tiles), std::max<uint64_t>(t.dmaBytesPerCycle, 1)) + t.dramLatencyCycles;
    return tiles * std::max(c, d) + std::min(c, d);
}

Expected<TaskCost> chooseTiling(const Group& group, const Target& t, const OutputSlice* slice, TileOptions options) {
    if (options.cache) {
        TileCache::Key key{group.nodes, slice ? slice->axis : 0, slice ? slice->extent : 0, slice != nullptr,
                           static_cast<int>(options.pricing), options.chunkReductions};
        if (std::optional<TaskCost> known = options.cache->find(key))
            return *known;
        TileCache* cache = options.cache;
        options.cache = nullptr;
        Expected<TaskCost> cost = chooseTiling(group, t, slice, options);
        if (cost.ok())
            cache->put(std::move(key), *cost);
        return cost;
    }
    const ir::Node& n = *group.nodes.front();
    SX_ASSIGN(WorkModel model, workModel(group, t, options.chunkReductions));
    SX_ASSIGN(std::vector<int64_t> od, slicedOutput(n, model, slice));
    const size_t rank = od.size();
    std::vector<int64_t> full = od;
    full.insert(full.end(), model.reduceDims.begin(), model.reduceDims.end());
    std::vector<size_t> axes(model.splitAxes.begin(), model.splitAxes.end());
    for (size_t r = 0; r < model.reduceDims.size(); ++r)
        axes.push_back(rank + r);

    const std::vector<std::vector<int64_t>> tiles = candidateTiles(full, axes);
    std::vector<Evaluated> evals;
    evals.reserve(tiles.size());
    for (size_t i = 0; i < tiles.size(); ++i) {
        evals.push_back(evaluate(model, tiles[i], full, rank, t, options.pricing));
        evals.back().order = i;
    }
    const Evaluated* best = nullptr;
    for (const Evaluated& e : evals)
        if (e.fits && (!best || e.cycles < best->cycles))
            best = &e;
    if (!best) {
        const Evaluated& smallest = evals.back();
        return makeError(ErrorKind::Unsupported,
                         "node '" + n.name() + "': no tiling fits in " + kib(t.sramBytes) +
                             " of SRAM (the smallest tile needs " + kib(smallest.sram) + ")",
                         n.name());
    }
    TaskCost cost;
    cost.tiling.tileShape.assign(best->tile.begin(), best->tile.begin() + static_cast<std::ptrdiff_t>(rank));
    cost.tiling.numTiles = static_cast<int>(std::min<int64_t>(best->numTiles, INT32_MAX));
    cost.tiling.reduceChunks = static_cast<int>(std::min<int64_t>(best->reduceChunks, INT32_MAX));
    cost.tiling.doubleBuffered = best->numTiles > 1;
    cost.tiling.sramBytes = best->sram;
    cost.tiling.estCycles = best->cycles;
    cost.estCycles = best->cycles;
    cost.computeCycles = best->compute;
    cost.dmaBytes = best->dmaBytes;
    cost.inputTile = best->work.inputs;
    if (cost.inputTile.empty() && best->work.inBytes > 0) // all of it is the first activation
        for (const ir::Value* v : n.inputs())
            if (v && !v->isConstant()) {
                cost.inputTile.emplace_back(v, best->work.inBytes);
                break;
            }
    cost.weightTile = best->work.weightBytes;
    cost.weightsSplit = best->work.weightsSplit;
    cost.outTile = best->work.outBytes;
    cost.accumulatorTile = best->work.accBytes;
    // FLOPs of the whole op (tiles at the edge are partial; count the real output).
    cost.flops = model.tileWork(full).flops;
    cost.tiling.candidates = runnerUps(evals, *best, rank, t);
    return cost;
}

} // namespace sextant::backend
