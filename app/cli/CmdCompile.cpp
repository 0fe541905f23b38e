// sextant-cli compile MODEL [-o DIR] [--target FILE] [-O0..-O3] [--disable ID]...
//                           [--fusion-switch FILE.json] [--bisect-limit N] [--print-changed]
//                           [--list-applications] [--stats] [--report FILE.json]
//                           [--export-memory FILE.csv] [--export-offset-problem FILE.csv]
//                           [--summary-csv FILE.csv] [--export-dot PASS:FILE.dot | all:DIR]...
//                           [--export-onnx PASS:FILE.onnx | all:DIR]... [--standard | --standard-f16]
// Imports an ONNX model, runs the pass pipeline, lowers it for a target and (with -o) writes the
// artifact directory. Prints a short summary; --print-changed prints a unified IR diff for every
// pass that changed the graph.
#include "Commands.h"
#include "PipelineOptions.h"
#include "ShapeOption.h"

#include "core/backend/Artifact.h"
#include "core/backend/MemoryExport.h"
#include "core/backend/SramPlanner.h"
#include "core/backend/Target.h"
#include "core/frontend/OnnxExport.h"
#include "core/frontend/OnnxImporter.h"
#include "core/passes/GraphDiff.h"
#include "core/passes/GreyOps.h"
#include "core/passes/PassManager.h"
#include "core/passes/TextDiff.h"
#include "core/runtime/Compiler.h"
#include "core/runtime/NetworkSummary.h"
#include "core/ir/Dot.h"
#include "core/ir/FileWrite.h"
#include "core/ir/Specialize.h"
#include "core/runtime/ModelInputs.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <filesystem>
#include <set>
#include <string>

namespace sextant::cli {

namespace {

/// A rejection reason with every quoted name ('linear_78.b_0') blanked out: reasons that differ
/// only in the value or node they name have the same pattern.
std::string withoutQuotedNames(const std::string& reason) {
    std::string out;
    bool quoted = false;
    for (char c : reason) {
        if (c == '\'') {
            out += quoted ? "'" : "'*";
            quoted = !quoted;
        } else if (!quoted) {
            out += c;
        }
    }
    return out;
}

const char* kCompileUsage =
    "usage: sextant-cli compile MODEL [options]\n"
    "\n"
    "Imports an ONNX model, runs the pass pipeline and lowers it to NPU Tasks.\n"
    "  -o DIR              write the artifact (manifest.json, tasks.bin, weights.bin, manifest.json.fnv1a64) to DIR\n"
    "  --target FILE       target description (default: the built-in npu-a)\n"
    "%s"
    "  --print-changed     print a unified IR diff after each pass that changed the graph\n"
    "  --list-applications print every rule application: seq, rule, pass, anchor node (and the\n"
    "                      matches --bisect-limit cut)\n"
    "  --stats             print pass times, rule counters, grey-op counts, each core's SRAM peak,\n"
    "                      the DRAM traffic, what keep-on-chip kept, and per-Task figures\n"
    "  --report FILE.json  write the summary, memory figures, rule counters and Task table as\n"
    "                      JSON (docs/compile-report.md)\n"
    "  --export-memory FILE.csv\n"
    "                      write every buffer's place and time: level (dram, sram with its core,\n"
    "                      host), offset, size, first and last Task and their scheduled cycles\n"
    "                      (docs/memory-export.md)\n"
    "  --export-offset-problem FILE.csv\n"
    "                      write the DRAM arena's planning problem as id,lower,upper,size\n"
    "                      (MiniMalloc's format), alignment and conflicts (buffers apart in time\n"
    "                      whose Tasks are not ordered); 'sextant-cli plan-offsets' reads it\n"
    "  --export-dot PASS:FILE.dot\n"
    "                      write the graph after pass PASS (an id of --stats' pass list, 'input' or\n"
    "                      'final') as Graphviz DOT; repeatable; all:DIR writes every snapshot as\n"
    "                      DIR/NN-PASS.dot (docs/graph-export.md)\n"
    "  --export-onnx PASS:FILE.onnx\n"
    "                      write the graph after pass PASS as an ONNX model, as the compiler holds\n"
    "                      it (its own ops in the 'sextant' domain; opens in Netron); repeatable;\n"
    "                      all:DIR writes every snapshot as DIR/NN-PASS.onnx (docs/onnx-export.md)\n"
    "  --standard          write --export-onnx in standard ONNX ops only (fused ops decomposed), so\n"
    "                      onnxruntime runs it\n"
    "  --standard-f16      --standard, with Casts rounding to f16 wherever the NPU computes in f16\n"
    "  --summary-csv FILE.csv\n"
    "                      append the network's figures (estimated latency, Tasks, cores, MACs,\n"
    "                      DRAM traffic, SRAM peaks, events, grey ops, roofline) as one row\n"
    "                      (docs/summary-csv.md; 'run --summary-csv' gives the simulated latency)\n"
    "  --shape NAME=DIMS   give input NAME concrete dims, e.g. x=1x3x48x320 (repeatable; needed\n"
    "                      for models with symbolic input dims)\n"
    "  --inputs DIR        take the symbolic input dims from the tensors in DIR (input_0.pb, ...,\n"
    "                      as 'run --inputs' does); with --shape too, the two must agree\n";

/// The bytes of the weights the loader fills (Buffer::fill), which weights.bin does not hold.
uint64_t filledWeightBytes(const backend::Program& p) {
    uint64_t bytes = 0;
    for (const backend::Buffer& b : p.buffers)
        if (b.fill)
            bytes += b.size;
    return bytes;
}

std::string kib(uint64_t bytes) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024.0);
    return buf;
}

