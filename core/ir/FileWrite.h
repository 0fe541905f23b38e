#pragma once

// Writing a file the user names (an export, a report) so that nothing half-written is left
// behind: the content goes to a temporary file beside the target, which is renamed over it only
// once the whole was written. A failure leaves any earlier file of that name as it was.

#include "core/ir/Error.h"

#include <string>
#include <string_view>

namespace sextant {

/// Writes `content` to `path` through a temporary file in the same folder and a rename. Errors
/// (ErrorKind::Io) name `what` ("memory plan") and the path: a missing folder, a folder that is
/// not writable, a full disk.
Status writeFileAtomically(const std::string& path, std::string_view content, const std::string& what);

} // namespace sextant
