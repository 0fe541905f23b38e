// Every real model in ../shared/models through the O2 pipeline (fusion included): the optimised
// graph, run on the float64 reference, stays within the INVENTORY.md tolerances of onnxruntime's
// outputs, and the fusions the model is known for happen (PaddleOCR rec: 5 LayerNorms, 2
// attention blocks; det/cls/rec: decomposed HardSwish).
#include "PassTestUtil.h"

#include "core/frontend/OnnxImporter.h"
#include "core/frontend/TensorProtoIO.h"
#include "core/ir/Printer.h"
#include "core/ir/Specialize.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>

using namespace sextant;
using namespace sextant::passes;
using namespace sextant::passes::test;
using ir::OpKind;

namespace fs = std::filesystem;

namespace {

struct ModelCase {
    std::string path;     ///< the .onnx file
    std::string dataDir;  ///< its test_data_set_0
};

std::vector<ModelCase> realModels() {
    std::vector<ModelCase> cases;
    const fs::path root = fs::path(SEXTANT_SHARED_DIR) / "models";
    if (!fs::exists(root))
        return cases;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
        if (e.path().extension() != ".onnx" ||
            e.path().string().find("test_data") != std::string::npos)
            continue;
        fs::path data = e.path().parent_path() / "test_data" / e.path().stem() / "test_data_set_0";
        if (fs::exists(data))
            cases.push_back({e.path().string(), data.string()});
    }
    std::sort(cases.begin(), cases.end(),
              [](const ModelCase& a, const ModelCase& b) { return a.path < b.path; });
    return cases;
}

/// Gives every graph input the concrete shape of its test tensor and resolves the shape
/// arithmetic that follows (the PaddleOCR models have symbolic batch/height/width dims).
/// Returns the specialiser's error, if any (not this test's subject: tests/models covers it).
std::string specialise(ir::Graph& g, const std::vector<ir::Tensor>& inputs) {
    if (ir::symbolicInputs(g).empty())
        return {};
    ir::InputShapes shapes;
    for (size_t i = 0; i < g.inputs().size() && i < inputs.size(); ++i)
        shapes[g.inputs()[i]->name()] = inputs[i].shape();
    Status s = ir::specializeInputs(g, shapes);
    return s.ok() ? std::string() : s.error().message;
}

struct Outcome {
    bool imported = false;
    std::string note;
    PipelineResult result;
};

Outcome runModel(const ModelCase& m, double& worst) {
    Outcome o;
    auto g = frontend::importOnnx(m.path);
    if (!g.ok()) {
        o.note = "import: " + g.error().message;
        return o;
    }
    auto inputs = frontend::loadTestDataSet(m.dataDir, "input");
    auto expected = frontend::loadTestDataSet(m.dataDir, "output");
    EXPECT_TRUE(inputs.ok() && expected.ok()) << m.dataDir;
    if (!inputs.ok() || !expected.ok())
        return o;
    if (std::string why = specialise(**g, *inputs); !why.empty()) {
        o.note = "specialise: " + why;
        return o;
    }
    o.imported = true;
    o.result = pipeline(**g);
    if (!o.result.graph)
        return o;
    ir::KernelContext ctx;
    ctx.compute = ir::DType::F64;
    auto got = ir::interpret(*o.result.graph, *inputs, ctx);
    EXPECT_TRUE(got.ok()) << m.path << ": " << (got.ok() ? "" : got.error().message);
    if (!got.ok())
        return o;
    EXPECT_EQ(got->size(), expected->size()) << m.path;
    // INVENTORY.md: |got - expected| <= atol + rtol * |expected|, rtol 1e-3, atol 1e-4 for
    // probability-like outputs and 1e-4 * max|expected| for unbounded ones.
    for (size_t i = 0; i < got->size() && i < expected->size(); ++i) {
        const ir::Tensor& a = (*got)[i];
        const ir::Tensor& e = (*expected)[i];
        EXPECT_EQ(a.numel(), e.numel()) << m.path << " output " << i;
        double maxExp = 0;
        for (int64_t j = 0; j < e.numel(); ++j)
            maxExp = std::max(maxExp, std::abs(e.at(j)));
        const double atol = 1e-4 * std::max(1.0, maxExp);
        int bad = 0;
        for (int64_t j = 0; j < std::min(a.numel(), e.numel()); ++j) {
            const double err = std::abs(a.at(j) - e.at(j));
            worst = std::max(worst, err / (atol + 1e-3 * std::abs(e.at(j))));
            if (err > atol + 1e-3 * std::abs(e.at(j)) && bad++ < 3)
                ADD_FAILURE() << m.path << " output " << i << " element " << j << ": got "
                              << a.at(j) << " expected " << e.at(j);
        }
    }
    return o;
}

