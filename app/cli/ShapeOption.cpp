#include "ShapeOption.h"

namespace sextant::cli {

std::string addShapeOption(const std::string& command, const std::string& spec,
                           ir::InputShapes& shapes) {
    Expected<std::pair<std::string, std::vector<int64_t>>> parsed = ir::parseShapeSpec(spec);
    if (!parsed.ok())
        return command + ": --shape: " + parsed.error().message;
    if (!shapes.emplace(parsed->first, parsed->second).second)
        return command + ": --shape given twice for input '" + parsed->first + "'";
    return {};
}

} // namespace sextant::cli
