#pragma once

// Reads a protobuf message from a file with clear, file-naming errors; used for models and
// tensor files alike.

#include "core/ir/Error.h"

#include <google/protobuf/message.h>

#include <string>

namespace sextant::frontend {

/// Parses `path` into `message`, streaming from the file descriptor so large payloads are copied
/// once (kernel → protobuf memory). `what` is "model" or "tensor file" for the messages. Fails
/// with the path named for: a missing or unreadable file, an empty file, or bytes that do not
/// parse as the message (truncated or not a protobuf).
Status parseProtoFile(const std::string& path, const char* what, google::protobuf::Message& message);

} // namespace sextant::frontend
