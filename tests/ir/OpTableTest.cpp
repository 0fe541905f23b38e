// The op table's facts agree with each other: a row that says an op runs on the cube has a cube
// cost model, an op an ElementwiseGroup may hold is an elementwise vector op, and so on. A new row
// with a contradicting fact fails here instead of silently mis-costing, mis-laying-out or
// mis-comparing the op (docs/adding-an-op.md).
#include "core/ir/OpRegistry.h"

#include <gtest/gtest.h>

#include <string>

using namespace sextant::ir;

namespace {

bool usesCube(WorkModel w) {
    switch (w) {
    case WorkModel::Conv:
    case WorkModel::ConvTranspose:
    case WorkModel::Gemm:
    case WorkModel::Attention:
        return true;
    case WorkModel::Host:
    case WorkModel::Pool:
    case WorkModel::GlobalPool:
    case WorkModel::Resize:
    case WorkModel::Softmax:
    case WorkModel::LayerNorm:
    case WorkModel::Elementwise:
    case WorkModel::Group:
    case WorkModel::Copy:
    case WorkModel::Concat:
        return false;
    }
    return false;
}

bool onlyMovesData(WorkModel w) {
    return w == WorkModel::Copy || w == WorkModel::Concat;
}

/// Models whose vector work is OpInfo::passes per output element.
bool countsPasses(WorkModel w) {
    return w == WorkModel::Elementwise || w == WorkModel::Softmax || w == WorkModel::LayerNorm;
}

} // namespace

TEST(OpTable, CostClassMatchesWorkModel) {
    for (const OpInfo& op : allOps()) {
        SCOPED_TRACE(qualifiedOpName(op.kind));
        EXPECT_EQ(op.cost == CostClass::Host, op.work == WorkModel::Host)
            << "host ops, and only they, have no NPU cost model";
        EXPECT_EQ(op.cost == CostClass::Cube, usesCube(op.work))
            << "cube ops, and only they, use the cube";
        EXPECT_EQ(op.cost == CostClass::DmaOnly, onlyMovesData(op.work))
            << "DMA-only ops, and only they, have a data-movement model";
    }
}

TEST(OpTable, PassesFitTheWorkModel) {
    for (const OpInfo& op : allOps()) {
        SCOPED_TRACE(qualifiedOpName(op.kind));
        if (countsPasses(op.work))
            EXPECT_GE(op.passes, 1) << "a vector op makes at least one pass over its elements";
        else if (op.work == WorkModel::Conv || op.work == WorkModel::Gemm || op.work == WorkModel::ConvTranspose)
            EXPECT_TRUE(op.passes == 0 || op.passes == 1) << "a cube op's epilogue flag is 0 or 1";
        else
            EXPECT_EQ(op.passes, 0) << "this work model does not read passes";
    }
}

TEST(OpTable, GroupStepsAreSingleResultElementwiseVectorOps) {
    int steps = 0;
    for (const OpInfo& op : allOps()) {
        SCOPED_TRACE(qualifiedOpName(op.kind));
        if (op.fusable != Fusable::Group)
            continue;
        ++steps;
        EXPECT_EQ(op.cost, CostClass::Vector);
        EXPECT_EQ(op.work, WorkModel::Elementwise)
            << "a group's cost is the sum of its steps' passes";
        EXPECT_TRUE(op.layout == LayoutClass::Unary || op.layout == LayoutClass::Binary)
            << "a group is laid out as a binary elementwise op, so its steps must be elementwise";
        EXPECT_TRUE(op.domain.empty()) << "a group body names its steps by their ai.onnx names";
        EXPECT_EQ(op.minOutputs, 1);
        EXPECT_EQ(op.maxOutputs, 1);
    }
    EXPECT_GE(steps, 2);
    EXPECT_EQ(opInfo(OpKind::ElementwiseGroup).fusable, Fusable::No) << "groups do not nest";
}

TEST(OpTable, PooledStepsReduceOrMixChannels) {
    // A group's pooled prologue (fold-squeeze-excite) holds a global pooling and 1x1 convolutions
    // on its result; the backend prices them (CostModel groupModel) by these work models.
    std::vector<OpKind> pooled;
    for (const OpInfo& op : allOps()) {
        if (op.fusable != Fusable::Pooled)
            continue;
        SCOPED_TRACE(qualifiedOpName(op.kind));
        pooled.push_back(op.kind);
        EXPECT_TRUE(op.work == WorkModel::GlobalPool || op.work == WorkModel::Conv);
        EXPECT_TRUE(op.domain.empty()) << "a group body names its steps by their ai.onnx names";
        EXPECT_EQ(op.maxOutputs, 1);
        EXPECT_TRUE(groupStepOp(op.kind));
    }
    EXPECT_EQ(pooled, (std::vector<OpKind>{OpKind::Conv, OpKind::GlobalAveragePool, OpKind::GlobalMaxPool}));
    EXPECT_FALSE(groupStepOp(OpKind::MatMul));
}

