// The blocked layout and the precision marks, from compile to the simulated NPU: TransData lowers
// to a DMA Task costed on the padded NC1HWC0 size, NC1HWC0 buffers are sized with the channel
// padding, a target with "layout": "NCHW" has neither, the simulator runs TransData as the
// identity on the logical tensor, and it computes each node in the precision the `precision`
// pass marked (f32 data for a cube op kept in f32, f16 operands and results for an f16 op).
#include "core/backend/Grouping.h"
#include "core/backend/Lower.h"
#include "core/ir/Interpreter.h"
#include "core/runtime/Compiler.h"
#include "core/sim/Simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

using namespace sextant;
using backend::Buffer;
using backend::Program;
using backend::Task;
using backend::UnitKind;
using ir::DType;
using ir::OpKind;
using ir::TensorType;

namespace {

ir::Tensor wave(std::vector<int64_t> shape, double scale, double shift) {
    ir::Tensor t(DType::F32, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i)
        t.set(i, std::sin(static_cast<double>(i) * scale) + shift);
    return t;
}

/// x[1,3,8,8] -> conv(24 channels, bias) -> relu -> add(relu, conv2(x)) -> transpose NHWC.
/// 24 channels = one and a half C0 blocks: the blocked buffers carry 8 padded channels.
std::unique_ptr<ir::Graph> convGraph() {
    auto g = std::make_unique<ir::Graph>("blocked");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 3, 8, 8}));
    ir::AttributeMap conv{{"pads", std::vector<int64_t>{1, 1, 1, 1}},
                          {"kernel_shape", std::vector<int64_t>{3, 3}}};
    ir::Value* w = *g->addConstant("w", wave({24, 3, 3, 3}, 0.37, 0.0));
    ir::Value* b = *g->addConstant("b", wave({24}, 1.1, 0.1));
    ir::Value* w2 = *g->addConstant("w2", wave({24, 3, 3, 3}, 0.53, -0.05));
    ir::Node* c = *g->addNode(OpKind::Conv, "conv", {x, w, b}, {"c"}, conv);
    ir::Node* r = *g->addNode(OpKind::Relu, "relu", {c->output()}, {"r"});
    ir::Node* c2 = *g->addNode(OpKind::Conv, "conv2", {x, w2}, {"c2"}, conv);
    ir::Node* a = *g->addNode(OpKind::Add, "add", {r->output(), c2->output()}, {"sum"});
    ir::Node* t = *g->addNode(OpKind::Transpose, "to_nhwc", {a->output()}, {"y"},
                              {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
    g->setOutputs({t->output()});
    EXPECT_TRUE(g->inferTypes().ok());
    return g;
}

runtime::CompileResult compile(const ir::Graph& g, const std::string& layout,
                               std::vector<std::string> disabled = {}) {
    runtime::CompileOptions opt;
    opt.target.layout = *ir::parseNpuLayout(layout);
    opt.pipeline.disabled = {disabled.begin(), disabled.end()};
    auto r = runtime::compileGraph(g, opt);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? std::move(*r) : runtime::CompileResult{};
}

/// `p` simulated on `x`; a failed run fails the test and gives no outputs.
sim::SimResult simulated(const Program& p, const ir::Tensor& x) {
    auto r = sim::simulate(p, std::vector<ir::Tensor>{x});
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? std::move(*r) : sim::SimResult{};
}

std::vector<const Task*> tasksOfKernel(const Program& p, const std::string& kernel) {
    std::vector<const Task*> out;
    for (const Task& t : p.tasks)
        if (t.kernel == kernel)
            out.push_back(&t);
    return out;
}

const Buffer* bufferOf(const Program& p, const std::string& value) {
    for (const Buffer& b : p.buffers)
        if (b.value == value)
            return &b;
    return nullptr;
}

double maxAbsDiff(const ir::Tensor& a, const ir::Tensor& b) {
    double m = 0;
    for (int64_t i = 0; i < a.numel(); ++i)
        m = std::max(m, std::abs(a.at(i) - b.at(i)));
    return m;
}

} // namespace

