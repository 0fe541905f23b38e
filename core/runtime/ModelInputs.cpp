#include "ModelInputs.h"

#include "InputGenerator.h"
#include "core/frontend/SizeLimits.h"
#include "core/frontend/TensorProtoIO.h"

#include <filesystem>
#include <unordered_set>

namespace sextant::runtime {

namespace {

namespace fs = std::filesystem;

/// True when `inputs` fit `graph`'s (static) inputs one for one: same count and dims.
bool inputsFit(const std::vector<ir::Tensor>& inputs, const ir::Graph& graph) {
    if (inputs.size() != graph.inputs().size())
        return false;
    for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].shape() != graph.inputs()[i]->type().dims())
            return false;
    return true;
}

/// The files of a test data set must be the model's inputs: a file that names its tensor must name
/// the model's input at its position, and its dtype must be that input's (a float64 file for a
/// float32 input is a different data set, not one to convert silently).
Status checkDataSet(const ir::Graph& graph, const frontend::TestDataSet& set, const std::string& dir) {
    const auto& formal = graph.inputs();
    if (set.tensors.size() != formal.size())
        return makeError(ErrorKind::Invalid, "'" + dir + "' holds " + std::to_string(set.tensors.size()) +
                                                 " input(s) but the model has " + std::to_string(formal.size()));
    for (size_t i = 0; i < formal.size(); ++i) {
        const std::string file = "'" + (fs::path(dir) / ("input_" + std::to_string(i) + ".pb")).string() + "'";
        const std::string& want = formal[i]->name();
        if (!set.names[i].empty() && set.names[i] != want)
            return makeError(ErrorKind::Invalid,
                             file + " holds tensor '" + set.names[i] + "', but the model's input " +
                                 std::to_string(i) + " is '" + want + "'",
                             want);
        const ir::DType wantType = formal[i]->type().dtype;
        if (set.tensors[i].dtype() != wantType)
            return makeError(ErrorKind::Invalid,
                             file + " is " + std::string(ir::dtypeName(set.tensors[i].dtype())) +
                                 ", but the model's input '" + want + "' is " +
                                 std::string(ir::dtypeName(wantType)),
                             want);
    }
    return {};
}

Expected<std::vector<ir::Tensor>> loadCheckedDataSet(const ir::Graph& graph, const std::string& dir) {
    SX_ASSIGN(frontend::TestDataSet set, frontend::loadNamedTestDataSet(dir, "input"));
    SX_TRY(checkDataSet(graph, set, dir));
    return std::move(set.tensors);
}

} // namespace

std::optional<std::string> testDataNextTo(const std::string& modelPath) {
    const fs::path model(modelPath);
    const fs::path dir = model.parent_path();
    const std::string stem = model.stem().string();
    for (const fs::path& candidate : {dir / stem, dir / "test_data" / stem / "test_data_set_0"}) {
        std::error_code ec;
        if (fs::exists(candidate / "input_0.pb", ec))
            return candidate.string();
    }
    return std::nullopt;
}

Expected<ir::InputShapes> specialiseInputs(ir::Graph& graph, const ir::InputShapes& requested,
                                           const std::string& inputsDir, bool requireStatic,
                                           const std::string& hint) {
    ir::InputShapes shapes = requested;
    if (shapes.empty() && !inputsDir.empty() && !ir::symbolicInputs(graph).empty()) {
        SX_ASSIGN(std::vector<ir::Tensor> inputs, loadCheckedDataSet(graph, inputsDir));
        for (size_t i = 0; i < inputs.size(); ++i)
            shapes[graph.inputs()[i]->name()] = inputs[i].shape();
    }
    if (shapes.empty()) {
        if (!requireStatic)
            return shapes;
        Status needed = ir::requireStaticInputs(graph);
        if (needed.ok())
            return shapes;
        if (hint.empty())
            return needed.takeError();
        return makeError(needed.error().kind, needed.error().message + "; " + hint, needed.error().subject);
    }
    SX_TRY(ir::specializeInputs(graph, shapes));
    SX_TRY(frontend::checkTensorSizes(graph));
    return shapes;
}

namespace {

/// The If whose condition `in` decides (through the nodes that compute it), or nullptr.
const ir::Node* decidedIf(const ir::Value* in) {
    constexpr size_t kMaxVisits = 4096;
    std::vector<const ir::Value*> todo{in};
    std::unordered_set<const ir::Value*> seen{in};
    while (!todo.empty() && seen.size() < kMaxVisits) {
        const ir::Value* v = todo.back();
        todo.pop_back();
        for (const ir::Node* u : v->users()) {
            if (u->kind() == ir::OpKind::If) {
                if (u->input(0) == v)
                    return u;
                continue; // a captured input: what the branch does with it is the branch's
            }
            for (const ir::Value* o : u->outputs())
                if (o && seen.insert(o).second)
                    todo.push_back(o);
        }
    }
    return nullptr;
}

} // namespace

Expected<std::vector<backend::InputGuard>> bindControlInputs(ir::Graph& graph, const std::string& inputsDir) {
    std::vector<backend::InputGuard> guards;
    if (inputsDir.empty())
        return guards;
    std::vector<std::pair<size_t, const ir::Node*>> control;
    for (size_t i = 0; i < graph.inputs().size(); ++i) {
        const ir::Value* in = graph.inputs()[i];
        const ir::TensorType& t = in->type();
        if (ir::isFloat(t.dtype) || !t.isStatic() || t.numel() > kMaxBoundElements || in->isGraphOutput())
            continue;
        if (const ir::Node* decides = decidedIf(in))
            control.emplace_back(i, decides);
    }
    if (control.empty())
        return guards;
    SX_ASSIGN(std::vector<ir::Tensor> values, loadCheckedDataSet(graph, inputsDir));
    for (const auto& [i, decides] : control) {
        ir::Value* in = graph.inputs()[i];
        const ir::Tensor& value = values.at(i);
        if (value.dtype() != in->type().dtype || value.numel() != in->type().numel())
            return makeError(ErrorKind::Invalid, inputsDir + ": input '" + in->name() + "' is " + value.type().str() +
                                                     ", the model declares " + in->type().str(),
                             in->name());
        const ir::Tensor bound = value.reshaped(in->type().dims());
        SX_ASSIGN(ir::Value * c, graph.addConstant(graph.uniqueName(in->name() + "_bound"), bound));
        graph.replaceAllUsesWith(in, c);
        guards.push_back(backend::InputGuard{static_cast<int>(i), bound, decides->name()});
    }
    return guards;
}

Expected<RunInputs> chooseInputs(const ir::Graph& graph, const std::string& inputsDir, bool lookNextToModel,
                                 const std::string& modelPath) {
    RunInputs out;
    if (!inputsDir.empty()) {
        SX_ASSIGN(out.tensors, loadCheckedDataSet(graph, inputsDir));
        out.origin = InputsOrigin::Directory;
        out.dir = inputsDir;
        return out;
    }
    if (lookNextToModel)
        if (std::optional<std::string> dir = testDataNextTo(modelPath)) {
            SX_ASSIGN(std::vector<ir::Tensor> inputs, loadCheckedDataSet(graph, *dir));
            out.dir = *dir;
            if (inputsFit(inputs, graph)) {
                out.tensors = std::move(inputs);
                out.origin = InputsOrigin::Directory;
                return out;
            }
            out.origin = InputsOrigin::GeneratedShapesDiffer;
        }
    SX_ASSIGN(out.tensors, generateInputs(graph, 1));
    return out;
}

} // namespace sextant::runtime
