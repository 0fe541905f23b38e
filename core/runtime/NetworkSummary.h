#pragma once

// A compiled network's figures as one CSV row (docs/summary-csv.md), as Arm Vela's per-network
// summary gives them: latency, Tasks and cores, MACs, DRAM traffic against the compulsory bytes,
// each core's SRAM peak, events, grey ops, and the roofline bound the latency is measured against.
// Rows of several models and targets append to one file, for a spreadsheet or a CI gate.

#include "core/backend/Program.h"
#include "core/ir/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace sextant::runtime {

/// Version of the summary CSV's columns; a later version only appends columns.
inline constexpr int kSummaryCsvVersion = 1;

struct NetworkSummary {
    std::string model;
    std::string target;
    int optLevel = 2;
    uint64_t latencyCycles = 0;
    std::string latencySource; ///< "simulated" (sextant-cli run) or "estimated" (compile: the schedule)
    double latencyMicros = 0;
    size_t tasks = 0;
    int coresUsed = 0;       ///< cores with at least one Task (host steps not counted)
    int hostTasks = 0;       ///< Tasks the host runs
    uint64_t macs = 0;       ///< multiply-accumulates of the cube Tasks
    uint64_t dramTrafficBytes = 0, compulsoryBytes = 0, dramArenaBytes = 0, weightBytes = 0;
    std::vector<uint64_t> sramPeak; ///< bytes, one per core of the target
    size_t events = 0;
    int greyTransposes = 0, greyCopyOrCast = 0, greyLayoutConversions = 0;
    int greyQuantization = 0; ///< QuantizeLinear / DequantizeLinear left as nodes of their own
    /// The least time any schedule could take: the larger of the cube MACs at every core's best
    /// cube rate (cube_k or cube_k_int8, whichever is deeper) and the compulsory bytes at the
    /// DRAM bandwidth. latency / roofline says how far from it the program is.
    uint64_t rooflineCycles = 0;
    const char* rooflineBound = "compute"; ///< which of the two sets it: "compute" or "memory"
};

/// The figures of `program` (its graph the optimised one), with `latencyCycles` from the
/// simulator or the schedule as `source` says.
NetworkSummary summarise(const backend::Program& program, const std::string& model, int optLevel,
                         uint64_t latencyCycles, const std::string& source);

std::string summaryCsvHeader();
std::string summaryCsvRow(const NetworkSummary& s);

/// Appends `s` to the summary CSV at `path`, creating it with the header when it does not exist.
/// A file whose first line is another header (another version, or not a summary) is an error
/// naming it, and is left as it was; the new file replaces the old one only once written whole.
Status appendSummaryCsv(const std::string& path, const NetworkSummary& s);

} // namespace sextant::runtime