/// KiB below 10 MiB, MiB above: a whole network's DMA traffic reads at a glance.
std::string kibOrMib(uint64_t bytes) {
    if (bytes < 10ull * 1024 * 1024)
        return kib(bytes);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return buf;
}


double ratio(uint64_t a, uint64_t b) { return b == 0 ? 1.0 : static_cast<double>(a) / static_cast<double>(b); }

void printSummary(const runtime::CompileResult& r, const std::string& outDir) {
    const backend::Program& p = r.program;
    char line[512];
    const std::vector<std::string> host = backend::hostStepLines(p);
    std::snprintf(line, sizeof line, "compiled '%s' for %s: %zu tasks on %d of %d cores%s, est. %llu cycles (%.2f us)\n",
                  p.modelName.c_str(), p.target.name.c_str(), p.tasks.size(), backend::coresUsed(p), p.target.numCores,
                  host.empty() ? "" : " and the host", static_cast<unsigned long long>(p.estCycles),
                  p.target.cyclesToMicros(p.estCycles));
    std::cout << line;
    // The partition: what runs on the host, and why the NPU does not.
    for (const std::string& h : host)
        std::cout << "  host: " << h << "\n";
    for (const std::string& g : backend::inputGuardLines(p))
        std::cout << "  bound: " << g << "\n";
    // How the Tasks came about: one per node, or a node's work shared out across cores.
    int nodes = 0, split = 0, parts = 0;
    for (const backend::Task& t : p.tasks) {
        nodes += t.part == 0;
        split += t.parts > 1 && t.part == 0;
        parts += t.parts > 1;
    }
    if (split > 0)
        std::cout << "  tasks: " << nodes << " nodes, " << split << " of them shared out across cores in " << parts
                  << " parts\n";
    int changed = 0;
    for (const passes::Snapshot& s : r.pipeline.snapshots)
        changed += s.changed ? 1 : 0;
    int applied = static_cast<int>(r.pipeline.applications.size());
    std::cout << "  passes: " << p.pipeline.size() << " ran, " << changed << " changed the graph, " << applied
              << " rule applications\n";
    const uint64_t filled = filledWeightBytes(p);
    const std::string weights =
        kib(p.memory.weightBytes) + (filled ? " (and " + kib(filled) + " the loader fills)" : std::string());
    std::snprintf(line, sizeof line,
                  "  dram: arena peak %s vs lower bound %s (%.2fx), weights %s, inputs+outputs %s; %zu events\n",
                  kib(p.memory.dramPeak).c_str(), kib(p.memory.dramLowerBound).c_str(),
                  ratio(p.memory.dramPeak, p.memory.dramLowerBound), weights.c_str(),
                  kib(p.memory.ioBytes).c_str(), p.events.size());
    std::cout << line;
    for (const std::string& note : p.notes)
        std::cout << "  note: " << note << "\n";
    if (!outDir.empty())
        std::cout << "  wrote " << outDir << " (manifest.json, tasks.bin, weights.bin, "
                  << (std::filesystem::exists(std::filesystem::path(outDir) / "host_weights.bin") ? "host_weights.bin, " : "") << "manifest.json.fnv1a64)\n";
}

void printChanged(const passes::PipelineResult& r) {
    for (size_t i = 1; i < r.snapshots.size(); ++i) {
        const passes::Snapshot& before = r.snapshots[i - 1];
        const passes::Snapshot& after = r.snapshots[i];
        if (!after.changed)
            continue;
        std::cout << "*** IR after pass '" << after.passId << "' (changed) ***\n";
        std::cout << passes::unifiedDiff(before.text(), after.text(), "before/" + after.passId, "after/" + after.passId);
    }
}

/// Tensors keep-on-chip kept (Program::onChip lists a tensor kept a stripe per core once per core).
size_t keptTensors(const backend::Program& p) {
    std::set<int> buffers;
    for (const backend::OnChip& oc : p.onChip)
        buffers.insert(oc.buffer);
    return buffers.size();
}