TEST(OpTable, LayoutClassFitsTheUnit) {
    for (const OpInfo& op : allOps()) {
        SCOPED_TRACE(qualifiedOpName(op.kind));
        switch (op.layout) {
        case LayoutClass::Plain:
            break;
        case LayoutClass::Conv:
            EXPECT_EQ(op.cost, CostClass::Cube);
            break;
        case LayoutClass::Unary:
        case LayoutClass::Binary:
        case LayoutClass::Pooling:
        case LayoutClass::Spatial:
            EXPECT_EQ(op.cost, CostClass::Vector);
            break;
        case LayoutClass::Concat:
            EXPECT_EQ(op.work, WorkModel::Concat);
            break;
        case LayoutClass::View:
            EXPECT_EQ(op.cost, CostClass::DmaOnly);
            EXPECT_EQ(op.grey, GreyClass::CopyOrCast) << "a view only relabels its input";
            EXPECT_EQ(op.compare, CompareClass::Transparent);
            break;
        }
    }
}

TEST(OpTable, GreyAndTransparentOpsComputeNothing) {
    for (const OpInfo& op : allOps()) {
        SCOPED_TRACE(qualifiedOpName(op.kind));
        if (op.grey != GreyClass::NotGrey) {
            EXPECT_TRUE(op.cost == CostClass::DmaOnly ||
                        (op.work == WorkModel::Elementwise && op.passes == 1))
                << "a grey op moves data or converts it in one pass";
        }
        if (op.compare == CompareClass::Transparent) {
            EXPECT_NE(op.grey, GreyClass::NotGrey)
                << "an op the comparison looks through only moves data";
            EXPECT_EQ(op.cost, CostClass::DmaOnly);
        }
        if (op.compare == CompareClass::Probability) {
            EXPECT_EQ(op.cost, CostClass::Vector);
        }
    }
    EXPECT_EQ(opInfo(OpKind::Transpose).grey, GreyClass::Transpose);
    EXPECT_EQ(opInfo(OpKind::TransData).grey, GreyClass::LayoutConversion);
}

TEST(OpTable, F16RisksAreVectorOps) {
    for (const OpInfo& op : allOps()) {
        SCOPED_TRACE(qualifiedOpName(op.kind));
        if (op.f16Risk != F16Risk::Safe) {
            EXPECT_EQ(op.cost, CostClass::Vector)
                << "the precision pass keeps only vector ops in f32";
        }
    }
}

// What the passes decide from the table, for ops whose behaviour users see in reports.
TEST(OpTable, KeyOpsHaveTheirKnownFacts) {
    EXPECT_EQ(opInfo(OpKind::Softmax).compare, CompareClass::Probability);
    EXPECT_EQ(opInfo(OpKind::Sigmoid).compare, CompareClass::Probability);
    EXPECT_EQ(opInfo(OpKind::LogSoftmax).compare, CompareClass::Scaled);
    EXPECT_EQ(opInfo(OpKind::Softmax).passes, 5);
    EXPECT_EQ(opInfo(OpKind::Div).passes, 4);
    EXPECT_EQ(opInfo(OpKind::Mul).passes, 1);
    EXPECT_EQ(opInfo(OpKind::FusedConv).passes, 1);
    EXPECT_EQ(opInfo(OpKind::Conv).passes, 0);
    EXPECT_EQ(opInfo(OpKind::GlobalAveragePool).work, WorkModel::GlobalPool);
    EXPECT_EQ(opInfo(OpKind::Conv).layout, LayoutClass::Conv);
    EXPECT_EQ(opInfo(OpKind::MatMul).layout, LayoutClass::Plain);
    EXPECT_EQ(opInfo(OpKind::Cast).grey, GreyClass::CopyOrCast);
    EXPECT_EQ(opInfo(OpKind::Exp).f16Risk, F16Risk::Transcendental);
    EXPECT_EQ(opInfo(OpKind::Relu).f16Risk, F16Risk::Safe);
    EXPECT_EQ(opInfo(OpKind::Clip).fusable, Fusable::Group);
    EXPECT_EQ(opInfo(OpKind::Tanh).fusable, Fusable::No);
}
