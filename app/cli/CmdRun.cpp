// sextant-cli run MODEL.onnx|ARTIFACT_DIR [options]
// Runs a model on the float64/float32 reference executor (--reference) or, by default, compiles it
// and runs it on the simulated NPU; compares the outputs with onnxruntime's (--expected) and/or
// with the float64 reference of the original graph (--compare-reference); can write the run to a
// profile database.
#include "Commands.h"
#include "CompareOptions.h"
#include "PipelineOptions.h"

#include "core/backend/Target.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/ir/Blas.h"
#include "core/runtime/Compare.h"
#include "core/runtime/CtcDecode.h"
#include "core/runtime/Driver.h"
#include "core/runtime/NetworkSummary.h"
#include "core/sim/CriticalPath.h"
#include "core/sim/Fault.h"
#include "profiler/ProfileDb.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>
#include <string>
#include <vector>

namespace sextant::cli {

namespace {

const char* kRunUsage =
    "usage: sextant-cli run MODEL.onnx|ARTIFACT_DIR [options]\n"
    "\n"
    "Compiles the model and runs it on the simulated NPU (or loads a compiled artifact "
    "directory),\n"
    "or with --reference runs it on the reference executor.\n"
    "  --inputs DIR          read input_0.pb, input_1.pb, ... (default: generated deterministic "
    "inputs)\n"
    "  --expected DIR        compare the outputs with output_0.pb, ... (e.g. onnxruntime's)\n"
    "  --reference           run the imported graph on the reference executor (float64), not the "
    "NPU;\n"
    "                        with a pipeline option below (e.g. -O2), the optimised graph\n"
    "  --float32             with --reference: compute in float32\n"
    "  --compare-reference   compare the simulated outputs with the float64 reference of the "
    "model\n"
    "  --critical-path       print the chain of Tasks that set the latency, and what each waited for\n"
    "  --per-tensor          with --compare-reference: also every intermediate tensor, in graph\n"
    "                        order, and the first one out of tolerance\n"
    "  --float-model F.onnx  with --per-tensor, for a quantized model: also its reference's tensors\n"
    "                        against the float model F's (float64, same inputs, matched by name),\n"
    "                        lowest cosine first: the layers quantization costs the most\n"
    "  --profile FILE.db     append the run (Tasks, nodes, buffers, metrics) to a profile "
    "database\n"
    "  --summary-csv F.csv   append the network's figures (simulated latency, Tasks, cores, MACs,\n"
    "                        DRAM traffic, SRAM peaks, events, grey ops, roofline) as one row\n"
    "                        (docs/summary-csv.md)\n"
    "  --profile-wait S      when another process is writing FILE.db, wait up to S seconds for it\n"
    "                        (default 60, 0..3600), then fail with exit 2: the run is not saved\n"
    "  --mode strict|async   strict: one Task at a time in issue order; async (default): as the\n"
    "                        planned events allow\n"
    "  --check-races         stop with an error naming both Tasks when a Task reads data its "
    "producer\n"
    "                        has not finished or that another buffer overwrote (debugging "
    "plans/events),\n"
    "                        or when a part of a split node needs more of an input than the bytes\n"
    "                        it was recorded to read, and so waits for (each such part is computed\n"
    "                        again with the rest poisoned)\n"
    "  --inject KIND:N       plant one fault in the simulated run, after every check of the model or\n"
    "                        artifact, to see the safety nets work (docs/fault-injection.md); N is a\n"
    "                        Task id. KIND: drop-record (Task N does not record its events: the\n"
    "                        watchdog names who waits), delay-dma (Task N's DMA runs 100x slower:\n"
    "                        see --critical-path; the numbers stay right), shift-address (Task N's\n"
    "                        output buffer moved onto another live buffer: wrong outputs, and\n"
    "                        --check-races names both Tasks). Implies --compare-reference unless\n"
    "                        --expected is given; --profile records the fault as metric inject:KIND:N\n"
    "  --save-outputs DIR    write each output as a TensorProto file, DIR/output_0.pb, output_1.pb, ...\n"
    "                        (the ONNX test-data layout, named as the model's outputs; --expected reads\n"
    "                        them back)\n"
    "  --target FILE         target description (default: the built-in npu-a)\n"
    "Pipeline options (compiling, or --reference on the optimised graph):\n"
    "%s"
    "  --atol A, --rtol R    tolerance |got - expected| <= A + R*|expected| (default for\n"
    "                        --reference: rtol 1e-3, atol 1e-4 for probability outputs and\n"
    "                        1e-4*max|expected| for unbounded ones; 1e-2 and 1e-2 for the NPU,\n"
    "                        whose cube unit reads f16)\n"
    "  --shape NAME=DIMS     give input NAME concrete dims, e.g. x=1x3x48x320 (repeatable); a model\n"
    "                        with symbolic input dims compiled without it takes the --inputs shapes\n"
    "  --ctc-keys FILE       decode output 0 as CTC scores with this character list (one per line,\n"
    "                        PaddleOCR style) and print the text it reads\n"
    "Exit status: 0 all comparisons pass, 1 a comparison failed, 2 bad input (or a bad --inject),\n"
    "3 the simulated run was stopped by the watchdog (no Task can make progress) or the race checker.\n";

struct RunArgs : CompareOptions { // --inputs, --expected, --atol, --rtol, --shape
    std::string model;
    std::string profilePath, targetPath, ctcKeys, saveOutputs, floatModel, summaryCsv;
    sim::FaultPlan fault;
    int profileWaitMs = 60000;
    bool reference = false, float32 = false, compareReference = false, checkRaces = false, perTensor = false,
         criticalPath = false;
    runtime::RunMode mode = runtime::RunMode::GraphAsync;
    PipelineOptions pipeline;
};

/// --profile FILE and --profile-wait SECONDS at args[i]: true when it was one of them (`err` set
/// when its value is missing or bad).
bool parseProfileOption(Args args, size_t& i, RunArgs& out, std::string& err) {
    const std::string& a = args[i];
    if (a != "--profile" && a != "--profile-wait")
        return false;
    if (i + 1 >= args.size()) {
        err = a == "--profile" ? "run: --profile needs a file" : "run: --profile-wait needs a number of seconds";
        return true;
    }
    const std::string v = args[++i];
    if (a == "--profile") {
        out.profilePath = v;
        return true;
    }
    const std::optional<int64_t> seconds = parseWholeNumber(v);
    if (!seconds || *seconds > 3600)
        err = "run: --profile-wait '" + v + "' is not a number of seconds from 0 to 3600";
    else
        out.profileWaitMs = static_cast<int>(*seconds * 1000);
    return true;
}

/// How long `run --profile` waits for a locked database, saying so on stderr while it does.
profiler::WriteOptions profileWriteOptions(const RunArgs& a) {
    profiler::WriteOptions options;
    options.lockTimeoutMs = a.profileWaitMs;
    options.onWait = [](const std::string& message) { std::cerr << message << std::endl; };
    return options;
}

/// Returns an empty string on success, else the error message.
std::string parseArgs(Args args, RunArgs& out, bool& help) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&](std::string& into) -> bool {
            if (i + 1 >= args.size())
                return false;
            into = args[++i];
            return true;
        };
        std::string v;
        if (a == "-h" || a == "--help") {
            help = true;
            return {};
        }
        if (std::string err; parseCompareOption("run", args, i, out, err)) {
            if (!err.empty())
                return err;
        } else if (std::string err; parseProfileOption(args, i, out, err)) {
            if (!err.empty())
                return err;
        } else if (a == "--target") {
            if (!value(out.targetPath))
                return "run: --target needs a file";
        } else if (std::string err; parsePipelineOption("run", args, i, out.pipeline, err)) {
            if (!err.empty())
                return err;
        } else if (a == "--mode") {
            if (!value(v))
                return "run: --mode needs 'strict' or 'async'";
            auto m = runtime::parseRunMode(v);
            if (!m)
                return "run: unknown mode '" + v + "' (expected 'strict' or 'async')";
            out.mode = *m;
        } else if (a == "--inject") {
            if (!value(v))
                return "run: --inject needs KIND:N (e.g. drop-record:3; see 'sextant-cli run --help')";
            Expected<sim::FaultPlan> plan = sim::parseFaultPlan(v);
            if (!plan.ok())
                return "run: " + plan.error().message;
            out.fault = *plan;
        } else if (a == "--save-outputs") {
            if (!value(out.saveOutputs))
                return "run: --save-outputs needs a directory";
        } else if (a == "--summary-csv") {
            if (!value(out.summaryCsv))
                return "run: --summary-csv needs a file";
        } else if (a == "--float-model") {
            if (!value(out.floatModel))
                return "run: --float-model needs the float ONNX model the quantized one was made from";
        } else if (a == "--ctc-keys") {
            if (!value(out.ctcKeys))
                return "run: --ctc-keys needs a character list file";
        } else if (a == "--reference") {
            out.reference = true;
        } else if (a == "--float32") {
            out.float32 = true;
        } else if (a == "--check-races") {
            out.checkRaces = true;
        } else if (a == "--compare-reference") {
            out.compareReference = true;
        } else if (a == "--per-tensor") {
            out.perTensor = true;
        } else if (a == "--critical-path") {
            out.criticalPath = true;
        } else if (!a.empty() && a[0] == '-') {
            return "run: unknown option '" + a + "' (see 'sextant-cli run --help')";
        } else if (out.model.empty()) {
            out.model = a;
        } else {
            return "run: more than one model given ('" + out.model + "' and '" + a + "')";
        }
    }
    if (out.model.empty())
        return "run: no model given (usage: sextant-cli run MODEL.onnx|ARTIFACT_DIR [options])";
    if (out.float32 && !out.reference)
        return "run: --float32 only applies to --reference";
    if (!out.floatModel.empty() && !out.perTensor)
        return "run: --float-model compares the quantized model's tensors with the float model's: it needs "
               "--compare-reference --per-tensor";
    if (out.perTensor && !out.compareReference)
        return "run: --per-tensor compares the NPU's intermediate tensors with the reference's: it needs "
               "--compare-reference";
    if (std::string err = finishPipelineOptions("run", out.pipeline); !err.empty())
        return err;
    if (out.reference && out.criticalPath)
        return "run: --reference runs no NPU program, so --critical-path does not apply";
    if (out.reference && (out.compareReference || out.checkRaces || !out.profilePath.empty() || out.fault.active() ||
                          !out.summaryCsv.empty()))
        return "run: --reference runs no NPU program, so --compare-reference, --check-races, --inject, "
               "--profile and --summary-csv do not apply";
    // An injected fault's outputs are shown against the reference, unless compared with --expected.
    if (out.fault.active() && out.expectedDir.empty())
        out.compareReference = true;
    return {};
}

