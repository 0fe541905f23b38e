#pragma once

#include "Pass.h"

#include <memory>
#include <string>

namespace sextant::passes {

/// Node attribute the `layout` pass writes: the physical layout the NPU keeps the node's
/// output in ("NC1HWC0", or "NCHW" on a node that converts a blocked input back to plain).
inline constexpr const char* kLayoutAttr = "layout";

/// `layout`: assigns the NPU's blocked NC1HWC0 layout (C0 = 16) to 2-D convolutions and to the
/// elementwise, pooling and concat ops they feed, so a conversion to and from plain NCHW
/// happens only where the blocked region ends. Annotation only: tensors stay logical NCHW for
/// the reference executor; value types carry the layout tag (printed "@NC1HWC0") and plain
/// 4-D values that a blocked value converts into are tagged "@NCHW", which is what GreyOps
/// counts as a layout conversion. Rule: assign-npu-layout.
std::unique_ptr<Pass> makeLayoutPass();

/// The id of the layout pass's only rule (one application per node put in NC1HWC0).
inline constexpr const char* kAssignLayoutRule = "assign-npu-layout";

} // namespace sextant::passes
