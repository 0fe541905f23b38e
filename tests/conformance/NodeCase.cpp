#include "NodeCase.h"

#include "core/frontend/OnnxImporter.h"
#include "core/frontend/OnnxTensor.h"
#include "core/frontend/ProtoFile.h"
#include "core/ir/OpRegistry.h"
#include "core/passes/PassManager.h"
#include "core/runtime/Compare.h"
#include "core/runtime/ReferenceExecutor.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace fs = std::filesystem;

namespace sextant::conformance {
namespace {

/// Cases whose expected values cannot be reproduced by any other implementation, by name, with
/// the reason (the same exclusions onnxruntime's backend-test runner makes).
const std::map<std::string, std::string> kNotComparable = {
    {"test_training_dropout", "output is random (training-mode Dropout draws a mask from numpy's generator)"},
    {"test_training_dropout_default", "output is random (training-mode Dropout draws a mask from numpy's generator)"},
    {"test_training_dropout_default_mask", "output is random (training-mode Dropout draws a mask from numpy's generator)"},
    {"test_training_dropout_mask", "output is random (training-mode Dropout draws a mask from numpy's generator)"},
    {"test_cast_FLOAT_to_BFLOAT16", "onnx 1.12 expects truncation to bfloat16; the spec since onnx 1.14 and onnxruntime round to nearest even, as Sextant does"},
    {"test_castlike_BFLOAT16_to_FLOAT", "test data contradicts the model (input 'like' is declared [3,4], its data is [1])"},
    {"test_castlike_FLOAT_to_BFLOAT16", "test data contradicts the model (input 'like' is declared [3,4], its data is [1])"},
    {"test_castlike_BFLOAT16_to_FLOAT_expanded", "test data contradicts the model (input 'like' is declared [3,4], its data is [1])"},
    {"test_castlike_FLOAT_to_BFLOAT16_expanded", "test data contradicts the model (input 'like' is declared [3,4], its data is [1])"},
};

/// What a model needs that Sextant may not have: op types and element/value types.
struct Requirements {
    std::set<std::string> unsupportedOps; // sorted, so reasons are deterministic
    std::set<std::string> unsupportedTypes;
};

void checkElemType(int32_t elemType, Requirements& req) {
    if (!frontend::dtypeFromOnnx(elemType))
        req.unsupportedTypes.insert("dtype " + frontend::onnxTypeName(elemType));
}

void checkType(const onnx::TypeProto& type, Requirements& req) {
    switch (type.value_case()) {
    case onnx::TypeProto::kTensorType:
        checkElemType(type.tensor_type().elem_type(), req);
        break;
    case onnx::TypeProto::kSequenceType: req.unsupportedTypes.insert("sequence values"); break;
    case onnx::TypeProto::kMapType: req.unsupportedTypes.insert("map values"); break;
    case onnx::TypeProto::kOptionalType: req.unsupportedTypes.insert("optional values"); break;
    case onnx::TypeProto::kSparseTensorType: req.unsupportedTypes.insert("sparse tensors"); break;
    default: req.unsupportedTypes.insert("values of unknown type"); break;
    }
}

void scanGraph(const onnx::GraphProto& graph, Requirements& req);

void scanNode(const onnx::NodeProto& node, Requirements& req) {
    const std::string& domain = node.domain();
    // Constant is not an op of the table: the importer turns it into a graph constant.
    const bool isConstant = (domain.empty() || domain == "ai.onnx") && node.op_type() == "Constant";
    if (!isConstant && !ir::findOp(domain, node.op_type()) && !frontend::importedAs(domain, node.op_type()))
        req.unsupportedOps.insert(domain.empty() || domain == "ai.onnx"
                                      ? node.op_type()
                                      : domain + "." + node.op_type());
    for (const onnx::AttributeProto& attr : node.attribute()) {
        if (attr.has_t())
            checkElemType(attr.t().data_type(), req);
        for (const onnx::TensorProto& t : attr.tensors())
            checkElemType(t.data_type(), req);
        if (attr.has_sparse_tensor() || attr.sparse_tensors_size() > 0)
            req.unsupportedTypes.insert("sparse tensors");
        if (attr.has_g())
            scanGraph(attr.g(), req);
        for (const onnx::GraphProto& g : attr.graphs())
            scanGraph(g, req);
    }
}

void scanGraph(const onnx::GraphProto& graph, Requirements& req) {
    for (const onnx::ValueInfoProto& v : graph.input())
        checkType(v.type(), req);
    for (const onnx::ValueInfoProto& v : graph.output())
        checkType(v.type(), req);
    for (const onnx::ValueInfoProto& v : graph.value_info())
        checkType(v.type(), req);
    for (const onnx::TensorProto& t : graph.initializer())
        checkElemType(t.data_type(), req);
    for (const onnx::NodeProto& n : graph.node())
        scanNode(n, req);
}

std::string joinSet(const std::set<std::string>& items) {
    std::string out;
    for (const std::string& s : items)
        out += (out.empty() ? "" : ", ") + s;
    return out;
}

/// Loads prefix_0.pb, prefix_1.pb, ... from `dir`; none at all is an empty list (a model without
/// inputs), not an error. `declared` are the ONNX element types the model declares for these
/// values, in order: onnx 1.12 writes bfloat16 test data with data type UINT16 (same bits), so
/// such a file is read as bfloat16 when the model says bfloat16.
Expected<std::vector<ir::Tensor>> loadSet(const fs::path& dir, const std::string& prefix,
                                          const std::vector<int32_t>& declared) {
    std::vector<ir::Tensor> tensors;
    for (size_t i = 0;; ++i) {
        const fs::path file = dir / (prefix + "_" + std::to_string(i) + ".pb");
        if (!fs::exists(file))
            break;
        onnx::TensorProto proto;
        SX_TRY(frontend::parseProtoFile(file.string(), "tensor file", proto));
        if (proto.data_type() == onnx::TensorProto::UINT16 && i < declared.size() &&
            declared[i] == onnx::TensorProto::BFLOAT16)
            proto.set_data_type(onnx::TensorProto::BFLOAT16);
        SX_ASSIGN(ir::Tensor t, frontend::tensorFromProto(proto, "tensor file '" + file.string() + "'"));
        tensors.push_back(std::move(t));
    }
    return tensors;
}

/// The element types a graph declares for `values` (0 for non-tensor values).
std::vector<int32_t> elemTypes(const google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>& values,
                               const std::set<std::string>& skip = {}) {
    std::vector<int32_t> types;
    for (const onnx::ValueInfoProto& v : values)
        if (!skip.count(v.name()))
            types.push_back(v.type().has_tensor_type() ? v.type().tensor_type().elem_type() : 0);
    return types;
}

/// Runs one test_data_set_N folder; returns an empty string on success, else why it failed.
std::string runDataSet(const ir::Graph& graph, const onnx::GraphProto& proto,
                       const fs::path& dataDir, CaseOutcome& outcome) {
    const std::string set = dataDir.filename().string();
    std::set<std::string> initializers;
    for (const onnx::TensorProto& t : proto.initializer())
        initializers.insert(t.name());
    auto inputs = loadSet(dataDir, "input", elemTypes(proto.input(), initializers));
    if (!inputs)
        return set + ": " + inputs.error().message;
    auto expected = loadSet(dataDir, "output", elemTypes(proto.output()));
    if (!expected)
        return set + ": " + expected.error().message;
    auto got = runtime::runReference(graph, *inputs, ir::DType::F64);
    if (!got)
        return set + ": reference executor: " + got.error().message;
    if (got->size() != expected->size())
        return set + ": " + std::to_string(got->size()) + " outputs computed, " +
               std::to_string(expected->size()) + " expected";
    std::string failure;
    for (size_t i = 0; i < got->size(); ++i) {
        const ir::Tensor& g = (*got)[i];
        const ir::Tensor& e = (*expected)[i];
        const std::string name =
            i < graph.outputs().size() ? graph.outputs()[i]->name() : "#" + std::to_string(i);
        // Floats may come back in f64 (the compute type); anything else must keep its dtype.
        const bool dtypeOk = ir::isFloat(e.dtype()) ? ir::isFloat(g.dtype()) : g.dtype() == e.dtype();
        if (!dtypeOk) {
            const std::string line = "output '" + name + "': dtype " +
                                     std::string(ir::dtypeName(g.dtype())) + ", expected " +
                                     std::string(ir::dtypeName(e.dtype())) + " FAIL";
            outcome.details.push_back(set + ": " + line);
            if (failure.empty())
                failure = set + ": " + line;
            continue;
        }
        runtime::TensorComparison c =
            runtime::compareTensors(name, g, e, kConformanceAtol, kConformanceRtol);
        const std::string line = runtime::formatComparison(c);
        outcome.details.push_back(set + ": " + line);
        if (!c.pass && failure.empty())
            failure = set + ": " + line;
    }
    return failure;
}

} // namespace

std::map<std::string, std::string> readKnownFailures(const std::string& path) {
    std::map<std::string, std::string> known;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        const size_t start = line.find_first_not_of(" \t");
        if (start == std::string::npos || line[start] == '#')
            continue;
        const size_t end = line.find_first_of(" \t", start);
        const std::string name = line.substr(start, end == std::string::npos ? end : end - start);
        std::string reason;
        if (end != std::string::npos) {
            const size_t r = line.find_first_not_of(" \t", end);
            if (r != std::string::npos)
                reason = line.substr(r);
        }
        known[name] = reason.empty() ? "listed in known-failures.txt" : reason;
    }
    return known;
}

