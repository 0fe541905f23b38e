// libFuzzer target for the ONNX importer: bytes → importOnnx → verifyGraph, inferTypes,
// printGraph, and the printed text back through parseGraph. Built only with -DSEXTANT_FUZZ=ON and
// clang (scripts/fuzz-importer.sh does it), under ASan + UBSan. A finding is a crash, a sanitizer
// report, a leak, or an error with an empty message (every error must say what is wrong).

#include "core/frontend/OnnxImporter.h"
#include "core/ir/Parser.h"
#include "core/ir/Printer.h"
#include "core/ir/Verifier.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;

/// The importer reads files (and external data next to them), so each input is written to a
/// model file in a private folder; the folder holds nothing else an input could point at.
fs::path g_dir;
fs::path g_model;

void removeDir() {
    std::error_code ec;
    fs::remove_all(g_dir, ec);
}

[[noreturn]] void finding(const char* what) {
    std::fprintf(stderr, "importer_fuzzer: %s\n", what);
    std::abort();
}

void checkError(const sextant::Error& e) {
    if (e.message.empty())
        finding("an error with an empty message");
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    std::string pattern = (fs::temp_directory_path() / "sextant-fuzz-XXXXXX").string();
    if (!::mkdtemp(pattern.data()))
        finding("cannot create a temp folder");
    g_dir = pattern;
    g_model = g_dir / "model.onnx";
    std::atexit(removeDir);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace sextant;
    FILE* f = std::fopen(g_model.c_str(), "wb");
    if (!f)
        finding("cannot write the model file");
    if (size > 0 && std::fwrite(data, 1, size, f) != size)
        finding("cannot write the model file");
    std::fclose(f);

    Expected<std::unique_ptr<ir::Graph>> graph = frontend::importOnnx(g_model.string());
    if (!graph.ok()) {
        checkError(graph.error());
        return 0;
    }
    ir::Graph& g = **graph;
    // An imported graph is verified and typed; running both again must not crash (errors are
    // allowed: the verifier is stricter than the importer in places).
    if (Status s = ir::verifyGraph(g); !s.ok())
        checkError(s.error());
    if (Status s = g.inferTypes(); !s.ok())
        checkError(s.error());
    const std::string text = ir::printGraph(g);
    std::map<std::string, ir::Tensor> weights;
    for (const ir::Value* c : g.constants())
        if (c->constant())
            weights.emplace(c->name(), *c->constant());
    Expected<std::unique_ptr<ir::Graph>> reparsed = ir::parseGraph(text, &weights);
    if (!reparsed.ok())
        checkError(reparsed.error());
    return 0;
}
