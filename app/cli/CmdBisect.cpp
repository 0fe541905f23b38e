// sextant-cli bisect: accuracy bisection over rule applications (DESIGN.md, "Bisect accuracy
// bugs"). Every rule application has a sequence number and --bisect-limit N lets exactly the first
// N happen, so the first application after which the optimised graph's outputs leave the tolerance
// is found in about log2(applications) compiles, as a script driving LLVM's -opt-bisect-limit
// would, but built in: the answer comes with the rule, the node and the IR diff it made.
#include "Commands.h"
#include "PipelineOptions.h"
#include "ShapeOption.h"

#include "core/frontend/OnnxImporter.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/ir/Printer.h"
#include "core/passes/PassManager.h"
#include "core/passes/TextDiff.h"
#include "core/runtime/Compare.h"
#include "core/runtime/InputGenerator.h"
#include "core/runtime/ReferenceExecutor.h"

#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

namespace sextant::cli {

namespace {

const char* kUsage =
    "usage: sextant-cli bisect MODEL.onnx [options]\n"
    "\n"
    "Compiles the model with the pass pipeline, runs the optimised graph on the reference executor\n"
    "and compares its outputs with a baseline. When they are out of tolerance, finds the first rule\n"
    "application after which they are (--bisect-limit search) and prints it with the IR diff it\n"
    "made. The baseline is --expected DIR (e.g. onnxruntime's outputs), else the float64 reference\n"
    "of the model as imported.\n"
    "  --inputs DIR          read input_0.pb, ... (default: generated deterministic inputs)\n"
    "  --expected DIR        compare with output_0.pb, ... instead of the imported model's reference\n"
    "  --float32             run the optimised graph in float32 (default float64)\n"
    "  --atol A, --rtol R    tolerance |got - expected| <= A + R*|expected| (default as run\n"
    "                        --reference: rtol 1e-3, atol 1e-4 for probability outputs and\n"
    "                        1e-4*max|expected| for unbounded ones)\n"
    "  --shape NAME=DIMS     give input NAME concrete dims (repeatable; default: the --inputs shapes)\n"
    "Pipeline options (what is bisected; --bisect-limit is bisect's own to set):\n"
    "%s"
    "Exit status: 0 the outputs stay within tolerance, 1 a culprit was found (or the outputs are\n"
    "out of tolerance with no rule applied), 2 bad input.\n";

struct BisectArgs {
    std::string model, inputsDir, expectedDir;
    bool float32 = false;
    PipelineOptions pipeline;
    std::optional<double> atol, rtol;
    ir::InputShapes shapes;
};

std::string parseArgs(Args args, BisectArgs& out, bool& help) {
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
        if (a == "--inputs") {
            if (!value(out.inputsDir))
                return "bisect: --inputs needs a directory";
        } else if (a == "--expected") {
            if (!value(out.expectedDir))
                return "bisect: --expected needs a directory";
        } else if (a == "--bisect-limit") {
            return "bisect: --bisect-limit is what bisect searches; give the pipeline without it";
        } else if (std::string err; parsePipelineOption("bisect", args, i, out.pipeline, err)) {
            if (!err.empty())
                return err;
        } else if (a == "--atol" || a == "--rtol") {
            if (!value(v))
                return "bisect: " + a + " needs a number";
            std::optional<double> t = parseTolerance(v);
            if (!t)
                return "bisect: " + a + " '" + v + "' is not a non-negative number";
            (a == "--atol" ? out.atol : out.rtol) = *t;
        } else if (a == "--shape") {
            if (!value(v))
                return "bisect: --shape needs NAME=DIMS (e.g. x=1x3x48x320)";
            if (std::string err = addShapeOption("bisect", v, out.shapes); !err.empty())
                return err;
        } else if (a == "--float32") {
            out.float32 = true;
        } else if (!a.empty() && a[0] == '-') {
            return "bisect: unknown option '" + a + "' (see 'sextant-cli bisect --help')";
        } else if (out.model.empty()) {
            out.model = a;
        } else {
            return "bisect: more than one model given ('" + out.model + "' and '" + a + "')";
        }
    }
    if (out.model.empty())
        return "bisect: no model given (usage: sextant-cli bisect MODEL.onnx [options])";
    if (std::string err = finishPipelineOptions("bisect", out.pipeline); !err.empty())
        return err;
    return {};
}

/// Concrete input shapes: --shape, else those of the --inputs tensors (as run does).
Status specialize(const BisectArgs& a, ir::Graph& graph) {
    if (!a.shapes.empty() || ir::symbolicInputs(graph).empty() || a.inputsDir.empty())
        return applyShapeOptions(graph, a.shapes, /*requireStatic=*/true);
    SX_ASSIGN(std::vector<ir::Tensor> inputs, frontend::loadTestDataSet(a.inputsDir, "input"));
    if (inputs.size() != graph.inputs().size())
        return makeError(ErrorKind::Invalid,
                         "'" + a.inputsDir + "' holds " + std::to_string(inputs.size()) +
                             " input(s) but the model has " + std::to_string(graph.inputs().size()));
    ir::InputShapes shapes;
    for (size_t i = 0; i < inputs.size(); ++i)
        shapes[graph.inputs()[i]->name()] = inputs[i].shape();
    return ir::specializeInputs(graph, shapes);
}

/// One compile at a bisect limit and its outputs against the baseline.
struct Probe {
    bool pass = true;
    std::vector<runtime::TensorComparison> comparisons;
    std::vector<passes::RuleApplication> applications;
    std::string text; ///< the optimised graph's IR
};

/// What every probe shares: the imported graph, the inputs, the baseline and its tolerances.
struct Setup {
    const ir::Graph* graph = nullptr;
    passes::PipelineConfig config;
    std::vector<ir::Tensor> inputs;
    std::vector<ir::Tensor> baseline;
    std::vector<double> atols;
    double rtol = runtime::kOutputRtol;
    ir::DType compute = ir::DType::F64;
};

Expected<Probe> probe(const Setup& s, int64_t limit) {
    passes::PipelineConfig config = s.config;
    config.bisectLimit = limit;
    SX_ASSIGN(passes::PipelineResult r, passes::runPipeline(*s.graph, config));
    SX_ASSIGN(std::vector<ir::Tensor> outputs, runtime::runReference(*r.graph, s.inputs, s.compute));
    if (outputs.size() != s.baseline.size())
        return makeError(ErrorKind::Invalid, "the optimised graph has " + std::to_string(outputs.size()) +
                                                 " outputs, the baseline " + std::to_string(s.baseline.size()));
    Probe p;
    for (size_t i = 0; i < outputs.size(); ++i) {
        const std::string name = r.graph->outputs()[i]->name();
        p.comparisons.push_back(runtime::compareTensors(name, outputs[i], s.baseline[i], s.atols[i], s.rtol));
        p.pass = p.pass && p.comparisons.back().pass;
    }
    p.applications = std::move(r.applications);
    p.text = ir::printGraph(*r.graph);
    return p;
}

const char* verdict(const Probe& p) { return p.pass ? "PASS" : "FAIL"; }

void printComparisons(const Probe& p) {
    for (const runtime::TensorComparison& c : p.comparisons)
        std::cout << "  " << runtime::formatComparison(c) << "\n";
}

} // namespace

