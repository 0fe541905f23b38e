// TensorType keeps up to DimVector::kInline dims in place and spills longer shapes to the heap;
// dim symbols are interned. Shapes must behave like the std::vector they replaced on both sides
// of that boundary, including operations whose source range is the shape itself.

#include "TestUtil.h"

#include "core/ir/Parser.h"
#include "core/ir/Printer.h"

namespace sextant::ir::test {
namespace {

std::vector<int64_t> values(const DimVector& s) {
    std::vector<int64_t> out;
    for (const Dim& d : s)
        out.push_back(d.value);
    return out;
}

DimVector iota(int n) {
    DimVector s;
    for (int i = 0; i < n; ++i)
        s.push_back(Dim::known(i));
    return s;
}

TEST(DimVector, GrowsPastTheInlineCapacityAndKeepsEveryDim) {
    const int n = static_cast<int>(DimVector::kInline) + 3;
    DimVector s = iota(n);
    EXPECT_TRUE(s.onHeap());
    ASSERT_EQ(s.size(), static_cast<size_t>(n));
    for (int i = 0; i < n; ++i)
        EXPECT_EQ(s[static_cast<size_t>(i)].value, i);

    DimVector copy = s;
    DimVector moved = std::move(s);
    EXPECT_EQ(copy, moved);
    EXPECT_TRUE(s.empty()); // a moved-from shape is empty and reusable
    s.push_back(Dim::known(7));
    EXPECT_EQ(values(s), std::vector<int64_t>{7});

    copy.erase(copy.begin() + 1, copy.begin() + 5);
    EXPECT_EQ(values(copy), (std::vector<int64_t>{0, 5, 6, 7, 8}));
    EXPECT_EQ(copy.back().value, 8);
    copy = iota(2); // a heap block reused for a short shape
    EXPECT_EQ(values(copy), (std::vector<int64_t>{0, 1}));
}

TEST(DimVector, InsertAndAssignFromItsOwnDims) {
    DimVector s = iota(4);
    s.insert(s.begin() + 1, s.begin(), s.end()); // the source moves while it is inserted
    EXPECT_EQ(values(s), (std::vector<int64_t>{0, 0, 1, 2, 3, 1, 2, 3}));
    s.insert(s.end(), s[0]);
    EXPECT_EQ(s.size(), 9u);
    s.assign(s.begin() + 5, s.end());
    EXPECT_EQ(values(s), (std::vector<int64_t>{1, 2, 3, 0}));
    s.push_back(s[0]);
    s.resize(7, s[1]);
    EXPECT_EQ(values(s), (std::vector<int64_t>{1, 2, 3, 0, 1, 2, 2}));
    s.assign(2, Dim::symbolic("N"));
    EXPECT_EQ(s.size(), 2u);
    EXPECT_EQ(s[1].symbol, "N");
}

TEST(DimSymbol, EqualNamesAreTheSameSymbolAndPrintAsWritten) {
    std::string a = "batch";
    std::string b = "bat";
    b += "ch";
    EXPECT_EQ(Dim::symbolic(a), Dim::symbolic(b));
    EXPECT_FALSE(Dim::symbolic("batch") == Dim::symbolic("seq"));
    EXPECT_TRUE(Dim::known(3).symbol.empty());
    EXPECT_EQ(Dim::symbolic("").symbol.str(), "");
    EXPECT_EQ(Dim::symbolic("?").symbol, "?");

    TensorType t;
    t.shape = {Dim::symbolic("batch"), Dim::known(3), Dim::symbolic("?")};
    EXPECT_EQ(t.str(), "f32[batch,3,?]");
}

TEST(DimVector, HighRankTypesSurviveTheTextualIr) {
    // Rank 8 is beyond the inline capacity: the printed and re-parsed graph must keep every dim.
    auto g = std::make_unique<Graph>("high_rank");
    std::vector<int64_t> dims{1, 2, 1, 3, 1, 2, 1, 2};
    TensorType t = TensorType::of(DType::F32, dims);
    t.shape[4] = Dim::symbolic("k");
    Value* x = g->addInput("x", t).value();
    Value* y = g->addNode(OpKind::Relu, "r", {x}, {"y"}).value()->output(0);
    g->setOutputs({y});
    ASSERT_TRUE(g->inferTypes().ok());
    EXPECT_EQ(y->type(), t);
    const std::string text = printGraph(*g);
    auto back = parseGraph(text);
    ASSERT_TRUE(back.ok()) << back.error().message;
    EXPECT_EQ(printGraph(*back.value()), text);
    EXPECT_EQ(back.value()->findValue("y")->type(), t);
}

} // namespace
} // namespace sextant::ir::test
