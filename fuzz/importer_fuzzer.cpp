// libFuzzer target for the ONNX importer: bytes → importOnnx → verifyGraph, inferTypes,
// printGraph, and the printed text back through parseGraph. Built only with -DSEXTANT_FUZZ=ON and
// clang (scripts/fuzz.sh does it), under ASan + UBSan. A finding is a crash, a sanitizer
// report, a leak, or an error with an empty message (every error must say what is wrong).

#include "FuzzScratch.h"

#include "core/frontend/OnnxImporter.h"
#include "core/ir/Parser.h"
#include "core/ir/Printer.h"
#include "core/ir/Verifier.h"

#include <map>
#include <string>

namespace {

constexpr const char* kTarget = "importer_fuzzer";

void checkError(const sextant::Error& e) { sextant::fuzz::Scratch::checkError(e); }

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    sextant::fuzz::ModelFile::init(kTarget);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace sextant;
    const std::string model = fuzz::ModelFile::write(data, size);
    Expected<std::unique_ptr<ir::Graph>> graph = frontend::importOnnx(model);
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
