#pragma once

#include "core/backend/Program.h"
#include "core/ir/Error.h"
#include "core/ir/Tensor.h"
#include "core/sim/Simulator.h"

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace sextant::runtime {

/// How a Session issues Tasks to the device.
enum class RunMode {
    Strict,     ///< every Task waits for the previous one: one global order, for debugging races
    GraphAsync, ///< Tasks run as soon as their core and their events allow (default)
};

/// "strict" or "async".
std::string_view runModeName(RunMode mode);
/// Parses "strict", "async" (or "graph-async").
std::optional<RunMode> parseRunMode(std::string_view name);

/// Checks `inputs` against `program`'s graph inputs: count, element type (any float for a float
/// input) and shape. The error names the input and both types.
Status checkProgramInputs(const backend::Program& program, std::span<const ir::Tensor> inputs);

/// Runs `program` once on fresh device memory, as Session::run does (the driver runs the Program
/// it compiled in place, without a Session owning a copy), with `fault` planted (sim::FaultPlan).
Expected<sim::SimResult> runProgram(const backend::Program& program, std::span<const ir::Tensor> inputs,
                                    RunMode mode = RunMode::GraphAsync, bool checkRaces = false,
                                    bool keepValues = false, const sim::FaultPlan& fault = {});

/// A loaded Program ready to run on the simulated device. Cheap to copy (the graph is shared).
class Session {
public:
    explicit Session(backend::Program program) : m_program(std::move(program)) {}
    /// Loads a compiled artifact directory (manifest.json, tasks.bin, weights.bin).
    static Expected<Session> fromArtifact(const std::string& dir);

    const backend::Program& program() const { return m_program; }

    /// Checks `inputs` against the graph's inputs: count, element type (any float for a float
    /// input) and shape. The error names the input and both types.
    Status checkInputs(std::span<const ir::Tensor> inputs) const;

    /// Runs the Program once on fresh device memory. Float inputs are converted to the planned
    /// element type. Outputs come back in SimResult::outputs, one per graph output. `checkRaces`
    /// turns on the simulator's race checker (sim::SimOptions::checkRaces); `keepValues` keeps
    /// every computed value in SimResult::values (sim::SimOptions::keepValues).
    Expected<sim::SimResult> run(std::span<const ir::Tensor> inputs, RunMode mode = RunMode::GraphAsync,
                                 bool checkRaces = false, bool keepValues = false) const;

private:
    backend::Program m_program;
};

} // namespace sextant::runtime
