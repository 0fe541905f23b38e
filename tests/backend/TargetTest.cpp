#include "core/backend/Target.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>

#include <functional>

using namespace sextant;
using namespace sextant::backend;

namespace {

std::string defaultJsonWith(const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json j = nlohmann::json::parse(targetToJson(defaultTarget()));
    edit(j);
    return j.dump();
}

} // namespace

TEST(Target, DefaultHasTheDesignNumbers) {
    const Target& t = defaultTarget();
    EXPECT_EQ(t.name, "npu-a");
    EXPECT_DOUBLE_EQ(t.clockGhz, 1.0);
    EXPECT_EQ(t.numCores, 8);
    EXPECT_EQ(t.cubeM * t.cubeN * t.cubeK, 16 * 16 * 16);
    EXPECT_EQ(t.vectorLanesF16, 128);
    EXPECT_EQ(t.vectorLanesF32, 64);
    EXPECT_EQ(t.sramBytes, 512u * 1024);
    EXPECT_EQ(t.sramAlign, 32u);
    EXPECT_EQ(t.dmaBytesPerCycle, 64u);
    EXPECT_EQ(t.dramBytes, 16ull << 30);
    EXPECT_EQ(t.dramBytesPerCycle, 512u);
    EXPECT_EQ(t.dramLatencyCycles, 400u);
    EXPECT_EQ(t.eventSlotsPerCore, 64);
    EXPECT_EQ(t.eventLatencyCycles, 200u);
    EXPECT_EQ(t.dispatchCycles, 100u);
    EXPECT_EQ(t.descriptorAlign, 64u);
}

TEST(Target, ResourceFileMatchesTheCompiledInDefault) {
    Expected<Target> t = loadTarget(std::string(SEXTANT_SOURCE_DIR) + "/resources/targets/npu-a.json");
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(targetToJson(*t), targetToJson(defaultTarget()));
}

TEST(Target, JsonRoundTripIsStable) {
    std::string once = targetToJson(defaultTarget());
    Expected<Target> back = parseTarget(once, "round-trip");
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(targetToJson(*back), once);
    // Keys come out sorted, so diffs of manifests stay small.
    EXPECT_LT(once.find("\"clock_ghz\""), once.find("\"num_cores\""));
}

TEST(Target, FileLayoutIsTheResourceFile) {
    // What File > Target shows: the shipped file's layout, field for field, so an edit of the
    // default reads like the file a user would write.
    std::ifstream in(std::string(SEXTANT_SOURCE_DIR) + "/resources/targets/npu-a.json");
    std::stringstream file;
    file << in.rdbuf();
    EXPECT_EQ(targetToFileJson(defaultTarget()), file.str());
    Expected<Target> back = parseTarget(targetToFileJson(defaultTarget()), "file layout");
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(targetToJson(*back), targetToJson(defaultTarget()));
}

TEST(Target, MissingFieldIsNamed) {
    Expected<Target> t = parseTarget(defaultJsonWith([](auto& j) { j.erase("sram_bytes"); }), "my.json");
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().message, "my.json: field 'sram_bytes' is missing");
}

TEST(Target, NegativeAndZeroValuesAreRejected) {
    Expected<Target> neg = parseTarget(defaultJsonWith([](auto& j) { j["num_cores"] = -2; }), "t.json");
    ASSERT_FALSE(neg.ok());
    EXPECT_NE(neg.error().message.find("t.json: field 'num_cores' must be positive"), std::string::npos)
        << neg.error().message;
    Expected<Target> zero = parseTarget(defaultJsonWith([](auto& j) { j["clock_ghz"] = 0.0; }), "t.json");
    ASSERT_FALSE(zero.ok());
    EXPECT_NE(zero.error().message.find("'clock_ghz' must be positive"), std::string::npos);
}

TEST(Target, AClockOutsideOneMegahertzToAHundredGigahertzIsRejected) {
    // 1e-300 GHz used to print a latency 300 digits long.
    for (double ghz : {1e-300, 1e-4, 101.0, 1e300}) {
        Expected<Target> t = parseTarget(defaultJsonWith([ghz](auto& j) { j["clock_ghz"] = ghz; }), "t.json");
        ASSERT_FALSE(t.ok()) << ghz;
        EXPECT_EQ(t.error().message, "t.json: field 'clock_ghz' must be from 0.001 to 100 (GHz)");
    }
    for (double ghz : {0.001, 1.5, 100.0})
        EXPECT_TRUE(parseTarget(defaultJsonWith([ghz](auto& j) { j["clock_ghz"] = ghz; }), "t.json").ok()) << ghz;
}

TEST(Target, AFolderIsNotATargetFile) {
    Expected<Target> t = loadTarget(std::filesystem::temp_directory_path().string());
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.error().message.find("is a folder, not a target file"), std::string::npos) << t.error().message;
}

