// ModelInputs: a folder of test data is read only when its files are the model's inputs, by name
// (when a file names its tensor) and by dtype; what is wrong names the file and the input.
#include "core/runtime/ModelInputs.h"
#include "core/frontend/TensorProtoIO.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <unistd.h>

using namespace sextant;

namespace {

namespace fs = std::filesystem;

std::unique_ptr<ir::Graph> reluGraph() {
    auto g = std::make_unique<ir::Graph>("relu");
    ir::Value* x = g->addInput("image", ir::TensorType::of(ir::DType::F32, {1, 4})).value();
    ir::Node* n = g->addNode(ir::OpKind::Relu, "relu1", {x}, {"y"}).value();
    g->setOutputs({n->output(0)});
    return g;
}

struct DataDir {
    fs::path path = fs::temp_directory_path() / ("sextant-model-inputs-" + std::to_string(::getpid()));
    DataDir() { fs::create_directories(path); }
    ~DataDir() { fs::remove_all(path); }
    void write(const ir::Tensor& t, const std::string& name) const {
        ASSERT_TRUE(frontend::saveTensorProto(t, name, (path / "input_0.pb").string()).ok());
    }
};

std::string chooseError(const ir::Graph& g, const DataDir& dir) {
    auto r = runtime::chooseInputs(g, dir.path.string(), false, "");
    return r.ok() ? std::string("(accepted)") : r.error().message;
}

} // namespace

TEST(ModelInputs, ReadsAFolderWhoseFilesAreTheModelsInputs) {
    auto graph = reluGraph();
    const ir::Graph& g = *graph;
    DataDir dir;
    dir.write(ir::Tensor(ir::DType::F32, {1, 4}), "image");
    auto r = runtime::chooseInputs(g, dir.path.string(), false, "");
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->origin, runtime::InputsOrigin::Directory);
    ASSERT_EQ(r->tensors.size(), 1u);
    // A file that gives its tensor no name is taken by position.
    dir.write(ir::Tensor(ir::DType::F32, {1, 4}), "");
    EXPECT_TRUE(runtime::chooseInputs(g, dir.path.string(), false, "").ok());
}

TEST(ModelInputs, AFileOfAnotherDtypeIsAnErrorNamingFileAndInput) {
    auto graph = reluGraph();
    const ir::Graph& g = *graph;
    DataDir dir;
    for (ir::DType wrong : {ir::DType::F64, ir::DType::F16}) {
        dir.write(ir::Tensor(wrong, {1, 4}), "image");
        std::string msg = chooseError(g, dir);
        EXPECT_NE(msg.find("input_0.pb' is " + std::string(ir::dtypeName(wrong))), std::string::npos) << msg;
        EXPECT_NE(msg.find("model's input 'image' is f32"), std::string::npos) << msg;
    }
}

TEST(ModelInputs, AFileNamingAnotherTensorIsAnError) {
    auto graph = reluGraph();
    const ir::Graph& g = *graph;
    DataDir dir;
    dir.write(ir::Tensor(ir::DType::F32, {1, 4}), "notaninput");
    std::string msg = chooseError(g, dir);
    EXPECT_NE(msg.find("holds tensor 'notaninput', but the model's input 0 is 'image'"), std::string::npos) << msg;
}
