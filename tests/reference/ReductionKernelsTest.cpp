//===- ReductionKernelsTest.cpp - Reduce*, Softmax, LayerNormalization ----===//
//
// Hand-checked cases of ReduceSum/Mean/Max (axes operand, negative and
// absent axes, keepdims, noop_with_empty_axes, integer and empty
// reductions), Softmax/LogSoftmax along every axis including large inputs,
// and LayerNormalization with its Mean/InvStdDev results.
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

// X = [[[0,1,2],[3,4,5]], [[6,7,8],[9,10,11]]]  (2x2x3)
Tensor iota3() {
  DV V;
  for (int I = 0; I < 12; ++I)
    V.push_back(I);
  return make(DType::F32, {2, 2, 3}, V);
}

Tensor reduce(OpKind K, const Tensor &X, const Tensor *Axes,
              int64_t KeepDims = 1, int64_t Noop = 0) {
  return NodeRunner(K)
      .attr("keepdims", KeepDims)
      .attr("noop_with_empty_axes", Noop)
      .runOk({&X, Axes});
}

TEST(ReductionKernelsTest, ReduceAxes) {
  Tensor X = iota3();
  Tensor A1 = Tensor::fromInt64s({1});
  Tensor S = reduce(OpKind::ReduceSum, X, &A1);
  EXPECT_EQ(dimsOf(S), (IV{2, 1, 3}));
  expectValues(S, {3, 5, 7, 15, 17, 19});
  Tensor S0 = reduce(OpKind::ReduceSum, X, &A1, 0);
  EXPECT_EQ(dimsOf(S0), (IV{2, 3}));
  Tensor A02 = Tensor::fromInt64s({0, -1});
  Tensor M = reduce(OpKind::ReduceMean, X, &A02, 0);
  EXPECT_EQ(dimsOf(M), (IV{2}));
  expectValues(
      M, {(0 + 1 + 2 + 6 + 7 + 8) / 6.0, (3 + 4 + 5 + 9 + 10 + 11) / 6.0});
  Tensor Last = Tensor::fromInt64s({-1});
  expectValues(reduce(OpKind::ReduceMax, X, &Last), {2, 5, 8, 11});
  Tensor Bad = Tensor::fromInt64s({3});
  NodeRunner(OpKind::ReduceSum).expectError({&X, &Bad}, "out of range");
  Tensor Twice = Tensor::fromInt64s({1, -2});
  NodeRunner(OpKind::ReduceSum).expectError({&X, &Twice}, "repeated");
}

TEST(ReductionKernelsTest, EmptyAxesReduceAllOrNothing) {
  Tensor X = iota3();
  Tensor None = Tensor::fromInt64s({});
  Tensor All = reduce(OpKind::ReduceSum, X, nullptr);
  EXPECT_EQ(dimsOf(All), (IV{1, 1, 1}));
  expectValues(All, {66});
  Tensor AllFlat = reduce(OpKind::ReduceMax, X, &None, 0);
  EXPECT_EQ(dimsOf(AllFlat), IV{});
  expectValues(AllFlat, {11});
  Tensor Noop = reduce(OpKind::ReduceMean, X, &None, 1, 1);
  EXPECT_TRUE(Noop.bitwiseEqual(X));
  EXPECT_TRUE(reduce(OpKind::ReduceSum, X, nullptr, 0, 1).bitwiseEqual(X));
}

TEST(ReductionKernelsTest, ReduceDtypesAndEdgeCases) {
  Tensor I = make(DType::I32, {2, 2}, {-7, 2, 5, 100});
  Tensor A1 = Tensor::fromInt64s({1});
  Tensor M = reduce(OpKind::ReduceMean, I, &A1, 0);
  EXPECT_EQ(M.dtype(), DType::I32);
  EXPECT_EQ(toInts(M), (IV{-2, 52})); // -2.5 and 52.5 truncate
  EXPECT_EQ(toInts(reduce(OpKind::ReduceSum, I, &A1, 0)), (IV{-5, 105}));
  EXPECT_EQ(toInts(reduce(OpKind::ReduceMax, I, &A1, 0)), (IV{2, 100}));
  Tensor U = make(DType::U8, {3}, {200, 100, 1});
  EXPECT_EQ(toInts(reduce(OpKind::ReduceSum, U, nullptr, 0)), (IV{45}));
  Tensor B = make(DType::Bool, {2, 2}, {0, 0, 0, 1});
  EXPECT_EQ(toInts(reduce(OpKind::ReduceMax, B, &A1, 0)), (IV{0, 1}));
  Tensor F = make(DType::F32, {2, 2}, {1, NaN, 3, 4});
  expectValues(reduce(OpKind::ReduceMax, F, &A1, 0), {NaN, 4});
  // Reducing an empty dim: sum 0, max -inf, mean NaN.
  Tensor E = make(DType::F32, {2, 0}, {});
  expectValues(reduce(OpKind::ReduceSum, E, &A1, 0), {0, 0});
  expectValues(reduce(OpKind::ReduceMax, E, &A1, 0), {-Inf, -Inf});
  expectValues(reduce(OpKind::ReduceMean, E, &A1, 0), {NaN, NaN});
  Tensor H = make(DType::F16, {4}, {0.1, 0.2, 0.3, 0.4});
  Tensor HS = reduce(OpKind::ReduceSum, H, nullptr, 0);
  EXPECT_EQ(HS.dtype(), DType::F16);
  expectValues(HS, {1.0}, 1e-3);
}

