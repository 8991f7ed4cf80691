//===- CumSumTriluKernelsTest.cpp - CumSum and Trilu reference kernels ----===//
//
// CumSum along first, middle and last axes with exclusive and reverse,
// integer wrap-around and f16 accumulating in float; Trilu's upper and
// lower triangles for positive, negative and out-of-range k over batches
// of matrices; and the errors both give for bad operands.
//
//===----------------------------------------------------------------------===//
#include "NodeRunner.h"
#include "ir/OpKind.h"
#include <cmath>

using namespace solder;
using namespace solder::testing;

namespace {

using IV = std::vector<int64_t>;

Tensor scalarI64(int64_t V) {
  Tensor T(DType::I64, llvm::ArrayRef<int64_t>{});
  T.mutableData<int64_t>()[0] = V;
  return T;
}

Tensor cumSum(const Tensor &X, const Tensor &Axis, bool Exclusive = false,
              bool Reverse = false) {
  return NodeRunner(OpKind::CumSum)
      .attr("exclusive", int64_t(Exclusive))
      .attr("reverse", int64_t(Reverse))
      .runOk({&X, &Axis});
}

TEST(CumSumKernelTest, OneDimensionAllModes) {
  Tensor X = make(DType::F32, {5}, {1, 2, 3, 4, 5});
  Tensor A = scalarI64(0);
  expectValues(cumSum(X, A), {1, 3, 6, 10, 15});
  expectValues(cumSum(X, A, true), {0, 1, 3, 6, 10});
  expectValues(cumSum(X, A, false, true), {15, 14, 12, 9, 5});
  expectValues(cumSum(X, A, true, true), {14, 12, 9, 5, 0});
}

TEST(CumSumKernelTest, EveryAxisOfARank3Tensor) {
  Tensor X = make(DType::F64, {2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  expectValues(cumSum(X, scalarI64(0)), {0, 1, 2, 3, 4, 6, 8, 10});
  expectValues(cumSum(X, scalarI64(1)), {0, 1, 2, 4, 4, 5, 10, 12});
  expectValues(cumSum(X, scalarI64(2)), {0, 1, 2, 5, 4, 9, 6, 13});
  expectValues(cumSum(X, scalarI64(-1), false, true),
               {1, 1, 5, 3, 9, 5, 13, 7});
  // A one-element int32 axis works as well as a scalar.
  Tensor A32 = make(DType::I32, {1}, {-2});
  expectValues(cumSum(X, A32, true), {0, 0, 0, 1, 0, 0, 4, 5});
}

TEST(CumSumKernelTest, IntegersWrapAndHalvesAccumulateInFloat) {
  Tensor I = make(DType::I32, {3}, {2147483647, 1, -1});
  EXPECT_EQ(toInts(cumSum(I, scalarI64(0))),
            (IV{2147483647, -2147483648LL, 2147483647}));
  Tensor U = make(DType::U64, {2}, {5, 6});
  EXPECT_EQ(toInts(cumSum(U, scalarI64(0), false, true)), (IV{11, 6}));
  // 2048 + 1 rounds back to 2048 in f16; an f16 running sum would stay
  // there, a float accumulator reaches 2050.
  Tensor H = make(DType::F16, {3}, {2048, 1, 1});
  Tensor Y = cumSum(H, scalarI64(0));
  ASSERT_EQ(Y.dtype(), DType::F16);
  expectValues(Y, {2048, 2048, 2050});
}

TEST(CumSumKernelTest, EmptyAndBadOperands) {
  Tensor E(DType::F32, {0, 3});
  EXPECT_EQ(cumSum(E, scalarI64(1)).numElements(), 0);
  EXPECT_EQ(cumSum(E, scalarI64(0)).numElements(), 0);
  Tensor X = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor Far = scalarI64(2);
  NodeRunner(OpKind::CumSum)
      .expectError({&X, &Far}, "axis 2 is out of range for rank 2");
  Tensor FA = make(DType::F32, {1}, {0});
  NodeRunner(OpKind::CumSum)
      .expectError({&X, &FA}, "axis must be an integer scalar");
  Tensor Two = make(DType::I64, {2}, {0, 1});
  NodeRunner(OpKind::CumSum)
      .expectError({&X, &Two}, "axis must be an integer scalar");
  Tensor I8 = make(DType::I8, {2}, {1, 2});
  Tensor A = scalarI64(0);
  NodeRunner(OpKind::CumSum).expectError({&I8, &A}, "i8 is not supported");
}

//===----------------------------------------------------------------------===//
// Trilu
//===----------------------------------------------------------------------===//

Tensor trilu(const Tensor &X, bool Upper, const Tensor *K = nullptr) {
  return NodeRunner(OpKind::Trilu).attr("upper", int64_t(Upper)).runOk({&X, K});
}

TEST(TriluKernelTest, TrianglesAroundTheDiagonal) {
  Tensor X = make(DType::I32, {3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  EXPECT_EQ(toInts(trilu(X, true)), (IV{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12}));
  EXPECT_EQ(toInts(trilu(X, false)),
            (IV{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0}));
  Tensor One = scalarI64(1), MinusOne = scalarI64(-1);
  EXPECT_EQ(toInts(trilu(X, true, &One)),
            (IV{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12}));
  EXPECT_EQ(toInts(trilu(X, false, &MinusOne)),
            (IV{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}));
  EXPECT_EQ(toInts(trilu(X, true, &MinusOne)),
            (IV{1, 2, 3, 4, 5, 6, 7, 8, 0, 10, 11, 12}));
}

TEST(TriluKernelTest, OutOfRangeKKeepsAllOrNothing) {
  Tensor X = make(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor Big = scalarI64(int64_t(1) << 62),
         Small = scalarI64(-(int64_t(1) << 62));
  expectValues(trilu(X, true, &Big), {0, 0, 0, 0, 0, 0});
  expectValues(trilu(X, true, &Small), {1, 2, 3, 4, 5, 6});
  expectValues(trilu(X, false, &Big), {1, 2, 3, 4, 5, 6});
  expectValues(trilu(X, false, &Small), {0, 0, 0, 0, 0, 0});
}

TEST(TriluKernelTest, BatchesBoolsAndHalves) {
  Tensor B = make(DType::Bool, {2, 2, 2}, {1, 1, 1, 1, 1, 0, 1, 1});
  EXPECT_EQ(toInts(trilu(B, false)), (IV{1, 0, 1, 1, 1, 0, 1, 1}));
  // Zeroed f16 elements are +0 whatever the sign they had.
  Tensor H = make(DType::F16, {2, 2}, {-1, -2, -3, -4});
  Tensor Y = trilu(H, true);
  ASSERT_EQ(Y.dtype(), DType::F16);
  expectValues(Y, {-1, -2, 0, -4});
  EXPECT_FALSE(std::signbit(Y.getDouble(2)));
  Tensor E(DType::F32, {3, 0});
  EXPECT_EQ(trilu(E, true).numElements(), 0);
}

TEST(TriluKernelTest, BadOperands) {
  Tensor V = make(DType::F32, {3}, {1, 2, 3});
  NodeRunner(OpKind::Trilu).expectError({&V}, "input must have rank >= 2");
  Tensor X = make(DType::F32, {2, 2}, {1, 2, 3, 4});
  Tensor FK = make(DType::F32, {1}, {1});
  NodeRunner(OpKind::Trilu)
      .expectError({&X, &FK}, "k must be an integer scalar");
}

} // namespace
