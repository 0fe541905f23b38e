#pragma once

// Reading a small outside file whole (a target, a switch file, a key list, a report): bounded, so
// a file of endless bytes (/dev/zero, a pipe) or a huge one is an error naming it, not a process
// that grows until the kernel stops it.

#include "core/ir/Error.h"

#include <cstdint>
#include <string>

namespace sextant {

/// The default bound for a text file a user hands the tools: 64 MiB.
inline constexpr uint64_t kTextFileLimit = uint64_t{64} << 20;

/// The whole of `path`, read in chunks up to `limit` bytes. Errors (ErrorKind::Io) name `what`
/// ("target file") and the path: missing or unreadable, or larger than the limit.
Expected<std::string> readFileLimited(const std::string& path, const std::string& what, uint64_t limit = kTextFileLimit);

} // namespace sextant
