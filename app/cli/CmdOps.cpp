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
                        "mean and Sextant implements (docs/onnx-versions.md) and where it runs (the NPU's\n"
                        "cube, vector or DMA unit, or the host). --markdown prints the table README.md shows.\n";

/// The versions of `op` a supported opset can mean: the one opset 7 means, and every later one,
/// less those the importer refuses (frontend::unimplementedOpVersions).
std::string reachableVersions(std::string_view op) {
    std::string out;
    std::span<const int> missing = frontend::unimplementedOpVersions(op);
    for (int v : frontend::onnxOpHistory(op)) {
        const bool reachable = v > frontend::kMinOnnxOpset ? v <= frontend::kMaxOnnxOpset
                                                           : frontend::onnxOpVersion(op, frontend::kMinOnnxOpset) == v;
        if (reachable && std::find(missing.begin(), missing.end(), v) == missing.end())
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
    struct Row {
        std::string name, versions, unit;
    };
    std::vector<Row> ops;
    for (const ir::OpInfo& info : ir::allOps())
        if (info.domain.empty())
            ops.push_back({std::string(info.name), reachableVersions(info.name), unitOf(info)});
    // Ops the importer writes as another op of the table: Upsample (7, 9) as Resize-10.
    for (const char* name : {"Upsample"})
        if (std::optional<ir::OpKind> as = frontend::importedAs("", name)) {
            std::string versions;
            for (int v : frontend::onnxOpHistory(name))
                if (v < 10) // deprecated from opset 10 on: the importer says so
                    versions += (versions.empty() ? "" : ", ") + std::to_string(v);
            const ir::OpInfo& target = ir::opInfo(*as);
            ops.push_back({name, versions, "as " + std::string(target.name) + ": " + unitOf(target)});
        }
    std::sort(ops.begin(), ops.end(), [](const Row& a, const Row& b) { return a.name < b.name; });
    if (markdown)
        std::printf("| op | ONNX versions (opsets %lld-%lld) | runs on |\n|---|---|---|\n",
                    static_cast<long long>(frontend::kMinOnnxOpset), static_cast<long long>(frontend::kMaxOnnxOpset));
    for (const Row& r : ops) {
        if (markdown)
            std::printf("| %s | %s | %s |\n", r.name.c_str(), r.versions.c_str(), r.unit.c_str());
        else
            std::printf("%-28s %-24s %s\n", r.name.c_str(), r.versions.c_str(), r.unit.c_str());
    }
    if (!markdown)
        std::printf("%zu ai.onnx ops\n", ops.size());
    return 0;
}

} // namespace sextant::cli