std::string dimsText(const ir::Tensor& t) {
    return t.type().str();
}

int64_t argmax(const ir::Tensor& t) {
    int64_t best = -1;
    for (int64_t i = 0; i < t.numel(); ++i)
        if (best < 0 || t.at(i) > t.at(best))
            best = i;
    return best;
}

/// Prints one comparison line per output under `heading`; returns false if any failed.
/// `metrics` collects cosine and max_abs per output for the profile, keys prefixed with `tag`.
bool printComparisons(const std::string& heading, const std::vector<runtime::TensorComparison>& comparisons,
                      std::vector<std::pair<std::string, double>>* metrics, const std::string& tag) {
    std::cout << heading << "\n";
    bool ok = true;
    for (const runtime::TensorComparison& c : comparisons) {
        std::cout << runtime::formatComparison(c) << "\n";
        ok = ok && c.pass;
        if (metrics) {
            metrics->emplace_back(tag + "_cosine:" + c.name, c.cosine);
            metrics->emplace_back(tag + "_max_abs:" + c.name, c.maxAbs);
        }
    }
    return ok;
}

/// With --ctc-keys: prints the text output 0 reads as CTC scores. The error is what to print.
Status printCtcText(const RunArgs& a, const std::vector<ir::Tensor>& outputs) {
    if (a.ctcKeys.empty())
        return {};
    SX_ASSIGN(std::vector<std::string> alphabet, runtime::loadCtcAlphabet(a.ctcKeys));
    if (outputs.empty())
        return makeError(ErrorKind::Invalid, "run: --ctc-keys needs an output to decode");
    Expected<std::vector<std::string>> texts = runtime::ctcGreedyDecode(outputs[0], alphabet);
    if (!texts.ok())
        return makeError(texts.error().kind, "run: --ctc-keys: " + texts.error().message);
    for (const std::string& t : *texts)
        std::cout << "text: \"" << t << "\"\n";
    return {};
}

