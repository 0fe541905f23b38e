#pragma once

#include "core/ir/Error.h"
#include "core/ir/Graph.h"

#include <string>

namespace sextant::passes {

class PassContext;

/// A graph-to-graph transformation with a permanent kebab-case id. Passes have one entry point;
/// verification, timing and snapshots are the pass manager's business, not theirs.
class Pass {
public:
    virtual ~Pass() = default;
    /// Permanent id ("fold-constants"); used by --disable, stop-after, snapshots and reports.
    virtual std::string id() const = 0;
    /// One line for `sextant-cli rules` and the GUI.
    virtual std::string summary() const = 0;
    /// Ids of the rewrite rules this pass drives (empty for plain passes).
    virtual std::vector<std::string> ruleIds() const { return {}; }
    /// Transforms `graph` in place. Returns whether the pass believes it changed something (the
    /// pass manager decides "changed" from the printed text, so this is only a hint).
    virtual Expected<bool> run(ir::Graph& graph, PassContext& ctx) = 0;
};

} // namespace sextant::passes
