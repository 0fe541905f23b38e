// The broken-model corpus (tests/data/bad/, written by scripts/make-bad-models.py): each file is
// broken in one way and must give an error that names the problem, never a crash or a huge
// allocation. Also: ONNX external data (tests/data/external/) and the fuzzer's corpus replayed.

#include "TestUtil.h"

#include "core/frontend/ExternalData.h"
#include "core/frontend/OnnxImporter.h"
#include "core/frontend/SizeLimits.h"
#include "core/ir/Interpreter.h"

#include <gtest/gtest.h>

#include <vector>

namespace sextant::frontend {
namespace {

using namespace test;

fs::path badDir() { return fs::path(SEXTANT_SOURCE_DIR) / "tests" / "data" / "bad"; }
fs::path externalDir() { return fs::path(SEXTANT_SOURCE_DIR) / "tests" / "data" / "external"; }

struct BadCase {
    const char* file;
    ErrorKind kind;
    std::vector<const char*> expected; ///< substrings the message must contain
};

// What a user must read for each broken file: the problem and the node/tensor/file it concerns.
const BadCase kBadCases[] = {
    {"truncated.onnx", ErrorKind::Parse, {"truncated.onnx", "truncated or not a protobuf"}},
    {"not_protobuf.onnx", ErrorKind::Parse, {"not_protobuf.onnx", "truncated or not a protobuf"}},
    {"missing_initializer.onnx", ErrorKind::Invalid, {"node 'conv1'", "undefined value 'conv1.weight'"}},
    {"undefined_input.onnx", ErrorKind::Invalid, {"node 'add1'", "undefined value 'ghost'"}},
    {"undefined_output.onnx", ErrorKind::Invalid, {"output 'nowhere'", "which no node computes"}},
    {"cycle.onnx", ErrorKind::Invalid, {"cycle", "node 'loop_add'"}},
    {"unknown_op.onnx", ErrorKind::Unsupported, {"unsupported op 'Frobnicate'", "node 'frob1'"}},
    {"unknown_domain.onnx",
     ErrorKind::Unsupported,
     {"unsupported op 'com.example.secret.Relu'", "node 'secret_relu'"}},
    {"wrong_attribute_type.onnx", ErrorKind::Invalid, {"node 'conv1'", "attribute 'strides'", "integers"}},
    {"shape_mismatch_add.onnx", ErrorKind::Invalid, {"node 'add1'", "[2,3]", "[4,5]"}},
    {"shape_mismatch_conv.onnx", ErrorKind::Invalid, {"node 'conv1'", "3 channels", "expects 5"}},
    {"huge_input_dim.onnx", ErrorKind::Unsupported, {"input 'x'", "f32[1,1099511627776]", "not supported"}},
    {"huge_initializer_dim.onnx", ErrorKind::Invalid, {"initializer 'big.weight'", "1099511627776"}},
    {"huge_reshape.onnx", ErrorKind::Invalid, {"node 'reshape1'", "[1099511627776,1099511627776]"}},
    {"ext_missing_file.onnx",
     ErrorKind::Io,
     {"initializer 'fc.weight'", "missing_weights.bin", "No such file"}},
    {"ext_escapes_folder.onnx",
     ErrorKind::Invalid,
     {"initializer 'fc.weight'", "'../external/ext_weights.bin'", "leaves the model's folder"}},
    {"ext_absolute_path.onnx",
     ErrorKind::Invalid,
     {"initializer 'fc.weight'", "'/etc/passwd'", "absolute path"}},
    {"ext_out_of_range.onnx",
     ErrorKind::Invalid,
     {"initializer 'fc.weight'", "offset 8", "length 16", "past the end", "ext_small.bin"}},
    {"ext_wrong_length.onnx",
     ErrorKind::Invalid,
     {"initializer 'fc.weight'", "8 bytes", "expected 16", "f32[2,2]"}},
    {"ext_no_location.onnx", ErrorKind::Invalid, {"initializer 'fc.weight'", "no 'location'"}},
    {"nan_epsilon.onnx", ErrorKind::Invalid, {"node 'bn1'", "attribute 'epsilon' is NaN"}},
    {"duplicate_output.onnx", ErrorKind::Invalid, {"output 'y' twice"}},
    {"output_dim_contradicts.onnx", ErrorKind::Invalid,
     {"output 'y'", "declared f32[1,2147483648]", "computes f32[1,10]"}},
};

class BadModels : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadModels, GiveAnErrorNamingTheProblem) {
    const BadCase& c = GetParam();
    const fs::path path = badDir() / c.file;
    ASSERT_TRUE(fs::exists(path)) << path << " is missing: run scripts/make-bad-models.py";
    auto graph = importOnnx(path.string());
    ASSERT_FALSE(graph.ok()) << c.file << " imported but must not";
    const std::string& message = graph.error().message;
    for (const char* s : c.expected)
        EXPECT_NE(message.find(s), std::string::npos)
            << c.file << ": the error does not mention \"" << s << "\": " << message;
    EXPECT_EQ(graph.error().kind, c.kind) << c.file << ": " << message;
    // Messages are lower-case sentences without a trailing period.
    EXPECT_NE(message.back(), '.') << message;
}

INSTANTIATE_TEST_SUITE_P(Corpus, BadModels, ::testing::ValuesIn(kBadCases),
                         [](const ::testing::TestParamInfo<BadCase>& info) {
                             std::string name = fs::path(info.param.file).stem().string();
                             for (char& ch : name)
                                 if (!std::isalnum(static_cast<unsigned char>(ch)))
                                     ch = '_';
                             return name;
                         });

TEST(BadModelsCorpus, EveryFileHasACase) {
    // A file added to tests/data/bad without a row above would go untested.
    std::set<std::string> listed;
    for (const BadCase& c : kBadCases)
        listed.insert(c.file);
    int files = 0;
    for (const auto& entry : fs::directory_iterator(badDir())) {
        if (entry.path().extension() != ".onnx")
            continue;
        ++files;
        EXPECT_TRUE(listed.count(entry.path().filename().string()))
            << entry.path() << " has no expected error in BadModelsTest.cpp";
    }
    EXPECT_EQ(files, static_cast<int>(std::size(kBadCases)));
}

TEST(FuzzCorpus, EveryInputImportsAndRunsOrGivesAnError) {
    // Inputs the fuzzers once crashed on (tests/fuzz-corpus/): fixed, and replayed here on every
    // build, not only under the sanitizers (there, fuzz.importer replays them).
    const fs::path dir = fs::path(SEXTANT_SOURCE_DIR) / "tests" / "fuzz-corpus";
    const fs::path work = tempDir();
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir))
        if (entry.is_regular_file() && entry.path().filename() != "README.md")
            files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
        // Copied alone into a fresh folder, as the fuzzer ran it (external data resolves there).
        const fs::path model = work / "model.onnx";
        fs::copy_file(f, model, fs::copy_options::overwrite_existing);
        auto graph = importOnnx(model.string());
        if (!graph.ok()) {
            EXPECT_FALSE(graph.error().message.empty()) << f;
            continue;
        }
        // What imports is run as the reference fuzzer ran it (small static models only).
        std::vector<ir::Tensor> inputs;
        bool runnable = true;
        for (const ir::Value* v : (*graph)->values())
            runnable = runnable && knownByteSize(v->type()) >= 0 &&
                       knownByteSize(v->type()) <= (int64_t{1} << 20);
        for (const ir::Value* in : (*graph)->inputs()) {
            if (!runnable || !in->type().isStatic()) {
                runnable = false;
                break;
            }
            ir::Tensor t(in->type().dtype, in->type().dims());
            for (int64_t i = 0; i < t.numel(); ++i)
                t.set(i, ir::isFloat(t.dtype()) ? (i % 7) * 0.375 - 1.0 : static_cast<double>(i % 3));
            inputs.push_back(std::move(t));
        }
        if (!runnable)
            continue;
        ir::KernelContext ctx;
        auto out = ir::interpret(**graph, inputs, ctx);
        if (!out.ok()) {
            EXPECT_FALSE(out.error().message.empty()) << f;
        }
    }
}

