// sextant-cli regress: compares a compile report (`compile --report FILE.json`) with a baseline
// report and fails when the compiled model got worse beyond a threshold: estimated latency, the
// DRAM plan's peak, or the count of grey ops (Transposes, copies/casts, layout conversions) left
// after the pipeline. Compile reports are deterministic, so CI can gate on them with tight bounds.
#include "Commands.h"

#include "core/ir/Error.h"
#include "core/ir/FileRead.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace sextant::cli {

namespace {

const char* kUsage =
    "usage: sextant-cli regress REPORT.json --baseline BASELINE.json [options]\n"
    "\n"
    "Compares two compile reports (sextant-cli compile --report FILE.json) of the same model graph\n"
    "and target and fails when REPORT is worse than BASELINE beyond a threshold.\n"
    "  --baseline FILE        the report to compare against (required)\n"
    "  --latency PCT          allowed increase of the estimated cycles, in per cent (default 1)\n"
    "  --memory PCT           allowed increase of the DRAM plan's peak, in per cent (default 1)\n"
    "  --grey N               allowed increase of each grey-op count after the pipeline\n"
    "                         (Transpose, copy/cast, layout conversion; default 0)\n"
    "Exit status: 0 no regression, 1 a regression, 2 bad input (unreadable or not a compile report,\n"
    "reports of different models or targets).\n";

struct RegressArgs {
    std::string report, baseline;
    double latencyPct = 1, memoryPct = 1, grey = 0;
};

/// The figures regress compares, read from one report.
struct Figures {
    std::string model, graph, target; ///< graph and target identify the compile (paths may differ)
    double cycles = 0, dramPeak = 0;
    double transpose = 0, copyOrCast = 0, layoutConversion = 0;
};

Expected<nlohmann::json> readJson(const std::string& path) {
    SX_ASSIGN(std::string text, readFileLimited(path, "report", uint64_t{1} << 30));
    nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded())
        return makeError(ErrorKind::Parse, path + ": invalid JSON", path);
    return j;
}

/// The number at `path` (keys from the root), or an error naming the file and the field.
Expected<double> number(const nlohmann::json& j, const std::string& file, std::initializer_list<const char*> path) {
    const nlohmann::json* at = &j;
    std::string name;
    for (const char* key : path) {
        name += (name.empty() ? "" : ".") + std::string(key);
        if (!at->is_object() || !at->contains(key))
            return makeError(ErrorKind::Parse,
                             file + ": not a compile report (sextant-cli compile --report): no field '" + name + "'", file);
        at = &(*at)[key];
    }
    if (!at->is_number() || at->get<double>() < 0)
        return makeError(ErrorKind::Parse, file + ": field '" + name + "' is not a non-negative number", file);
    return at->get<double>();
}

Expected<Figures> readFigures(const std::string& file) {
    SX_ASSIGN(nlohmann::json j, readJson(file));
    Figures f;
    for (auto [key, into] : {std::pair{"model", &f.model}, std::pair{"graph", &f.graph}, std::pair{"target", &f.target}}) {
        if (!j.is_object() || !j.contains(key) || !j[key].is_string())
            return makeError(ErrorKind::Parse,
                             file + ": not a compile report (sextant-cli compile --report): no field '" + key + "'", file);
        *into = j[key].get<std::string>();
    }
    SX_ASSIGN(f.cycles, number(j, file, {"est_cycles"}));
    SX_ASSIGN(f.dramPeak, number(j, file, {"memory", "dram_peak"}));
    SX_ASSIGN(f.transpose, number(j, file, {"grey_ops", "after", "transpose"}));
    SX_ASSIGN(f.copyOrCast, number(j, file, {"grey_ops", "after", "copy_or_cast"}));
    SX_ASSIGN(f.layoutConversion, number(j, file, {"grey_ops", "after", "layout_conversion"}));
    return f;
}

std::string parseArgs(Args args, RegressArgs& out, bool& help) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        std::string v;
        auto value = [&]() -> bool {
            if (i + 1 >= args.size())
                return false;
            v = args[++i];
            return true;
        };
        if (a == "-h" || a == "--help") {
            help = true;
            return {};
        }
        if (a == "--baseline") {
            if (!value())
                return "regress: --baseline needs a report file";
            out.baseline = v;
        } else if (a == "--latency" || a == "--memory" || a == "--grey") {
            if (!value())
                return "regress: " + a + " needs a number";
            std::optional<double> t = parseTolerance(v);
            if (!t)
                return "regress: " + a + " '" + v + "' is not a non-negative number";
            (a == "--latency" ? out.latencyPct : a == "--memory" ? out.memoryPct : out.grey) = *t;
        } else if (!a.empty() && a[0] == '-') {
            return "regress: unknown option '" + a + "' (see 'sextant-cli regress --help')";
        } else if (out.report.empty()) {
            out.report = a;
        } else {
            return "regress: more than one report given ('" + out.report + "' and '" + a + "')";
        }
    }
    if (out.report.empty())
        return "regress: no report given (usage: sextant-cli regress REPORT.json --baseline BASELINE.json)";
    if (out.baseline.empty())
        return "regress: no --baseline report given";
    return {};
}

} // namespace

int cmdRegress(Args args) {
    RegressArgs a;
    bool help = false;
    if (std::string err = parseArgs(args, a, help); !err.empty())
        return fail(err);
    if (help) {
        std::fputs(kUsage, stdout);
        return 0;
    }
    Expected<Figures> now = readFigures(a.report);
    if (!now.ok())
        return fail("regress: " + now.error().message);
    Expected<Figures> base = readFigures(a.baseline);
    if (!base.ok())
        return fail("regress: " + base.error().message);
    if (now->graph != base->graph || now->target != base->target)
        return fail("regress: the reports are of different compiles (graph '" + now->graph + "' for '" + now->target +
                    "' against graph '" + base->graph + "' for '" + base->target + "')");

    std::printf("regress: %s for %s against %s\n", now->model.c_str(), now->target.c_str(), a.baseline.c_str());
    std::printf("  %-26s %14s %14s %9s  %s\n", "figure", "baseline", "now", "change", "verdict");
    bool regressed = false;
    // Relative bound (per cent) for cycles and memory, absolute (count) for grey ops.
    auto row = [&](const char* name, double was, double is, bool relative, double bound) {
        const double change = relative ? (was > 0 ? 100.0 * (is - was) / was : (is > 0 ? 100.0 : 0.0)) : is - was;
        const bool bad = change > bound + (relative ? 1e-9 : 0);
        regressed = regressed || bad;
        char delta[32];
        std::snprintf(delta, sizeof delta, relative ? "%+.2f%%" : "%+.0f", change);
        std::printf("  %-26s %14.0f %14.0f %9s  %s\n", name, was, is, delta,
                    bad ? "REGRESSED" : (change < 0 ? "better" : "ok"));
    };
    row("est_cycles", base->cycles, now->cycles, true, a.latencyPct);
    row("dram_peak_bytes", base->dramPeak, now->dramPeak, true, a.memoryPct);
    row("transposes_after", base->transpose, now->transpose, false, a.grey);
    row("copies_or_casts_after", base->copyOrCast, now->copyOrCast, false, a.grey);
    row("layout_conversions_after", base->layoutConversion, now->layoutConversion, false, a.grey);
    std::printf("%s (bounds: latency +%g%%, memory +%g%%, grey ops +%g)\n",
                regressed ? "REGRESSION" : "no regression", a.latencyPct, a.memoryPct, a.grey);
    return regressed ? 1 : 0;
}

} // namespace sextant::cli