std::string firedRules(const PipelineResult& r) {
    std::string s;
    for (const RuleStats& st : r.stats)
        if (st.applied > 0 && st.rule.rfind("fuse", 0) == 0)
            s += " " + st.rule + "=" + std::to_string(st.applied);
    for (const RuleStats& st : r.stats)
        if (st.applied > 0 && st.rule.rfind("absorb", 0) == 0)
            s += " " + st.rule + "=" + std::to_string(st.applied);
    // Why the fusion rules did not fire elsewhere, most frequent reason first.
    for (const RuleStats& st : r.stats) {
        if (st.reasons.empty() || (st.rule.rfind("fuse", 0) != 0 && st.rule.rfind("absorb", 0) != 0))
            continue;
        auto top = std::max_element(st.reasons.begin(), st.reasons.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; });
        s += "\n             " + st.rule + " rejected " + std::to_string(st.rejected) + "x, e.g. '" +
             top->first + "' x" + std::to_string(top->second);
    }
    return s;
}

} // namespace

TEST(FuseModels, EveryRealModelStaysWithinToleranceAfterFusion) {
    std::vector<ModelCase> cases = realModels();
    if (cases.empty())
        GTEST_SKIP() << "../shared/models not found: skipping the real-model fusion test";
    int checked = 0;
    // SEXTANT_FUSE_MODEL=<substring> narrows the run to matching models (when debugging a rule).
    const char* only = std::getenv("SEXTANT_FUSE_MODEL");
    for (const ModelCase& m : cases) {
        if (only && m.path.find(only) == std::string::npos)
            continue;
        SCOPED_TRACE(m.path);
        double worst = 0;
        Outcome o = runModel(m, worst);
        const std::string name = fs::path(m.path).filename().string();
        if (!o.imported) {
            // Not this test's subject (the importer's conformance suite covers it).
            std::cout << "[ fusion   ] " << name << " not run: " << o.note << "\n";
            continue;
        }
        ++checked;
        if (std::getenv("SEXTANT_FUSE_DUMP"))
            std::cout << ir::printGraph(*o.result.graph);
        std::cout << "[ fusion   ] " << name << " worst err/tol " << worst << ":"
                  << firedRules(o.result) << "\n";
        if (name == "ch_PP-OCRv4_rec_infer.onnx") {
            EXPECT_EQ(stats(o.result, "fuse-layernorm").applied, 5);
            EXPECT_EQ(stats(o.result, "fuse-attention").applied, 2);
            EXPECT_GE(stats(o.result, "fuse-hardswish").applied, 1);
            EXPECT_EQ(countKind(*o.result.graph, OpKind::LayerNormalization), 5);
            EXPECT_EQ(countKind(*o.result.graph, OpKind::ReduceMean), 0);
        }
        if (name == "ch_PP-OCRv4_det_infer.onnx" ||
            name == "ch_ppocr_mobile_v2.0_cls_infer.onnx") {
            EXPECT_GE(stats(o.result, "fuse-hardswish").applied, 1);
        }
    }
    if (!only) {
        EXPECT_GE(checked, 10);
    }
}
