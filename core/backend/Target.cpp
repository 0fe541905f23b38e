#include "Target.h"

#include "core/ir/FileRead.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "DefaultTargetJson.h" // generated from resources/targets/npu-a.json (core/backend/CMakeLists.txt)

namespace sextant::backend {

namespace {

using nlohmann::json;

/// How one JSON field maps onto the Target struct. Every field is required; the table order is
/// the order targetToJson writes (nlohmann sorts keys anyway, so the output is stable).
struct Field {
    const char* key;
    enum class Kind { String, Positive, PositiveReal } kind;
    /// Stores the value (of the kind checked already); an error says what the value must be, and
    /// parseTarget puts the file and the field in front of it.
    std::function<Status(Target&, const json&)> set;
    std::function<json(const Target&)> get;
    bool optional = false; ///< may be absent: the Target's default stays
};

template <typename T> Field uintField(const char* key, T Target::*member) {
    return Field{key, Field::Kind::Positive,
                 [member](Target& t, const json& v) -> Status {
                     // Within the member's type: 2^31 cores would wrap to a negative int.
                     if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<T>::max()))
                         return makeError(ErrorKind::Parse, "is too large (got " + v.dump() + ", at most " +
                                                                std::to_string(std::numeric_limits<T>::max()) + ")");
                     t.*member = static_cast<T>(v.get<uint64_t>());
                     return {};
                 },
                 [member](const Target& t) { return json(static_cast<uint64_t>(t.*member)); }};
}

/// `f`, which may be absent (older targets): the Target's default stays.
Field optionalField(Field f) {
    f.optional = true;
    return f;
}

/// "must be <choices> (got "<value>")": a string field naming something the target cannot be.
Error badChoice(const std::string& choices, const json& v) {
    return makeError(ErrorKind::Parse, "must be " + choices + " (got \"" + v.get<std::string>() + "\")");
}

/// A unit's precision: "f16" or "f32" (F16 / F32).
Field unitPrecisionField(const char* key, ir::Precision Target::*member) {
    return Field{key, Field::Kind::String,
                 [member](Target& t, const json& v) -> Status {
                     const std::optional<ir::Precision> p = ir::parsePrecision(v.get<std::string>());
                     if (!p || (*p != ir::Precision::F16 && *p != ir::Precision::F32))
                         return badChoice("\"f16\" or \"f32\"", v);
                     t.*member = *p;
                     return {};
                 },
                 [member](const Target& t) { return json(std::string(ir::precisionName(t.*member))); },
                 true};
}

const std::vector<Field>& fields() {
    static const std::vector<Field> kFields = {
        Field{"name", Field::Kind::String,
              [](Target& t, const json& v) -> Status {
                  t.name = v.get<std::string>();
                  return {};
              },
              [](const Target& t) { return json(t.name); }},
        Field{"clock_ghz", Field::Kind::PositiveReal,
              [](Target& t, const json& v) -> Status {
                  t.clockGhz = v.get<double>();
                  return {};
              },
              [](const Target& t) { return json(t.clockGhz); }},
        uintField("num_cores", &Target::numCores),
        uintField("cube_m", &Target::cubeM),
        uintField("cube_n", &Target::cubeN),
        uintField("cube_k", &Target::cubeK),
        optionalField(uintField("cube_k_int8", &Target::cubeKInt8)),
        uintField("vector_lanes_f16", &Target::vectorLanesF16),
        uintField("vector_lanes_f32", &Target::vectorLanesF32),
        optionalField(uintField("vector_lanes_int8", &Target::vectorLanesInt8)),
        uintField("sram_bytes", &Target::sramBytes),
        uintField("sram_align", &Target::sramAlign),
        uintField("dma_bytes_per_cycle", &Target::dmaBytesPerCycle),
        uintField("dram_bytes", &Target::dramBytes),
        uintField("dram_bytes_per_cycle", &Target::dramBytesPerCycle),
        uintField("dram_latency_cycles", &Target::dramLatencyCycles),
        uintField("dram_align", &Target::dramAlign),
        uintField("event_slots_per_core", &Target::eventSlotsPerCore),
        uintField("event_latency_cycles", &Target::eventLatencyCycles),
        uintField("dispatch_cycles", &Target::dispatchCycles),
        uintField("descriptor_align", &Target::descriptorAlign),
        Field{"layout", Field::Kind::String,
              [](Target& t, const json& v) -> Status {
                  const std::optional<ir::NpuLayout> l = ir::parseNpuLayout(v.get<std::string>());
                  if (!l)
                      return badChoice("\"NC1HWC0\" or \"NCHW\"", v);
                  t.layout = *l;
                  return {};
              },
              [](const Target& t) { return json(std::string(ir::npuLayoutName(t.layout))); }, true},
        Field{"c0", Field::Kind::Positive,
              [](Target& t, const json& v) -> Status {
                  if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int>::max()))
                      return makeError(ErrorKind::Parse, "is too large (got " + v.dump() + ")");
                  t.c0 = static_cast<int>(v.get<uint64_t>());
                  return {};
              },
              [](const Target& t) { return json(t.c0); }, true},
        unitPrecisionField("cube_inputs", &Target::cubeInputs),
        unitPrecisionField("vector_precision", &Target::vectorPrecision),
    };
    return kFields;
}

