// sextant-cli compile MODEL [-o DIR] [--target FILE] [--disable ID]... [--bisect-limit N]
//                           [--print-changed] [--stats] [--report FILE.json]
// Imports an ONNX model, runs the pass pipeline, lowers it for a target and (with -o) writes the
// artifact directory. Prints a short summary; --print-changed prints a unified IR diff for every
// pass that changed the graph.
#include "Commands.h"
#include "ShapeOption.h"

#include "core/backend/Artifact.h"
#include "core/backend/Target.h"
#include "core/frontend/OnnxImporter.h"
#include "core/passes/PassManager.h"
#include "core/passes/TextDiff.h"
#include "core/runtime/Compiler.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <string>

namespace sextant::cli {

namespace {

const char* kCompileUsage =
    "usage: sextant-cli compile MODEL [options]\n"
    "\n"
    "Imports an ONNX model, runs the pass pipeline and lowers it to NPU Tasks.\n"
    "  -o DIR              write the artifact (manifest.json, tasks.bin, weights.bin) to DIR\n"
    "  --target FILE       target description (default: the built-in npu-a)\n"
    "  --disable ID        switch off a pass or rule by id (repeatable; see 'sextant-cli rules')\n"
    "  --bisect-limit N    let only the first N rule applications happen\n"
    "  --print-changed     print a unified IR diff after each pass that changed the graph\n"
    "  --stats             print rule counters and per-Task figures\n"
    "  --report FILE.json  write the summary, rule counters and Task table as JSON\n"
    "  --shape NAME=DIMS   give input NAME concrete dims, e.g. x=1x3x48x320 (repeatable; needed\n"
    "                      for models with symbolic input dims)\n";

std::string kib(uint64_t bytes) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / 1024.0);
    return buf;
}

int coresUsed(const backend::Program& p) {
    std::set<int> cores;
    for (const backend::Task& t : p.tasks)
        cores.insert(t.core);
    return static_cast<int>(cores.size());
}

double ratio(uint64_t a, uint64_t b) { return b == 0 ? 1.0 : static_cast<double>(a) / static_cast<double>(b); }

void printSummary(const runtime::CompileResult& r, const std::string& outDir) {
    const backend::Program& p = r.program;
    char line[512];
    std::snprintf(line, sizeof line, "compiled '%s' for %s: %zu tasks on %d of %d cores, est. %llu cycles (%.2f us)\n",
                  p.modelName.c_str(), p.target.name.c_str(), p.tasks.size(), coresUsed(p), p.target.numCores,
                  static_cast<unsigned long long>(p.estCycles), p.target.cyclesToMicros(p.estCycles));
    std::cout << line;
    int changed = 0;
    for (const passes::Snapshot& s : r.pipeline.snapshots)
        changed += s.changed ? 1 : 0;
    int applied = static_cast<int>(r.pipeline.applications.size());
    std::cout << "  passes: " << p.pipeline.size() << " ran, " << changed << " changed the graph, " << applied
              << " rule applications\n";
    std::snprintf(line, sizeof line,
                  "  dram: arena peak %s vs lower bound %s (%.2fx), weights %s, inputs+outputs %s; %zu events\n",
                  kib(p.memory.dramPeak).c_str(), kib(p.memory.dramLowerBound).c_str(),
                  ratio(p.memory.dramPeak, p.memory.dramLowerBound), kib(p.memory.weightBytes).c_str(),
                  kib(p.memory.ioBytes).c_str(), p.events.size());
    std::cout << line;
    if (!outDir.empty())
        std::cout << "  wrote " << outDir << " (manifest.json, tasks.bin, weights.bin)\n";
}

void printChanged(const passes::PipelineResult& r) {
    for (size_t i = 1; i < r.snapshots.size(); ++i) {
        const passes::Snapshot& before = r.snapshots[i - 1];
        const passes::Snapshot& after = r.snapshots[i];
        if (!after.changed)
            continue;
        std::cout << "*** IR after pass '" << after.passId << "' (changed) ***\n";
        std::cout << passes::unifiedDiff(before.text, after.text, "before/" + after.passId, "after/" + after.passId);
    }
}

void printStats(const runtime::CompileResult& r) {
    std::cout << "rules (matched / applied / rejected / skipped):\n";
    for (const passes::RuleStats& s : r.pipeline.stats) {
        if (s.matched == 0 && s.rejected == 0)
            continue;
        std::cout << "  " << s.rule << ": " << s.matched << " / " << s.applied << " / " << s.rejected << " / "
                  << s.skipped << "\n";
        // The most frequent reasons first (ties by text), at most five per rule.
        std::vector<std::pair<int64_t, std::string>> reasons;
        for (const auto& [reason, count] : s.reasons)
            reasons.emplace_back(-count, reason);
        std::sort(reasons.begin(), reasons.end());
        for (size_t i = 0; i < reasons.size() && i < 5; ++i)
            std::cout << "      rejected " << -reasons[i].first << "x: " << reasons[i].second << "\n";
        if (reasons.size() > 5)
            std::cout << "      ... " << reasons.size() - 5 << " more rejection reasons\n";
    }
    const backend::Program& p = r.program;
    std::cout << "tasks (id name kernel core unit start..end tiles sram):\n";
    for (const backend::Task& t : p.tasks) {
        char line[512];
        std::snprintf(line, sizeof line, "  %3d %-24s %-18s core %d %-6s %8llu..%-8llu %4d %s\n", t.id, t.name.c_str(),
                      t.kernel.c_str(), t.core, std::string(backend::unitName(t.unit)).c_str(),
                      static_cast<unsigned long long>(t.estStart), static_cast<unsigned long long>(t.estEnd),
                      t.tiling.numTiles, kib(t.tiling.sramBytes).c_str());
        std::cout << line;
    }
}