std::vector<float> floatsOf(const ir::Tensor& t) {
    std::vector<float> v;
    for (int64_t i = 0; i < t.numel(); ++i)
        v.push_back(static_cast<float>(t.at(i)));
    return v;
}

TEST(ExternalData, WeightsInASideFileAreLoaded) {
    // Saved by onnx.save_model(..., save_as_external_data=True): fc.weight (3x4) and fc.bias (4)
    // live in ext_weights.bin at offsets 0 and 48.
    auto graph = importOnnx((externalDir() / "ext_weights.onnx").string());
    ASSERT_TRUE(graph.ok()) << graph.error().message;
    const ir::Value* w = (*graph)->findValue("fc.weight");
    const ir::Value* b = (*graph)->findValue("fc.bias");
    ASSERT_TRUE(w && w->constant());
    ASSERT_TRUE(b && b->constant());
    EXPECT_EQ(w->type().str(), "f32[3,4]");
    std::vector<float> expectW, expectB;
    for (int i = 0; i < 12; ++i)
        expectW.push_back(0.25f * i);
    for (int i = 0; i < 4; ++i)
        expectB.push_back(100.0f + 0.25f * i);
    EXPECT_EQ(floatsOf(*w->constant()), expectW);
    EXPECT_EQ(floatsOf(*b->constant()), expectB);

    // And the model computes with them: y = x @ W + B.
    ir::Tensor x = ir::Tensor::fromVector<float>({1, 3}, {1.0f, 2.0f, 3.0f});
    ir::KernelContext ctx;
    auto y = ir::interpret(**graph, std::span<const ir::Tensor>(&x, 1), ctx);
    ASSERT_TRUE(y.ok()) << y.error().message;
    ASSERT_EQ(y->size(), 1u);
    for (int j = 0; j < 4; ++j) {
        double expected = 100.0 + 0.25 * j;
        for (int i = 0; i < 3; ++i)
            expected += (i + 1) * 0.25 * (i * 4 + j);
        EXPECT_DOUBLE_EQ((*y)[0].at(j), expected) << "y[" << j << "]";
    }
}

