#pragma once

#include "Program.h"
#include "core/ir/Graph.h"

#include <optional>
#include <vector>

namespace sextant::backend {

/// A fused group: the nodes one Task executes. Fusion already happened in the passes (a fused
/// node such as FusedConv is a group on its own), so today every group holds exactly one node.
struct Group {
    std::vector<const ir::Node*> nodes;
    std::string kernel; ///< kernel id: the op name of the group's main node ("FusedConv")
    UnitKind unit = UnitKind::Vector;
};

/// True for a node the backend lowers to no Task: a Reshape / Flatten / Squeeze / Unsqueeze the
/// layout pass marked view = 1 (rule reshape-as-view) whose input is plain (not NC1HWC0) and whose
/// output is not a graph output. Its output aliases its input's buffer.
bool isViewNode(const ir::Node& node);

/// The value the loader fills the output of `node` with, when `node` lowers to no Task because
/// its output is a constant of the program the loader writes before the run, as it writes the
/// weights (Buffer::fill): a ConstantOfShape of a constant shape whose float output is static,
/// plain, and read only as weights (ir::onlyFeedsWeights). fold-constants folds such a node up to
/// 4M elements; past that (the FC weights of the onnx "light" models) this keeps it from
/// rewriting tens of megabytes on every inference. nullopt otherwise.
std::optional<double> loadTimeFill(const ir::Node& node);

/// Whether Concat `node`, which the rule concat-in-place marked (Node::isView), lowers in place on
/// `target`: no Task; each input's producer writes it straight into its part of the output's
/// DRAM buffer (Buffer::inPlaceOf). It rechecks what the rule checked (static tensors, every dim
/// before the axis 1, plain, or NC1HWC0 joined along whole channel blocks of the target's c0;
/// inputs written by nodes and used by no other in-place Concat), and needs what only the backend
/// knows: every input kept in the output's element type (storedDType) and each one's bytes a
/// multiple of the target's dram_align, so that every part starts aligned. Otherwise it lowers
/// as a copy.
bool lowersInPlace(const ir::Node& node, const Target& target);


/// The value whose buffer holds `v`'s bytes: `v` itself, or for the output of a view node the
/// buffer owner of its input (followed through chains of views).
const ir::Value* bufferOwner(const ir::Value* v);

/// The first input or output of `node` whose shape only the run decides (unknown dims after
/// specialisation: the output of NonZero, NonMaxSuppression, Unique, Compress, a Loop that stops
/// on a condition, and what reads them); null when every shape is static.
const ir::Value* dataShapedValue(const ir::Node& node);

/// Whether `node` is a QuantizeLinear or DequantizeLinear whose scale is not one value (per axis
/// or blocked): the vector unit takes one scale and zero point per tensor, so it runs on the host.
/// (A DequantizeLinear of a constant weight, the usual per-axis one, folds before lowering.)
bool perAxisQuantization(const ir::Node& node);

/// Whether `node` runs on the host whatever its op's cost class: it touches a data-shaped value
/// or is a per-axis quantization. The graph view colours such a node as host.
bool hostOnlyHere(const ir::Node& node);

/// The unit an op's cost class runs on; UnitKind::Host for an op the NPU cannot run (the op
/// table's cost class Host) and for a node hostOnlyHere, which then runs on the host (DESIGN §6,
/// partitions).
UnitKind unitFor(const ir::Node& node);

/// Why `node` runs on the host, one sentence for `compile --stats`, the artifact and the GUI's
/// inspector; empty for a node the NPU runs.
std::string hostReason(const ir::Node& node);

/// Forms the groups of a graph in node order (a topological order), skipping view nodes. Fails,
/// naming the input, when a graph input has no static shape. A data-shaped value has a buffer of
/// size 0 the host holds (no DRAM address); only host Tasks touch it.
Expected<std::vector<Group>> formGroups(const ir::Graph& graph);

} // namespace sextant::backend
