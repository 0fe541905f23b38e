#pragma once

#include "core/ir/Graph.h"
#include "core/ir/Interpreter.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

namespace sextant::ir::test {

/// A default-constructed Tensor stands for an omitted optional input.
inline bool isOmitted(const Tensor& t) { return t.rank() == 0 && t.numel() == 0; }

/// A graph of one node: float tensors become graph inputs (unless listed in `constants`),
/// integer tensors constants.
struct OneNode {
    std::unique_ptr<Graph> graph;
    Node* node = nullptr;
    std::vector<Tensor> feeds;
};

inline OneNode makeOneNode(OpKind kind, const std::vector<Tensor>& ins, AttributeMap attrs,
                           int numOutputs = 1, std::vector<size_t> constants = {}) {
    OneNode one;
    one.graph = std::make_unique<Graph>("t");
    std::vector<Value*> vals;
    for (size_t i = 0; i < ins.size(); ++i) {
        std::string name = "in" + std::to_string(i);
        const bool asConstant = std::find(constants.begin(), constants.end(), i) != constants.end();
        if (isOmitted(ins[i])) {
            vals.push_back(nullptr);
        } else if (isFloat(ins[i].dtype()) && !asConstant) {
            vals.push_back(one.graph->addInput(name, ins[i].type()).value());
            one.feeds.push_back(ins[i]);
        } else {
            vals.push_back(one.graph->addConstant(name, ins[i]).value());
        }
    }
    std::vector<std::string> outs;
    for (int i = 0; i < numOutputs; ++i)
        outs.push_back("out" + std::to_string(i));
    one.node = one.graph->addNode(kind, "n", vals, outs, std::move(attrs)).value();
    std::vector<Value*> outputs(one.node->outputs().begin(), one.node->outputs().end());
    one.graph->setOutputs(outputs);
    return one;
}

/// Infers types and runs the one-node graph; fails the test on any error.
inline std::vector<Tensor> runOne(OpKind kind, const std::vector<Tensor>& ins, AttributeMap attrs = {},
                                  int numOutputs = 1, DType compute = DType::F64,
                                  std::vector<size_t> constants = {}) {
    OneNode one = makeOneNode(kind, ins, std::move(attrs), numOutputs, std::move(constants));
    Status st = one.graph->inferTypes();
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    if (!st.ok())
        return {};
    KernelContext ctx;
    ctx.compute = compute;
    auto r = interpret(*one.graph, one.feeds, ctx);
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    if (!r.ok())
        return {};
    // The inferred type must describe what the kernel produced.
    for (size_t i = 0; i < r->size(); ++i)
        EXPECT_EQ(one.node->output(i)->type().dims(), (*r)[i].shape()) << "output " << i;
    return std::move(r).value();
}

/// runOne for an op whose output lengths depend on the data (NonMaxSuppression, Unique): the
/// inferred type must agree with what the kernel produced in rank and in every dim it knows.
inline std::vector<Tensor> runOneDynamic(OpKind kind, const std::vector<Tensor>& ins, AttributeMap attrs = {},
                                         int numOutputs = 1) {
    OneNode one = makeOneNode(kind, ins, std::move(attrs), numOutputs);
    Status st = one.graph->inferTypes();
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    if (!st.ok())
        return {};
    auto r = interpret(*one.graph, one.feeds, KernelContext{});
    EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
    if (!r.ok())
        return {};
    for (size_t i = 0; i < r->size(); ++i) {
        const TensorType& t = one.node->output(i)->type();
        EXPECT_EQ(t.dtype, (*r)[i].dtype()) << "output " << i;
        EXPECT_EQ(t.rank(), (*r)[i].rank()) << "output " << i;
        for (size_t d = 0; d < t.rank() && d < (*r)[i].rank(); ++d)
            if (t.shape[d].isKnown()) {
                EXPECT_EQ(t.shape[d].value, (*r)[i].shape()[d]) << "output " << i << " dim " << d;
            }
    }
    return std::move(r).value();
}

/// The message of the error the one-node graph gives at type inference or when run, or "" when
/// it runs.
inline std::string failure(OpKind kind, const std::vector<Tensor>& ins, AttributeMap attrs = {}, int numOutputs = 1) {
    OneNode one = makeOneNode(kind, ins, std::move(attrs), numOutputs);
    if (Status st = one.graph->inferTypes(); !st.ok())
        return st.error().message;
    auto r = interpret(*one.graph, one.feeds, KernelContext{});
    return r.ok() ? std::string() : r.error().message;
}

inline Tensor f64(std::vector<int64_t> shape, std::vector<double> v) {
    return Tensor::fromVector<double>(std::move(shape), v);
}
inline Tensor i64(std::vector<int64_t> shape, std::vector<int64_t> v) {
    return Tensor::fromVector<int64_t>(std::move(shape), v);
}

inline void expectValues(const Tensor& t, std::vector<int64_t> shape, std::vector<double> expected,
                         double tol = 1e-12) {
    ASSERT_EQ(t.shape(), shape);
    std::vector<double> got = t.toDoubles();
    ASSERT_EQ(got.size(), expected.size());
    for (size_t i = 0; i < got.size(); ++i)
        EXPECT_NEAR(got[i], expected[i], tol) << "element " << i;
}

} // namespace sextant::ir::test