void applyKnownFailures(const std::map<std::string, std::string>& known, CaseOutcome& outcome) {
    auto it = known.find(outcome.name);
    if (it == known.end())
        return;
    if (outcome.result == CaseResult::Fail) {
        outcome.result = CaseResult::KnownFailure;
        outcome.reason = "known failure (" + it->second + "): " + outcome.reason;
    } else if (outcome.result == CaseResult::Pass) {
        outcome.result = CaseResult::Fail;
        outcome.reason = "passes but is listed in known-failures.txt: remove it from the list";
    }
}

std::vector<std::string> listNodeCases(const std::string& nodeDir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(nodeDir, ec)) {
        const std::string name = e.path().filename().string();
        if (e.is_directory() && name.rfind("test_", 0) == 0)
            names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
}

CaseOutcome runNodeCase(const std::string& caseDir, bool optimize) {
    CaseOutcome outcome;
    const fs::path dir(caseDir);
    outcome.name = dir.filename().string();
    const std::string modelPath = (dir / "model.onnx").string();

    // Classify first, from the protobuf itself: a case is only ours to pass if every op is in the
    // op table and every value has a dtype the IR can hold.
    onnx::ModelProto model;
    if (Status st = frontend::parseProtoFile(modelPath, "model", model); !st) {
        outcome.reason = st.error().message;
        return outcome;
    }
    if (auto it = kNotComparable.find(outcome.name); it != kNotComparable.end()) {
        outcome.result = CaseResult::Skip;
        outcome.reason = it->second;
        return outcome;
    }
    Requirements req;
    scanGraph(model.graph(), req);
    if (!req.unsupportedOps.empty()) {
        outcome.result = CaseResult::Skip;
        outcome.unsupportedOps.assign(req.unsupportedOps.begin(), req.unsupportedOps.end());
        outcome.reason = (req.unsupportedOps.size() == 1 ? "op " : "ops ") +
                         joinSet(req.unsupportedOps) + " not supported";
        return outcome;
    }
    if (!req.unsupportedTypes.empty()) {
        outcome.result = CaseResult::Skip;
        outcome.reason = joinSet(req.unsupportedTypes) + " not supported";
        return outcome;
    }

    for (const onnx::OperatorSetIdProto& opset : model.opset_import()) {
        const bool onnxDomain = opset.domain().empty() || opset.domain() == "ai.onnx";
        if (onnxDomain && (opset.version() < frontend::kMinOnnxOpset ||
                           opset.version() > frontend::kMaxOnnxOpset)) {
            outcome.result = CaseResult::Skip;
            outcome.reason = "opset " + std::to_string(opset.version()) +
                             " not supported (the importer takes " +
                             std::to_string(frontend::kMinOnnxOpset) + " to " +
                             std::to_string(frontend::kMaxOnnxOpset) + ")";
            return outcome;
        }
    }
    auto graph = frontend::importOnnx(modelPath);
    if (!graph) {
        outcome.reason = "import: " + graph.error().message;
        return outcome;
    }
    std::vector<fs::path> sets;
    std::error_code ec;
    for (const fs::directory_entry& e : fs::directory_iterator(dir, ec))
        if (e.is_directory() && e.path().filename().string().rfind("test_data_set_", 0) == 0)
            sets.push_back(e.path());
    std::sort(sets.begin(), sets.end());
    if (sets.empty()) {
        outcome.reason = "no test_data_set_* folder in " + caseDir;
        return outcome;
    }
    std::shared_ptr<const ir::Graph> toRun = std::move(*graph);
    if (optimize) {
        auto optimized = passes::runPipeline(*toRun, passes::PipelineConfig{});
        if (!optimized) {
            outcome.reason = "O2 pipeline: " + optimized.error().message;
            return outcome;
        }
        toRun = optimized->graph;
    }
    for (const fs::path& set : sets) {
        std::string failure = runDataSet(*toRun, model.graph(), set, outcome);
        if (!failure.empty() && outcome.reason.empty())
            outcome.reason = failure;
    }
    outcome.result = outcome.reason.empty() ? CaseResult::Pass : CaseResult::Fail;
    return outcome;
}

} // namespace sextant::conformance
