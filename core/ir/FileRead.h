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

/// When `path` exists and is neither a regular file nor a folder, what it is ("a named pipe",
/// "a character device", "a block device", "a socket"); otherwise empty. Readers that need a
/// file (a model, a tensor, a database, an artifact) refuse these by name: a named pipe nobody
/// writes to would keep open() waiting forever, and a device such as /dev/zero never ends.
std::string specialFileKind(const std::string& path);

/// The whole of `path`, read in chunks up to `limit` bytes. Errors (ErrorKind::Io) name `what`
/// ("target file") and the path: missing or unreadable, or larger than the limit.
Expected<std::string> readFileLimited(const std::string& path, const std::string& what, uint64_t limit = kTextFileLimit);

} // namespace sextant