/// --per-tensor: every value the NPU computed against the reference's value of the same name, in
/// the compiled graph's order (the Tasks' issue order), and the first one out of tolerance: where
/// the numbers start to drift. Tolerances are the NPU's (rtol 1e-2; atol 1e-2, times
/// max|reference| for a tensor that is not probability-like). A value the reference has no
/// counterpart for (made by fusion under a new name, a layout conversion's copy) is only counted.
void printPerTensor(const runtime::ValueDrift& drift) {
    std::cout << "per tensor, in graph order (npu vs float64 reference):\n";
    for (size_t i = 0; i < drift.values.size(); ++i) {
        const runtime::TensorComparison& c = drift.values[i];
        char line[256];
        std::snprintf(line, sizeof line, "  %-4s max_abs %.1e max_rel %.1e cosine %.6f  ", c.pass ? "PASS" : "FAIL",
                      c.maxAbs, c.maxRel, c.cosine);
        std::cout << line << "'" << c.name << "' (node '" << drift.nodes[i] << "')\n";
    }
    std::cout << drift.values.size() << " tensors compared, " << drift.unmatched
              << " without a reference counterpart; "
              << (drift.firstFailing < 0 ? std::string("every compared tensor is within tolerance")
                                         : "first out of tolerance: '" + drift.values[static_cast<size_t>(drift.firstFailing)].name +
                                               "', computed by node '" + drift.firstFailingNode + "'")
              << "\n";
}