TEST(LayoutLowering, TransDataIsADmaTaskAndBlockedBuffersArePadded) {
    auto g = convGraph();
    // Without keep-on-chip, so that every feature map is in DRAM, sized as stored; without
    // read-small-channel-input, so that the 3-channel x converts in.
    runtime::CompileResult r = compile(*g, "NC1HWC0", {"keep-on-chip", "read-small-channel-input"});
    const Program& p = r.program;
    auto trans = tasksOfKernel(p, "TransData");
    ASSERT_EQ(trans.size(), 2u) << "x enters the region once, the sum leaves it once";
    for (const Task* t : trans) {
        EXPECT_EQ(t->unit, UnitKind::Dma) << t->name;
        EXPECT_EQ(t->flops, 0u);
    }
    // The entry reads x (3 channels of f32, 768 bytes) and writes one padded C0 block (16
    // channels) in f16: both convolutions read it in f16.
    const ir::Node* entry = p.graph->findNode(trans[0]->nodes[0]);
    ASSERT_NE(entry, nullptr);
    EXPECT_EQ(entry->attrString("dst_format", ""), "NC1HWC0");
    EXPECT_GE(trans[0]->dmaBytes, 3u * 64 * 4 + 16u * 64 * 2);
    const Buffer* xb = bufferOf(p, "x");
    ASSERT_NE(xb, nullptr);
    EXPECT_EQ(xb->type.dtype, DType::F32) << "a graph input stays as the host gives it";

    // conv+relu's output (fused): 24 channels stored as 2 blocks of 16, i.e. 32 channels of 8x8,
    // in f16, since its one reader (the Add, an f16 op) rounds it to f16 anyway.
    const Buffer* c = bufferOf(p, "r");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->type.layout, ir::LayoutKind::NC1HWC0);
    EXPECT_EQ(c->type.dtype, DType::F16);
    EXPECT_EQ(c->size, 32u * 64 * 2);
    EXPECT_EQ(backend::storedBytes(c->type, 16), 32u * 64 * 2);
    EXPECT_EQ(backend::storedBytes(c->type, 8), 24u * 64 * 2) << "24 is a multiple of 8";
    // The user's output stays plain, logical-sized and f32.
    const Buffer* y = bufferOf(p, "y");
    ASSERT_NE(y, nullptr);
    EXPECT_EQ(y->size, 24u * 64 * 4);
    EXPECT_EQ(y->type.dtype, DType::F32);

    // The same model for a plain target: no conversions, logical buffers, less memory.
    runtime::CompileResult plain = compile(*g, "NCHW", {"keep-on-chip"});
    EXPECT_TRUE(tasksOfKernel(plain.program, "TransData").empty());
    const Buffer* cp = bufferOf(plain.program, "r");
    ASSERT_NE(cp, nullptr);
    EXPECT_EQ(cp->size, 24u * 64 * 2);
    EXPECT_EQ(cp->type.layout, ir::LayoutKind::Any);
    EXPECT_LT(plain.program.memory.dramLowerBound, p.memory.dramLowerBound);
}

TEST(LayoutLowering, SimulatorRunsTransDataAsTheIdentity) {
    auto g = convGraph();
    runtime::CompileResult blocked = compile(*g, "NC1HWC0");
    runtime::CompileResult plain = compile(*g, "NCHW");
    ir::Tensor x = wave({1, 3, 8, 8}, 0.21, 0.0);
    const sim::SimResult a = simulated(blocked.program, x), b = simulated(plain.program, x);
    // Same kernels in the same precision, conversions changing no number: identical outputs.
    ASSERT_EQ(a.outputs.size(), 1u);
    ASSERT_EQ(b.outputs.size(), 1u);
    EXPECT_TRUE(a.outputs[0].identical(b.outputs[0]));
    // And both agree with the float64 reference within f16 rounding.
    ir::KernelContext ctx;
    auto ref = ir::interpret(*g, std::vector<ir::Tensor>{x}, ctx);
    ASSERT_TRUE(ref.ok());
    EXPECT_LT(maxAbsDiff(a.outputs[0], (*ref)[0]), 2e-2);
    // The conversions take time on the DMA engine.
    EXPECT_GT(a.totalCycles, 0u);
}

