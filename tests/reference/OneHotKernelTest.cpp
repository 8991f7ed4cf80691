//===- OneHotKernelTest.cpp - OneHot reference kernel and OneHot-9 --------===//
//
// Hand-checked OneHot results along the last and the first axis, negative
// indices that wrap and out-of-range ones that give off values, float
// indices that truncate, bool values and the errors; and OneHot-9 models,
// whose negative indices the importer turns out of range.
//
//===----------------------------------------------------------------------===//
#include "NodeRunner.h"
#include "ir/OpKind.h"
#include "tests/reference/ImportAndRun.h"

using namespace solder;
using namespace solder::testing;

namespace {

using IV = std::vector<int64_t>;

Tensor oneHot(const Tensor &I, const Tensor &D, const Tensor &V,
              int64_t Axis = -1) {
  return NodeRunner(OpKind::OneHot).attr("axis", Axis).runOk({&I, &D, &V});
}

TEST(OneHotKernelTest, WrapsNegativeIndicesAndDropsOutOfRangeOnes) {
  Tensor I = make(DType::I64, {4}, {1, -1, 3, 0});
  Tensor D = make(DType::I64, {}, {3});
  Tensor V = make(DType::F32, {2}, {0, 5});
  Tensor Last = oneHot(I, D, V);
  EXPECT_EQ(dimsOf(Last), (IV{4, 3}));
  expectValues(Last, {0, 5, 0, 0, 0, 5, 0, 0, 0, 5, 0, 0});
  Tensor First = oneHot(I, D, V, 0);
  EXPECT_EQ(dimsOf(First), (IV{3, 4}));
  expectValues(First, {0, 0, 0, 5, 5, 0, 0, 0, 0, 5, 0, 0});
  Tensor Far = make(DType::I32, {2}, {-4, 3});
  expectValues(oneHot(Far, D, V), {0, 0, 0, 0, 0, 0});
}

TEST(OneHotKernelTest, FloatIndicesTruncateAndValuesKeepTheirType) {
  // 1.7 -> 1, -0.5 -> 0, -2.9 -> -2 -> 1.
  Tensor I = make(DType::F32, {3}, {1.7, -0.5, -2.9});
  Tensor D = make(DType::F32, {1}, {3});
  Tensor V = make(DType::Bool, {2}, {0, 1});
  Tensor Y = oneHot(I, D, V);
  EXPECT_EQ(Y.dtype(), DType::Bool);
  EXPECT_EQ(toInts(Y), (IV{0, 1, 0, 1, 0, 0, 0, 1, 0}));
  // A middle axis of a [2, 2] index tensor.
  Tensor J = make(DType::I64, {2, 2}, {0, 1, 1, 0});
  Tensor W = make(DType::I64, {2}, {-1, 7});
  Tensor M = oneHot(J, make(DType::I64, {}, {2}), W, 1);
  EXPECT_EQ(dimsOf(M), (IV{2, 2, 2}));
  EXPECT_EQ(toInts(M), (IV{7, -1, -1, 7, -1, 7, 7, -1}));
}

TEST(OneHotKernelTest, Errors) {
  Tensor I = make(DType::I64, {2}, {0, 1});
  Tensor V = make(DType::F32, {2}, {0, 1});
  Tensor Zero = make(DType::I64, {}, {0});
  NodeRunner(OpKind::OneHot).expectError({&I, &Zero, &V}, "depth must be");
  Tensor D = make(DType::I64, {}, {2});
  Tensor V3 = make(DType::F32, {3}, {0, 1, 2});
  NodeRunner(OpKind::OneHot).expectError({&I, &D, &V3}, "values must be");
  NodeRunner(OpKind::OneHot)
      .attr("axis", int64_t(2))
      .expectError({&I, &D, &V}, "out of range");
}

/// One OneHot node at Opset on indices [-1, 1] with depth 3.
Tensor runOneHotModel(int64_t Opset) {
  ModelBuilder B(Opset);
  B.input("i", {"2"}, onnx::TensorProto::INT64);
  B.initializer("d", make(DType::I64, {}, {3}));
  B.initFloats("v", {0, 1}, {2});
  B.node("OneHot", {"i", "d", "v"}, {"y"});
  B.output("y");
  auto R = importAndRun(B, {make(DType::I64, {2}, {-1, 1})});
  return R.empty() ? Tensor() : R[0];
}

TEST(OneHotKernelTest, OneHot9NegativeIndicesAreOff) {
  expectValues(runOneHotModel(9), {0, 0, 0, 0, 1, 0});
  expectValues(runOneHotModel(11), {0, 0, 1, 0, 1, 0});
}

} // namespace