/// Tensors kept in a narrower type than the graph gives them (backend::storedDType: f16 where
/// every reader takes f16), and the bytes of memory that saves.
struct NarrowedTensors {
    size_t tensors = 0;
    uint64_t savedBytes = 0;
};
NarrowedTensors narrowedTensors(const backend::Program& p) {
    NarrowedTensors out;
    if (!p.graph)
        return out;
    for (const backend::Buffer& b : p.buffers) {
        const ir::Value* v = p.graph->findValue(b.value);
        if (!v || v->type().dtype == b.type.dtype)
            continue;
        ir::TensorType declared = b.type;
        declared.dtype = v->type().dtype;
        const uint64_t full = backend::storedBytes(declared, p.target.c0), kept = backend::storedBytes(b.type, p.target.c0);
        if (full > kept) {
            ++out.tensors;
            out.savedBytes += full - kept;
        }
    }
    return out;
}

/// " (12 stripes)" when some kept tensors are striped across cores, else "".
std::string stripesNote(const backend::Program& p) {
    const size_t tensors = keptTensors(p);
    return p.onChip.size() > tensors ? " (" + std::to_string(p.onChip.size()) + " pieces on their cores)" : "";
}

/// What the backend rules changed: not the IR but the Program (a tensor moved from DRAM to its
/// core's SRAM), so --print-changed lists the tensors kept instead of a diff.
void printChangedProgram(const runtime::CompileResult& r) {
    const backend::Program& p = r.program;
    if (p.onChip.empty())
        return;
    int64_t rejected = 0;
    for (const passes::RuleStats& s : r.pipeline.stats)
        if (s.rule == backend::kKeepOnChipRule)
            rejected = s.rejected;
    std::cout << "*** Program after 'lower' (changed by " << backend::kKeepOnChipRule << ": " << keptTensors(p)
              << " tensors kept in SRAM, " << rejected << " candidates rejected) ***\n";
    for (const backend::OnChip& oc : p.onChip) {
        const backend::Buffer& b = p.buffers[static_cast<size_t>(oc.buffer)];
        const backend::Buffer::Stripe* st = b.stripeOn(oc.core);
        std::string what = "'" + b.value + "'";
        if (st)
            what += "[" + std::to_string(st->begin) + ":" + std::to_string(st->end) + "] of dim " +
                    std::to_string(b.stripeAxis);
        std::cout << "  " << what << " dram -> sram of core " << oc.core << " at offset " << (st ? st->offset : b.offset)
                  << " (" << kib(oc.bytes) << "), " << kib(oc.savedDmaBytes) << " of DRAM traffic saved\n";
    }
}

void printApplications(const passes::PipelineResult& r) {
    std::cout << "rule applications (seq rule pass anchor):\n";
    for (const passes::RuleApplication& a : r.applications) {
        char line[512];
        std::snprintf(line, sizeof line, "  %5d %-28s %-15s %s\n", a.seq, a.rule.c_str(), a.pass.c_str(),
                      a.node.c_str());
        std::cout << line;
    }
    if (r.skipped.empty())
        return;
    std::cout << "cut by --bisect-limit (rule pass anchor):\n";
    for (const passes::RuleApplication& a : r.skipped) {
        char line[512];
        std::snprintf(line, sizeof line, "      - %-28s %-15s %s (cut)\n", a.rule.c_str(), a.pass.c_str(),
                      a.node.c_str());
        std::cout << line;
    }
}

/// Grey-op counts of the input and final graphs.
std::pair<passes::GreyOpCounts, passes::GreyOpCounts> greyOps(const passes::PipelineResult& r) {
    passes::GreyOpCounts before, after;
    if (!r.snapshots.empty())
        if (std::shared_ptr<const ir::Graph> input = r.snapshots.front().graph())
            before = passes::countGreyOps(*input);
    if (r.graph)
        after = passes::countGreyOps(*r.graph);
    return {before, after};
}

/// What each pass changed, by snapshot index: the structural diff against the snapshot before
/// it, or nothing for the input and for a pass that changed nothing. Computed once for --stats
/// and --report.
using PassChanges = std::vector<std::optional<passes::ChangeCounts>>;
PassChanges passChanges(const passes::PipelineResult& r) {
    PassChanges out(r.snapshots.size());
    for (size_t i = 1; i < r.snapshots.size(); ++i) {
        if (!r.snapshots[i].changed)
            continue;
        std::shared_ptr<const ir::Graph> before = r.snapshots[i - 1].graph(), after = r.snapshots[i].graph();
        if (before && after)
            out[i] = passes::countChanges(passes::diffGraphs(*before, *after));
    }
    return out;
}

