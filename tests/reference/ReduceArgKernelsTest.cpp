//===- ReduceArgKernelsTest.cpp - ReduceMin..SumSquare, ArgMax/ArgMin -----===//
//
// Hand-checked cases of the Reduce* ops added after Sum/Mean/Max (Min,
// Prod, L1, L2, LogSum, LogSumExp, SumSquare): negative values, NaN, large
// inputs LogSumExp must not overflow on, infinities, empty reductions,
// wrapping integers and truncated integer roots and logs; and ArgMax/ArgMin
// with keepdims, select_last_index, ties, NaN and their errors.
//
//===----------------------------------------------------------------------===//
#include "NodeRunner.h"
#include "ir/OpKind.h"
#include <cmath>
#include <limits>

using namespace solder;
using namespace solder::testing;

namespace {

using IV = std::vector<int64_t>;
using DV = std::vector<double>;

const double Inf = std::numeric_limits<double>::infinity();
const double NaN = std::numeric_limits<double>::quiet_NaN();

Tensor reduce(OpKind K, const Tensor &X, const Tensor *Axes,
              int64_t KeepDims = 1) {
  return NodeRunner(K).attr("keepdims", KeepDims).runOk({&X, Axes});
}

// [[-1, 2, -3], [4, -5, 6]]
Tensor signedRows() { return make(DType::F32, {2, 3}, {-1, 2, -3, 4, -5, 6}); }

TEST(ReduceMoreKernelsTest, MinAndProdAlongAMiddleAxis) {
  DV V;
  for (int I = 0; I < 12; ++I)
    V.push_back(I);
  Tensor X = make(DType::F32, {2, 2, 3}, V);
  Tensor A1 = Tensor::fromInt64s({1});
  Tensor Min = reduce(OpKind::ReduceMin, X, &A1);
  EXPECT_EQ(dimsOf(Min), (IV{2, 1, 3}));
  expectValues(Min, {0, 1, 2, 6, 7, 8});
  Tensor Prod = reduce(OpKind::ReduceProd, X, &A1, 0);
  EXPECT_EQ(dimsOf(Prod), (IV{2, 3}));
  expectValues(Prod, {0, 4, 10, 54, 70, 88});
  // No axes: everything, to a [1, 1, 1] result.
  Tensor All = reduce(OpKind::ReduceMin, X, nullptr);
  EXPECT_EQ(dimsOf(All), (IV{1, 1, 1}));
  expectValues(All, {0});
}

TEST(ReduceMoreKernelsTest, NormsAndLogsOfSignedRows) {
  Tensor X = signedRows();
  Tensor Last = Tensor::fromInt64s({-1});
  expectValues(reduce(OpKind::ReduceL1, X, &Last, 0), {6, 15});
  expectValues(reduce(OpKind::ReduceL2, X, &Last, 0),
               {3.7416573867739413, 8.774964387392123});
  expectValues(reduce(OpKind::ReduceSumSquare, X, &Last, 0), {14, 77});
  expectValues(reduce(OpKind::ReduceLogSumExp, X, &Last, 0),
               {2.0549852353771474, 6.126942721744022});
  // Column sums 3, -3, 3: the log of a negative sum is NaN.
  Tensor First = Tensor::fromInt64s({0});
  expectValues(reduce(OpKind::ReduceLogSum, X, &First, 0),
               {1.0986122886681098, NaN, 1.0986122886681098});
}

TEST(ReduceMoreKernelsTest, LogSumExpIsShiftedByTheMaximum) {
  Tensor Big = make(DType::F32, {2}, {1000, 1000});
  expectValues(reduce(OpKind::ReduceLogSumExp, Big, nullptr, 0),
               {1000.6931471805599});
  Tensor NegInf = make(DType::F32, {2}, {-Inf, -Inf});
  expectValues(reduce(OpKind::ReduceLogSumExp, NegInf, nullptr, 0), {-Inf});
  Tensor PosInf = make(DType::F32, {2}, {Inf, 1});
  expectValues(reduce(OpKind::ReduceLogSumExp, PosInf, nullptr, 0), {Inf});
  Tensor Half = make(DType::F16, {3}, {10, 10, 10});
  expectValues(reduce(OpKind::ReduceLogSumExp, Half, nullptr, 0),
               {11.1015625}); // 10 + log 3 = 11.0986, rounded to f16
}

TEST(ReduceMoreKernelsTest, NaNPropagatesThroughMin) {
  Tensor X = make(DType::F32, {3}, {1, NaN, -2});
  expectValues(reduce(OpKind::ReduceMin, X, nullptr, 0), {NaN});
  Tensor B = make(DType::Bool, {2, 2}, {1, 0, 1, 1});
  Tensor A1 = Tensor::fromInt64s({1});
  EXPECT_EQ(toInts(reduce(OpKind::ReduceMin, B, &A1, 0)), (IV{0, 1}));
}

TEST(ReduceMoreKernelsTest, EmptyReductionsGiveTheIdentities) {
  Tensor X(DType::F32, {0, 2});
  Tensor A0 = Tensor::fromInt64s({0});
  expectValues(reduce(OpKind::ReduceMin, X, &A0, 0), {Inf, Inf});
  expectValues(reduce(OpKind::ReduceProd, X, &A0, 0), {1, 1});
  expectValues(reduce(OpKind::ReduceLogSum, X, &A0, 0), {-Inf, -Inf});
  expectValues(reduce(OpKind::ReduceLogSumExp, X, &A0, 0), {-Inf, -Inf});
  expectValues(reduce(OpKind::ReduceL2, X, &A0, 0), {0, 0});
}

TEST(ReduceMoreKernelsTest, IntegersWrapAndTruncate) {
  Tensor P = make(DType::I32, {2}, {65536, 65536});
  EXPECT_EQ(toInts(reduce(OpKind::ReduceProd, P, nullptr, 0)), (IV{0}));
  Tensor Q = make(DType::I32, {2}, {-3, 4});
  EXPECT_EQ(toInts(reduce(OpKind::ReduceL1, Q, nullptr, 0)), (IV{7}));
  EXPECT_EQ(toInts(reduce(OpKind::ReduceL2, Q, nullptr, 0)), (IV{5}));
  EXPECT_EQ(toInts(reduce(OpKind::ReduceSumSquare, Q, nullptr, 0)), (IV{25}));
  Tensor L = make(DType::I64, {2}, {1, 2});
  // log 3 = 1.0986 truncates to 1, log(e^1 + e^2) = 2.3133 to 2.
  EXPECT_EQ(toInts(reduce(OpKind::ReduceLogSum, L, nullptr, 0)), (IV{1}));
  EXPECT_EQ(toInts(reduce(OpKind::ReduceLogSumExp, L, nullptr, 0)), (IV{2}));
  Tensor Min = make(DType::U8, {3}, {7, 255, 3});
  EXPECT_EQ(toInts(reduce(OpKind::ReduceMin, Min, nullptr, 0)), (IV{3}));
}

TEST(ReduceMoreKernelsTest, NoopWithEmptyAxesAndErrors) {
  Tensor X = signedRows();
  Tensor Y = NodeRunner(OpKind::ReduceProd)
                 .attr("noop_with_empty_axes", int64_t(1))
                 .runOk({&X, nullptr});
  EXPECT_EQ(dimsOf(Y), (IV{2, 3}));
  expectValues(Y, {-1, 2, -3, 4, -5, 6});
  Tensor Bad = Tensor::fromInt64s({2});
  NodeRunner(OpKind::ReduceL2).expectError({&X, &Bad}, "out of range");
  Tensor B = make(DType::Bool, {2}, {1, 0});
  NodeRunner(OpKind::ReduceProd).expectError({&B, nullptr}, "bool");
}

Tensor arg(OpKind K, const Tensor &X, int64_t Axis, int64_t KeepDims = 1,
           int64_t Last = 0) {
  return NodeRunner(K)
      .attr("axis", Axis)
      .attr("keepdims", KeepDims)
      .attr("select_last_index", Last)
      .runOk({&X});
}

TEST(ArgReduceKernelsTest, TiesGoFirstOrLast) {
  // [[2, 5, 5], [7, 1, 7]]
  Tensor X = make(DType::F32, {2, 3}, {2, 5, 5, 7, 1, 7});
  Tensor Max = arg(OpKind::ArgMax, X, 1);
  EXPECT_EQ(Max.dtype(), DType::I64);
  EXPECT_EQ(dimsOf(Max), (IV{2, 1}));
  EXPECT_EQ(toInts(Max), (IV{1, 0}));
  EXPECT_EQ(toInts(arg(OpKind::ArgMax, X, -1, 1, 1)), (IV{2, 2}));
  EXPECT_EQ(toInts(arg(OpKind::ArgMin, X, 1)), (IV{0, 1}));
  EXPECT_EQ(toInts(arg(OpKind::ArgMin, X, 1, 1, 1)), (IV{0, 1}));
  Tensor Cols = arg(OpKind::ArgMax, X, 0, 0);
  EXPECT_EQ(dimsOf(Cols), (IV{3}));
  EXPECT_EQ(toInts(Cols), (IV{1, 0, 1}));
  EXPECT_EQ(toInts(arg(OpKind::ArgMin, X, 0, 0)), (IV{0, 1, 0}));
}

TEST(ArgReduceKernelsTest, NaNWinsAndIntegersCompareExactly) {
  Tensor X = make(DType::F32, {4}, {1, NaN, 3, NaN});
  EXPECT_EQ(toInts(arg(OpKind::ArgMax, X, 0, 0)), (IV{1}));
  EXPECT_EQ(toInts(arg(OpKind::ArgMax, X, 0, 0, 1)), (IV{3}));
  EXPECT_EQ(toInts(arg(OpKind::ArgMin, X, 0, 0)), (IV{1}));
  Tensor I(DType::I64, {3});
  int64_t *P = I.mutableData<int64_t>();
  P[0] = INT64_MAX - 1;
  P[1] = INT64_MAX;
  P[2] = INT64_MIN;
  EXPECT_EQ(toInts(arg(OpKind::ArgMax, I, 0)), (IV{1}));
  EXPECT_EQ(toInts(arg(OpKind::ArgMin, I, 0)), (IV{2}));
  Tensor H = make(DType::F16, {3}, {-1, -4, -2});
  EXPECT_EQ(toInts(arg(OpKind::ArgMin, H, 0)), (IV{1}));
}

TEST(ArgReduceKernelsTest, Errors) {
  Tensor X = make(DType::F32, {2, 3}, {0, 1, 2, 3, 4, 5});
  NodeRunner(OpKind::ArgMax)
      .attr("axis", int64_t(2))
      .expectError({&X}, "out of range");
  Tensor E(DType::F32, {2, 0});
  NodeRunner(OpKind::ArgMin)
      .attr("axis", int64_t(1))
      .expectError({&E}, "empty axis");
  Tensor B = make(DType::Bool, {2}, {1, 0});
  NodeRunner(OpKind::ArgMax).expectError({&B}, "bool");
}

} // namespace
