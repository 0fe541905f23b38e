#pragma once

#include "ProfileReader.h"
#include "core/ir/Error.h"

#include <cstdint>
#include <string>

namespace sextant::profiler {

/// The run as Chrome Trace Event JSON (opens in Perfetto / chrome://tracing): a process per core
/// (pid = core) with a thread per unit (tid 0 "core N cube", 1 "core N vector") and one for its
/// DMA engine (tid 2 "core N dma"). A complete ("X") event per Task on its unit over its compute
/// phase (the whole Task when the run has no phases), and on the DMA thread one per load,
/// store or double-buffered stream phase (cat "dma", name "load" / "store" / "stream") and one per
/// DMA-only Task; timestamps in microseconds at the run's clock (metric clock_ghz), and a flow
/// ("s"/"f") pair per dependency, from the producer's last slice to the consumer's first.
/// Deterministic for a given database.
Expected<std::string> chromeTraceJson(const ProfileReader& reader, int64_t run = -1);

/// Reads `dbPath` and writes its trace to `jsonPath`.
Status exportChromeTrace(const std::string& dbPath, const std::string& jsonPath, int64_t run = -1);

} // namespace sextant::profiler