/// A copy of the external-data model in a fresh folder, with the side file under `binName`.
fs::path copyExternalModel(const fs::path& dir) {
    fs::copy_file(externalDir() / "ext_weights.onnx", dir / "ext_weights.onnx");
    return dir / "ext_weights.onnx";
}

TEST(ExternalData, MissingSideFileNamesTheTensorAndTheFile) {
    const fs::path dir = tempDir();
    const fs::path model = copyExternalModel(dir);
    auto graph = importOnnx(model.string());
    ASSERT_FALSE(graph.ok());
    EXPECT_NE(graph.error().message.find("initializer 'fc.weight'"), std::string::npos)
        << graph.error().message;
    EXPECT_NE(graph.error().message.find((dir / "ext_weights.bin").string()), std::string::npos)
        << graph.error().message;
}

TEST(ExternalData, SymlinkOutOfTheModelFolderIsRejected) {
    // The location is a plain relative name, but the file is a symlink pointing elsewhere.
    const fs::path dir = tempDir();
    const fs::path model = copyExternalModel(dir);
    fs::create_symlink(externalDir() / "ext_weights.bin", dir / "ext_weights.bin");
    auto graph = importOnnx(model.string());
    ASSERT_FALSE(graph.ok());
    EXPECT_NE(graph.error().message.find("outside the model's folder"), std::string::npos)
        << graph.error().message;
}

TEST(ExternalData, SideFileInTheSameFolderThroughASymlinkedFolderWorks) {
    // Only where the file really is matters: a model reached through a symlinked folder is fine.
    const fs::path dir = tempDir();
    fs::create_directories(dir / "real");
    copyExternalModel(dir / "real");
    fs::copy_file(externalDir() / "ext_weights.bin", dir / "real" / "ext_weights.bin");
    fs::create_directory_symlink(dir / "real", dir / "link");
    auto graph = importOnnx((dir / "link" / "ext_weights.onnx").string());
    EXPECT_TRUE(graph.ok()) << graph.error().message;
}

TEST(ExternalData, DirectoryIsNotADataFile) {
    onnx::TensorProto t;
    t.set_name("w");
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_dims(1);
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto* e = t.add_external_data();
    e->set_key("location");
    e->set_value("sub");
    const fs::path dir = tempDir();
    fs::create_directories(dir / "sub");
    Status s = loadExternalTensor(t, dir.string(), "initializer 'w'");
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("not a regular file"), std::string::npos) << s.error().message;
}

