#pragma once

// Accuracy bisection over rule applications (DESIGN.md, "Bisect accuracy bugs"). Every rule
// application has a sequence number and PipelineConfig::bisectLimit lets exactly the first N
// happen, so the first application after which the optimised graph's outputs leave their
// tolerance is found in about log2(applications) compiles, each run on the reference executor.
// `sextant-cli bisect` and the GUI's Bisect accuracy action both drive this.

#include "Compare.h"

#include "core/ir/Graph.h"
#include "core/ir/Tensor.h"
#include "core/passes/PassManager.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sextant::runtime {

/// What the optimised graph is judged against.
struct BisectBaseline {
    std::vector<ir::Tensor> inputs;
    std::vector<ir::Tensor> expected; ///< one per graph output
    std::vector<double> atols;        ///< one per graph output
    double rtol = kOutputRtol;
    ir::DType compute = ir::DType::F64; ///< what the reference executor computes in
};

/// One compile at a bisect limit (-1: no limit) and its outputs against the baseline.
struct BisectProbe {
    int64_t limit = -1;
    bool pass = true;
    std::vector<TensorComparison> comparisons;
    std::vector<passes::RuleApplication> applications;
    std::string text; ///< the optimised graph's IR
};

struct BisectOutcome {
    enum class Kind {
        NoDrift,          ///< with every application the outputs stay within tolerance
        DriftWithoutRules, ///< out of tolerance at limit 0: not a rule application's doing
        Culprit,          ///< `culprit` is the first application after which they are out
    };
    Kind kind = Kind::NoDrift;
    int64_t applications = 0;        ///< in the unlimited compile
    passes::RuleApplication culprit; ///< Culprit: the application at limit `bad`
    BisectProbe good;                ///< Culprit: the last passing probe (limit bad - 1)
    BisectProbe bad;                 ///< the first failing probe (or the unlimited one)
};

/// Runs the bisection. `onProbe` (if given) hears every probe as it finishes; `cancel` is polled
/// between probes (ErrorKind::Cancelled). Probes are searched so that the answer is a true step:
/// passing at bad.limit - 1, failing at bad.limit.
Expected<BisectOutcome> bisectRuleApplications(const ir::Graph& graph, const passes::PipelineConfig& config,
                                               const BisectBaseline& baseline,
                                               const std::function<void(const BisectProbe&)>& onProbe = {},
                                               const std::atomic<bool>* cancel = nullptr);

} // namespace sextant::runtime
