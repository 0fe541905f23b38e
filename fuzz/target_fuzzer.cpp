// libFuzzer target for the two small JSON files users hand the tools: bytes → parseTarget (a
// target description, --target) and applyFusionSwitch (--fusion-switch). A target that parses is
// printed with targetToJson and must parse back to the same text. A finding is a crash, a
// sanitizer report, a leak, or an error with an empty message. Both parsers take the text itself,
// so no file is written.

#include "FuzzScratch.h"

#include "core/backend/Target.h"
#include "core/passes/FusionSwitch.h"

#include <string>

namespace {

constexpr const char* kTarget = "target_fuzzer";

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    sextant::fuzz::Scratch::init(kTarget);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace sextant;
    using fuzz::Scratch;
    const std::string text(reinterpret_cast<const char*>(data), size);
    Expected<backend::Target> target = backend::parseTarget(text, "fuzz-target.json");
    if (!target.ok()) {
        Scratch::checkError(target.error());
    } else {
        const std::string printed = backend::targetToJson(*target);
        Expected<backend::Target> back = backend::parseTarget(printed, "printed target");
        if (!back.ok())
            fuzz::finding(kTarget, ("a parsed target, printed, does not parse: " + back.error().message).c_str());
        if (backend::targetToJson(*back) != printed)
            fuzz::finding(kTarget, "a parsed target, printed and parsed again, prints differently");
    }
    passes::PipelineConfig config;
    if (Status s = passes::applyFusionSwitch(text, "fuzz-switch.json", config); !s.ok())
        Scratch::checkError(s.error());
    return 0;
}