constexpr const char* kFormat = "sextant-target";
constexpr int kVersion = 1;

Error fieldError(const std::string& source, const std::string& key, const std::string& what) {
    return makeError(ErrorKind::Parse, source + ": field '" + key + "' " + what, key);
}

bool isPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

/// The JSON document of `jsonText`, or an error naming the line and column where it stops
/// being JSON.
Expected<json> parseJson(const std::string& jsonText, const std::string& sourceName) {
    try {
        return json::parse(jsonText);
    } catch (const json::parse_error& e) {
        // Where an editor shows it: line and column (1-based) of the byte the parser stopped at.
        const size_t at = std::min<size_t>(e.byte > 0 ? e.byte - 1 : 0, jsonText.size());
        size_t line = 1, column = 1;
        for (size_t i = 0; i < at; ++i) {
            if (jsonText[i] == '\n') {
                ++line;
                column = 1;
            } else {
                ++column;
            }
        }
        return makeError(ErrorKind::Parse, sourceName + ": invalid JSON at line " + std::to_string(line) + ", column " +
                                               std::to_string(column) + " (byte " + std::to_string(e.byte) + ")");
    } catch (const json::out_of_range&) { // the one other error parse raises (found by target_fuzzer)
        return makeError(ErrorKind::Parse, sourceName + ": invalid JSON: a number beyond the range of a double");
    }
}

/// The document is an object of target fields only, with this format and version.
Status checkHeader(const json& doc, const std::string& sourceName) {
    if (!doc.is_object())
        return makeError(ErrorKind::Parse, sourceName + ": expected a JSON object at the top level");

    std::set<std::string> known = {"format", "version"};
    for (const Field& f : fields())
        known.insert(f.key);
    for (auto it = doc.begin(); it != doc.end(); ++it)
        if (!known.count(it.key()))
            return fieldError(sourceName, it.key(), "is not a target field");

    if (!doc.contains("format") || !doc["format"].is_string() || doc["format"].get<std::string>() != kFormat)
        return fieldError(sourceName, "format", std::string("must be \"") + kFormat + "\"");
    if (!doc.contains("version") || !doc["version"].is_number_integer() || doc["version"].get<int64_t>() != kVersion)
        return fieldError(sourceName, "version", "must be " + std::to_string(kVersion));
    return {};
}

/// Value `v` of field `f` has the field's kind.
Status checkFieldValue(const Field& f, const json& v, const std::string& sourceName) {
    switch (f.kind) {
    case Field::Kind::String:
        if (!v.is_string() || v.get<std::string>().empty())
            return fieldError(sourceName, f.key, "must be a non-empty string");
        break;
    case Field::Kind::Positive:
        if (!v.is_number_integer())
            return fieldError(sourceName, f.key, "must be an integer");
        if (v.is_number_unsigned() ? v.get<uint64_t>() == 0 : v.get<int64_t>() <= 0)
            return fieldError(sourceName, f.key, "must be positive (got " + v.dump() + ")");
        if (v.get<uint64_t>() > (uint64_t{1} << 48))
            return fieldError(sourceName, f.key, "is too large (got " + v.dump() + ")");
        break;
    case Field::Kind::PositiveReal:
        if (!v.is_number())
            return fieldError(sourceName, f.key, "must be a number");
        if (!(v.get<double>() > 0.0))
            return fieldError(sourceName, f.key, "must be positive (got " + v.dump() + ")");
        break;
    }
    return {};
}

