// sextant-bench: Google Benchmark timings for issue 3 item 6 and issue 4 item 9.
//
//   Reference/<model>        float32 reference executor, one thread, on the model's test_data input
//   Import/paddleocr_rec     importOnnx of the PaddleOCR recogniser (10.8 MB)
//   ImportPeakRss/...        peak RSS growth of one import over the process baseline (run it in a
//                            process of its own: --benchmark_filter=ImportPeakRss)
//   PipelineO2/densenet121   passes::runPipeline with the default (O2) configuration
//   PipelineO2/synthetic/N   the same on generated graphs of N nodes (bench/SyntheticGraph.h)
//
// Models come from SEXTANT_SHARED_DIR/models; when that folder is absent the model benchmarks
// report themselves as skipped. bench/run-ort-compare.sh runs this together with onnxruntime.

#include "ProcStatus.h"
#include "SyntheticGraph.h"

#include "core/frontend/OnnxImporter.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/ir/Allocator.h"
#include "core/ir/Blas.h"
#include "core/passes/PassManager.h"
#include "core/runtime/ReferenceExecutor.h"

#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace sextant;

namespace {

struct ModelSpec {
    const char* id;     ///< benchmark argument name
    const char* folder; ///< under models/
    const char* stem;   ///< file stem; test data is test_data/<stem>/test_data_set_0
};

constexpr ModelSpec kRecognizer{"paddleocr_rec", "paddleocr", "ch_PP-OCRv4_rec_infer"};
constexpr ModelSpec kModels[] = {
    {"paddleocr_det", "paddleocr", "ch_PP-OCRv4_det_infer"},
    kRecognizer,
    {"blazeface_back", "blazeface", "face_detection_back_256x256_barracuda"},
};
constexpr ModelSpec kDensenet{"densenet121", "onnx-light", "light_densenet121"};

fs::path modelsDir() { return fs::path(SEXTANT_SHARED_DIR) / "models"; }
fs::path modelPath(const ModelSpec& m) { return modelsDir() / m.folder / (std::string(m.stem) + ".onnx"); }
fs::path dataDir(const ModelSpec& m) {
    return modelsDir() / m.folder / "test_data" / m.stem / "test_data_set_0";
}

/// A loaded model and its test inputs, shared by the repetitions of a benchmark.
struct Loaded {
    std::unique_ptr<ir::Graph> graph;
    std::vector<ir::Tensor> inputs;
    std::string error; ///< non-empty: why the benchmark cannot run
};

const Loaded& load(const ModelSpec& m, bool withInputs) {
    static std::map<std::string, Loaded> cache;
    auto it = cache.find(m.id);
    if (it != cache.end())
        return it->second;
    Loaded& l = cache[m.id];
    if (!fs::exists(modelPath(m))) {
        l.error = modelPath(m).string() + " not found: skipping";
        return l;
    }
    auto g = frontend::importOnnx(modelPath(m).string());
    if (!g.ok()) {
        l.error = "import failed: " + g.error().message;
        return l;
    }
    l.graph = std::move(g).value();
    if (withInputs) {
        auto in = frontend::loadTestDataSet(dataDir(m).string(), "input");
        if (!in.ok()) {
            l.error = "test inputs: " + in.error().message;
            return l;
        }
        l.inputs = std::move(in).value();
    }
    return l;
}

void referenceF32(benchmark::State& state, ModelSpec m) {
    const Loaded& l = load(m, true);
    if (!l.error.empty()) {
        state.SkipWithError(l.error.c_str());
        return;
    }
    for (auto _ : state) {
        auto out = runtime::runReference(*l.graph, l.inputs, ir::DType::F32);
        if (!out.ok()) {
            state.SkipWithError(("run failed: " + out.error().message).c_str());
            return;
        }
        benchmark::DoNotOptimize(out.value().data());
    }
    state.counters["nodes"] = static_cast<double>(l.graph->numNodes());
}

void importModel(benchmark::State& state, ModelSpec m) {
    const fs::path path = modelPath(m);
    if (!fs::exists(path)) {
        state.SkipWithError((path.string() + " not found: skipping").c_str());
        return;
    }
    for (auto _ : state) {
        auto g = frontend::importOnnx(path.string());
        if (!g.ok()) {
            state.SkipWithError(("import failed: " + g.error().message).c_str());
            return;
        }
        benchmark::DoNotOptimize(g.value().get());
    }
    state.counters["file_MB"] = static_cast<double>(fs::file_size(path)) / 1e6;
}

/// Peak RSS of one import above the RSS before it, as a multiple of the file size. Meaningful
/// only as the first thing a process does (freed heap from earlier work would hide growth).
void importPeakRss(benchmark::State& state, ModelSpec m) {
    const fs::path path = modelPath(m);
    if (!fs::exists(path)) {
        state.SkipWithError((path.string() + " not found: skipping").c_str());
        return;
    }
    double growthKb = 0, baselineKb = 0;
    for (auto _ : state) {
        bench::resetPeakRss();
        const long before = bench::procStatusKb("VmRSS");
        auto g = frontend::importOnnx(path.string());
        const long peak = bench::procStatusKb("VmHWM");
        if (!g.ok() || before < 0 || peak < 0) {
            state.SkipWithError(g.ok() ? "cannot read /proc/self/status" : g.error().message.c_str());
            return;
        }
        growthKb = static_cast<double>(peak - before);
        baselineKb = static_cast<double>(before);
    }
    const double fileKb = static_cast<double>(fs::file_size(path)) / 1024.0;
    state.counters["file_MB"] = fileKb * 1024.0 / 1e6;
    state.counters["baseline_MB"] = baselineKb * 1024.0 / 1e6;
    state.counters["peak_growth_MB"] = growthKb * 1024.0 / 1e6;
    state.counters["growth_per_file_size"] = growthKb / fileKb; // target < 2
}

void runO2(benchmark::State& state, const ir::Graph& g) {
    passes::PipelineConfig config; // the default pipeline is O2
    std::map<std::string, double> passMillis;
    size_t finalNodes = 0;
    // One untimed run first: the first run in a process also pays for growing the heap (fresh
    // pages from the kernel), and with only a few timed iterations on the big graphs that one-off
    // cost would weigh more there than on the small ones.
    if (auto warm = passes::runPipeline(g, config); !warm.ok()) {
        state.SkipWithError(("pipeline failed: " + warm.error().message).c_str());
        return;
    }
    for (auto _ : state) {
        auto r = passes::runPipeline(g, config);
        if (!r.ok()) {
            state.SkipWithError(("pipeline failed: " + r.error().message).c_str());
            return;
        }
        for (const passes::Snapshot& s : r.value().snapshots)
            if (s.passId != "input")
                passMillis[s.passId] += s.millis;
        finalNodes = r.value().graph->numNodes();
        benchmark::DoNotOptimize(r.value().graph.get());
    }
    state.counters["nodes"] = static_cast<double>(g.numNodes());
    state.counters["nodes_after"] = static_cast<double>(finalNodes);
    // Wall time inside each pass, per pipeline run (the rest is verifying, printing and
    // snapshotting between passes).
    for (const auto& [id, ms] : passMillis)
        state.counters["ms_" + id] = ms / static_cast<double>(state.iterations());
}

void pipelineModel(benchmark::State& state, ModelSpec m) {
    const Loaded& l = load(m, false);
    if (!l.error.empty()) {
        state.SkipWithError(l.error.c_str());
        return;
    }
    runO2(state, *l.graph);
}

void pipelineSynthetic(benchmark::State& state) {
    static std::map<int64_t, std::unique_ptr<ir::Graph>> cache;
    const int64_t n = state.range(0);
    auto& g = cache[n];
    if (!g) {
        auto built = bench::buildSyntheticGraph(n);
        if (!built.ok()) {
            state.SkipWithError(("generator failed: " + built.error().message).c_str());
            return;
        }
        g = std::move(built).value();
    }
    runO2(state, *g);
}

} // namespace

