// sextant-cli ops [--markdown]
// The op table as a user needs it: every ai.onnx op Sextant imports, the ONNX versions of it that
// opsets 7-28 can mean, and which unit runs it. README's coverage table is this command's
// --markdown output (a test compares the two), so it is never written by hand.
#include "Commands.h"

#include "core/frontend/OnnxImporter.h"
#include "core/frontend/OnnxOpVersions.h"
#include "core/ir/OpRegistry.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace sextant::cli {

namespace {

const char* kOpsUsage = "usage: sextant-cli ops [--markdown]\n"
                        "\n"
                        "Lists every ai.onnx op Sextant imports: the ONNX versions of it that opsets 7-28 can\n"
                        "mean (docs/onnx-versions.md) and where it runs (the NPU's cube, vector or DMA unit,\n"
                        "or the host). --markdown prints the table README.md shows.\n";

/// The versions of `op` a supported opset can mean: the one opset 7 means, and every later one.
std::string reachableVersions(std::string_view op) {
    std::string out;
    for (int v : frontend::onnxOpHistory(op)) {
        const bool reachable = v > frontend::kMinOnnxOpset ? v <= frontend::kMaxOnnxOpset
                                                           : frontend::onnxOpVersion(op, frontend::kMinOnnxOpset) == v;
        if (reachable)
            out += (out.empty() ? "" : ", ") + std::to_string(v);
    }
    return out;
}

std::string unitOf(const ir::OpInfo& info) {
    return info.cost == ir::CostClass::Host ? "host" : "NPU " + std::string(ir::costClassName(info.cost));
}

} // namespace

int cmdOps(Args args) {
    bool markdown = false;
    for (const std::string& a : args) {
        if (a == "-h" || a == "--help") {
            std::printf("%s", kOpsUsage);
            return 0;
        }
        if (a != "--markdown")
            return fail("ops: unknown option '" + a + "' (see 'sextant-cli ops --help')");
        markdown = true;
    }
    std::vector<const ir::OpInfo*> ops;
    for (const ir::OpInfo& info : ir::allOps())
        if (info.domain.empty())
            ops.push_back(&info);
    std::sort(ops.begin(), ops.end(), [](const ir::OpInfo* a, const ir::OpInfo* b) { return a->name < b->name; });
    if (markdown)
        std::printf("| op | ONNX versions (opsets %lld-%lld) | runs on |\n|---|---|---|\n",
                    static_cast<long long>(frontend::kMinOnnxOpset), static_cast<long long>(frontend::kMaxOnnxOpset));
    for (const ir::OpInfo* info : ops) {
        const std::string versions = reachableVersions(info->name);
        const std::string unit = unitOf(*info);
        if (markdown)
            std::printf("| %.*s | %s | %s |\n", static_cast<int>(info->name.size()), info->name.data(), versions.c_str(),
                        unit.c_str());
        else
            std::printf("%-28.*s %-24s %s\n", static_cast<int>(info->name.size()), info->name.data(), versions.c_str(),
                        unit.c_str());
    }
    if (!markdown)
        std::printf("%zu ai.onnx ops\n", ops.size());
    return 0;
}

} // namespace sextant::cli
