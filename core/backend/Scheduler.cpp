#include "Scheduler.h"

#include <algorithm>

namespace sextant::backend {

std::vector<ScheduleSlot> listSchedule(const std::vector<std::vector<int>>& preds,
                                       const std::vector<uint64_t>& cycles, const Target& target,
                                       const std::vector<int>& follow, const std::vector<char>& host, int hostLane) {
    const int cores = std::max(1, target.numCores);
    std::vector<uint64_t> coreFree(static_cast<size_t>(std::max(cores, hostLane + 1)), 0);
    std::vector<ScheduleSlot> out(preds.size());
    for (size_t i = 0; i < preds.size(); ++i) {
        int bestCore = 0;
        uint64_t bestStart = UINT64_MAX;
        const int pinned = i < follow.size() && follow[i] >= 0 && static_cast<size_t>(follow[i]) < i
                               ? out[static_cast<size_t>(follow[i])].core
                               : -1;
        const bool onHost = i < host.size() && host[i] && hostLane >= 0;
        for (int c = onHost ? hostLane : 0; c < (onHost ? hostLane + 1 : cores); ++c) {
            if (pinned >= 0 && c != pinned)
                continue;
            uint64_t ready = coreFree[static_cast<size_t>(c)];
            for (int p : preds[i]) {
                const ScheduleSlot& s = out[static_cast<size_t>(p)];
                ready = std::max(ready, s.end + (s.core == c ? 0 : target.eventLatencyCycles));
            }
            if (ready < bestStart) {
                bestStart = ready;
                bestCore = c;
            }
        }
        ScheduleSlot& s = out[i];
        s.core = bestCore;
        s.start = bestStart;
        s.end = bestStart + target.dispatchCycles + cycles[i];
        coreFree[static_cast<size_t>(bestCore)] = s.end;
    }
    return out;
}

} // namespace sextant::backend