TEST(Target, ValuesBeyondTheFieldsTypeAreTooLargeNotWrapped) {
    // Found by target_fuzzer: 2^31 cores passed the 2^48 bound and wrapped to a negative int.
    Expected<Target> t = parseTarget(defaultJsonWith([](auto& j) { j["num_cores"] = uint64_t{1} << 31; }), "t.json");
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.error().message.find("t.json: field 'num_cores' is too large (got 2147483648, at most 2147483647)"),
              std::string::npos)
        << t.error().message;
}

TEST(Target, ANumberBeyondADoubleIsInvalidJsonNotACrash) {
    // Found by target_fuzzer: nlohmann reports 5e400 as out_of_range, not as a parse_error.
    Expected<Target> t = parseTarget("[5e1844674407370955161512]", "t.json");
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().message, "t.json: invalid JSON: a number beyond the range of a double");
}

TEST(Target, UnknownKeyIsRejected) {
    Expected<Target> t = parseTarget(defaultJsonWith([](auto& j) { j["sram_kib"] = 512; }), "t.json");
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().message, "t.json: field 'sram_kib' is not a target field");
}

TEST(Target, WrongTypeIsRejected) {
    Expected<Target> t = parseTarget(defaultJsonWith([](auto& j) { j["num_cores"] = "eight"; }), "t.json");
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().message, "t.json: field 'num_cores' must be an integer");
    Expected<Target> f = parseTarget(defaultJsonWith([](auto& j) { j["num_cores"] = 2.5; }), "t.json");
    ASSERT_FALSE(f.ok());
}

TEST(Target, BadJsonIsAParseError) {
    Expected<Target> t = parseTarget("{\"name\": \"npu-a\",", "broken.json");
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().kind, ErrorKind::Parse);
    EXPECT_NE(t.error().message.find("broken.json: invalid JSON"), std::string::npos) << t.error().message;
    EXPECT_FALSE(parseTarget("[1, 2]", "array.json").ok());
    // An editor needs the line and column: the comma missing after the third line shows at the
    // end of the next token, "c0" on line 4.
    Expected<Target> edited = parseTarget("{\n  \"name\": \"npu-a\",\n  \"num_cores\": 8\n  \"c0\": 16\n}", "editor");
    ASSERT_FALSE(edited.ok());
    EXPECT_NE(edited.error().message.find("editor: invalid JSON at line 4, column 6"), std::string::npos)
        << edited.error().message;
}

TEST(Target, SramMustBeAMultipleOfItsAlignment) {
    Expected<Target> t = parseTarget(defaultJsonWith([](auto& j) { j["sram_bytes"] = 524288 + 16; }), "t.json");
    ASSERT_FALSE(t.ok());
    EXPECT_NE(t.error().message.find("field 'sram_bytes' must be a multiple of sram_align"), std::string::npos)
        << t.error().message;
}

TEST(Target, MissingFileNamesThePath) {
    Expected<Target> t = loadTarget("/nonexistent/dir/x.json");
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.error().kind, ErrorKind::Io);
    EXPECT_NE(t.error().message.find("/nonexistent/dir/x.json"), std::string::npos);
}

TEST(Target, EditedFieldIsUsed) {
    Expected<Target> t = parseTarget(defaultJsonWith([](auto& j) { j["num_cores"] = 2; }), "t.json");
    ASSERT_TRUE(t.ok()) << t.error().message;
    EXPECT_EQ(t->numCores, 2);
}

TEST(Target, LayoutAndC0DefaultWhenAbsentAndAreValidated) {
    EXPECT_EQ(defaultTarget().layout, ir::NpuLayout::NC1HWC0);
    EXPECT_EQ(defaultTarget().c0, 16);
    // A target file written before the layout fields existed still loads, with the defaults.
    Expected<Target> old = parseTarget(defaultJsonWith([](auto& j) {
                                           j.erase("layout");
                                           j.erase("c0");
                                       }),
                                       "old.json");
    ASSERT_TRUE(old.ok()) << old.error().message;
    EXPECT_EQ(old->layout, ir::NpuLayout::NC1HWC0);
    EXPECT_EQ(old->c0, 16);
    Expected<Target> plain = parseTarget(defaultJsonWith([](auto& j) {
                                             j["layout"] = "NCHW";
                                             j["c0"] = 32;
                                         }),
                                         "plain.json");
    ASSERT_TRUE(plain.ok()) << plain.error().message;
    EXPECT_EQ(plain->layout, ir::NpuLayout::NCHW);
    EXPECT_EQ(plain->c0, 32);
    EXPECT_NE(targetToJson(*plain).find("\"layout\": \"NCHW\""), std::string::npos);

    Expected<Target> unknown = parseTarget(defaultJsonWith([](auto& j) { j["layout"] = "NHWC"; }), "t.json");
    ASSERT_FALSE(unknown.ok());
    EXPECT_EQ(unknown.error().message, "t.json: field 'layout' must be \"NC1HWC0\" or \"NCHW\" (got \"NHWC\")");
    Expected<Target> odd = parseTarget(defaultJsonWith([](auto& j) { j["c0"] = 12; }), "t.json");
    ASSERT_FALSE(odd.ok());
    EXPECT_EQ(odd.error().message, "t.json: field 'c0' must be a power of two from 1 to 256 (got 12)");
    Expected<Target> zero = parseTarget(defaultJsonWith([](auto& j) { j["c0"] = 0; }), "t.json");
    ASSERT_FALSE(zero.ok());
    EXPECT_NE(zero.error().message.find("'c0' must be positive"), std::string::npos) << zero.error().message;
    Expected<Target> notString = parseTarget(defaultJsonWith([](auto& j) { j["layout"] = 5; }), "t.json");
    ASSERT_FALSE(notString.ok());
    EXPECT_NE(notString.error().message.find("'layout' must be a non-empty string"), std::string::npos);
}

