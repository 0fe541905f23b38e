#pragma once

// ceilDiv and alignUp live in core/ir/MathUtil.h, where the ops' shape arithmetic can use them
// too; the backend names them unqualified.
#include "core/ir/MathUtil.h"

namespace sextant::backend {

using ir::alignUp;
using ir::ceilDiv;

} // namespace sextant::backend
