// sextant-cli bisect: accuracy bisection over rule applications (DESIGN.md, "Bisect accuracy
// bugs"), as a script driving LLVM's -opt-bisect-limit would, but built in: the answer comes with
// the rule, the node and the IR diff it made. core/runtime/Bisect.h does the search.
#include "Commands.h"
#include "CompareOptions.h"
#include "PipelineOptions.h"
#include "ShapeOption.h"

#include "core/frontend/OnnxImporter.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/passes/PassManager.h"
#include "core/passes/TextDiff.h"
#include "core/runtime/Bisect.h"
#include "core/runtime/Compare.h"
#include "core/runtime/ModelInputs.h"
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

struct BisectArgs : CompareOptions { // --inputs, --expected, --atol, --rtol, --shape
    std::string model;
    bool float32 = false;
    PipelineOptions pipeline;
};

std::string parseArgs(Args args, BisectArgs& out, bool& help) {
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "-h" || a == "--help") {
            help = true;
            return {};
        }
        if (std::string err; parseCompareOption("bisect", args, i, out, err)) {
            if (!err.empty())
                return err;
        } else if (a == "--bisect-limit") {
            return "bisect: --bisect-limit is what bisect searches; give the pipeline without it";
        } else if (std::string err; parsePipelineOption("bisect", args, i, out.pipeline, err)) {
            if (!err.empty())
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

const char* verdict(const runtime::BisectProbe& p) { return p.pass ? "PASS" : "FAIL"; }

void printComparisons(const runtime::BisectProbe& p) {
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
    if (auto s = runtime::specialiseInputs(**graph, a.shapes, a.inputsDir, /*requireStatic=*/true); !s.ok())
        return fail("bisect: " + s.error().message);

    runtime::BisectBaseline b;
    b.compute = a.float32 ? ir::DType::F32 : ir::DType::F64;
    Expected<runtime::RunInputs> inputs = runtime::chooseInputs(**graph, a.inputsDir, /*lookNextToModel=*/false, a.model);
    if (!inputs.ok())
        return fail(inputs.error().message);
    b.inputs = std::move(inputs->tensors);
    std::string baselineName;
    if (!a.expectedDir.empty()) {
        Expected<std::vector<ir::Tensor>> expected = frontend::loadTestDataSet(a.expectedDir, "output");
        if (!expected.ok())
            return fail(expected.error().message);
        if (expected->size() != (*graph)->outputs().size())
            return fail("bisect: '" + a.expectedDir + "' holds " + std::to_string(expected->size()) +
                        " expected output(s) but the model has " + std::to_string((*graph)->outputs().size()));
        b.expected = std::move(expected).value();
        baselineName = a.expectedDir;
    } else {
        Expected<std::vector<ir::Tensor>> reference = runtime::runReference(**graph, b.inputs, ir::DType::F64);
        if (!reference.ok())
            return fail("bisect: the imported model's reference run failed: " + reference.error().message);
        b.expected = std::move(reference).value();
        baselineName = "the float64 reference of the imported model";
    }
    for (size_t i = 0; i < b.expected.size(); ++i)
        b.atols.push_back(a.atol ? *a.atol : runtime::outputAtol(*(*graph)->outputs()[i], b.expected[i]));
    b.rtol = a.rtol.value_or(runtime::kOutputRtol);

    const passes::PipelineConfig& config = a.pipeline.config;
    auto onProbe = [&](const runtime::BisectProbe& p) {
        if (p.limit < 0)
            std::cout << "bisect: " << p.applications.size() << " rule applications at -O" << config.optLevel
                      << "; the optimised graph on the " << (a.float32 ? "float32" : "float64")
                      << " reference executor against " << baselineName << "\n  all " << p.applications.size()
                      << ": " << verdict(p) << "\n";
        else
            std::cout << "  limit " << p.limit << ": " << verdict(p) << "\n";
    };
    Expected<runtime::BisectOutcome> r = runtime::bisectRuleApplications(**graph, config, b, onProbe);
    if (!r.ok())
        return fail("bisect: " + r.error().message);
    switch (r->kind) {
    case runtime::BisectOutcome::Kind::NoDrift:
        printComparisons(r->bad);
        std::cout << "no drift: with every rule application the outputs stay within tolerance\n";
        return 0;
    case runtime::BisectOutcome::Kind::DriftWithoutRules:
        printComparisons(r->bad);
        std::cout << "the outputs are out of tolerance with no rule applied: the drift is not a rule "
                     "application's (a pass without rules, the import, or the baseline itself)\n";
        return 1;
    case runtime::BisectOutcome::Kind::Culprit:
        break;
    }
    const passes::RuleApplication& culprit = r->culprit;
    std::cout << "first bad application: #" << culprit.seq << " " << culprit.rule << " (pass " << culprit.pass
              << ") at node '" << culprit.node << "'\n";
    printComparisons(r->bad);
    std::cout << passes::unifiedDiff(r->good.text, r->bad.text, "limit " + std::to_string(r->good.limit),
                                     "limit " + std::to_string(r->bad.limit));
    return 1;
}

} // namespace sextant::cli