nlohmann::json reportJson(const runtime::CompileResult& r, const std::string& model) {
    using nlohmann::json;
    const backend::Program& p = r.program;
    json j;
    j["model"] = model;
    j["graph"] = p.modelName;
    j["target"] = p.target.name;
    j["tasks"] = p.tasks.size();
    j["cores_used"] = coresUsed(p);
    j["est_cycles"] = p.estCycles;
    j["est_micros"] = p.target.cyclesToMicros(p.estCycles);
    j["events"] = p.events.size();
    j["memory"] = json{{"dram_peak", p.memory.dramPeak},
                       {"dram_lower_bound", p.memory.dramLowerBound},
                       {"weight_bytes", p.memory.weightBytes},
                       {"io_bytes", p.memory.ioBytes},
                       {"dram_total", p.memory.dramTotal}};
    json passList = json::array();
    for (const passes::Snapshot& s : r.pipeline.snapshots)
        if (s.passId != "input")
            passList.push_back(json{{"id", s.passId}, {"changed", s.changed}});
    j["passes"] = passList;
    j["disabled"] = p.disabledRules;
    json rules = json::array();
    for (const passes::RuleStats& s : r.pipeline.stats)
        rules.push_back(json{{"rule", s.rule},
                             {"matched", s.matched},
                             {"applied", s.applied},
                             {"rejected", s.rejected},
                             {"skipped", s.skipped}});
    j["rules"] = rules;
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

} // namespace

int cmdCompile(Args args) {
    std::string model, outDir, targetPath, reportPath;
    passes::PipelineConfig pipeline;
    bool printChangedFlag = false, stats = false;
    ir::InputShapes shapes;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&](std::string& into) -> bool {
            if (i + 1 >= args.size())
                return false;
            into = args[++i];
            return true;
        };
        if (a == "-h" || a == "--help") {
            std::cout << kCompileUsage;
            return 0;
        }
        if (a == "-o" || a == "--output") {
            if (!value(outDir))
                return fail("compile: " + a + " needs a directory");
        } else if (a == "--target") {
            if (!value(targetPath))
                return fail("compile: --target needs a file");
        } else if (a == "--disable") {
            std::string id;
            if (!value(id))
                return fail("compile: --disable needs a pass or rule id");
            pipeline.disabled.insert(id);
        } else if (a == "--bisect-limit") {
            std::string n;
            if (!value(n))
                return fail("compile: --bisect-limit needs a number");
            try {
                size_t used = 0;
                pipeline.bisectLimit = std::stoll(n, &used);
                if (used != n.size() || pipeline.bisectLimit < -1)
                    throw std::invalid_argument(n);
            } catch (const std::exception&) {
                return fail("compile: --bisect-limit '" + n + "' is not a number >= -1");
            }
        } else if (a == "--shape") {
            std::string spec;
            if (!value(spec))
                return fail("compile: --shape needs NAME=DIMS (e.g. x=1x3x48x320)");
            if (std::string err = addShapeOption("compile", spec, shapes); !err.empty())
                return fail(err);
        } else if (a == "--print-changed") {
            printChangedFlag = true;
        } else if (a == "--stats") {
            stats = true;
        } else if (a == "--report") {
            if (!value(reportPath))
                return fail("compile: --report needs a file");
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

    runtime::CompileOptions options;
    options.pipeline = pipeline;
    if (!targetPath.empty()) {
        Expected<backend::Target> t = backend::loadTarget(targetPath);
        if (!t.ok())
            return fail(t.error().message);
        options.target = *t;
    }
    Status valid = passes::validateConfig(options.pipeline);
    if (!valid.ok())
        return fail(valid.error().message);
    Expected<std::unique_ptr<ir::Graph>> graph = frontend::importOnnx(model);
    if (!graph.ok())
        return fail(graph.error().message);
    if (Status s = applyShapeOptions(**graph, shapes, /*requireStatic=*/true); !s.ok())
        return fail("compile: " + s.error().message);
    Expected<runtime::CompileResult> result = runtime::compileGraph(**graph, options);
    if (!result.ok())
        return fail(result.error().message);
    if (printChangedFlag)
        printChanged(result->pipeline);
    if (!outDir.empty()) {
        Status w = backend::writeArtifact(result->program, outDir);
        if (!w.ok())
            return fail(w.error().message);
    }
    printSummary(*result, outDir);
    if (stats)
        printStats(*result);
    if (!reportPath.empty()) {
        std::ofstream out(reportPath, std::ios::binary | std::ios::trunc);
        if (!out)
            return fail(reportPath + ": cannot open for writing");
        out << reportJson(*result, model).dump(2) << "\n";
        if (!out)
            return fail(reportPath + ": write failed");
    }
    return 0;
}

} // namespace sextant::cli
