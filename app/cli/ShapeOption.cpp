#include "ShapeOption.h"

#include "core/frontend/SizeLimits.h"
#include "core/frontend/TensorProtoIO.h"

namespace sextant::cli {

std::string addShapeOption(const std::string& command, const std::string& spec,
                           ir::InputShapes& shapes) {
    Expected<std::pair<std::string, std::vector<int64_t>>> parsed = ir::parseShapeSpec(spec);
    if (!parsed.ok())
        return command + ": --shape: " + parsed.error().message;
    if (!shapes.emplace(parsed->first, parsed->second).second)
        return command + ": --shape given twice for input '" + parsed->first + "'";
    return {};
}

Status applyShapeOptions(ir::Graph& graph, const ir::InputShapes& shapes, bool requireStatic) {
    if (!shapes.empty()) {
        SX_TRY(ir::specializeInputs(graph, shapes));
        // The importer checked sizes with the model's symbolic dims; the requested shapes can make
        // an input or an intermediate far larger, so check again before anything allocates it.
        return frontend::checkTensorSizes(graph);
    }
    if (requireStatic)
        return ir::requireStaticInputs(graph);
    return {};
}

Status applyShapesOrInputs(ir::Graph& graph, const ir::InputShapes& shapes, const std::string& inputsDir) {
    if (!shapes.empty() || ir::symbolicInputs(graph).empty() || inputsDir.empty())
        return applyShapeOptions(graph, shapes, /*requireStatic=*/true);
    SX_ASSIGN(std::vector<ir::Tensor> inputs, frontend::loadTestDataSet(inputsDir, "input"));
    if (inputs.size() != graph.inputs().size())
        return makeError(ErrorKind::Invalid, "'" + inputsDir + "' holds " + std::to_string(inputs.size()) +
                                                 " input(s) but the model has " + std::to_string(graph.inputs().size()));
    ir::InputShapes fromInputs;
    for (size_t i = 0; i < inputs.size(); ++i)
        fromInputs[graph.inputs()[i]->name()] = inputs[i].shape();
    return ir::specializeInputs(graph, fromInputs);
}

} // namespace sextant::cli