/// --float-model: the quantized model's tensors (its float64 reference run, which the NPU matches
/// per tensor above) against the float model's of the same name, the lowest cosine similarity
/// first (scale-free, as quantization tools rank layers), so the layers whose quantization costs
/// the most lead. A tensor that could not be compared (shape or type) comes last, with why.
void printFloatDrift(const runtime::ValueDrift& drift, const std::string& floatModel) {
    const std::vector<size_t> order = runtime::lowestCosineFirst(drift);
    std::cout << "per tensor, quantized model vs float model '" << floatModel
              << "' (float64 references, matched by name; lowest cosine first):\n";
    for (size_t i : order) {
        const runtime::TensorComparison& c = drift.values[i];
        char line[256];
        std::snprintf(line, sizeof line, "  cosine %.6f max_abs %.1e rmse %.1e  ", c.cosine, c.maxAbs, c.rmse);
        std::cout << line << "'" << c.name << "' (node '" << drift.nodes[i] << "')"
                  << (c.problem.empty() ? "" : ": " + c.problem) << "\n";
    }
    std::cout << drift.values.size() << " tensors matched by name in both models";
    if (!order.empty() && drift.values[order[0]].problem.empty())
        std::cout << "; most quantization error: '" << drift.values[order[0]].name << "' (node '"
                  << drift.nodes[order[0]] << "')";
    std::cout << "\n";
}

/// --critical-path: the Tasks that set the latency, each with what it waited for.
void printCriticalPath(const backend::Program& program, const sim::SimResult& result, bool strict) {
    const std::vector<sim::CriticalStep> path = sim::criticalPath(program, result, strict);
    const sim::PathTime time = sim::pathTime(program, result, path);
    const uint64_t busy = time.busy();
    std::printf("critical path: %zu of %zu Tasks, busy %llu of %llu cycles (the rest is waiting: event\n"
                "latency, dispatch, a core still busy):\n",
                path.size(), program.tasks.size(), static_cast<unsigned long long>(busy),
                static_cast<unsigned long long>(result.totalCycles));
    auto share = [&](uint64_t c) {
        char b[64];
        std::snprintf(b, sizeof b, "%llu (%.0f%%)", static_cast<unsigned long long>(c),
                      result.totalCycles ? 100.0 * static_cast<double>(c) / static_cast<double>(result.totalCycles) : 0.0);
        return std::string(b);
    };
    std::printf("  where the time goes: compute %s, DMA %s, DRAM latency %s, dispatch %s, events %s, other waits %s\n",
                share(time.compute).c_str(), share(time.dma).c_str(), share(time.latency).c_str(),
                share(time.dispatch).c_str(), share(time.events).c_str(), share(time.waits).c_str());
    for (const sim::CriticalStep& s : path) {
        const backend::Task& t = program.tasks[s.task];
        const sim::TraceRecord& r = result.trace[s.task];
        std::string why = "first";
        if (s.cause != sim::CriticalStep::Cause::First)
            why = "after Task " + std::to_string(program.tasks[s.after].id) + " (" + sim::causeName(s.cause) + ", +" +
                  std::to_string(s.gap) + ")";
        const std::string lane = t.unit == backend::UnitKind::Host ? "host  " : "core " + std::to_string(t.core);
        std::printf("  %4d %-28s %-16s %s %-6s %10llu..%-10llu %s\n", t.id, t.name.c_str(), t.kernel.c_str(),
                    lane.c_str(), std::string(backend::unitName(t.unit)).c_str(), static_cast<unsigned long long>(r.start),
                    static_cast<unsigned long long>(r.end), why.c_str());
    }
}


