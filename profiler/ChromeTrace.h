#pragma once

#include "ProfileReader.h"
#include "core/ir/Error.h"

#include <cstdint>
#include <string>

namespace sextant::profiler {

/// The run as Chrome Trace Event JSON (opens in Perfetto / chrome://tracing): one complete ("X")
/// event per Task with pid = core and tid = unit (0 cube, 1 vector, 2 dma), timestamps in
/// microseconds at the run's clock (metric clock_ghz), and a flow ("s"/"f") pair per dependency.
/// Deterministic for a given database.
Expected<std::string> chromeTraceJson(const ProfileReader& reader, int64_t run = -1);

/// Reads `dbPath` and writes its trace to `jsonPath`.
Status exportChromeTrace(const std::string& dbPath, const std::string& jsonPath, int64_t run = -1);

} // namespace sextant::profiler
