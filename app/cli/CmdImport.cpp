// sextant-cli import MODEL [--summary]: imports an ONNX model and prints its textual IR, or a
// summary (inputs and outputs with types, node count per op type, weight bytes).
#include "Commands.h"
#include "ShapeOption.h"

#include "core/frontend/OnnxImporter.h"
#include "core/ir/Graph.h"
#include "core/ir/Printer.h"
#include "core/runtime/ModelInputs.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <string>

namespace sextant::cli {

namespace {

const char* kImportUsage =
    "usage: sextant-cli import MODEL [--summary] [--shape NAME=DIMS]...\n"
    "\n"
    "Imports an ONNX model and prints its textual IR.\n"
    "  --summary          print inputs/outputs, node count per op type and weight bytes instead\n"
    "  --shape NAME=DIMS  give input NAME concrete dims (e.g. x=1x3x48x320, repeatable) and\n"
    "                     resolve the graph's symbolic dims\n";

std::string humanBytes(size_t bytes) {
    char buf[64];
    if (bytes >= (1u << 20))
        std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(bytes) / (1 << 20));
    else if (bytes >= (1u << 10))
        std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / (1 << 10));
    else
        std::snprintf(buf, sizeof buf, "%zu B", bytes);
    return buf;
}

void printSummary(const std::string& path, const ir::Graph& g) {
    std::cout << "model: " << path << "\n";
    std::cout << "graph: " << g.name() << "\n";
    std::cout << "inputs:\n";
    for (const ir::Value* v : g.inputs())
        std::cout << "  " << v->name() << ": " << v->type().str() << "\n";
    std::cout << "outputs:\n";
    for (const ir::Value* v : g.outputs())
        std::cout << "  " << v->name() << ": " << v->type().str() << "\n";
    std::map<std::string, int> perOp; // sorted by op name: deterministic
    for (const ir::Node* n : g.nodes())
        ++perOp[ir::qualifiedOpName(n->kind())];
    std::cout << "nodes: " << g.numNodes() << "\n";
    for (const auto& [op, count] : perOp)
        std::cout << "  " << op << ": " << count << "\n";
    size_t bytes = 0;
    const std::vector<ir::Value*> constants = g.constants();
    for (const ir::Value* c : constants)
        bytes += c->constant()->byteSize();
    std::cout << "constants: " << constants.size() << " (" << bytes << " bytes, "
              << humanBytes(bytes) << ")\n";
}

} // namespace

int cmdImport(Args args) {
    std::string model;
    bool summary = false;
    ir::InputShapes shapes;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "-h" || a == "--help") {
            std::cout << kImportUsage;
            return 0;
        }
        if (a == "--summary") {
            summary = true;
        } else if (a == "--shape") {
            if (i + 1 >= args.size())
                return fail("import: --shape needs NAME=DIMS (e.g. x=1x3x48x320)");
            if (std::string err = addShapeOption("import", args[++i], shapes); !err.empty())
                return fail(err);
        } else if (!a.empty() && a[0] == '-') {
            return fail("import: unknown option '" + a + "' (see 'sextant-cli import --help')");
        } else if (model.empty()) {
            model = a;
        } else {
            return fail("import: more than one model given ('" + model + "' and '" + a + "')");
        }
    }
    if (model.empty())
        return fail("import: no model given (usage: sextant-cli import MODEL [--summary])");

    auto graph = frontend::importOnnx(model);
    if (!graph.ok())
        return fail(graph.error().str());
    if (auto s = runtime::specialiseInputs(**graph, shapes, /*inputsDir=*/"", /*requireStatic=*/false); !s.ok())
        return fail("import: " + s.error().message);
    if (summary)
        printSummary(model, **graph);
    else
        std::cout << ir::printGraph(**graph);
    return 0;
}

} // namespace sextant::cli