// read-small-channel-input: both convolutions read the 3-channel f32 input as it is, so there
// is no entry TransData, the convolutions move fewer bytes than one reading the padded f16 copy,
// and the outputs are bit for bit those of the program that converts (the cube rounds its data
// to f16 either way).
TEST(LayoutLowering, SmallChannelInputIsReadPlainWithTheSameNumbers) {
    auto g = convGraph();
    runtime::CompileResult on = compile(*g, "NC1HWC0", {"keep-on-chip"});
    runtime::CompileResult off = compile(*g, "NC1HWC0", {"keep-on-chip", "read-small-channel-input"});
    auto entries = [](const Program& p) {
        int n = 0;
        for (const Task* t : tasksOfKernel(p, "TransData"))
            n += p.graph->findNode(t->nodes[0])->attrString("dst_format", "") == "NC1HWC0";
        return n;
    };
    EXPECT_EQ(entries(on.program), 0);
    EXPECT_EQ(entries(off.program), 1);
    uint64_t bytesOn = 0, bytesOff = 0;
    for (const Task& t : on.program.tasks)
        bytesOn += t.dmaBytes;
    for (const Task& t : off.program.tasks)
        bytesOff += t.dmaBytes;
    EXPECT_LT(bytesOn, bytesOff);
    const ir::Tensor x = wave({1, 3, 8, 8}, 0.21, 0.0);
    const sim::SimResult a = simulated(on.program, x), b = simulated(off.program, x);
    ASSERT_EQ(a.outputs.size(), 1u);
    ASSERT_EQ(b.outputs.size(), 1u);
    EXPECT_TRUE(a.outputs[0].identical(b.outputs[0]));
    EXPECT_LT(a.totalCycles, b.totalCycles);
}

namespace {

/// conv -> sigmoid, with the precisions given (empty: none).
std::shared_ptr<ir::Graph> markedGraph(const std::string& convPrecision,
                                       const std::string& sigPrecision) {
    auto g = std::make_shared<ir::Graph>("marked");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 4, 6, 6}));
    ir::Value* w = *g->addConstant("w", wave({8, 4, 3, 3}, 0.31, 0.01));
    ir::AttributeMap conv{{"pads", std::vector<int64_t>{1, 1, 1, 1}}};
    ir::Node* c = *g->addNode(OpKind::Conv, "conv", {x, w}, {"c"}, conv);
    if (!convPrecision.empty())
        c->setPrecision(*ir::parsePrecision(convPrecision));
    ir::Node* s = *g->addNode(OpKind::Sigmoid, "sig", {c->output()}, {"s"});
    if (!sigPrecision.empty())
        s->setPrecision(*ir::parsePrecision(sigPrecision));
    g->setOutputs({c->output(), s->output()});
    EXPECT_TRUE(g->inferTypes().ok());
    return g;
}

std::vector<ir::Tensor> simulateMarked(const std::string& convPrecision,
                                       const std::string& sigPrecision, const ir::Tensor& x) {
    auto prog = backend::lower(markedGraph(convPrecision, sigPrecision), backend::defaultTarget());
    EXPECT_TRUE(prog.ok()) << (prog.ok() ? "" : prog.error().message);
    if (!prog.ok())
        return {};
    auto r = sim::simulate(*prog, std::vector<ir::Tensor>{x});
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    return r.ok() ? r->outputs : std::vector<ir::Tensor>{};
}

bool allHalf(const ir::Tensor& t) {
    return t.castTo(DType::F16).castTo(DType::F32).identical(t);
}

} // namespace

