//===- ScatterKernelsTest.cpp - ScatterElements and ScatterND -------------===//
//
// Hand-checked scatters with every reduction over duplicate and negative
// indices (applied in update order), updates smaller than data along the
// other dims, whole-slice ScatterND, and out-of-range indices refused.
//
//===----------------------------------------------------------------------===//
#include "NodeRunner.h"
#include "ir/OpKind.h"

using namespace solder;
using namespace solder::testing;

namespace {

Tensor scatter(OpKind K, const Tensor &D, const Tensor &I, const Tensor &U,
               const std::string &Reduction = "none") {
  return NodeRunner(K).attr("reduction", Reduction).runOk({&D, &I, &U});
}

TEST(ScatterKernelsTest, ElementsEveryReductionInOrder) {
  // Index 1 twice (5, then 7) and -1 (the last element) once.
  Tensor D = make(DType::F32, {3}, {1, 1, 1});
  Tensor I = make(DType::I64, {3}, {1, 1, -1});
  Tensor U = make(DType::F32, {3}, {5, 7, 3});
  OpKind K = OpKind::ScatterElements;
  expectValues(scatter(K, D, I, U), {1, 7, 3});
  expectValues(scatter(K, D, I, U, "add"), {1, 13, 4});
  expectValues(scatter(K, D, I, U, "mul"), {1, 35, 3});
  expectValues(scatter(K, D, I, U, "max"), {1, 7, 3});
  expectValues(scatter(K, D, I, U, "min"), {1, 1, 1});
}

TEST(ScatterKernelsTest, ElementsAlongAxisOneWithSmallerUpdates) {
  Tensor D = make(DType::I32, {2, 3}, {0, 0, 0, 0, 0, 0});
  Tensor I = make(DType::I32, {1, 1}, {2});
  Tensor U = make(DType::I32, {1, 1}, {9});
  Tensor Y = NodeRunner(OpKind::ScatterElements)
                 .attr("axis", int64_t(1))
                 .runOk({&D, &I, &U});
  EXPECT_EQ(toInts(Y), (std::vector<int64_t>{0, 0, 9, 0, 0, 0}));
}

TEST(ScatterKernelsTest, NDElementsAndSlices) {
  Tensor D = make(DType::F32, {4}, {1, 2, 3, 4});
  Tensor I = make(DType::I64, {3, 1}, {1, 3, 1});
  Tensor U = make(DType::F32, {3}, {10, 20, 30});
  expectValues(scatter(OpKind::ScatterND, D, I, U), {1, 30, 3, 20});
  expectValues(scatter(OpKind::ScatterND, D, I, U, "add"), {1, 42, 3, 24});
  Tensor D2 = make(DType::F32, {2, 2}, {0, 0, 0, 0});
  Tensor I2 = make(DType::I64, {1, 1}, {-1});
  Tensor U2 = make(DType::F32, {1, 2}, {5, 6});
  expectValues(scatter(OpKind::ScatterND, D2, I2, U2), {0, 0, 5, 6});
}

TEST(ScatterKernelsTest, OutOfRangeIndicesAreRefused) {
  Tensor D = make(DType::F32, {3}, {1, 1, 1});
  Tensor I = make(DType::I64, {1}, {3});
  Tensor U = make(DType::F32, {1}, {5});
  NodeRunner(OpKind::ScatterElements)
      .expectError({&D, &I, &U}, "index 3 is out of range");
  Tensor IN = make(DType::I64, {1, 1}, {-4});
  NodeRunner(OpKind::ScatterND)
      .expectError({&D, &IN, &U}, "index -4 is out of range");
}

} // namespace
