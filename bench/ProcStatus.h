#pragma once

// Memory figures of the benchmark process itself, from /proc/self (Linux).

#include <fstream>
#include <sstream>
#include <string>

namespace sextant::bench {

/// A field of /proc/self/status in KiB ("VmRSS", "VmHWM"); -1 when unavailable.
inline long procStatusKb(const std::string& field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(field + ":", 0) == 0) {
            std::istringstream s(line.substr(field.size() + 1));
            long kb = -1;
            s >> kb;
            return kb;
        }
    return -1;
}

/// Resets VmHWM (the peak RSS) to the current RSS, so the next peak is the work's that follows.
inline void resetPeakRss() {
    std::ofstream clear("/proc/self/clear_refs");
    clear << "5";
}

} // namespace sextant::bench
