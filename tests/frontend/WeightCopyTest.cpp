#include "TestUtil.h"

#include "core/frontend/OnnxImporter.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace sextant::frontend {
namespace {

using namespace test;

/// A field of /proc/self/status in KiB ("VmRSS", "VmHWM"); -1 when unavailable.
long procStatusKb(const std::string& field) {
    std::ifstream in("/proc/self/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(field + ":", 0) == 0) {
            std::istringstream s(line.substr(field.size() + 1));
            long kb = -1;
            s >> kb;
            return kb;
        }
    return -1;
}

// DESIGN §4: loading a big model must not copy its weights more than once. The importer streams
// the file into protobuf memory and the tensors adopt those bytes, so the peak memory of an import
// is about one copy of the weights; a second copy would double it.
TEST(WeightCopy, ImportPeaksAtAboutOneCopyOfTheWeights) {
    constexpr int64_t kElems = 16 << 20; // 64 MiB of f32
    fs::path path = tempDir() / "big.onnx";
    {
        auto m = emptyModel({kElems});
        auto* w = m.mutable_graph()->add_initializer();
        w->set_name("w");
        w->set_data_type(onnx::TensorProto::FLOAT);
        w->add_dims(kElems);
        w->mutable_raw_data()->assign(kElems * 4, '\x01');
        addNode(m, "Add", "add", {"x", "w"}, {"y"});
        addOutput(m, "y");
        writeModel(m, path);
    }
    // Writing 5 to clear_refs resets the peak-RSS mark (VmHWM) to the current RSS.
    {
        std::ofstream clear("/proc/self/clear_refs");
        clear << "5";
        clear.close();
        if (!clear)
            GTEST_SKIP() << "/proc/self/clear_refs not writable: cannot measure peak memory";
    }
    const long before = procStatusKb("VmRSS");
    if (before < 0 || procStatusKb("VmHWM") < 0)
        GTEST_SKIP() << "/proc/self/status has no VmRSS/VmHWM: cannot measure peak memory";

    auto g = importOnnx(path.string());
    fs::remove_all(path.parent_path());
    ASSERT_TRUE(g.ok()) << g.error().message;
    const long peakKb = procStatusKb("VmHWM") - before;
    const long weightsKb = kElems * 4 / 1024;
    EXPECT_GT(peakKb, weightsKb / 2) << "the measurement does not see the weights at all";
    EXPECT_LT(peakKb, weightsKb * 3 / 2)
        << "importing " << weightsKb << " KiB of weights peaked at " << peakKb << " KiB";
    EXPECT_EQ((*g)->findValue("w")->constant()->at(0), (*g)->findValue("w")->constant()->at(kElems - 1));
}

} // namespace
} // namespace sextant::frontend