/// Sets every field of `t` the document gives, in table order; a required one must be there.
Status readFields(const json& doc, const std::string& sourceName, Target& t) {
    for (const Field& f : fields()) {
        if (!doc.contains(f.key)) {
            if (f.optional)
                continue;
            return fieldError(sourceName, f.key, "is missing");
        }
        const json& v = doc[f.key];
        SX_TRY(checkFieldValue(f, v, sourceName));
        if (Status st = f.set(t, v); !st.ok())
            return fieldError(sourceName, f.key, st.error().message);
    }
    return {};
}

} // namespace

Expected<Target> parseTarget(const std::string& jsonText, const std::string& sourceName) {
    SX_ASSIGN(const json doc, parseJson(jsonText, sourceName));
    SX_TRY(checkHeader(doc, sourceName));
    Target t;
    SX_TRY(readFields(doc, sourceName, t));

    // Consistency between fields.
    for (auto [key, value] : {std::pair<const char*, uint64_t>{"sram_align", t.sramAlign},
                              {"dram_align", t.dramAlign},
                              {"descriptor_align", t.descriptorAlign}})
        if (!isPowerOfTwo(value))
            return fieldError(sourceName, key, "must be a power of two (got " + std::to_string(value) + ")");
    if (t.sramBytes % t.sramAlign != 0)
        return fieldError(sourceName, "sram_bytes",
                          "must be a multiple of sram_align (" + std::to_string(t.sramBytes) + " % " +
                              std::to_string(t.sramAlign) + " != 0)");
    if (t.dramBytes % t.dramAlign != 0)
        return fieldError(sourceName, "dram_bytes",
                          "must be a multiple of dram_align (" + std::to_string(t.dramBytes) + " % " +
                              std::to_string(t.dramAlign) + " != 0)");
    // 1 MHz to 100 GHz: outside it a latency in microseconds is a number of absurd length.
    if (!(t.clockGhz >= 0.001 && t.clockGhz <= 100.0))
        return fieldError(sourceName, "clock_ghz", "must be from 0.001 to 100 (GHz)");
    if (t.numCores > 1024)
        return fieldError(sourceName, "num_cores", "must be at most 1024 (got " + std::to_string(t.numCores) + ")");
    if (t.eventSlotsPerCore > 65535)
        return fieldError(sourceName, "event_slots_per_core", "must be at most 65535");
    if (!isPowerOfTwo(static_cast<uint64_t>(t.c0)) || t.c0 > 256)
        return fieldError(sourceName, "c0", "must be a power of two from 1 to 256 (got " + std::to_string(t.c0) + ")");
    return t;
}

Expected<Target> loadTarget(const std::string& path) {
    SX_ASSIGN(std::string text, readFileLimited(path, "target file", uint64_t{1} << 20));
    return parseTarget(text, path);
}

const Target& defaultTarget() {
    static const Target kDefault = [] {
        Expected<Target> t = parseTarget(kDefaultTargetJson, "resources/targets/npu-a.json");
        assert(t.ok() && "the compiled-in default target must parse");
        return t.ok() ? t.value() : Target{};
    }();
    return kDefault;
}

std::string targetToJson(const Target& t) {
    json doc = json::object();
    doc["format"] = kFormat;
    doc["version"] = kVersion;
    for (const Field& f : fields())
        doc[f.key] = f.get(t);
    return doc.dump(2) + "\n";
}

std::string targetToFileJson(const Target& t) {
    nlohmann::ordered_json doc = nlohmann::ordered_json::object();
    doc["format"] = kFormat;
    doc["version"] = kVersion;
    for (const Field& f : fields())
        doc[f.key] = f.get(t);
    return doc.dump(2) + "\n";
}


std::string f16Units(const Target& t) {
    std::string out;
    if (t.cubeInputs == ir::Precision::F16)
        out = "cube_inputs \"f16\"";
    if (t.vectorPrecision == ir::Precision::F16)
        out += std::string(out.empty() ? "" : ", ") + "vector_precision \"f16\"";
    return out;
}

std::string f16Note(const Target& t, const std::string& howToChange) {
    const std::string units = f16Units(t);
    if (units.empty())
        return {};
    return "note: the target computes in f16 (" + units + "); with \"f32\" for both " + howToChange +
           ", the run shows how much of the difference is that precision";
}

} // namespace sextant::backend