TEST(Target, PrecisionPolicyDefaultsAndIsValidated) {
    EXPECT_EQ(defaultTarget().cubeInputs, ir::Precision::F16);
    EXPECT_EQ(defaultTarget().vectorPrecision, ir::Precision::F16);
    Expected<Target> old = parseTarget(defaultJsonWith([](auto& j) {
                                           j.erase("cube_inputs");
                                           j.erase("vector_precision");
                                       }),
                                       "old.json");
    ASSERT_TRUE(old.ok()) << old.error().message;
    EXPECT_EQ(old->cubeInputs, ir::Precision::F16);
    Expected<Target> exact = parseTarget(defaultJsonWith([](auto& j) {
                                             j["cube_inputs"] = "f32";
                                             j["vector_precision"] = "f32";
                                         }),
                                         "exact.json");
    ASSERT_TRUE(exact.ok()) << exact.error().message;
    EXPECT_EQ(exact->cubeInputs, ir::Precision::F32);
    EXPECT_EQ(exact->vectorPrecision, ir::Precision::F32);
    // What the note after an NPU result out of tolerance names: the fields that say f16.
    EXPECT_EQ(f16Units(defaultTarget()), "cube_inputs \"f16\", vector_precision \"f16\"");
    EXPECT_EQ(f16Units(*exact), "");
    Target cubeOnly = *exact;
    cubeOnly.cubeInputs = ir::Precision::F16;
    EXPECT_EQ(f16Units(cubeOnly), "cube_inputs \"f16\"");
    Expected<Target> bad = parseTarget(defaultJsonWith([](auto& j) { j["cube_inputs"] = "bf16"; }), "t.json");
    ASSERT_FALSE(bad.ok());
    EXPECT_EQ(bad.error().message, "t.json: field 'cube_inputs' must be \"f16\" or \"f32\" (got \"bf16\")");
    EXPECT_EQ(bad.error().subject, "cube_inputs");
    // A node precision that is no unit's: the cube reads f16 or f32, nothing else.
    Expected<Target> nodeOnly =
        parseTarget(defaultJsonWith([](auto& j) { j["vector_precision"] = "f16-acc-f32"; }), "t.json");
    ASSERT_FALSE(nodeOnly.ok());
    EXPECT_EQ(nodeOnly.error().message,
              "t.json: field 'vector_precision' must be \"f16\" or \"f32\" (got \"f16-acc-f32\")");
    // The enums go back out as the same text.
    EXPECT_NE(targetToJson(*exact).find("\"cube_inputs\": \"f32\""), std::string::npos);
    EXPECT_NE(targetToJson(*exact).find("\"vector_precision\": \"f32\""), std::string::npos);
    EXPECT_NE(targetToJson(defaultTarget()).find("\"layout\": \"NC1HWC0\""), std::string::npos);
    Expected<Target> again = parseTarget(targetToJson(*exact), "again.json");
    ASSERT_TRUE(again.ok()) << again.error().message;
    EXPECT_EQ(targetToJson(*again), targetToJson(*exact));
}

// The target_fuzzer's checked-in inputs (tests/fuzz-corpus/target/), replayed on every build, not
// only under the sanitizers: npu_a.json parses, the others (bad targets, and switch files, which
// are no targets) are errors naming the file (clock_tiny.json's 1e-300 GHz is a valid number), and
// nothing crashes.
TEST(Target, FuzzCorpusGivesNamedErrorsOrTargets) {
    namespace fs = std::filesystem;
    std::set<std::string> parsed;
    size_t rejected = 0;
    for (const auto& entry : fs::directory_iterator(fs::path(SEXTANT_SOURCE_DIR) / "tests/fuzz-corpus/target")) {
        if (entry.path().extension() != ".json")
            continue;
        std::ifstream in(entry.path(), std::ios::binary);
        std::stringstream text;
        text << in.rdbuf();
        const std::string name = entry.path().filename().string();
        Expected<Target> t = parseTarget(text.str(), name);
        if (t.ok()) {
            parsed.insert(name);
            continue;
        }
        ++rejected;
        EXPECT_NE(t.error().message.find(name), std::string::npos) << name << ": " << t.error().message;
    }
    EXPECT_TRUE(parsed.count("npu_a.json"));
    EXPECT_GE(rejected, 20u);
    for (const std::string& name : parsed)
        EXPECT_TRUE(name == "npu_a.json" || name == "clock_tiny.json") << name << " parsed";
}
