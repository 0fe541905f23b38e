#pragma once

#include "PassManager.h"

#include "core/ir/Error.h"

#include <string>
#include <string_view>

namespace sextant::passes {

/// Reads a fusion switch file (modelled on Ascend ATC's fusion_switch.cfg; the format is in
/// docs/fusion-switch.md):
///   { "rules": { "fuse-conv-bn": "off", ... }, "passes": { "cse": "off" } }
/// "off" adds the id to config.disabled, "on" to config.enabled. Errors name `source` and say
/// what is wrong: malformed JSON (with line and column), an unknown key, a value other than
/// "on"/"off", an unknown rule or pass id (with the closest valid id), a pass id under "rules"
/// or a rule id under "passes". Conflicts with other options (an id both
/// disabled and switched on, a rule switched on whose pass does not run at the level) are
/// reported by validateConfig, which sees the whole configuration.
Status applyFusionSwitch(std::string_view text, const std::string& source, PipelineConfig& config);

/// applyFusionSwitch on the contents of the file at `path` (error when it cannot be read).
Status loadFusionSwitch(const std::string& path, PipelineConfig& config);

} // namespace sextant::passes