/// --save-outputs: each output as DIR/output_<i>.pb, named as the model's output and in its element
/// type (an f16 output buffer is widened back), so --expected DIR and onnx tools read it.
Status saveOutputs(const std::string& dir, const runtime::RunResult& r, const std::vector<ir::Tensor>& outputs) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec || !std::filesystem::is_directory(dir))
        return makeError(ErrorKind::Invalid, "run: --save-outputs: cannot create directory '" + dir + "'" +
                                                 (ec ? ": " + ec.message() : std::string()));
    const ir::Graph* g = r.modelGraph();
    for (size_t i = 0; i < outputs.size(); ++i) {
        ir::Tensor t = outputs[i];
        if (g && i < g->outputs().size() && t.dtype() != g->outputs()[i]->type().dtype)
            t = t.castTo(g->outputs()[i]->type().dtype);
        const std::string path = (std::filesystem::path(dir) / ("output_" + std::to_string(i) + ".pb")).string();
        SX_TRY(frontend::saveTensorProto(t, r.outputName(i), path));
    }
    std::cout << "outputs: wrote " << outputs.size() << " file" << (outputs.size() == 1 ? "" : "s") << " to " << dir
              << " (output_0.pb ...)\n";
    return {};
}

/// With --inject, after the run: when the Task of the fault ran, and its DMA time.
void printFaultTask(const sim::FaultPlan& fault, const backend::Program& program, const sim::SimResult& result) {
    for (size_t i = 0; i < program.tasks.size() && i < result.trace.size(); ++i) {
        if (program.tasks[i].id != fault.task)
            continue;
        const sim::TraceRecord& rec = result.trace[i];
        std::printf("inject %s: task %d ran cycles %llu..%llu, DMA %llu cycles\n", sim::faultSpec(fault).c_str(),
                    fault.task, static_cast<unsigned long long>(rec.start), static_cast<unsigned long long>(rec.end),
                    static_cast<unsigned long long>(rec.dmaCycles));
    }
}

/// The driver's request for these arguments (the target is loaded by the caller).
runtime::RunRequest runRequest(const RunArgs& a) {
    runtime::RunRequest q;
    q.model = a.model;
    q.engine = a.reference ? runtime::RunEngine::Reference : runtime::RunEngine::Npu;
    q.compile.pipeline = a.pipeline.config;
    // -O/--disable/--fusion-switch/--bisect-limit with --reference: run the optimised graph, so a
    // rule that changes the numbers shows up without the NPU in the way.
    q.optimiseReference = a.reference && a.pipeline.any;
    q.shapes = a.shapes;
    q.requireStaticInputs = !a.reference; // the reference executor takes symbolic dims
    q.inputsDir = a.inputsDir;
    q.mode = a.mode;
    q.checkRaces = a.checkRaces;
    q.fault = a.fault;
    q.compareReference = a.compareReference;
    q.perTensor = a.perTensor;
    q.floatModel = a.floatModel;
    q.referenceFloat32 = a.float32;
    q.expectedDir = a.expectedDir;
    q.atol = a.atol;
    q.rtol = a.rtol;
    return q;
}

/// The error line for a failed run. The stages that check the user's shapes and options say
/// "run:" first, as they always have; the others' messages name their file or node themselves.
int failRun(const Error& e, runtime::RunStage stage, bool reference) {
    if (stage == runtime::RunStage::Simulate && sim::isSafetyNetStop(e)) {
        fail(e.message);
        return 3;
    }
    const bool prefixed = stage == runtime::RunStage::Specialise || stage == runtime::RunStage::CompareReference ||
                          (reference && stage == runtime::RunStage::Compile);
    return fail(prefixed ? "run: " + e.message : e.message);
}

