#pragma once

// The hand-built sample Program of the simulator tests (SimulatorTest, FaultInjectionTest) and
// the helpers that run and check it.
#include "core/ir/Interpreter.h"
#include "core/sim/Simulator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>

namespace simtest {

using namespace sextant;
using backend::Buffer;
using backend::BufferKind;
using backend::Program;
using backend::Task;
using backend::UnitKind;


inline ir::Tensor ramp(std::vector<int64_t> shape, double scale, double shift) {
    ir::Tensor t(ir::DType::F32, std::move(shape));
    for (int64_t i = 0; i < t.numel(); ++i)
        t.set(i, std::sin(static_cast<double>(i) * scale) + shift);
    return t;
}

/// y = Relu(Conv(x, w, b)) + Sigmoid(x), with the conv chain on core 0 and the rest on core 1:
///   task 0 core 0 cube:   c = Conv(x, w, b)
///   task 1 core 0 vector: r = Relu(c)            records event 0
///   task 2 core 1 vector: s = Sigmoid(x)
///   task 3 core 1 vector: y = Add(r, s)          waits on event 0
/// DRAM: w @0, b @192, x @256, y @384, then c @512, r @640, s @768.
struct Sample {
    std::shared_ptr<ir::Graph> graph;
    Program program;
    ir::Tensor input;
};

inline Sample makeSample() {
    auto g = std::make_shared<ir::Graph>("sample");
    ir::Value* x = g->addInput("x", ir::TensorType::of(ir::DType::F32, {1, 2, 4, 4})).value();
    ir::Value* w = g->addConstant("w", ramp({2, 2, 3, 3}, 0.7, 0.0)).value();
    ir::Value* b = g->addConstant("b", ramp({2}, 1.3, 0.25)).value();
    ir::AttributeMap conv;
    conv["pads"] = std::vector<int64_t>{1, 1, 1, 1};
    conv["kernel_shape"] = std::vector<int64_t>{3, 3};
    ir::Node* c = g->addNode(ir::OpKind::Conv, "conv", {x, w, b}, {"c"}, conv).value();
    ir::Node* r = g->addNode(ir::OpKind::Relu, "relu", {c->output()}, {"r"}).value();
    ir::Node* s = g->addNode(ir::OpKind::Sigmoid, "sig", {x}, {"s"}).value();
    ir::Node* y = g->addNode(ir::OpKind::Add, "add", {r->output(), s->output()}, {"y"}).value();
    g->setOutputs({y->output()});
    EXPECT_TRUE(g->inferTypes().ok());

    Program p;
    p.modelName = "sample";
    p.target = backend::Target{};
    p.graph = g;
    auto buf = [&](int id, const std::string& value, BufferKind kind, uint64_t offset,
                   uint64_t size, int first, int last) {
        Buffer bb;
        bb.id = id;
        bb.value = value;
        bb.kind = kind;
        bb.offset = offset;
        bb.size = size;
        bb.type = g->findValue(value)->type();
        bb.firstTask = first;
        bb.lastTask = last;
        p.buffers.push_back(bb);
    };
    buf(0, "w", BufferKind::Weight, 0, 192, -1, 0);
    buf(1, "b", BufferKind::Weight, 192, 64, -1, 0);
    buf(2, "x", BufferKind::Input, 256, 128, -1, 2);
    buf(3, "y", BufferKind::Output, 384, 128, 3, -1);
    buf(4, "c", BufferKind::Intermediate, 512, 128, 0, 1);
    buf(5, "r", BufferKind::Intermediate, 640, 128, 1, 3);
    buf(6, "s", BufferKind::Intermediate, 768, 128, 2, 3);
    auto task = [&](int id, const std::string& node, int core, UnitKind unit, std::vector<int> in,
                    std::vector<int> out, uint64_t flops) {
        Task t;
        t.id = id;
        t.name = node;
        t.kernel = node;
        t.core = core;
        t.unit = unit;
        t.nodes = {node};
        t.inputs = std::move(in);
        t.outputs = std::move(out);
        t.flops = flops;
        for (int bi : t.inputs)
            t.dmaBytes += p.buffers[static_cast<size_t>(bi)].type.numel() * 4;
        for (int bi : t.outputs)
            t.dmaBytes += p.buffers[static_cast<size_t>(bi)].type.numel() * 4;
        p.tasks.push_back(t);
    };
    task(0, "conv", 0, UnitKind::Cube, {2, 0, 1}, {4}, 2 * 32 * 18);
    task(1, "relu", 0, UnitKind::Vector, {4}, {5}, 32);
    task(2, "sig", 1, UnitKind::Vector, {2}, {6}, 4 * 32);
    task(3, "add", 1, UnitKind::Vector, {5, 6}, {3}, 32);
    p.tasks[1].recordEvents = {0};
    p.tasks[3].waitEvents = {0};
    p.tasks[3].deps = {1, 2};
    p.tasks[1].deps = {0};
    p.events.push_back(backend::Event{0, 0, 0, 1, {3}});
    p.inputBuffers = {2};
    p.outputBuffers = {3};
    return Sample{g, std::move(p), ramp({1, 2, 4, 4}, 0.37, -0.1)};
}

inline ir::Tensor reference(const Sample& s) {
    ir::KernelContext ctx;
    ctx.compute = ir::DType::F32;
    std::vector<ir::Tensor> in{s.input};
    auto out = ir::interpret(*s.graph, in, ctx);
    EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
    return out.value()[0];
}

inline double maxAbsDiff(const ir::Tensor& a, const ir::Tensor& b) {
    EXPECT_EQ(a.numel(), b.numel());
    double m = 0;
    for (int64_t i = 0; i < a.numel() && i < b.numel(); ++i)
        m = std::max(m, std::fabs(a.at(i) - b.at(i)));
    return m;
}

inline Expected<sim::SimResult> simulateSample(const Sample& s, const sim::SimOptions& opt = {}) {
    std::vector<ir::Tensor> in{s.input};
    return sim::simulate(s.program, in, opt);
}

} // namespace simtest
