#include "Session.h"

#include "core/backend/Artifact.h"
#include "core/backend/Lower.h"

#include <string>
#include <vector>

namespace sextant::runtime {

std::string_view runModeName(RunMode mode) {
    switch (mode) {
    case RunMode::Strict:
        return "strict";
    case RunMode::GraphAsync:
        return "async";
    }
    return "async";
}

std::optional<RunMode> parseRunMode(std::string_view name) {
    if (name == "strict")
        return RunMode::Strict;
    if (name == "async" || name == "graph-async")
        return RunMode::GraphAsync;
    return std::nullopt;
}

Expected<Session> Session::fromArtifact(const std::string& dir) {
    SX_ASSIGN(backend::Program program, backend::readArtifact(dir));
    if (!program.graph)
        return makeError(ErrorKind::Parse, "artifact '" + dir + "' has no graph");
    return Session(std::move(program));
}

Status checkProgramInputs(const backend::Program& program, std::span<const ir::Tensor> inputs) {
    if (!program.graph)
        return makeError(ErrorKind::Invalid, "program '" + program.modelName + "' has no graph");
    const auto& formal = program.graph->inputs();
    if (inputs.size() != formal.size())
        return makeError(ErrorKind::Invalid, "model '" + program.modelName + "' takes " +
                                                 std::to_string(formal.size()) + " input(s), got " +
                                                 std::to_string(inputs.size()));
    for (size_t i = 0; i < inputs.size(); ++i) {
        const ir::TensorType& want = formal[i]->type();
        const ir::Tensor& got = inputs[i];
        std::string what = "input " + std::to_string(i) + " '" + formal[i]->name() +
                           "': expected " + want.str() + ", got " + got.type().str();
        bool dtypeOk =
            got.dtype() == want.dtype || (ir::isFloat(got.dtype()) && ir::isFloat(want.dtype));
        if (!dtypeOk || !want.isStatic() || want.dims() != got.shape())
            return makeError(ErrorKind::Invalid, what, formal[i]->name());
    }
    // The values it was compiled for (runtime::bindControlInputs).
    for (const backend::InputGuard& g : program.inputGuards) {
        if (g.input < 0 || static_cast<size_t>(g.input) >= inputs.size())
            return makeError(ErrorKind::Invalid, "program '" + program.modelName + "' guards input " +
                                                     std::to_string(g.input) + ", which it does not have");
        const ir::Tensor& got = inputs[static_cast<size_t>(g.input)];
        bool same = got.numel() == g.value.numel() && got.dtype() == g.value.dtype();
        for (int64_t k = 0; same && k < got.numel(); ++k)
            same = got.at(k) == g.value.at(k);
        if (!same)
            return makeError(ErrorKind::Invalid,
                             "input '" + formal[static_cast<size_t>(g.input)]->name() + "' is " + backend::guardValuesText(got) +
                                 ", but the program was compiled for " + backend::guardValuesText(g.value) + " (it decides '" +
                                 g.decides + "'): compile it again with inputs of that value",
                             formal[static_cast<size_t>(g.input)]->name());
    }
    return {};
}

Expected<sim::SimResult> runProgram(const backend::Program& program, std::span<const ir::Tensor> inputs,
                                    RunMode mode, bool checkRaces, bool keepValues, const sim::FaultPlan& fault) {
    SX_TRY(checkProgramInputs(program, inputs));
    std::vector<ir::Tensor> converted;
    converted.reserve(inputs.size());
    const auto& formal = program.graph->inputs();
    for (size_t i = 0; i < inputs.size(); ++i)
        converted.push_back(inputs[i].castTo(formal[i]->type().dtype));
    sim::SimOptions options;
    options.strict = mode == RunMode::Strict;
    options.checkRaces = checkRaces;
    options.keepValues = keepValues;
    options.fault = fault;
    return sim::simulate(program, converted, options);
}

Status Session::checkInputs(std::span<const ir::Tensor> inputs) const {
    return checkProgramInputs(m_program, inputs);
}

Expected<sim::SimResult> Session::run(std::span<const ir::Tensor> inputs, RunMode mode, bool checkRaces,
                                      bool keepValues) const {
    return runProgram(m_program, inputs, mode, checkRaces, keepValues);
}

} // namespace sextant::runtime
