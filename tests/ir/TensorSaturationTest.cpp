// Tensor::set on integer tensors: values a kernel computes in double that the integer type cannot
// hold (inf from 0^-1 in an integer Pow, NaN, huge Cast inputs) saturate instead of being undefined
// behaviour. Found by the reference fuzzer (tests/fuzz-corpus/pow_int*_result_inf.onnx).

#include "core/ir/Tensor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace sextant::ir {
namespace {

template <typename T> void expectSaturates(DType dtype) {
    Tensor t(dtype, {6});
    t.set(0, std::numeric_limits<double>::infinity());
    t.set(1, -std::numeric_limits<double>::infinity());
    t.set(2, std::nan(""));
    t.set(3, 1e300);
    t.set(4, -1e300);
    t.set(5, 42.9); // in range: truncates toward zero as before
    const T* d = t.data<T>();
    EXPECT_EQ(d[0], std::numeric_limits<T>::max()) << dtypeName(dtype);
    EXPECT_EQ(d[1], std::numeric_limits<T>::lowest()) << dtypeName(dtype);
    EXPECT_EQ(d[2], T(0)) << dtypeName(dtype);
    EXPECT_EQ(d[3], std::numeric_limits<T>::max()) << dtypeName(dtype);
    EXPECT_EQ(d[4], std::numeric_limits<T>::lowest()) << dtypeName(dtype);
    EXPECT_EQ(d[5], T(42)) << dtypeName(dtype);
}

TEST(TensorSet, IntegerTypesSaturateOutOfRangeValues) {
    expectSaturates<int64_t>(DType::I64);
    expectSaturates<int32_t>(DType::I32);
    expectSaturates<int8_t>(DType::I8);
    expectSaturates<uint8_t>(DType::U8);
}

TEST(TensorSet, Int64LimitIsNotOvershot) {
    // 2^63 is the first double above INT64_MAX; it must not wrap to INT64_MIN.
    Tensor t(DType::I64, {2});
    t.set(0, 9223372036854775808.0);
    t.set(1, -9223372036854775808.0);
    EXPECT_EQ(t.data<int64_t>()[0], std::numeric_limits<int64_t>::max());
    EXPECT_EQ(t.data<int64_t>()[1], std::numeric_limits<int64_t>::lowest());
}

TEST(TensorSet, CastOfInfinityToIntSaturates) {
    Tensor f = Tensor::fromVector<float>({2}, {std::numeric_limits<float>::infinity(), -3.5f});
    Tensor i = f.castTo(DType::I32);
    EXPECT_EQ(i.data<int32_t>()[0], std::numeric_limits<int32_t>::max());
    EXPECT_EQ(i.data<int32_t>()[1], -3);
}

} // namespace
} // namespace sextant::ir
