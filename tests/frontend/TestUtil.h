#pragma once

// Helpers shared by the frontend tests: paths to ../shared and the sources, temp folders, and
// writing small ONNX models built with the protobuf API.

#include <onnx/onnx_pb.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace sextant::frontend::test {

namespace fs = std::filesystem;

inline fs::path sharedModels() { return fs::path(SEXTANT_SHARED_DIR) / "models"; }
inline fs::path mnistPath() { return sharedModels() / "ort-examples" / "mnist.onnx"; }
inline fs::path mnistData() {
    return sharedModels() / "ort-examples" / "test_data" / "mnist" / "test_data_set_0";
}
inline fs::path samplesDir() { return fs::path(SEXTANT_SOURCE_DIR) / "samples"; }

/// Removes the folders tempDir() made once their test has passed; a failed test's folder is
/// kept, and named, for a look at what it wrote.
class TempDirCleaner : public ::testing::EmptyTestEventListener {
public:
    static TempDirCleaner& instance() {
        static TempDirCleaner* cleaner = [] {
            auto* c = new TempDirCleaner; // owned by gtest's listener list from here on
            ::testing::UnitTest::GetInstance()->listeners().Append(c);
            return c;
        }();
        return *cleaner;
    }
    void add(const fs::path& dir) { m_dirs.push_back(dir); }
    void OnTestEnd(const ::testing::TestInfo& info) override {
        for (const fs::path& dir : m_dirs) {
            if (info.result()->Failed()) {
                std::printf("kept the failed test's folder %s\n", dir.string().c_str());
            } else {
                std::error_code ec;
                fs::remove_all(dir, ec);
            }
        }
        m_dirs.clear();
    }

private:
    std::vector<fs::path> m_dirs;
};

/// A fresh empty folder under the system temp dir, unique per test and process; removed when
/// the test passes.
inline fs::path tempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    fs::path dir = fs::temp_directory_path() /
                   ("sextant-frontend-" + std::to_string(::getpid()) + "-" +
                    info->test_suite_name() + "-" + info->name());
    fs::remove_all(dir);
    fs::create_directories(dir);
    TempDirCleaner::instance().add(dir);
    return dir;
}

inline void writeBytes(const fs::path& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string readBytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void writeModel(const onnx::ModelProto& model, const fs::path& path) {
    std::string bytes;
    ASSERT_TRUE(model.SerializeToString(&bytes));
    writeBytes(path, bytes);
}

/// A model with opset `opset`, one f32 input `x` of shape `dims`, and no nodes yet.
inline onnx::ModelProto emptyModel(const std::vector<int64_t>& dims, int64_t opset = 13) {
    onnx::ModelProto m;
    m.set_ir_version(8);
    auto* op = m.add_opset_import();
    op->set_domain("");
    op->set_version(opset);
    auto* g = m.mutable_graph();
    g->set_name("test");
    auto* in = g->add_input();
    in->set_name("x");
    auto* tt = in->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims)
        tt->mutable_shape()->add_dim()->set_dim_value(d);
    return m;
}

inline onnx::NodeProto* addNode(onnx::ModelProto& m, const std::string& op, const std::string& name,
                                std::vector<std::string> inputs, std::vector<std::string> outputs) {
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (auto& i : inputs)
        n->add_input(i);
    for (auto& o : outputs)
        n->add_output(o);
    return n;
}

inline void addOutput(onnx::ModelProto& m, const std::string& name) {
    auto* out = m.mutable_graph()->add_output();
    out->set_name(name);
    out->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
}

#define SEXTANT_REQUIRE_SHARED(what)                                                               \
    do {                                                                                           \
        if (!std::filesystem::exists(::sextant::frontend::test::mnistPath()))                      \
            GTEST_SKIP() << SEXTANT_SHARED_DIR << " not found: skipping " << what;                 \
    } while (0)

} // namespace sextant::frontend::test
