// sextant-cli: the headless driver. Every GUI action is reachable from here so CI can gate on it.
#include "Commands.h"

#include "core/ir/Allocator.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace sextant::cli {

int fail(std::string_view message) {
    // One line, whatever the message quotes: a name read from a broken file may hold a newline or
    // other control bytes, shown as \xNN.
    std::string line;
    line.reserve(message.size());
    for (char c : message) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
            char esc[8];
            std::snprintf(esc, sizeof esc, "\\x%02x", u);
            line += esc;
        } else {
            line += c;
        }
    }
    std::cerr << "error: " << line << "\n";
    return 2;
}

std::optional<double> parseTolerance(const std::string& s) {
    try {
        size_t used = 0;
        double v = std::stod(s, &used);
        if (used != s.size() || !(v >= 0))
            return std::nullopt;
        return v;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

std::optional<int64_t> parseWholeNumber(const std::string& s) {
    if (s.empty() || s.size() > 15 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return std::nullopt;
    return std::stoll(s);
}

namespace {

struct Command {
    const char* name;
    int (*fn)(Args);
    const char* summary;
};

const Command kCommands[] = {
    {"import", cmdImport, "import an ONNX model and print its IR or a summary"},
    {"rules", cmdRules, "list the passes and rewrite rules with their ids"},
    {"ops", cmdOps, "list the ONNX ops Sextant imports, their versions and where they run"},
    {"compile", cmdCompile, "compile a model for a target and write the artifact"},
    {"run", cmdRun, "run a model on the reference executor or the simulated NPU"},
    {"bisect", cmdBisect, "find the first rule application that moves the outputs out of tolerance"},
    {"regress", cmdRegress, "compare a compile report with a baseline and fail on a regression"},
    {"compare-runs", cmdCompareRuns, "compare two simulated runs from profile databases"},
    {"export-trace", cmdExportTrace, "export a profile database as Chrome Trace Event JSON"},
    {"plan-offsets", cmdPlanOffsets, "plan buffer offsets for MiniMalloc-format CSV problems"},
};

void usage(std::FILE* out) {
    std::fprintf(out, "usage: sextant-cli <command> [options]\n\ncommands:\n");
    for (const Command& c : kCommands)
        std::fprintf(out, "  %-13s %s\n", c.name, c.summary);
    std::fprintf(out, "\n'sextant-cli <command> --help' shows a command's options.\n");
}

} // namespace
} // namespace sextant::cli

int main(int argc, char** argv) {
    sextant::ir::tuneAllocator();
    using namespace sextant::cli;
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    std::string name = argv[1];
    if (name == "-h" || name == "--help" || name == "help") {
        usage(stdout);
        return 0;
    }
    std::vector<std::string> args(argv + 2, argv + argc);
    for (const Command& c : kCommands)
        if (name == c.name)
            return c.fn(args);
    return fail("unknown command '" + name + "' (see 'sextant-cli --help')");
}