TEST(ReductionKernelsTest, SoftmaxEveryAxis) {
  Tensor X = iota3();
  for (int64_t Axis : {0, 1, 2, -1}) {
    Tensor Y = NodeRunner(OpKind::Softmax).attr("axis", Axis).runOk({&X});
    Tensor L = NodeRunner(OpKind::LogSoftmax).attr("axis", Axis).runOk({&X});
    unsigned A = Axis < 0 ? Axis + 3 : Axis;
    // Naive: for each element, sum exp over the axis line.
    int64_t Dims[3] = {2, 2, 3};
    int64_t Strides[3] = {6, 3, 1};
    for (int64_t I = 0; I < 12; ++I) {
      int64_t Pos = (I / Strides[A]) % Dims[A];
      int64_t Base = I - Pos * Strides[A];
      double Sum = 0;
      for (int64_t J = 0; J < Dims[A]; ++J)
        Sum += std::exp(double(Base + J * Strides[A]));
      EXPECT_NEAR(Y.getDouble(I), std::exp(double(I)) / Sum, 1e-6)
          << "axis " << Axis << " element " << I;
      EXPECT_NEAR(L.getDouble(I), double(I) - std::log(Sum), 1e-5)
          << "axis " << Axis << " element " << I;
    }
  }
  NodeRunner(OpKind::Softmax)
      .attr("axis", int64_t(3))
      .expectError({&X}, "axis 3");
}

TEST(ReductionKernelsTest, SoftmaxLargeInputs) {
  Tensor X = make(DType::F32, {1, 3}, {1000, 1001, 1002});
  double Z = 1 + std::exp(-1.0) + std::exp(-2.0);
  expectValues(NodeRunner(OpKind::Softmax).runOk({&X}),
               {std::exp(-2.0) / Z, std::exp(-1.0) / Z, 1 / Z});
  expectValues(NodeRunner(OpKind::LogSoftmax).runOk({&X}),
               {-2 - std::log(Z), -1 - std::log(Z), -std::log(Z)});
  Tensor H = make(DType::F16, {2}, {0, 0});
  expectValues(NodeRunner(OpKind::Softmax).runOk({&H}), {0.5, 0.5});
}

TEST(ReductionKernelsTest, LayerNormalization) {
  Tensor X = make(DType::F32, {2, 2}, {1, 3, 2, 6});
  Tensor Scale = make(DType::F32, {2}, {1, 2});
  Tensor B = make(DType::F32, {2}, {0, 1});
  auto R = NodeRunner(OpKind::LayerNormalization, 3)
               .attr("epsilon", 0.0f)
               .run({&X, &Scale, &B});
  ASSERT_TRUE(bool(R)) << llvm::toString(R.takeError());
  // Rows: mean 2 (std 1) and mean 4 (std 2): normalized [-1, 1] both.
  expectValues((*R)[0], {-1, 3, -1, 3});
  EXPECT_EQ(dimsOf((*R)[1]), (IV{2, 1}));
  EXPECT_EQ((*R)[1].dtype(), DType::F32);
  expectValues((*R)[1], {2, 4});
  expectValues((*R)[2], {1, 0.5});

  // axis 0 normalizes everything; scale broadcasts over the whole shape.
  Tensor Full = make(DType::F32, {2, 2}, {1, 1, 1, 1});
  Tensor Y = NodeRunner(OpKind::LayerNormalization)
                 .attr("axis", int64_t(0))
                 .attr("epsilon", 0.0f)
                 .runOk({&X, &Full});
  double Mean = 3, Std = std::sqrt((4 + 0 + 1 + 9) / 4.0);
  expectValues(Y, {(1 - Mean) / Std, (3 - Mean) / Std, (2 - Mean) / Std,
                   (6 - Mean) / Std});

  Tensor H = make(DType::F16, {1, 2}, {1, 3});
  Tensor HS = make(DType::F16, {2}, {1, 1});
  Tensor HY = NodeRunner(OpKind::LayerNormalization).runOk({&H, &HS});
  EXPECT_EQ(HY.dtype(), DType::F16);
  expectValues(HY, {-1, 1}, 1e-3);
  Tensor Wrong = make(DType::F32, {3}, {1, 1, 1});
  NodeRunner(OpKind::LayerNormalization).expectError({&X, &Wrong}, "broadcast");
}

} // namespace
