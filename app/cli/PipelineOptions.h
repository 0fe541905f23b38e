#pragma once

// The pass-pipeline options shared by `compile` and `run`: -O0..-O3, --disable ID,
// --fusion-switch FILE.json and --bisect-limit N. One parser so both commands spell, check and
// document them the same way.

#include "Commands.h"

#include "core/passes/PassManager.h"

#include <string>

namespace sextant::cli {

/// What the pipeline options said, before the switch file is read and the whole is validated.
struct PipelineOptions {
    passes::PipelineConfig config;
    std::string fusionSwitch; ///< path given to --fusion-switch (empty: none)
    bool any = false;         ///< some pipeline option was given
};

/// Usage lines for the options, for the commands' --help.
extern const char* kPipelineOptionsUsage;

/// If args[i] is a pipeline option, consumes it (and its value, advancing `i`) and returns true;
/// `error` is set (prefixed with `command`) when its value is missing or malformed.
bool parsePipelineOption(const std::string& command, Args args, size_t& i, PipelineOptions& out,
                         std::string& error);

/// Reads the fusion switch file into the config and validates the whole configuration (unknown
/// ids, conflicts such as an id both disabled and switched on, a rule switched on whose pass does
/// not run at the level). Returns the error message, or empty on success.
std::string finishPipelineOptions(const std::string& command, PipelineOptions& options);

} // namespace sextant::cli
