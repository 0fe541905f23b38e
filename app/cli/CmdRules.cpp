// sextant-cli rules: the permanent ids of passes and rewrite rules, for --disable and reports.
#include "Commands.h"

#include "core/passes/PassManager.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace sextant::cli {

int cmdRules(Args args) {
    for (const std::string& a : args) {
        if (a == "-h" || a == "--help") {
            std::printf("usage: sextant-cli rules\n\n"
                        "Lists the passes of the default pipeline in the order they run, then the\n"
                        "rewrite rules, one per line: id, kind (pass, or rule:<pass>), the lowest\n"
                        "optimisation level it runs at (-O0..-O3; O3 rules trade accuracy for\n"
                        "speed), summary. Any id can be given to 'sextant-cli compile --disable ID'\n"
                        "or named in a --fusion-switch file (docs/fusion-switch.md).\n");
            return 0;
        }
        return fail("unexpected argument '" + a + "' to 'rules' (see 'sextant-cli rules --help')");
    }
    std::vector<passes::PassInfo> ps = passes::listPasses();
    std::vector<passes::RuleInfo> rs = passes::listRules();
    size_t width = 0;
    for (const auto& p : ps)
        width = std::max(width, p.id.size());
    for (const auto& r : rs)
        width = std::max(width, r.id.size());
    size_t kindWidth = 4;
    for (const auto& r : rs)
        kindWidth = std::max(kindWidth, r.pass.size() + 5);
    const int w = static_cast<int>(width), kw = static_cast<int>(kindWidth);
    std::printf("%-*s  %-*s  %-5s %s\n", w, "id", kw, "kind", "level", "summary");
    for (const auto& p : ps)
        std::printf("%-*s  %-*s  -O%-3d %s\n", w, p.id.c_str(), kw, "pass", p.minLevel,
                    p.summary.c_str());
    for (const auto& r : rs)
        std::printf("%-*s  %-*s  -O%-3d %s\n", w, r.id.c_str(), kw, ("rule:" + r.pass).c_str(),
                    r.minLevel, r.summary.c_str());
    return 0;
}

} // namespace sextant::cli