TEST(PrecisionSimulation, NodesRunInThePrecisionTheyAreMarkedWith) {
    ir::Tensor x = wave({1, 4, 6, 6}, 0.173, 0.0);
    ir::KernelContext ctx;
    ctx.compute = DType::F32;
    auto f32 = ir::interpret(*markedGraph("", ""), std::vector<ir::Tensor>{x}, ctx);
    ASSERT_TRUE(f32.ok());

    // A cube op kept in f32 reads f32 data and weights: it matches the f32 interpreter.
    auto keep = simulateMarked("f32", "f32", x);
    ASSERT_EQ(keep.size(), 2u);
    EXPECT_LT(maxAbsDiff(keep[0], (*f32)[0]), 1e-5);
    EXPECT_LT(maxAbsDiff(keep[1], (*f32)[1]), 1e-6);
    EXPECT_FALSE(allHalf(keep[1])) << "an f32 sigmoid's results are not all f16 values";

    // f16 data and weights with f32 accumulation: visibly different from f32, within f16 error.
    auto cube = simulateMarked("f16-acc-f32", "f32", x);
    ASSERT_EQ(cube.size(), 2u);
    const double d = maxAbsDiff(cube[0], (*f32)[0]);
    EXPECT_GT(d, 1e-5);
    EXPECT_LT(d, 2e-2);
    // Unmarked cube ops keep the unit's default, f16-acc-f32.
    auto unmarked = simulateMarked("", "", x);
    ASSERT_EQ(unmarked.size(), 2u);
    EXPECT_TRUE(unmarked[0].identical(cube[0]));

    // An f16 vector op rounds its operands and results to f16.
    auto half = simulateMarked("f32", "f16", x);
    ASSERT_EQ(half.size(), 2u);
    EXPECT_TRUE(allHalf(half[1]));
    EXPECT_TRUE(half[0].identical(keep[0]));
    EXPECT_LT(maxAbsDiff(half[1], (*f32)[1]), 2e-3);
}

// The precision pass's marks at O2 reach the simulator: the whole pipeline's program still matches
// the reference within f16 rounding, and the marked f16 sigmoid produces f16 values.
TEST(PrecisionSimulation, CompiledProgramHonoursThePrecisionPass) {
    auto g = markedGraph("", "");
    runtime::CompileResult r = compile(*g, "NC1HWC0");
    const ir::Node* sig = nullptr;
    for (const ir::Node* n : r.program.graph->nodes())
        if (n->kind() == OpKind::Sigmoid || n->kind() == OpKind::FusedConv)
            sig = n->kind() == OpKind::Sigmoid ? n : sig;
    ASSERT_NE(sig, nullptr) << "conv has two users: the sigmoid stays a node";
    EXPECT_EQ(sig->precision(), ir::Precision::F16);
    ir::Tensor x = wave({1, 4, 6, 6}, 0.173, 0.0);
    auto out = sim::simulate(r.program, std::vector<ir::Tensor>{x});
    ASSERT_TRUE(out.ok()) << out.error().message;
    ASSERT_EQ(out->outputs.size(), 2u);
    EXPECT_TRUE(allHalf(out->outputs[1]));
    ir::KernelContext ctx;
    auto ref = ir::interpret(*g, std::vector<ir::Tensor>{x}, ctx);
    ASSERT_TRUE(ref.ok());
    EXPECT_LT(maxAbsDiff(out->outputs[0], (*ref)[0]), 2e-2);
    EXPECT_LT(maxAbsDiff(out->outputs[1], (*ref)[1]), 2e-2);
}

namespace {

/// x -> conv -> relu -> flatten(view) -> gemm, and relu -> reshape(view) -> sigmoid -> output.
std::shared_ptr<ir::Graph> viewGraph(bool markViews) {
    auto g = std::make_shared<ir::Graph>("views");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 4, 4, 4}));
    ir::Value* w = *g->addConstant("w", wave({8, 4, 3, 3}, 0.29, 0.0));
    ir::Node* c = *g->addNode(OpKind::Conv, "conv", {x, w}, {"c"},
                              {{"pads", std::vector<int64_t>{1, 1, 1, 1}}});
    ir::Node* r = *g->addNode(OpKind::Relu, "relu", {c->output()}, {"r"});
    ir::Node* f = *g->addNode(OpKind::Flatten, "flat", {r->output()}, {"f"}, {{"axis", int64_t{1}}});
    f->setView(markViews);
    ir::Value* wf = *g->addConstant("wf", wave({128, 5}, 0.11, 0.0));
    ir::Node* fc = *g->addNode(OpKind::Gemm, "fc", {f->output(), wf}, {"logits"});
    ir::Value* shape = *g->addConstant("shape", ir::Tensor::fromVector<int64_t>({2}, {8, 16}));
    ir::Node* re = *g->addNode(OpKind::Reshape, "reshape", {r->output(), shape}, {"re"});
    re->setView(markViews);
    ir::Node* s = *g->addNode(OpKind::Sigmoid, "sig", {re->output()}, {"s"});
    g->setOutputs({fc->output(), s->output()});
    EXPECT_TRUE(g->inferTypes().ok());
    return g;
}

} // namespace

