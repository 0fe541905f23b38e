#include "FusionSwitch.h"

#include "core/ir/FileRead.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace sextant::passes {

namespace {

/// 1-based line and column of byte offset `pos` (nlohmann counts the failing byte from 1).
std::string lineColumn(std::string_view text, size_t pos) {
    size_t line = 1, column = 1;
    for (size_t i = 0; i + 1 < pos && i < text.size(); ++i) {
        if (text[i] == '\n') {
            ++line;
            column = 1;
        } else {
            ++column;
        }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

Error switchError(const std::string& source, const std::string& message,
                  const std::string& subject = {}) {
    return makeError(ErrorKind::Invalid, source + ": " + message, subject);
}

} // namespace

Status applyFusionSwitch(std::string_view text, const std::string& source, PipelineConfig& config) {
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& e) {
        std::string what = e.what();
        // Keep nlohmann's description of the problem, drop its "[json.exception...]" prefix and
        // its own position wording, and say where in our terms.
        size_t colon = what.rfind(": ");
        std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
        return makeError(ErrorKind::Parse, source + ": malformed JSON at " +
                                               lineColumn(text, e.byte) + ": " + detail);
    } catch (const nlohmann::json::out_of_range&) { // the one other error parse raises: 5e400
        return makeError(ErrorKind::Parse, source + ": malformed JSON: a number beyond the range of a double");
    }
    if (!doc.is_object())
        return switchError(source, "expected a JSON object with \"rules\" and/or \"passes\"");

    std::vector<PassInfo> passList = listPasses();
    std::vector<RuleInfo> ruleList = listRules();
    std::vector<std::string> passIds, ruleIds;
    for (const PassInfo& p : passList)
        passIds.push_back(p.id);
    for (const RuleInfo& r : ruleList)
        ruleIds.push_back(r.id);
    auto contains = [](const std::vector<std::string>& v, const std::string& id) {
        return std::find(v.begin(), v.end(), id) != v.end();
    };

    PipelineConfig updated = config;
    for (auto it = doc.begin(); it != doc.end(); ++it) {
        const std::string section = it.key();
        if (section != "rules" && section != "passes")
            return switchError(source, "unknown key '" + section +
                                           "' (expected \"rules\" and/or \"passes\")");
        if (!it.value().is_object())
            return switchError(source, "\"" + section + "\" must be an object of id: \"on\"|\"off\"");
        const bool rules = section == "rules";
        const std::vector<std::string>& valid = rules ? ruleIds : passIds;
        const std::vector<std::string>& other = rules ? passIds : ruleIds;
        for (auto e = it.value().begin(); e != it.value().end(); ++e) {
            const std::string id = e.key();
            const std::string kind = rules ? "rule" : "pass";
            if (!contains(valid, id)) {
                if (contains(other, id))
                    return switchError(source,
                                       "'" + id + "' is a " + (rules ? "pass" : "rule") +
                                           ", not a " + kind + ": list it under \"" +
                                           (rules ? "passes" : "rules") + "\"",
                                       id);
                return switchError(source,
                                   "unknown " + kind + " id '" + id + "' in \"" + section +
                                       "\" (did you mean '" + closestId(id, valid) +
                                       "'? see 'sextant-cli rules')",
                                   id);
            }
            if (!e.value().is_string() ||
                (e.value().get<std::string>() != "on" && e.value().get<std::string>() != "off"))
                return switchError(source, "value for '" + id + "' must be \"on\" or \"off\", got " +
                                               e.value().dump(),
                                   id);
            const bool on = e.value().get<std::string>() == "on";
            (on ? updated.enabled : updated.disabled).insert(id);
        }
    }
    config = std::move(updated);
    return {};
}

Status loadFusionSwitch(const std::string& path, PipelineConfig& config) {
    SX_ASSIGN(std::string text, readFileLimited(path, "fusion switch file", uint64_t{1} << 20));
    return applyFusionSwitch(text, path, config);
}

} // namespace sextant::passes
