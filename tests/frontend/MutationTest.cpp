#include "TestUtil.h"

#include "core/frontend/OnnxImporter.h"

#include <gtest/gtest.h>

#include <random>

namespace sextant::frontend {
namespace {

using namespace test;

/// Imports `count` copies of `model` with a few random bytes overwritten each. Every one must
/// either import or fail with a message; a crash fails the whole test binary. Returns how many
/// imported.
int importMutations(const fs::path& model, int count, unsigned seed) {
    const std::string bytes = readBytes(model);
    EXPECT_FALSE(bytes.empty());
    const fs::path path = tempDir() / "mutated.onnx";
    std::mt19937 rng(seed);
    int imported = 0;
    for (int i = 0; i < count; ++i) {
        std::string m = bytes;
        for (unsigned k = 0, flips = 1 + rng() % 4; k < flips; ++k)
            m[rng() % m.size()] = static_cast<char>(rng());
        writeBytes(path, m);
        auto g = importOnnx(path.string());
        if (g.ok())
            ++imported;
        else
            EXPECT_FALSE(g.error().message.empty()) << "mutation " << i;
    }
    return imported;
}

// Corrupt models reach the importer and the op verifiers in every odd shape: negative dims,
// attributes of the wrong type, dangling names, garbage dtypes. None may crash.
TEST(MutatedModels, SampleNeverCrashesTheImporter) {
    int imported = importMutations(samplesDir() / "residual_cnn.onnx", 200, 1);
    EXPECT_GT(imported, 0); // most flips land in weights: those models stay valid
}

TEST(MutatedModels, MnistNeverCrashesTheImporter) {
    SEXTANT_REQUIRE_SHARED("mutated mnist");
    int imported = importMutations(mnistPath(), 200, 2);
    EXPECT_GT(imported, 0);
}

TEST(MutatedModels, SqueezenetStructureNeverCrashesTheImporter) {
    // light_squeezenet is nearly all graph structure (105 nodes, 3.5 kB of weights).
    const fs::path model = sharedModels() / "onnx-light" / "light_squeezenet.onnx";
    if (!fs::exists(model))
        GTEST_SKIP() << SEXTANT_SHARED_DIR << " not found: skipping mutated squeezenet";
    importMutations(model, 200, 3);
}

} // namespace
} // namespace sextant::frontend
