#include "NetworkSummary.h"

#include "core/ir/Csv.h"
#include "core/ir/FileRead.h"
#include "core/ir/FileWrite.h"
#include "core/passes/GreyOps.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <set>

namespace sextant::runtime {

namespace {

uint64_t ceilDiv(uint64_t a, uint64_t b) { return b == 0 ? a : a / b + (a % b != 0); }

} // namespace

NetworkSummary summarise(const backend::Program& p, const std::string& model, int optLevel, uint64_t latencyCycles,
                         const std::string& source) {
    NetworkSummary s;
    s.model = model;
    s.target = p.target.name;
    s.optLevel = optLevel;
    s.latencyCycles = latencyCycles;
    s.latencySource = source;
    s.latencyMicros = p.target.cyclesToMicros(latencyCycles);
    s.tasks = p.tasks.size();
    std::set<int> cores;
    for (const backend::Task& t : p.tasks) {
        if (t.unit == backend::UnitKind::Host) {
            ++s.hostTasks;
            continue;
        }
        cores.insert(t.core);
        if (t.unit == backend::UnitKind::Cube)
            s.macs += t.flops / 2;
    }
    s.coresUsed = static_cast<int>(cores.size());
    s.dramTrafficBytes = p.memory.dramTrafficBytes;
    s.compulsoryBytes = p.memory.compulsoryBytes;
    s.dramArenaBytes = p.memory.dramPeak;
    s.weightBytes = p.memory.weightBytes;
    for (const backend::SramStats& st : p.memory.sram)
        s.sramPeak.push_back(st.peak);
    s.events = p.events.size();
    if (p.graph) {
        const passes::GreyOpCounts grey = passes::countGreyOps(*p.graph);
        s.greyTransposes = grey.transposes;
        s.greyCopyOrCast = grey.copyOrCast;
        s.greyLayoutConversions = grey.layoutConversions;
        s.greyQuantization = grey.quantization;
    }
    const backend::Target& t = p.target;
    const uint64_t macsPerCycle = static_cast<uint64_t>(std::max(1, t.numCores)) * static_cast<uint64_t>(t.cubeM) *
                                  static_cast<uint64_t>(t.cubeN) *
                                  static_cast<uint64_t>(std::max(t.cubeK, t.cubeKInt8));
    const uint64_t compute = ceilDiv(s.macs, macsPerCycle);
    const uint64_t memory = ceilDiv(s.compulsoryBytes, t.dramBytesPerCycle);
    s.rooflineCycles = std::max<uint64_t>({compute, memory, 1});
    s.rooflineBound = memory > compute ? "memory" : "compute";
    return s;
}

std::string summaryCsvHeader() {
    return "model,target,opt_level,latency_cycles,latency_source,latency_us,tasks,cores_used,host_tasks,macs,"
           "dram_traffic_bytes,compulsory_bytes,dram_arena_bytes,weight_bytes,sram_peak_max_bytes,"
           "sram_peak_per_core,events,grey_transposes,grey_copy_or_cast,grey_layout_conversions,"
           "grey_quantize_dequantize,roofline_cycles,"
           "roofline_bound,latency_over_roofline";
}

std::string summaryCsvRow(const NetworkSummary& s) {
    std::string perCore;
    uint64_t maxPeak = 0;
    for (size_t i = 0; i < s.sramPeak.size(); ++i) {
        perCore += (i ? ";" : "") + std::to_string(s.sramPeak[i]);
        maxPeak = std::max(maxPeak, s.sramPeak[i]);
    }
    char micros[32], ratio[32];
    std::snprintf(micros, sizeof micros, "%.3f", s.latencyMicros);
    std::snprintf(ratio, sizeof ratio, "%.3f",
                  static_cast<double>(s.latencyCycles) / static_cast<double>(std::max<uint64_t>(s.rooflineCycles, 1)));
    const std::vector<std::string> fields{
        csvField(s.model), csvField(s.target), std::to_string(s.optLevel), std::to_string(s.latencyCycles),
        s.latencySource, micros, std::to_string(s.tasks), std::to_string(s.coresUsed), std::to_string(s.hostTasks),
        std::to_string(s.macs), std::to_string(s.dramTrafficBytes), std::to_string(s.compulsoryBytes),
        std::to_string(s.dramArenaBytes), std::to_string(s.weightBytes), std::to_string(maxPeak), perCore,
        std::to_string(s.events), std::to_string(s.greyTransposes), std::to_string(s.greyCopyOrCast),
        std::to_string(s.greyLayoutConversions), std::to_string(s.greyQuantization), std::to_string(s.rooflineCycles), s.rooflineBound, ratio};
    std::string row;
    for (size_t i = 0; i < fields.size(); ++i)
        row += (i ? "," : "") + fields[i];
    return row;
}

Status appendSummaryCsv(const std::string& path, const NetworkSummary& s) {
    std::string content;
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) {
        SX_ASSIGN(content, readFileLimited(path, "summary CSV"));
        const std::string first = content.substr(0, content.find('\n'));
        if (first != summaryCsvHeader())
            return makeError(ErrorKind::Invalid, "summary CSV '" + path +
                                                     "': its first line is not this version's header (version " +
                                                     std::to_string(kSummaryCsvVersion) +
                                                     "); write the rows to another file");
        if (!content.empty() && content.back() != '\n')
            content += '\n';
    } else {
        content = summaryCsvHeader() + "\n";
    }
    content += summaryCsvRow(s) + "\n";
    return writeFileAtomically(path, content, "summary CSV");
}

} // namespace sextant::runtime
