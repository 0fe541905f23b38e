#pragma once

#include "core/ir/Error.h"
#include "core/ir/Graph.h"

#include <string>
#include <vector>

namespace sextant::passes {

class PassContext;

/// A rule a pass drives, as the pass describes it (listings, levels, --disable).
struct RuleDescription {
    std::string id;
    std::string summary;
    bool tradesAccuracy = false; ///< see RewriteRule::tradesAccuracy
};

/// A graph-to-graph transformation with a permanent kebab-case id. Passes have one entry point;
/// verification, timing and snapshots are the pass manager's business, not theirs.
class Pass {
public:
    virtual ~Pass() = default;
    /// Permanent id ("fold-constants"); used by --disable, stop-after, snapshots and reports.
    virtual std::string id() const = 0;
    /// One line for `sextant-cli rules` and the GUI.
    virtual std::string summary() const = 0;
    /// The rules this pass drives, each switchable and counted on its own (empty for plain
    /// passes). A pass that is not a PatternRewritePass may still have rules (cse does).
    virtual std::vector<RuleDescription> describeRules() const { return {}; }
    /// Ids of describeRules(), in order.
    std::vector<std::string> ruleIds() const {
        std::vector<std::string> ids;
        for (const RuleDescription& r : describeRules())
            ids.push_back(r.id);
        return ids;
    }
    /// Transforms `graph` in place. Returns whether the pass believes it changed something (the
    /// pass manager decides "changed" from the printed text, so this is only a hint).
    virtual Expected<bool> run(ir::Graph& graph, PassContext& ctx) = 0;

    /// The lowest optimisation level (0..3) at which the pipeline runs this pass. Set where the
    /// pipeline is assembled (Pipeline.cpp), since a level is a property of the pipeline's
    /// plan, not of the transformation.
    int minLevel() const { return m_minLevel; }
    void setMinLevel(int level) { m_minLevel = level; }

private:
    int m_minLevel = 0;
};

} // namespace sextant::passes
