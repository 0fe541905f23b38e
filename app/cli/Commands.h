#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace sextant::cli {

/// Arguments after the subcommand name.
using Args = std::span<const std::string>;

/// Each subcommand lives in its own Cmd<Name>.cpp and returns the process exit code:
/// 0 success, 1 a check failed (FAIL lines, regression), 2 bad input or usage (one "error: ..." line).
int cmdImport(Args args);
int cmdRules(Args args);
int cmdOps(Args args);
int cmdCompile(Args args);
int cmdRun(Args args);
int cmdExportTrace(Args args);
int cmdBisect(Args args);
int cmdRegress(Args args);
int cmdCompareRuns(Args args);
int cmdPlanOffsets(Args args);

/// Prints "error: <message>" to stderr and returns 2.
int fail(std::string_view message);

/// Parses a tolerance (--atol, --rtol): a non-negative number; nullopt when `s` is not one.
std::optional<double> parseTolerance(const std::string& s);
/// Parses a whole number >= 0 written in digits only (at most 15: --bisect-limit, --run,
/// --tasks); nullopt when `s` is not one.
std::optional<int64_t> parseWholeNumber(const std::string& s);

} // namespace sextant::cli
