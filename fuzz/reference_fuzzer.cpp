// libFuzzer target for the reference executor on imported models: bytes → importOnnx → (when
// every input is static and every value small) ir::interpret in float64 on deterministic inputs.
// Exercises the reference kernels the way `sextant-cli run --reference` does, under ASan + UBSan.
// A finding is a crash, a sanitizer report, a leak, or an error with an empty message.

#include "FuzzScratch.h"

#include "core/frontend/OnnxImporter.h"
#include "core/frontend/SizeLimits.h"
#include "core/ir/Interpreter.h"

#include <string>

namespace {

constexpr const char* kTarget = "reference_fuzzer";

[[noreturn]] void finding(const char* what) { sextant::fuzz::finding(kTarget, what); }

/// Values over this size are not run: the point is the kernels' logic, not the allocator.
constexpr int64_t kMaxValueBytes = int64_t{1} << 20;
constexpr size_t kMaxNodes = 64;

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
        if (graph.error().message.empty())
            finding("an import error with an empty message");
        return 0;
    }
    const ir::Graph& g = **graph;
    if (g.numNodes() > kMaxNodes)
        return 0;
    for (const ir::Value* v : g.values()) {
        int64_t bytes = frontend::knownByteSize(v->type());
        if (bytes < 0 || bytes > kMaxValueBytes)
            return 0;
    }
    std::vector<ir::Tensor> inputs;
    for (const ir::Value* in : g.inputs()) {
        if (!in->type().isStatic())
            return 0;
        ir::Tensor t(in->type().dtype, in->type().dims());
        for (int64_t i = 0; i < t.numel(); ++i)
            t.set(i, ir::isFloat(t.dtype()) ? (i % 7) * 0.375 - 1.0 : static_cast<double>(i % 3));
        inputs.push_back(std::move(t));
    }
    ir::KernelContext ctx;
    ctx.compute = ir::DType::F64;
    Expected<std::vector<ir::Tensor>> out = ir::interpret(g, inputs, ctx);
    if (!out.ok() && out.error().message.empty())
        finding("a run error with an empty message");
    return 0;
}