TEST(ViewLowering, ViewsHaveNoTaskAndAliasTheirInputBuffer) {
    auto lowered = backend::lower(viewGraph(true), backend::defaultTarget());
    ASSERT_TRUE(lowered.ok()) << lowered.error().message;
    const Program& p = *lowered;
    EXPECT_EQ(p.tasks.size(), 4u) << "conv, relu, fc, sig; the two views have none";
    for (const Task& t : p.tasks)
        for (const std::string& n : t.nodes)
            EXPECT_TRUE(n != "flat" && n != "reshape") << n;
    EXPECT_EQ(bufferOf(p, "f"), nullptr);
    EXPECT_EQ(bufferOf(p, "re"), nullptr);
    // fc and sig read relu's buffer directly; it stays live until the later of them.
    const Buffer* r = bufferOf(p, "r");
    ASSERT_NE(r, nullptr);
    int readers = 0, lastReader = -1;
    for (const Task& t : p.tasks)
        if (std::find(t.inputs.begin(), t.inputs.end(), r->id) != t.inputs.end()) {
            ++readers;
            lastReader = std::max(lastReader, t.id);
            EXPECT_TRUE(t.kernel == "Gemm" || t.kernel == "Sigmoid") << t.kernel;
        }
    EXPECT_EQ(readers, 2);
    EXPECT_EQ(r->lastTask, lastReader);

    // The same graph without the marks: Tasks and buffers for both reshapes, same numbers.
    auto plain = backend::lower(viewGraph(false), backend::defaultTarget());
    ASSERT_TRUE(plain.ok()) << plain.error().message;
    EXPECT_EQ(plain->tasks.size(), 6u);
    // In DRAM (keep-on-chip off, which could keep the copies' outputs on chip), the views save
    // the copies' buffers.
    backend::LowerOptions dram;
    dram.sram.keepOnChip = false;
    auto viewsInDram = backend::lower(viewGraph(true), backend::defaultTarget(), dram);
    auto copiesInDram = backend::lower(viewGraph(false), backend::defaultTarget(), dram);
    ASSERT_TRUE(viewsInDram.ok() && copiesInDram.ok());
    EXPECT_LT(viewsInDram->memory.dramLowerBound, copiesInDram->memory.dramLowerBound);
    ir::Tensor x = wave({1, 4, 4, 4}, 0.37, 0.1);
    for (bool strict : {false, true}) {
        sim::SimOptions opt;
        opt.strict = strict;
        opt.checkRaces = true;
        auto a = sim::simulate(p, std::vector<ir::Tensor>{x}, opt);
        auto b = sim::simulate(*plain, std::vector<ir::Tensor>{x}, opt);
        ASSERT_TRUE(a.ok()) << a.error().message;
        ASSERT_TRUE(b.ok()) << b.error().message;
        ASSERT_EQ(a->outputs.size(), 2u);
        EXPECT_TRUE(a->outputs[0].identical(b->outputs[0]));
        EXPECT_TRUE(a->outputs[1].identical(b->outputs[1]));
        EXPECT_LT(a->totalCycles, b->totalCycles) << "two Tasks fewer";
    }
}