/// Whether `next` is part `offset` after `first` of the same split, on the core as many after
/// first's, over the same cycles with the same tiling: --stats prints such parts as one row.
bool sameSideBySide(const backend::Task& first, const backend::Task& next, int offset) {
    return backend::sameSplit(first, next) && next.id == first.id + offset &&
           next.part == first.part + offset && next.core == first.core + offset &&
           next.kernel == first.kernel && next.unit == first.unit &&
           next.estStart == first.estStart && next.estEnd == first.estEnd &&
           next.tiling.numTiles == first.tiling.numTiles &&
           next.tiling.sramBytes == first.tiling.sramBytes;
}

bool isBackendRule(const std::string& id) {
    for (const passes::RuleInfo& r : passes::backendRules())
        if (r.id == id)
            return true;
    return false;
}

/// The SRAM plan's figures: each core's peak against its capacity and lower bound, the DRAM
/// traffic against what any program must move, and what keep-on-chip kept.
void printMemoryStats(const backend::Program& p) {
    std::cout << "sram per core (peak / capacity, lower bound):\n";
    for (size_t c = 0; c < p.memory.sram.size(); ++c) {
        const backend::SramStats& s = p.memory.sram[c];
        char line[256];
        std::snprintf(line, sizeof line, "  core %-3zu %10s / %s (%5.1f %%), lower bound %s\n", c, kib(s.peak).c_str(),
                      kib(s.capacity).c_str(), s.capacity == 0 ? 0.0 : 100.0 * ratio(s.peak, s.capacity),
                      kib(s.lowerBound).c_str());
        std::cout << line;
    }
    uint64_t kept = 0, saved = 0;
    for (const backend::OnChip& oc : p.onChip) {
        kept += oc.bytes;
        saved += oc.savedDmaBytes;
    }
    char line[256];
    std::snprintf(line, sizeof line, "dram traffic: %s vs compulsory %s (%.2fx)\n",
                  kibOrMib(p.memory.dramTrafficBytes).c_str(), kibOrMib(p.memory.compulsoryBytes).c_str(),
                  ratio(p.memory.dramTrafficBytes, p.memory.compulsoryBytes));
    std::cout << line;
    std::cout << "on chip (" << backend::kKeepOnChipRule << "): " << keptTensors(p) << " tensors kept" << stripesNote(p)
              << ", " << kibOrMib(kept) << " of SRAM, " << kibOrMib(saved) << " of DRAM traffic saved\n";
    const NarrowedTensors f16 = narrowedTensors(p);
    std::cout << "kept in f16 (every reader takes them in f16): " << f16.tensors << " tensors, "
              << "their buffers " << kibOrMib(f16.savedBytes) << " smaller\n";
}