TEST(ExternalData, OffsetAndLengthMustBeDecimalNumbers) {
    const fs::path dir = tempDir();
    writeBytes(dir / "w.bin", std::string(8, '\0'));
    for (const char* bad : {"-4", "0x4", "4e0", "", "99999999999999999999"}) {
        onnx::TensorProto t;
        t.set_data_type(onnx::TensorProto::FLOAT);
        t.add_dims(2);
        t.set_data_location(onnx::TensorProto::EXTERNAL);
        auto* loc = t.add_external_data();
        loc->set_key("location");
        loc->set_value("w.bin");
        auto* off = t.add_external_data();
        off->set_key("offset");
        off->set_value(bad);
        Status s = loadExternalTensor(t, dir.string(), "initializer 'w'");
        ASSERT_FALSE(s.ok()) << "offset '" << bad << "' was accepted";
        EXPECT_NE(s.error().message.find("is not a number"), std::string::npos) << s.error().message;
    }
}

TEST(ExternalData, NoLengthReadsToTheEndOfTheFile) {
    const fs::path dir = tempDir();
    std::string bytes(12, '\0');
    const float values[2] = {1.5f, -2.0f};
    std::memcpy(bytes.data() + 4, values, sizeof(values));
    writeBytes(dir / "w.bin", bytes);
    onnx::TensorProto t;
    t.set_data_type(onnx::TensorProto::FLOAT);
    t.add_dims(2);
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    auto* loc = t.add_external_data();
    loc->set_key("location");
    loc->set_value("w.bin");
    auto* off = t.add_external_data();
    off->set_key("offset");
    off->set_value("4");
    Status s = loadExternalTensor(t, dir.string(), "initializer 'w'");
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_EQ(t.data_location(), onnx::TensorProto::DEFAULT);
    EXPECT_EQ(t.external_data_size(), 0);
    ASSERT_EQ(t.raw_data().size(), 8u);
    float got[2];
    std::memcpy(got, t.raw_data().data(), sizeof(got));
    EXPECT_EQ(got[0], 1.5f);
    EXPECT_EQ(got[1], -2.0f);
}

TEST(SizeLimits, KnownByteSizeNeverOverflows) {
    EXPECT_EQ(knownByteSize(ir::TensorType::of(ir::DType::F32, {2, 3})), 24);
    EXPECT_EQ(knownByteSize(ir::TensorType::of(ir::DType::F32, {int64_t{1} << 40, int64_t{1} << 40})),
              -1);
    // A zero extent makes the tensor empty however large the others are.
    EXPECT_EQ(knownByteSize(ir::TensorType::of(ir::DType::F32, {int64_t{1} << 62, 4, 0})), 0);
    ir::TensorType symbolic = ir::TensorType::of(ir::DType::F64, {1, 8});
    symbolic.shape[0] = ir::Dim::symbolic("N");
    EXPECT_EQ(knownByteSize(symbolic), 64);
}

TEST(SizeLimits, HugeValueInsideASubgraphIsFound) {
    // An If branch whose input is 2^40 floats: the error names the outer node and the branch.
    auto branch = std::make_shared<ir::Graph>("then");
    ASSERT_TRUE(branch->addInput("big", ir::TensorType::of(ir::DType::F32, {int64_t{1} << 40})).ok());
    ir::Graph g("main");
    auto cond = g.addInput("c", ir::TensorType::of(ir::DType::Bool, {}));
    ASSERT_TRUE(cond.ok());
    ir::AttributeMap attrs;
    attrs["then_branch"] = std::shared_ptr<const ir::Graph>(branch);
    auto node = g.addNode(ir::OpKind::If, "if1", {*cond}, {"y"}, std::move(attrs));
    ASSERT_TRUE(node.ok()) << node.error().message;
    Status s = checkTensorSizes(g);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().subject, "if1");
    EXPECT_NE(s.error().message.find("node 'if1' (If), subgraph 'then_branch': input 'big'"),
              std::string::npos)
        << s.error().message;
}

} // namespace
} // namespace sextant::frontend
