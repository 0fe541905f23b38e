#include "PipelineOptions.h"

#include "core/passes/FusionSwitch.h"

namespace sextant::cli {

const char* kPipelineOptionsUsage =
    "  -O0 | -O1 | -O2 | -O3   optimisation level (default -O2): O0 shape inference only, O1\n"
    "                      clean-ups (canonicalize, fold-constants, dce), O2 adds cse and fusion,\n"
    "                      O3 adds the rules that trade accuracy for speed\n"
    "  --disable ID        switch off a pass or rule by id (repeatable; see 'sextant-cli rules')\n"
    "  --fusion-switch FILE.json  switch passes and rules on or off by id (docs/fusion-switch.md)\n"
    "  --bisect-limit N    let only the first N rule applications happen (N >= 0)\n";

bool parsePipelineOption(const std::string& command, Args args, size_t& i, PipelineOptions& out,
                         std::string& error) {
    const std::string& a = args[i];
    auto value = [&](std::string& into, const std::string& what) {
        if (i + 1 >= args.size()) {
            error = command + ": " + a + " needs " + what;
            return false;
        }
        into = args[++i];
        return true;
    };
    if (a.size() == 3 && a[0] == '-' && a[1] == 'O') {
        if (a[2] < '0' || a[2] > '3') {
            error = command + ": unknown optimisation level '" + a + "' (use -O0, -O1, -O2 or -O3)";
            return true;
        }
        out.config.optLevel = a[2] - '0';
        out.any = true;
        return true;
    }
    if (a == "--disable") {
        std::string id;
        if (value(id, "a pass or rule id"))
            out.config.disabled.insert(id);
        out.any = true;
        return true;
    }
    if (a == "--fusion-switch") {
        if (value(out.fusionSwitch, "a JSON file") && out.fusionSwitch.empty())
            error = command + ": --fusion-switch needs a JSON file";
        out.any = true;
        return true;
    }
    if (a == "--bisect-limit") {
        std::string n;
        out.any = true;
        if (!value(n, "a number"))
            return true;
        const std::optional<int64_t> limit = parseWholeNumber(n);
        if (!limit) {
            error = command + ": --bisect-limit must be a whole number >= 0, got '" + n + "'";
            return true;
        }
        out.config.bisectLimit = *limit;
        return true;
    }
    return false;
}

std::string finishPipelineOptions(const std::string& command, PipelineOptions& options) {
    if (!options.fusionSwitch.empty()) {
        Status s = passes::loadFusionSwitch(options.fusionSwitch, options.config);
        if (!s.ok())
            return command + ": " + s.error().message;
    }
    Status valid = passes::validateConfig(options.config);
    if (!valid.ok())
        return command + ": " + valid.error().message;
    return {};
}

} // namespace sextant::cli
