#include "TestUtil.h"

#include "core/frontend/OnnxImporter.h"

#include <gtest/gtest.h>

#include <random>

namespace sextant::frontend {
namespace {

using namespace test;

/// How the importer took the mutated copies of a model.
struct Outcome {
    int imported = 0;
    int rejected = 0; ///< each with a message
};

/// Imports `count` copies of `model` with a few random bytes overwritten each. Every one must
/// either import or fail with a message; a crash fails the whole test binary.
Outcome importMutations(const fs::path& model, int count, unsigned seed) {
    const std::string bytes = readBytes(model);
    EXPECT_FALSE(bytes.empty());
    const fs::path path = tempDir() / "mutated.onnx";
    std::mt19937 rng(seed);
    Outcome out;
    for (int i = 0; i < count; ++i) {
        std::string m = bytes;
        for (unsigned k = 0, flips = 1 + rng() % 4; k < flips; ++k)
            m[rng() % m.size()] = static_cast<char>(rng());
        writeBytes(path, m);
        auto g = importOnnx(path.string());
        if (g.ok()) {
            ++out.imported;
        } else {
            ++out.rejected;
            EXPECT_FALSE(g.error().message.empty()) << "mutation " << i;
        }
    }
    return out;
}

// Corrupt models reach the importer and the op verifiers in every odd shape: negative dims,
// attributes of the wrong type, dangling names, garbage dtypes. None may crash.
TEST(MutatedModels, SampleNeverCrashesTheImporter) {
    Outcome o = importMutations(samplesDir() / "residual_cnn.onnx", 200, 1);
    EXPECT_GT(o.imported, 0); // most flips land in weights: those models stay valid
}

TEST(MutatedModels, MnistNeverCrashesTheImporter) {
    SEXTANT_REQUIRE_SHARED("mutated mnist");
    Outcome o = importMutations(mnistPath(), 200, 2);
    EXPECT_GT(o.imported, 0);
}

TEST(MutatedModels, SqueezenetStructureNeverCrashesTheImporter) {
    // light_squeezenet is nearly all graph structure (105 nodes, 3.5 kB of weights).
    const fs::path model = sharedModels() / "onnx-light" / "light_squeezenet.onnx";
    if (!fs::exists(model))
        GTEST_SKIP() << SEXTANT_SHARED_DIR << " not found: skipping mutated squeezenet";
    // Most flips land in its structure, and a model with broken structure must be refused with
    // a message, not imported as some other model; the flips that hit names, docs or the few
    // weights still import (today 162 of 200 are refused).
    Outcome o = importMutations(model, 200, 3);
    EXPECT_GT(o.rejected, o.imported);
    EXPECT_GT(o.imported, 0);
}

} // namespace
} // namespace sextant::frontend