void printStats(const runtime::CompileResult& r, const PassChanges& changes) {
    // Like -time-passes: each pass's time and share, then what it did to the graph (the
    // structural diff against the snapshot before it) and the nodes left.
    const std::vector<passes::Snapshot>& snaps = r.pipeline.snapshots;
    double total = 0;
    for (size_t i = 1; i < snaps.size(); ++i)
        total += snaps[i].millis;
    std::cout << "passes (time, share of the passes' time, nodes after, what changed):\n";
    for (size_t i = 1; i < snaps.size(); ++i) {
        const passes::Snapshot& s = snaps[i];
        std::string what = "-";
        if (changes[i])
            what = passes::summarizeChanges(*changes[i]);
        else if (s.changed)
            what = "changed";
        char line[512];
        std::snprintf(line, sizeof line, "  %-16s %9.3f ms %5.1f %%  %5zu nodes  %s\n", s.passId.c_str(),
                      s.millis, total > 0 ? 100.0 * s.millis / total : 0.0, s.numNodes(), what.c_str());
        std::cout << line;
    }
    auto [before, after] = greyOps(r.pipeline);
    char grey[512];
    std::snprintf(grey, sizeof grey,
                  "grey ops (before -> after): transpose %d -> %d, copy/cast-only %d -> %d, layout "
                  "conversions %d -> %d, quantize/dequantize %d -> %d\n",
                  before.transposes, after.transposes, before.copyOrCast, after.copyOrCast,
                  before.layoutConversions, after.layoutConversions, before.quantization, after.quantization);
    std::cout << grey;
    printMemoryStats(r.program);
    std::cout << "rules (matched / applied / rejected / skipped, ms):\n";
    for (const passes::RuleStats& s : r.pipeline.stats) {
        if (s.matched == 0 && s.rejected == 0)
            continue;
        char ms[64];
        std::snprintf(ms, sizeof ms, "%.3f ms", s.millis);
        if (isBackendRule(s.rule)) // applied inside the lowering, which times it as a whole
            std::snprintf(ms, sizeof ms, "in lower");
        std::cout << "  " << s.rule << ": " << s.matched << " / " << s.applied << " / " << s.rejected << " / "
                  << s.skipped << ", " << ms << "\n";
        // Reasons that differ only in the names they quote ("gemm already has a bias input 'b1'",
        // "... 'b2'") are one reason: counted together, shown with their first example. The most
        // frequent first (ties by text), at most five per rule.
        struct Kind {
            int64_t count = 0;
            std::string example;
            int64_t variants = 0;
        };
        std::map<std::string, Kind> kinds;
        for (const auto& [reason, count] : s.reasons) {
            Kind& k = kinds[withoutQuotedNames(reason)];
            if (k.example.empty())
                k.example = reason;
            k.count += count;
            ++k.variants;
        }
        std::vector<std::pair<int64_t, const Kind*>> reasons;
        for (const auto& [pattern, kind] : kinds)
            reasons.emplace_back(-kind.count, &kind);
        std::stable_sort(reasons.begin(), reasons.end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        for (size_t i = 0; i < reasons.size() && i < 5; ++i) {
            const Kind& k = *reasons[i].second;
            std::cout << "      rejected " << k.count << "x: " << k.example;
            if (k.variants > 1)
                std::cout << " (and " << k.variants - 1 << " more like it)";
            std::cout << "\n";
        }
        if (reasons.size() > 5)
            std::cout << "      ... " << reasons.size() - 5 << " more rejection reasons\n";
    }
    const backend::Program& p = r.program;
    std::cout << "tasks (id name kernel core unit start..end tiles sram, and the chunks each output tile sums "
                 "when the reduction is split; the parts of a split that run side by side share a row):\n";
    for (size_t i = 0; i < p.tasks.size();) {
        const backend::Task& t = p.tasks[i];
        // Parts i..j-1 of one split, on consecutive cores at the same times and sizes: one row.
        size_t j = i + 1;
        while (j < p.tasks.size() && sameSideBySide(t, p.tasks[j], static_cast<int>(j - i)))
            ++j;
        std::string id = std::to_string(t.id), name = t.name,
                    core = t.unit == backend::UnitKind::Host ? std::string("host") : "core " + std::to_string(t.core);
        if (j - i > 1) {
            const backend::Task& last = p.tasks[j - 1];
            id += "-" + std::to_string(last.id);
            name = name.substr(0, name.rfind('[')) + "[" + std::to_string(t.part + 1) + "-" +
                   std::to_string(last.part + 1) + "/" + std::to_string(t.parts) + "]";
            core = "cores " + std::to_string(t.core) + "-" + std::to_string(last.core);
        }
        char line[512];
        const std::string chunks =
            t.tiling.reduceChunks > 1 ? ", " + std::to_string(t.tiling.reduceChunks) + " chunks" : std::string();
        std::snprintf(line, sizeof line, "  %7s %-28s %-18s %-10s %-6s %8llu..%-8llu %4d %s%s\n",
                      id.c_str(), name.c_str(), t.kernel.c_str(), core.c_str(),
                      std::string(backend::unitName(t.unit)).c_str(),
                      static_cast<unsigned long long>(t.estStart), static_cast<unsigned long long>(t.estEnd),
                      t.tiling.numTiles, kib(t.tiling.sramBytes).c_str(), chunks.c_str());
        std::cout << line;
        i = j;
    }
}

nlohmann::json reportJson(const runtime::CompileResult& r, const PassChanges& changes, const std::string& model,
                          const passes::PipelineConfig& config) {
    using nlohmann::json;
    const backend::Program& p = r.program;
    json j;
    j["model"] = model;
    j["graph"] = p.modelName;
    j["target"] = p.target.name;
    j["tasks"] = p.tasks.size();
    j["cores_used"] = backend::coresUsed(p);
    j["host_steps"] = backend::hostStepLines(p);
    j["est_cycles"] = p.estCycles;
    j["est_micros"] = p.target.cyclesToMicros(p.estCycles);
    j["events"] = p.events.size();
    json sramPeak = json::array(), sramLowerBound = json::array();
    for (const backend::SramStats& s : p.memory.sram) {
        sramPeak.push_back(s.peak);
        sramLowerBound.push_back(s.lowerBound);
    }
    uint64_t saved = 0;
    for (const backend::OnChip& oc : p.onChip)
        saved += oc.savedDmaBytes;
    const NarrowedTensors f16 = narrowedTensors(p);
    j["memory"] = json{{"dram_peak", p.memory.dramPeak},
                       {"dram_lower_bound", p.memory.dramLowerBound},
                       {"weight_bytes", p.memory.weightBytes},
                       {"filled_weight_bytes", filledWeightBytes(p)},
                       {"io_bytes", p.memory.ioBytes},
                       {"dram_total", p.memory.dramTotal},
                       {"sram_capacity", p.target.sramBytes},
                       {"sram_peak", sramPeak},
                       {"sram_lower_bound", sramLowerBound},
                       {"dram_traffic_bytes", p.memory.dramTrafficBytes},
                       {"compulsory_bytes", p.memory.compulsoryBytes},
                       {"on_chip_tensors", keptTensors(p)},
                       {"on_chip_pieces", p.onChip.size()},
                       {"on_chip_saved_bytes", saved},
                       {"f16_tensors", f16.tensors},
                       {"f16_saved_bytes", f16.savedBytes}};
    json passList = json::array();
    for (size_t i = 1; i < r.pipeline.snapshots.size(); ++i) {
        const passes::Snapshot& s = r.pipeline.snapshots[i];
        json pass{{"id", s.passId}, {"changed", s.changed}, {"millis", s.millis}, {"nodes", s.numNodes()}};
        if (const std::optional<passes::ChangeCounts>& c = changes[i])
            pass["changes"] = json{{"nodes_added", c->nodesAdded},         {"nodes_removed", c->nodesRemoved},
                                   {"nodes_changed", c->nodesChanged},     {"constants_added", c->constantsAdded},
                                   {"constants_removed", c->constantsRemoved}, {"constants_changed", c->constantsChanged}};
        passList.push_back(std::move(pass));
    }
    j["passes"] = passList;
    auto [before, after] = greyOps(r.pipeline);
    auto greyJson = [](const passes::GreyOpCounts& c) {
        return json{{"transpose", c.transposes},
                    {"copy_or_cast", c.copyOrCast},
                    {"layout_conversion", c.layoutConversions},
                    {"quantize_dequantize", c.quantization}};
    };
    j["grey_ops"] = json{{"before", greyJson(before)}, {"after", greyJson(after)}};
    j["disabled"] = p.disabledRules;
    j["opt_level"] = config.optLevel;
    j["switched_on"] = config.enabled;
    json rules = json::array();
    for (const passes::RuleStats& s : r.pipeline.stats)
        rules.push_back(json{{"rule", s.rule},
                             {"matched", s.matched},
                             {"applied", s.applied},
                             {"rejected", s.rejected},
                             {"skipped", s.skipped},
                             {"millis", s.millis},
                             {"reasons", s.reasons}});
    j["rules"] = rules;
    json apps = json::array();
    for (const passes::RuleApplication& a : r.pipeline.applications)
        apps.push_back(json{{"seq", a.seq}, {"rule", a.rule}, {"pass", a.pass}, {"node", a.node}});
    j["applications"] = apps;
    json removals = json::array();
    for (const passes::NodeRemoval& rm : r.pipeline.removals)
        removals.push_back(json{{"node", rm.node},
                                {"origins", rm.origins},
                                {"pass", rm.pass},
                                {"rule", rm.rule},
                                {"reason", rm.reason}});
    j["removals"] = removals;
    json tasks = json::array();
    for (const backend::Task& t : p.tasks)
        tasks.push_back(json{{"id", t.id},
                             {"name", t.name},
                             {"kernel", t.kernel},
                             {"core", t.core},
                             {"unit", std::string(backend::unitName(t.unit))},
                             {"nodes", t.nodes},
                             {"est_start", t.estStart},
                             {"est_end", t.estEnd},
                             {"num_tiles", t.tiling.numTiles},
                             {"sram_bytes", t.tiling.sramBytes},
                             {"flops", t.flops},
                             {"dma_bytes", t.dmaBytes}});
    j["task_table"] = tasks;
    return j;
}

/// `--inputs DIR` for a model whose inputs are (now) static: the data set must be the model's
/// inputs (names, dtypes and dims), or compiling for it would describe some other run.
Status checkInputsFit(const ir::Graph& graph, const std::string& dir, const std::string& model) {
    SX_ASSIGN(runtime::RunInputs inputs, runtime::chooseInputs(graph, dir, /*lookNextToModel=*/false, model));
    for (size_t i = 0; i < inputs.tensors.size(); ++i) {
        const ir::Value* formal = graph.inputs()[i];
        if (inputs.tensors[i].shape() != formal->type().dims())
            return makeError(ErrorKind::Invalid, "'" + dir + "/input_" + std::to_string(i) + ".pb' has dims " +
                                                     ir::formatShapeSpec(inputs.tensors[i].shape()) +
                                                     ", but the model's input '" + formal->name() + "' is " +
                                                     ir::formatShapeSpec(formal->type().dims()));
    }
    return {};
}

/// --export-dot and --export-onnx: each PASS:FILE (the last snapshot of that pass id; 'final'
/// the last one) or all:DIR (every snapshot as DIR/NN-PASS.EXT, DIR made when its parent exists),
/// written by `write(snapshot index, path)`.
Status exportSnapshots(const passes::PipelineResult& r, const std::vector<std::string>& specs, const char* option,
                       const char* ext, const std::function<Status(size_t, const std::string&)>& write) {
    const std::vector<passes::Snapshot>& snaps = r.snapshots;
    for (const std::string& spec : specs) {
        const std::string pass = spec.substr(0, spec.find(':')), path = spec.substr(spec.find(':') + 1);
        if (path.empty())
            return makeError(ErrorKind::Invalid, std::string(option) + " " + spec + ": no file after the ':'");
        if (pass == "all") {
            std::error_code ec;
            std::filesystem::create_directory(path, ec);
            if (!std::filesystem::is_directory(path))
                return makeError(ErrorKind::Io, std::string(option) + " all:" + path + ": cannot make the folder (" +
                                                    (ec ? ec.message() : std::string("not a folder")) + ")");
            for (size_t i = 0; i < snaps.size(); ++i) {
                char prefix[24];
                std::snprintf(prefix, sizeof prefix, "%02zu-", i);
                SX_TRY(write(i, (std::filesystem::path(path) / (prefix + snaps[i].passId + ext)).string()));
            }
            continue;
        }
        std::optional<size_t> found;
        for (size_t i = 0; i < snaps.size(); ++i)
            if (snaps[i].passId == pass || (pass == "final" && i + 1 == snaps.size()))
                found = i;
        if (!found) {
            std::string ids;
            for (const passes::Snapshot& s : snaps)
                ids += (ids.empty() ? "" : ", ") + s.passId;
            return makeError(ErrorKind::Invalid, std::string(option) + " " + spec + ": no pass '" + pass +
                                                     "' in this pipeline (" + ids + ", final, all)");
        }
        SX_TRY(write(*found, path));
    }
    return {};
}

Status exportDots(const passes::PipelineResult& r, const std::vector<std::string>& specs, const std::string& model) {
    return exportSnapshots(r, specs, "--export-dot", ".dot", [&](size_t i, const std::string& path) -> Status {
        std::shared_ptr<const ir::Graph> g = r.snapshots[i].graph();
        if (!g)
            return makeError(ErrorKind::Runtime, "--export-dot: snapshot '" + r.snapshots[i].passId + "' has no graph");
        return writeFileAtomically(path, ir::graphToDot(*g, model + " after pass " + r.snapshots[i].passId),
                                   "DOT file");
    });
}

Status exportOnnxSnapshots(const passes::PipelineResult& r, const std::vector<std::string>& specs,
                           const std::string& model, frontend::OnnxExportOptions options) {
    if (specs.empty())
        return {};
    SX_ASSIGN(options.opsets, frontend::modelOpsetImports(model));
    options.source = std::filesystem::path(model).filename().string();
    return exportSnapshots(r, specs, "--export-onnx", ".onnx", [&](size_t i, const std::string& path) -> Status {
        std::shared_ptr<const ir::Graph> g = r.snapshots[i].graph();
        if (!g)
            return makeError(ErrorKind::Runtime, "--export-onnx: snapshot '" + r.snapshots[i].passId + "' has no graph");
        options.snapshot = r.snapshots[i].passId;
        Expected<std::string> bytes = frontend::exportOnnx(*g, options);
        if (!bytes.ok())
            return makeError(bytes.error().kind, "--export-onnx " + r.snapshots[i].passId + ": " + bytes.error().message,
                             bytes.error().subject);
        return writeFileAtomically(path, *bytes, "ONNX model");
    });
}

} // namespace