int cmdBisect(Args args) {
    BisectArgs a;
    bool help = false;
    if (std::string err = parseArgs(args, a, help); !err.empty())
        return fail(err);
    if (help) {
        std::printf(kUsage, kPipelineOptionsUsage);
        return 0;
    }
    Expected<std::unique_ptr<ir::Graph>> graph = frontend::importOnnx(a.model);
    if (!graph.ok())
        return fail(graph.error().message);
    if (Status s = specialize(a, **graph); !s.ok())
        return fail("bisect: " + s.error().message);

    Setup s;
    s.graph = graph->get();
    s.config = a.pipeline.config;
    s.compute = a.float32 ? ir::DType::F32 : ir::DType::F64;
    Expected<std::vector<ir::Tensor>> inputs = a.inputsDir.empty()
                                                   ? runtime::generateInputs(**graph)
                                                   : frontend::loadTestDataSet(a.inputsDir, "input");
    if (!inputs.ok())
        return fail(inputs.error().message);
    s.inputs = std::move(inputs).value();
    std::string baselineName;
    if (!a.expectedDir.empty()) {
        Expected<std::vector<ir::Tensor>> expected = frontend::loadTestDataSet(a.expectedDir, "output");
        if (!expected.ok())
            return fail(expected.error().message);
        if (expected->size() != (*graph)->outputs().size())
            return fail("bisect: '" + a.expectedDir + "' holds " + std::to_string(expected->size()) +
                        " expected output(s) but the model has " + std::to_string((*graph)->outputs().size()));
        s.baseline = std::move(expected).value();
        baselineName = a.expectedDir;
    } else {
        Expected<std::vector<ir::Tensor>> reference = runtime::runReference(**graph, s.inputs, ir::DType::F64);
        if (!reference.ok())
            return fail("bisect: the imported model's reference run failed: " + reference.error().message);
        s.baseline = std::move(reference).value();
        baselineName = "the float64 reference of the imported model";
    }
    for (size_t i = 0; i < s.baseline.size(); ++i)
        s.atols.push_back(a.atol ? *a.atol : runtime::outputAtol(*(*graph)->outputs()[i], s.baseline[i]));
    s.rtol = a.rtol.value_or(runtime::kOutputRtol);

    Expected<Probe> all = probe(s, -1);
    if (!all.ok())
        return fail("bisect: " + all.error().message);
    const int64_t total = static_cast<int64_t>(all->applications.size());
    std::cout << "bisect: " << total << " rule applications at -O" << s.config.optLevel << "; the optimised graph on the "
              << (a.float32 ? "float32" : "float64") << " reference executor against " << baselineName << "\n";
    std::cout << "  all " << total << ": " << verdict(*all) << "\n";
    if (all->pass) {
        printComparisons(*all);
        std::cout << "no drift: with every rule application the outputs stay within tolerance\n";
        return 0;
    }
    Expected<Probe> none = probe(s, 0);
    if (!none.ok())
        return fail("bisect: " + none.error().message);
    std::cout << "  limit 0: " << verdict(*none) << "\n";
    if (!none->pass) {
        printComparisons(*none);
        std::cout << "the outputs are out of tolerance with no rule applied: the drift is not a rule "
                     "application's (a pass without rules, the import, or the baseline itself)\n";
        return 1;
    }
    // Invariant: the first `good` applications pass, the first `bad` fail. Every probe halves the
    // range, so the answer is a true step: passing at bad - 1, failing at bad.
    int64_t good = 0, bad = total;
    Probe atGood = std::move(none).value(), atBad = std::move(all).value();
    while (bad - good > 1) {
        const int64_t mid = good + (bad - good) / 2;
        Expected<Probe> p = probe(s, mid);
        if (!p.ok())
            return fail("bisect: " + p.error().message);
        std::cout << "  limit " << mid << ": " << verdict(*p) << "\n";
        if (p->pass) {
            good = mid;
            atGood = std::move(p).value();
        } else {
            bad = mid;
            atBad = std::move(p).value();
        }
    }
    if (atBad.applications.empty())
        return fail("bisect: no rule application at limit " + std::to_string(bad));
    const passes::RuleApplication& culprit = atBad.applications.back();
    std::cout << "first bad application: #" << culprit.seq << " " << culprit.rule << " (pass " << culprit.pass
              << ") at node '" << culprit.node << "'\n";
    printComparisons(atBad);
    std::cout << passes::unifiedDiff(atGood.text, atBad.text, "limit " + std::to_string(good),
                                     "limit " + std::to_string(bad));
    return 1;
}

} // namespace sextant::cli
