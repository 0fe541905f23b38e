#pragma once

#include "PassManager.h"

#include "core/ir/Graph.h"

#include <cstddef>
#include <set>
#include <vector>

namespace sextant::passes {

/// An estimate of the heap a set of graphs holds: node/value/attribute/provenance storage (with
/// container overheads) per distinct graph, tensor storage once per distinct buffer (copies of a
/// Tensor share storage), and snapshot texts. Used to check that a pipeline's snapshots stay a
/// small multiple of one graph.
struct MemoryFootprint {
    size_t structureBytes = 0; ///< nodes, values, attributes, provenance, name indexes
    size_t tensorBytes = 0;    ///< constant and attribute tensor data, each buffer once
    size_t textBytes = 0;      ///< printed IR held by snapshots
    size_t total() const { return structureBytes + tensorBytes + textBytes; }
};

/// Adds `graph` to `fp`; `seenBuffers` remembers tensor buffers already counted.
void addGraphFootprint(const ir::Graph& graph, MemoryFootprint& fp,
                       std::set<const void*>& seenBuffers);

/// The footprint of one graph alone.
MemoryFootprint graphFootprint(const ir::Graph& graph);

/// Adds one snapshot state: its record pointer arrays, every record not yet in `seen` (records
/// shared between states count once), tensors once per buffer, its text if it was printed and
/// its graph if one is currently built and held.
void addStateFootprint(const SnapshotState& state, MemoryFootprint& fp,
                       std::set<const void*>& seen);

/// The footprint of all snapshots together: a state shared by several snapshots, a record shared
/// by several states and a tensor buffer shared by several records are counted once.
MemoryFootprint snapshotsFootprint(const std::vector<Snapshot>& snapshots);

} // namespace sextant::passes
