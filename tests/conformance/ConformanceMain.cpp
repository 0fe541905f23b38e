// test_conformance: ONNX's node conformance suite on the float64 reference executor.
//
//   test_conformance [gtest flags] [--optimize] NODE_TESTS_DIR [SUMMARY_FILE]
//
// With --optimize every case's graph goes through the default O2 pass pipeline before it runs,
// so the suite checks the compiler's rewrites as well as the kernels.
// NODE_TESTS_DIR is what scripts/gen-onnx-node-tests.sh wrote (it holds node/test_*/). Every case
// becomes one GoogleTest test, OnnxNode.<case>, so a failure names its case; cases Sextant cannot
// run (an op missing from the op table, a dtype the IR lacks) are skipped with the reason. At the
// end a summary ("N of M cases pass, F fail, K skipped (unsupported ops: ...)") is printed and,
// with the full per-case list, written to SUMMARY_FILE. Cases listed in known-failures.txt (next
// to this file) that fail are reported as known failures, not failures; a listed case that passes
// fails the run, so the list only ever shrinks. Exit code 77 (ctest: skipped) when the
// folder was not generated.

#include "NodeCase.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

namespace fs = std::filesystem;
using namespace sextant::conformance;

namespace {

/// Outcomes by case name, filled by the tests as they run (std::map: the summary is sorted).
std::map<std::string, CaseOutcome>& outcomes() {
    static std::map<std::string, CaseOutcome> all;
    return all;
}

class NodeCaseTest : public testing::Test {
public:
    NodeCaseTest(std::string dir, const std::map<std::string, std::string>* known, bool optimize)
        : m_dir(std::move(dir)), m_known(known), m_optimize(optimize) {}
    void TestBody() override {
        CaseOutcome outcome = runNodeCase(m_dir, m_optimize);
        applyKnownFailures(*m_known, outcome);
        outcomes()[outcome.name] = outcome;
        switch (outcome.result) {
        case CaseResult::Pass: break;
        case CaseResult::Skip:
        case CaseResult::KnownFailure: GTEST_SKIP() << outcome.reason;
        case CaseResult::Fail: {
            std::string details;
            for (const std::string& d : outcome.details)
                details += "\n  " + d;
            ADD_FAILURE() << m_dir << ": " << outcome.reason << details
                          << "\n(fix the op, or list the case with its reason in tests/conformance/known-failures.txt)";
            break;
        }
        }
    }

private:
    std::string m_dir;
    const std::map<std::string, std::string>* m_known;
    bool m_optimize;
};

std::string summarize(const std::map<std::string, CaseOutcome>& all, std::string* report) {
    int pass = 0, fail = 0, skip = 0, known = 0;
    std::map<std::string, int> missingOps; // op -> cases needing it
    std::map<std::string, int> otherSkips; // reason -> cases
    std::ostringstream cases;
    for (const auto& [name, o] : all) {
        switch (o.result) {
        case CaseResult::Pass: ++pass; cases << "PASS " << name << "\n"; break;
        case CaseResult::Fail: ++fail; cases << "FAIL " << name << ": " << o.reason << "\n"; break;
        case CaseResult::KnownFailure:
            ++known;
            cases << "KNOWN " << name << ": " << o.reason << "\n";
            break;
        case CaseResult::Skip:
            ++skip;
            cases << "SKIP " << name << ": " << o.reason << "\n";
            for (const std::string& op : o.unsupportedOps)
                ++missingOps[op];
            if (o.unsupportedOps.empty())
                ++otherSkips[o.reason];
            break;
        }
    }
    std::string ops, others;
    for (const auto& [op, n] : missingOps)
        ops += (ops.empty() ? "" : ", ") + op;
    for (const auto& [reason, n] : otherSkips)
        others += (others.empty() ? "" : "; ") + reason + " (" + std::to_string(n) + ")";
    std::ostringstream line;
    line << pass << " of " << all.size() << " cases pass, " << fail << " fail, " << known
         << " known failures, " << skip
         << " skipped (unsupported ops: " << (ops.empty() ? "none" : ops) << ")";
    if (!others.empty())
        line << "; also skipped: " << others;
    if (report) {
        std::ostringstream r;
        r << line.str() << "\n\n" << missingOps.size() << " unsupported op types (cases needing each):\n";
        for (const auto& [op, n] : missingOps)
            r << "  " << op << " " << n << "\n";
        r << "\n" << cases.str();
        *report = r.str();
    }
    return line.str();
}

} // namespace

int main(int argc, char** argv) {
    testing::InitGoogleTest(&argc, argv);
    const bool optimize = argc > 1 && std::string(argv[1]) == "--optimize";
    if (optimize) {
        --argc;
        ++argv;
    }
    if (argc < 2) {
        std::cerr << "usage: test_conformance [gtest flags] [--optimize] NODE_TESTS_DIR [SUMMARY_FILE]\n";
        return 2;
    }
    const fs::path root(argv[1]);
    const std::string summaryPath = argc > 2 ? argv[2] : "";
    const fs::path nodeDir = root / "node";
    if (!fs::is_directory(nodeDir)) {
        std::cerr << nodeDir.string()
                  << " not found (scripts/gen-onnx-node-tests.sh writes it): skipping ONNX node tests\n";
        return 77;
    }
    const std::vector<std::string> names = listNodeCases(nodeDir.string());
    if (names.empty()) {
        std::cerr << "no test_* cases in " << nodeDir.string() << "\n";
        return 1;
    }
    static const std::map<std::string, std::string> known = readKnownFailures(SEXTANT_KNOWN_FAILURES);
    // A line that is not a case of the suite (a typo, a renamed case, a merge marker) would
    // silently excuse nothing: refuse it.
    for (const auto& [name, reason] : known)
        if (!std::binary_search(names.begin(), names.end(), name)) {
            std::cerr << SEXTANT_KNOWN_FAILURES << ": '" << name << "' is not a case of the suite\n";
            return 1;
        }
    for (const std::string& name : names) {
        const std::string dir = (nodeDir / name).string();
        testing::RegisterTest("OnnxNode", name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                              [dir, optimize]() -> testing::Test* {
                                  return new NodeCaseTest(dir, &known, optimize);
                              });
    }
    const int rc = RUN_ALL_TESTS();
    if (!outcomes().empty()) {
        std::string report;
        const std::string line = summarize(outcomes(), &report);
        std::cout << "ONNX node conformance" << (optimize ? " (after the O2 pipeline)" : "") << ": "
                  << line << "\n";
        if (!summaryPath.empty()) {
            std::ofstream out(summaryPath);
            out << report;
            if (!out)
                std::cerr << "cannot write " << summaryPath << "\n";
        }
    }
    return rc;
}