// A target whose units compute in f32 ("cube_inputs": "f32", "vector_precision": "f32"): the
// precision pass marks every op f32 and the simulated NPU matches the f32 interpreter closely.
TEST(PrecisionSimulation, TargetPolicyF32MakesTheNpuMatchF32) {
    auto g = markedGraph("", "");
    runtime::CompileOptions opt;
    opt.target.cubeInputs = ir::Precision::F32;
    opt.target.vectorPrecision = ir::Precision::F32;
    auto r = runtime::compileGraph(*g, opt);
    ASSERT_TRUE(r.ok()) << r.error().message;
    for (const ir::Node* n : r->program.graph->nodes())
        if (n->info().cost == ir::CostClass::Cube || n->info().cost == ir::CostClass::Vector) {
            EXPECT_EQ(n->precision(), ir::Precision::F32) << n->name();
        }
    ir::Tensor x = wave({1, 4, 6, 6}, 0.173, 0.0);
    auto out = sim::simulate(r->program, std::vector<ir::Tensor>{x});
    ASSERT_TRUE(out.ok()) << out.error().message;
    ir::KernelContext ctx;
    ctx.compute = DType::F32;
    auto ref = ir::interpret(*g, std::vector<ir::Tensor>{x}, ctx);
    ASSERT_TRUE(ref.ok());
    ASSERT_EQ(out->outputs.size(), 2u);
    EXPECT_LT(maxAbsDiff(out->outputs[0], (*ref)[0]), 1e-5);
    EXPECT_LT(maxAbsDiff(out->outputs[1], (*ref)[1]), 1e-5);
    // The default f16 policy is visibly less exact on the same model.
    runtime::CompileResult half = compile(*g, "NC1HWC0");
    auto outHalf = sim::simulate(half.program, std::vector<ir::Tensor>{x});
    ASSERT_TRUE(outHalf.ok());
    EXPECT_GT(maxAbsDiff(outHalf->outputs[0], (*ref)[0]), 1e-5);
}

namespace {

/// BlazeFace's residual block: x[1,32,16,16] -> depthwise 3x3 -> 1x1 conv (bias) -> + x -> Relu.
std::unique_ptr<ir::Graph> residualBlock() {
    auto g = std::make_unique<ir::Graph>("residual");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 32, 16, 16}));
    ir::Value* dw = *g->addConstant("dw", wave({32, 1, 3, 3}, 0.41, 0.0));
    ir::Value* pw = *g->addConstant("pw", wave({32, 32, 1, 1}, 0.29, -0.02));
    ir::Value* pb = *g->addConstant("pb", wave({32}, 0.7, 0.05));
    ir::Node* d = *g->addNode(OpKind::Conv, "dw", {x, dw}, {"d"},
                              {{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"group", int64_t{32}}});
    ir::Node* p = *g->addNode(OpKind::Conv, "pw", {d->output(), pw, pb}, {"p"});
    ir::Node* a = *g->addNode(OpKind::Add, "add", {p->output(), x}, {"s"});
    ir::Node* r = *g->addNode(OpKind::Relu, "relu", {a->output()}, {"y"});
    g->setOutputs({r->output()});
    EXPECT_TRUE(g->inferTypes().ok());
    return g;
}

} // namespace

