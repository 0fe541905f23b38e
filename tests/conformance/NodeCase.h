#pragma once

// One case of ONNX's node conformance suite (node/test_*/): decide whether Sextant can run it
// (every op in the op table, every dtype one the IR has) and, if so, run it on the float64
// reference executor and compare with the outputs ONNX stored next to it.

#include <map>
#include <string>
#include <vector>

namespace sextant::conformance {

/// What happened to one case.
enum class CaseResult {
    Pass,
    Fail,
    Skip,         ///< Sextant lacks an op or dtype, or the case is not comparable
    KnownFailure, ///< fails, and known-failures.txt says why (a gap being worked on)
};

/// The outcome of one case, with the reasons a person needs to act on it.
struct CaseOutcome {
    std::string name;                         ///< folder name, e.g. "test_abs"
    CaseResult result = CaseResult::Fail;
    std::string reason;                       ///< why it failed or was skipped; empty on a pass
    std::vector<std::string> unsupportedOps;  ///< for skips: op types missing from the op table
    std::vector<std::string> details;         ///< one comparison line per output and data set
};

/// ONNX's backend-test tolerances (onnx/backend/test/runner: rtol 1e-3, atol 1e-7).
inline constexpr double kConformanceRtol = 1e-3;
inline constexpr double kConformanceAtol = 1e-7;

/// Classifies the case in `caseDir` (a folder holding model.onnx and test_data_set_*/) and runs
/// it if it is supported. With `optimize`, the imported graph goes through the default (O2) pass
/// pipeline first, and the optimized graph is what runs. Never throws; every problem ends up in
/// the outcome.
CaseOutcome runNodeCase(const std::string& caseDir, bool optimize = false);

/// Reads known-failures.txt: one `test_name  reason` per line, `#` comments. A listed case that
/// fails is reported as a known failure; one that passes is a failure (the list must shrink).
std::map<std::string, std::string> readKnownFailures(const std::string& path);

/// Applies the known-failures list to an outcome.
void applyKnownFailures(const std::map<std::string, std::string>& known, CaseOutcome& outcome);

/// The sorted names of the test_* folders under `nodeDir`.
std::vector<std::string> listNodeCases(const std::string& nodeDir);

} // namespace sextant::conformance
