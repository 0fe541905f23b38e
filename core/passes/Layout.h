#pragma once

#include "Pass.h"

#include <memory>
#include <string>

namespace sextant::passes {

/// Node attribute the `layout` pass writes on the nodes it puts in the blocked layout:
/// "NC1HWC0" (the NPU keeps the node's output in NC1HWC0; its output value carries that tag).
inline constexpr const char* kLayoutAttr = "layout";

/// `layout`: assigns the NPU's blocked NC1HWC0 layout (C0 from the target) to 2-D convolutions
/// and to the elementwise, pooling and concat ops around them, chosen for the whole graph by a
/// minimum cut (fewest conversions, then fewest bytes), and inserts a real conversion node,
/// sextant.TransData (attributes src_format, dst_format), where a blocked region begins (a plain
/// activation read by blocked nodes: NCHW -> NC1HWC0, one per value, shared by every blocked
/// reader) or ends (a blocked value read by a plain node or returned as a graph output:
/// NC1HWC0 -> NCHW, one per value, shared by every plain reader). Tensors stay logical NCHW (TransData is the identity on the reference
/// executor); the backend sizes NC1HWC0 values with the channel padding and costs the
/// conversions. Inverse TransData pairs cancel. PipelineConfig::npuLayout NpuLayout::NCHW turns the
/// blocked regions off. Rule: assign-npu-layout, one application per region.
std::unique_ptr<Pass> makeLayoutPass();

/// The id of the layout pass's only rule (one application per blocked region, named by the
/// region's first node in graph order).
inline constexpr const char* kAssignLayoutRule = "assign-npu-layout";

/// The layout pass's second rule: marks a Reshape / Flatten / Squeeze / Unsqueeze of a plain
/// (not NC1HWC0) tensor a view (Node::setView, printed view = 1). The data of a plain tensor is contiguous in
/// row-major order whatever its shape, so the backend lowers such a node to no Task at all: its
/// output aliases its input's buffer and its consumers read the producer's bytes. Not for a
/// graph output (the host reads outputs from their own buffers). One application per node.
inline constexpr const char* kReshapeViewRule = "reshape-as-view";
inline constexpr const char* kConcatInPlaceRule = "concat-in-place";

/// The layout pass's third rule: a Transpose between channels-last NHWC and NCHW next to a
/// region boundary is absorbed into the TransData (NHWC -> NC1HWC0 on entry, NC1HWC0 -> NHWC on
/// exit), which reorders in one DMA pass what would otherwise take two. One application per
/// Transpose absorbed.
inline constexpr const char* kAbsorbTransposeRule = "absorb-transpose-into-transdata";

/// The layout pass's fourth rule: a 2-D convolution whose data input is a plain activation of
/// at most kSmallChannels channels (a network's RGB or grey input) reads it as it is, in NCHW:
/// the cube's image-to-column load packs the few channels into its lanes as it fills the window
/// (Ascend's small-channel C04 load), so no TransData pads 3 channels to 16 in DRAM and the
/// convolution reads a third of the bytes. One application per convolution.
inline constexpr const char* kSmallChannelInputRule = "read-small-channel-input";
inline constexpr int64_t kSmallChannels = 4;

/// The layout pass's fifth rule, the other end of the fourth: a 2-D convolution (Conv,
/// FusedConv, ConvTranspose, FusedConvTranspose) with at most kSmallChannels output channels
/// whose output no blocked node reads (a detection or segmentation head: one score map, a few
/// box offsets) writes it in NCHW as its epilogue stores it, instead of writing C0 lanes per
/// pixel of which all but a few are padding and converting them back with a TransData. One
/// application per convolution.
inline constexpr const char* kSmallChannelOutputRule = "write-small-channel-output";

// kReshapeViewRule marks a node with Node::setView (printed `view = 1`).

} // namespace sextant::passes