TEST(ResidualLowering, TheAddAndReluRunInTheConvolutionsEpilogueOnTheNpu) {
    auto g = residualBlock();
    runtime::CompileResult fused = compile(*g, "NC1HWC0");
    runtime::CompileOptions offOpt;
    offOpt.pipeline.disabled = {"fuse-conv-residual"};
    auto off = runtime::compileGraph(*g, offOpt);
    ASSERT_TRUE(off.ok()) << off.error().message;
    // Fused: the 1x1 conv's Tasks read x as its residual, and no vector Task adds or clamps.
    auto convs = tasksOfKernel(fused.program, "FusedConv");
    ASSERT_FALSE(convs.empty());
    EXPECT_TRUE(tasksOfKernel(fused.program, "ElementwiseGroup").empty());
    EXPECT_FALSE(tasksOfKernel(off->program, "ElementwiseGroup").empty());
    const ir::Node* n = fused.program.graph->findNode("pw");
    ASSERT_NE(n, nullptr);
    ASSERT_EQ(n->numInputs(), 4u);
    EXPECT_EQ(n->attrString("activation", ""), "Relu");
    // No more bytes move (unfused, keep-on-chip holds the conv's output for the Add), and it
    // takes less time: one Task fewer per core on the critical path.
    uint64_t fusedBytes = 0, offBytes = 0;
    for (const Task& t : fused.program.tasks)
        fusedBytes += t.dmaBytes;
    for (const Task& t : off->program.tasks)
        offBytes += t.dmaBytes;
    EXPECT_LE(fusedBytes, offBytes);
    // The numbers: the float64 reference within f16 rounding, with every read of the residual
    // after its producer (the race checker would name both Tasks).
    ir::Tensor x = wave({1, 32, 16, 16}, 0.13, 0.0);
    sim::SimOptions so;
    so.checkRaces = true;
    auto a = sim::simulate(fused.program, std::vector<ir::Tensor>{x}, so);
    auto b = sim::simulate(off->program, std::vector<ir::Tensor>{x}, so);
    ASSERT_TRUE(a.ok()) << a.error().message;
    ASSERT_TRUE(b.ok()) << b.error().message;
    ir::KernelContext ctx;
    auto ref = ir::interpret(*g, std::vector<ir::Tensor>{x}, ctx);
    ASSERT_TRUE(ref.ok());
    EXPECT_LT(maxAbsDiff(a->outputs[0], (*ref)[0]), 2e-2);
    EXPECT_LT(maxAbsDiff(b->outputs[0], (*ref)[0]), 2e-2);
    EXPECT_LT(a->totalCycles, b->totalCycles);
}

namespace {

/// The float64-free oracle of the NPU's numbers: the compiled graph evaluated node by node in
/// f32, each operand rounded to f16 where the node's precision reads it so (backend::readsInF16)
/// and an f16 node's results rounded, every tensor kept in f32 in between.
std::vector<ir::Tensor> npuNumbersInF32(const ir::Graph& g, const std::vector<ir::Tensor>& inputs) {
    std::map<const ir::Value*, ir::Tensor> values;
    for (size_t i = 0; i < g.inputs().size(); ++i)
        values[g.inputs()[i]] = inputs[i];
    for (const ir::Value* c : g.constants())
        values[c] = *c->constant();
    ir::KernelContext ctx;
    ctx.compute = DType::F32;
    for (const ir::Node* n : g.nodes()) {
        std::vector<ir::Tensor> args;
        for (size_t i = 0; i < n->numInputs(); ++i) {
            const ir::Value* v = n->input(i);
            if (!v) {
                args.emplace_back();
                continue;
            }
            ir::Tensor t = values.at(v);
            if (ir::isFloat(t.dtype()))
                t = backend::readsInF16(*n, i) ? t.castTo(DType::F16).castTo(DType::F32) : t.castTo(DType::F32);
            args.push_back(std::move(t));
        }
        auto outs = ir::evaluateNode(*n, args, ctx);
        EXPECT_TRUE(outs.ok()) << n->name();
        if (!outs.ok())
            return {};
        for (size_t o = 0; o < n->numOutputs(); ++o) {
            ir::Tensor t = (*outs)[o];
            if (n->precision() == ir::Precision::F16 && ir::isFloat(t.dtype()))
                t = t.castTo(DType::F16).castTo(DType::F32);
            values[n->output(o)] = std::move(t);
        }
    }
    std::vector<ir::Tensor> out;
    for (const ir::Value* v : g.outputs())
        out.push_back(values.at(v));
    return out;
}

/// x[1,16,12,12] -> conv+bias -> relu (r) -> conv+bias + r -> relu (s: a FusedConv with r as
/// its residual) -> maxpool -> conv -> y1; s -> transpose -> softmax (kept f32) -> y2.
std::unique_ptr<ir::Graph> mixedGraph() {
    auto g = std::make_unique<ir::Graph>("mixed");
    ir::Value* x = *g->addInput("x", TensorType::of(DType::F32, {1, 16, 12, 12}));
    ir::AttributeMap k3{{"pads", std::vector<int64_t>{1, 1, 1, 1}}, {"kernel_shape", std::vector<int64_t>{3, 3}}};
    ir::Value* w1 = *g->addConstant("w1", wave({16, 16, 3, 3}, 0.37, 0.0));
    ir::Value* b1 = *g->addConstant("b1", wave({16}, 1.1, 0.1));
    ir::Value* w2 = *g->addConstant("w2", wave({16, 16, 3, 3}, 0.53, -0.01));
    ir::Value* b2 = *g->addConstant("b2", wave({16}, 0.7, 0.0));
    ir::Value* w3 = *g->addConstant("w3", wave({8, 16, 1, 1}, 0.29, 0.02));
    ir::Node* c1 = *g->addNode(OpKind::Conv, "c1", {x, w1, b1}, {"c1"}, k3);
    ir::Node* r = *g->addNode(OpKind::Relu, "r", {c1->output()}, {"r"});
    ir::Node* c2 = *g->addNode(OpKind::Conv, "c2", {r->output(), w2, b2}, {"c2"}, k3);
    ir::Node* a = *g->addNode(OpKind::Add, "a", {c2->output(), r->output()}, {"a"});
    ir::Node* s = *g->addNode(OpKind::Relu, "s", {a->output()}, {"s"});
    ir::Node* mp = *g->addNode(OpKind::MaxPool, "mp", {s->output()}, {"mp"},
                               {{"kernel_shape", std::vector<int64_t>{2, 2}}, {"strides", std::vector<int64_t>{2, 2}}});
    ir::Node* c3 = *g->addNode(OpKind::Conv, "c3", {mp->output(), w3}, {"y1"});
    ir::Node* t = *g->addNode(OpKind::Transpose, "t", {s->output()}, {"t"},
                              {{"perm", std::vector<int64_t>{0, 2, 3, 1}}});
    ir::Node* sm = *g->addNode(OpKind::Softmax, "sm", {t->output()}, {"y2"}, {{"axis", int64_t{-1}}});
    g->setOutputs({c3->output(), sm->output()});
    EXPECT_TRUE(g->inferTypes().ok());
    return g;
}

} // namespace