/// `run MODEL|ARTIFACT_DIR [options]`: the driver's stages, each printing its lines as it
/// completes, so what a user reads comes in the order the work is done (and a failure after
/// the simulation still shows its latency line first).
int runModel(const RunArgs& a) {
    std::error_code ec;
    const bool isArtifact = !a.reference && std::filesystem::is_directory(a.model, ec);
    if (isArtifact && (!a.targetPath.empty() || !!a.pipeline.any || !a.shapes.empty()))
        return fail("run: '" + a.model +
                    "' is a compiled artifact: --target, --disable and --shape apply when "
                    "compiling");
    runtime::RunRequest request = runRequest(a);
    if (!a.reference && !isArtifact && !a.targetPath.empty()) {
        Expected<backend::Target> t = backend::loadTarget(a.targetPath);
        if (!t.ok())
            return fail(t.error().message);
        request.compile.target = *t;
    }
    const char* compute = a.float32 ? "float32" : "float64";
    bool ok = true;
    std::vector<std::pair<std::string, double>> metrics;
    runtime::RunStage current = runtime::RunStage::Import;

    runtime::RunHooks hooks;
    hooks.progress = [&](runtime::RunStage stage, int, std::string_view detail) {
        if (!detail.empty())
            return;
        current = stage;
        if (stage == runtime::RunStage::Inputs && a.inputsDir.empty())
            std::cout << "inputs: generated (deterministic uniform values in [-1, 1); give real ones with "
                         "--inputs DIR)\n";
        // Which BLAS kernels the products run on: what a user comparing speed needs to know first.
        if (stage == runtime::RunStage::Reference && a.reference)
            std::cout << "blas: " << ir::blas::describe() << "\n";
    };
    hooks.stageDone = [&](runtime::RunStage stage, const runtime::RunResult& r) -> Status {
        switch (stage) {
        case runtime::RunStage::Import:
        case runtime::RunStage::Specialise:
            return {};
        case runtime::RunStage::Inputs:
            if (a.fault.active()) {
                // Checked here, before the run, so a fault that does not fit says so as bad input.
                if (Status s = sim::checkFault(r.program, a.fault); !s.ok())
                    return makeError(ErrorKind::Invalid, "run: --" + s.error().message);
                std::cout << sim::describeFault(r.program, a.fault) << "\n";
            }
            return {};
        case runtime::RunStage::Compile:
            if (a.reference)
                std::cout << "reference graph: optimised at -O" << a.pipeline.config.optLevel << " ("
                          << r.graph->numNodes() << " -> " << r.pipeline.graph->numNodes() << " nodes, "
                          << r.pipeline.applications.size() << " rule applications)\n";
            return {};
        case runtime::RunStage::Simulate: {
            const backend::Program& program = r.program;
            const std::vector<std::string> host = backend::hostStepLines(program);
            std::printf("simulated '%s' on %s (%s mode): %zu tasks on %d of %d cores%s\n", program.modelName.c_str(),
                        program.target.name.c_str(), std::string(runtime::runModeName(a.mode)).c_str(),
                        program.tasks.size(), backend::coresUsed(program), program.target.numCores,
                        host.empty() ? "" : " and the host");
            for (const std::string& h : host)
                std::printf("  host: %s\n", h.c_str());
            for (const std::string& g : backend::inputGuardLines(program))
                std::printf("  bound: %s\n", g.c_str());
            std::fflush(stdout);
            return {};
        }
        case runtime::RunStage::Reference:
            if (!a.reference)
                return {};
            SX_TRY(printCtcText(a, r.reference));
            if (a.expectedDir.empty()) {
                std::cout << "reference (" << compute << ") outputs:\n";
                for (size_t i = 0; i < r.reference.size(); ++i)
                    std::cout << "output '" << r.outputName(i) << "': " << dimsText(r.reference[i]) << " argmax "
                              << argmax(r.reference[i]) << "\n";
            }
            return {};
        case runtime::RunStage::CompareReference:
            ok = printComparisons(r.graph ? "npu vs reference (float64, original graph):"
                                          : "npu vs reference (float64, the artifact's compiled graph):",
                                  r.referenceComparisons, &metrics, "reference") &&
                 ok;
            if (a.perTensor)
                printPerTensor(r.drift);
            if (r.floatDrift)
                printFloatDrift(*r.floatDrift, a.floatModel);
            return {};
        case runtime::RunStage::CompareExpected:
            if (a.reference)
                ok = printComparisons(std::string("reference (") + compute + ") vs expected:", r.expectedComparisons,
                                      nullptr, "") &&
                     ok;
            else
                ok = printComparisons("npu vs expected:", r.expectedComparisons, &metrics, "expected") && ok;
            return {};
        }
        return {};
    };
    Expected<runtime::RunResult> run = runtime::RunJob(std::move(request), std::move(hooks)).run();
    if (!run.ok())
        return failRun(run.error(), current, a.reference);
    if (a.reference) {
        // In float32, what the format could not carry is said after the results: it tells a model
        // float32 cannot compute from a wrong kernel.
        for (const runtime::FloatRangeFinding& f : run->floatRange)
            std::cout << "note: " << runtime::formatFinding(f) << "\n";
        if (!a.saveOutputs.empty())
            if (Status s = saveOutputs(a.saveOutputs, *run, run->reference); !s.ok())
                return fail(s.error().message);
        return ok ? 0 : 1;
    }

    const runtime::RunResult& r = *run;
    const backend::Program& program = r.program;
    const sim::SimResult& result = r.sim;
    if (!ok && a.fault.active())
        std::cout << "note: the fault injected (" << sim::faultSpec(a.fault)
                  << ") ran: the differences above are what it did to the numbers\n";
    else if (const std::string note = backend::f16Note(program.target, "in a --target file"); !ok && !note.empty()) {
        std::cout << note << "\n";
        if (const std::string range = r.perTensorCompared ? runtime::f16OverflowNote(r.drift) : std::string();
            !range.empty())
            std::cout << "note: " << range << "\n";
        else if (!r.perTensorCompared &&
                 std::any_of(r.referenceComparisons.begin(), r.referenceComparisons.end(),
                             [](const runtime::TensorComparison& c) { return c.gotNonFinite; }))
            std::cout << "note: an output holds an infinity or NaN where float64's is finite; --per-tensor names "
                         "the first tensor where that starts\n";
    }
    if (!a.compareReference && a.expectedDir.empty())
        for (size_t i = 0; i < result.outputs.size(); ++i)
            std::cout << "output '" << r.outputName(i) << "': " << dimsText(result.outputs[i]) << " argmax "
                      << argmax(result.outputs[i]) << "\n";
    if (Status s = printCtcText(a, result.outputs); !s.ok())
        return fail(s.error().message);
    std::printf("latency: %llu cycles (%.2f us at %g GHz)\n", static_cast<unsigned long long>(result.totalCycles),
                program.target.cyclesToMicros(result.totalCycles), program.target.clockGhz);
    if (a.fault.active())
        printFaultTask(a.fault, program, result);
    if (a.criticalPath)
        printCriticalPath(program, result, a.mode == runtime::RunMode::Strict);
    std::fflush(stdout);
    if (!a.saveOutputs.empty())
        if (Status s = saveOutputs(a.saveOutputs, r, result.outputs); !s.ok())
            return fail(s.error().message);

    if (!a.summaryCsv.empty()) {
        const runtime::NetworkSummary s =
            runtime::summarise(program, a.model, a.pipeline.config.optLevel, result.totalCycles, "simulated");
        if (Status w = runtime::appendSummaryCsv(a.summaryCsv, s); !w.ok())
            return fail(w.error().message);
        std::cout << "summary: appended a row to " << a.summaryCsv << "\n";
    }
    // Keeping the run: the profile database is written after everything was shown.
    if (!a.profilePath.empty()) {
        profiler::RunInfo info;
        info.model = a.model;
        // A faulted run says so in its metrics ("inject:delay-dma:7" = 1), so it is never taken
        // for the program's own timeline.
        if (a.fault.active())
            metrics.emplace_back("inject:" + sim::faultSpec(a.fault), 1.0);
        info.metrics = std::move(metrics);
        Expected<int64_t> written = profiler::writeProfile(a.profilePath, program, result, info, profileWriteOptions(a));
        if (!written.ok())
            return fail(written.error().message);
        std::cout << "profile: wrote run " << *written << " to " << a.profilePath << "\n";
    }
    return ok ? 0 : 1;
}

} // namespace

int cmdRun(Args args) {
    RunArgs a;
    bool help = false;
    std::string err = parseArgs(args, a, help);
    if (help) {
        std::printf(kRunUsage, kPipelineOptionsUsage);
        return 0;
    }
    if (!err.empty())
        return fail(err);
    return runModel(a);
}

} // namespace sextant::cli