int cmdCompile(Args args) {
    std::string model, outDir, targetPath, reportPath, inputsDir, memoryCsv, offsetCsv, summaryCsv;
    PipelineOptions pipelineOptions;
    bool printChangedFlag = false, stats = false, listApplicationsFlag = false;
    ir::InputShapes shapes;
    std::vector<std::string> dotSpecs, onnxSpecs;
    frontend::OnnxExportOptions onnxOptions;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&](std::string& into) -> bool {
            if (i + 1 >= args.size())
                return false;
            into = args[++i];
            return true;
        };
        if (a == "-h" || a == "--help") {
            std::printf(kCompileUsage, kPipelineOptionsUsage);
            return 0;
        }
        if (std::string err; parsePipelineOption("compile", args, i, pipelineOptions, err)) {
            if (!err.empty())
                return fail(err);
            continue;
        }
        if (a == "-o" || a == "--output") {
            if (!value(outDir))
                return fail("compile: " + a + " needs a directory");
        } else if (a == "--target") {
            if (!value(targetPath))
                return fail("compile: --target needs a file");
        } else if (a == "--shape") {
            std::string spec;
            if (!value(spec))
                return fail("compile: --shape needs NAME=DIMS (e.g. x=1x3x48x320)");
            if (std::string err = addShapeOption("compile", spec, shapes); !err.empty())
                return fail(err);
        } else if (a == "--inputs") {
            if (!value(inputsDir))
                return fail("compile: --inputs needs a directory");
        } else if (a == "--print-changed") {
            printChangedFlag = true;
        } else if (a == "--list-applications") {
            listApplicationsFlag = true;
        } else if (a == "--stats") {
            stats = true;
        } else if (a == "--report") {
            if (!value(reportPath))
                return fail("compile: --report needs a file");
        } else if (a == "--export-memory") {
            if (!value(memoryCsv))
                return fail("compile: --export-memory needs a file");
        } else if (a == "--export-dot" || a == "--export-onnx") {
            const bool dot = a == "--export-dot";
            std::string spec;
            if (!value(spec) || spec.find(':') == std::string::npos)
                return fail("compile: " + a + " needs PASS:FILE." + (dot ? "dot" : "onnx") + " or all:DIR");
            (dot ? dotSpecs : onnxSpecs).push_back(spec);
        } else if (a == "--standard" || a == "--standard-f16") {
            onnxOptions.form = frontend::OnnxExportForm::Standard;
            onnxOptions.npuF16 = onnxOptions.npuF16 || a == "--standard-f16";
        } else if (a == "--summary-csv") {
            if (!value(summaryCsv))
                return fail("compile: --summary-csv needs a file");
        } else if (a == "--export-offset-problem") {
            if (!value(offsetCsv))
                return fail("compile: --export-offset-problem needs a file");
        } else if (!a.empty() && a[0] == '-') {
            return fail("compile: unknown option '" + a + "' (see 'sextant-cli compile --help')");
        } else if (model.empty()) {
            model = a;
        } else {
            return fail("compile: more than one model given ('" + model + "' and '" + a + "')");
        }
    }
    if (model.empty())
        return fail("compile: no model given (usage: sextant-cli compile MODEL [-o DIR] ...)");
    if (onnxOptions.form == frontend::OnnxExportForm::Standard && onnxSpecs.empty())
        return fail("compile: --standard and --standard-f16 choose the form of --export-onnx, which is not given");

    if (std::string err = finishPipelineOptions("compile", pipelineOptions); !err.empty())
        return fail(err);
    runtime::CompileOptions options;
    options.pipeline = pipelineOptions.config;
    if (!targetPath.empty()) {
        Expected<backend::Target> t = backend::loadTarget(targetPath);
        if (!t.ok())
            return fail(t.error().message);
        options.target = *t;
    }
    Expected<std::unique_ptr<ir::Graph>> graph = frontend::importOnnx(model);
    if (!graph.ok())
        return fail(graph.error().message);
    if (auto s = runtime::specialiseInputs(**graph, shapes, inputsDir, /*requireStatic=*/true); !s.ok())
        return fail("compile: " + s.error().message);
    if (!inputsDir.empty())
        if (Status fit = checkInputsFit(**graph, inputsDir, model); !fit.ok())
            return fail("compile: " + fit.error().message);
    if (Expected<std::vector<backend::InputGuard>> guards = runtime::bindControlInputs(**graph, inputsDir); !guards.ok())
        return fail("compile: " + guards.error().message);
    else
        options.inputGuards = std::move(guards).value();
    Expected<runtime::CompileResult> result = runtime::compileGraph(**graph, options);
    if (!result.ok())
        return fail(result.error().message);
    if (printChangedFlag) {
        printChanged(result->pipeline);
        printChangedProgram(*result);
    }
    if (listApplicationsFlag)
        printApplications(result->pipeline);
    if (!outDir.empty()) {
        Status w = backend::writeArtifact(result->program, outDir);
        if (!w.ok())
            return fail(w.error().message);
    }
    printSummary(*result, outDir);
    const PassChanges changes = stats || !reportPath.empty() ? passChanges(result->pipeline) : PassChanges{};
    if (stats)
        printStats(*result, changes);
    if (!reportPath.empty())
        if (Status w = writeFileAtomically(reportPath, reportJson(*result, changes, model, options.pipeline).dump(2) + "\n",
                                           "report");
            !w.ok())
            return fail(w.error().message);
    if (!memoryCsv.empty())
        if (Status w = writeFileAtomically(memoryCsv, backend::memoryPlanCsv(result->program), "memory plan"); !w.ok())
            return fail(w.error().message);
    if (!offsetCsv.empty()) {
        Expected<std::string> csv = backend::offsetProblemCsv(result->program);
        if (!csv.ok())
            return fail("compile: --export-offset-problem: " + csv.error().message);
        if (Status w = writeFileAtomically(offsetCsv, *csv, "offset problem"); !w.ok())
            return fail(w.error().message);
    }
    if (Status w = exportDots(result->pipeline, dotSpecs, std::filesystem::path(model).stem().string()); !w.ok())
        return fail(w.error().message);
    if (Status w = exportOnnxSnapshots(result->pipeline, onnxSpecs, model, onnxOptions); !w.ok())
        return fail(w.error().message);
    if (!summaryCsv.empty())
        if (Status w = runtime::appendSummaryCsv(summaryCsv, runtime::summarise(result->program, model,
                                                                                  options.pipeline.optLevel,
                                                                                  result->program.estCycles, "estimated"));
            !w.ok())
            return fail(w.error().message);
    return 0;
}

} // namespace sextant::cli