TEST(F16Storage, FeatureMapsBetweenF16OpsAreKeptInF16AndNoNumberChanges) {
    auto g = mixedGraph();
    // keep-on-chip off: every feature map goes through DRAM, in the type it is kept in.
    for (const std::vector<std::string>& disabled : {std::vector<std::string>{"keep-on-chip"}, std::vector<std::string>{}}) {
        runtime::CompileResult r = compile(*g, "NC1HWC0", disabled);
        const Program& p = r.program;
        ASSERT_NE(p.graph, nullptr);
        size_t half = 0;
        for (const Buffer& b : p.buffers) {
            const ir::Value* v = p.graph->findValue(b.value);
            ASSERT_NE(v, nullptr) << b.value;
            if (b.type.dtype == DType::F16) {
                ++half;
                EXPECT_EQ(v->type().dtype, DType::F32) << b.value;
                EXPECT_FALSE(v->isGraphInput() || v->isGraphOutput() || v->isConstant()) << b.value;
                EXPECT_GE(b.size, backend::storedBytes(b.type, p.target.c0)) << b.value;
            }
        }
        EXPECT_GE(half, 3u) << "r, the residual sum and the pooled map at least";
        // The sum feeds the f32 Softmax through a Transpose: both stay f32.
        const ir::Node* smNode = p.graph->findNode("sm");
        ASSERT_NE(smNode, nullptr);
        EXPECT_EQ(backend::storedDType(*smNode->input(0)), DType::F32);
        // Bit for bit what the precisions alone give: storing in f16 rounded nothing new.
        ir::Tensor x = wave({1, 16, 12, 12}, 0.11, 0.02);
        sim::SimOptions so;
        so.checkRaces = true;
        auto run = sim::simulate(p, std::vector<ir::Tensor>{x}, so);
        ASSERT_TRUE(run.ok()) << run.error().message;
        std::vector<ir::Tensor> want = npuNumbersInF32(*p.graph, {x});
        ASSERT_EQ(want.size(), run->outputs.size());
        for (size_t o = 0; o < want.size(); ++o) {
            ASSERT_EQ(want[o].numel(), run->outputs[o].numel());
            EXPECT_EQ(maxAbsDiff(run->outputs[o], want[o]), 0.0) << "output " << o;
        }
    }
}
