#pragma once

#include "Target.h"

#include <cstdint>
#include <vector>

namespace sextant::backend {

/// Where and when the list scheduler put one Task.
struct ScheduleSlot {
    int core = 0;
    uint64_t start = 0;
    uint64_t end = 0; ///< start + dispatch + cycles
};

/// List scheduling over the target's cores, Tasks taken in the given topological order
/// (`preds[i]` < i). Each Task goes to the core where it can start earliest: an input produced on
/// another core arrives one event latency after its producer ends, so dependent chains stay on
/// one core unless another core is idle long enough to pay for the sync. Ties pick the lowest
/// core. Each core runs one Task at a time, paying the dispatch overhead per Task (the SRAM plan
/// re-times it afterwards, with the Tasks that load while the one before them computes).
/// `follow[i]` >= 0 pins Task i to the core of the earlier Task follow[i] (a part of a split node
/// that reads its producer's part's slice from that core's SRAM); -1 or a missing entry: free.
/// `host[i]` != 0 puts Task i on lane `hostLane` (the host, one step at a time, synced with the
/// cores by events like another core); a missing entry: an NPU Task.
std::vector<ScheduleSlot> listSchedule(const std::vector<std::vector<int>>& preds,
                                       const std::vector<uint64_t>& cycles, const Target& target,
                                       const std::vector<int>& follow = {}, const std::vector<char>& host = {},
                                       int hostLane = -1);

} // namespace sextant::backend