int main(int argc, char** argv) {
    // As the applications do (core/ir/Allocator.h): measure the allocator setup users run.
    ir::tuneAllocator();
    // The baseline is onnxruntime with one intra-op thread: compare like with like.
    ir::blas::setNumThreads(1);
    // Record which OpenBLAS kernels ran and who chose them (Sextant picks them from the CPU's
    // features unless OPENBLAS_CORETYPE is set; core/ir/Blas.h).
    benchmark::AddCustomContext("openblas_core", ir::blas::info().core);
    benchmark::AddCustomContext("openblas", ir::blas::describe());
    benchmark::AddCustomContext("allocator", ir::describeAllocator());
    for (const ModelSpec& m : kModels)
        benchmark::RegisterBenchmark((std::string("Reference/") + m.id).c_str(), referenceF32, m)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    benchmark::RegisterBenchmark("Import/paddleocr_rec", importModel, kRecognizer)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("ImportPeakRss/paddleocr_rec", importPeakRss, kRecognizer)
        ->Iterations(1)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark("PipelineO2/densenet121", pipelineModel, kDensenet)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    // 5k and 20k are issue 4's pair; the others show how the time per node grows with the graph
    // (bench/pipeline-scaling.sh with SIZES).
    benchmark::RegisterBenchmark("PipelineO2/synthetic", pipelineSynthetic)
        ->Arg(1250)
        ->Arg(2500)
        ->Arg(5000)
        ->Arg(10000)
        ->Arg(20000)
        ->Arg(40000)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv))
        return 1;
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
