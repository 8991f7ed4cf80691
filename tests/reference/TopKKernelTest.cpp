//===- TopKKernelTest.cpp - TopK reference kernel and TopK-1 --------------===//
//
// Hand-checked TopK along either axis, largest and smallest, ties by the
// lower index, NaN ranked above every number, k = 0, integer inputs, the
// errors, and TopK-1's k attribute becoming the operand.
//
//===----------------------------------------------------------------------===//
#include "NodeRunner.h"
#include "ir/OpKind.h"
#include "tests/reference/ImportAndRun.h"
#include <limits>

using namespace solder;
using namespace solder::testing;

namespace {

using IV = std::vector<int64_t>;
const double NaN = std::numeric_limits<double>::quiet_NaN();

std::vector<Tensor> topK(const Tensor &X, int64_t K, int64_t Axis,
                         int64_t Largest = 1) {
  Tensor KT = Tensor::fromInt64s({K});
  auto R = NodeRunner(OpKind::TopK, 2)
               .attr("axis", Axis)
               .attr("largest", Largest)
               .run({&X, &KT});
  if (!R) {
    ADD_FAILURE() << llvm::toString(R.takeError());
    return {Tensor(), Tensor()};
  }
  return *R;
}

// [[3, 1, 3, 2], [NaN, 0, 5, -1]]
Tensor rows() { return make(DType::F32, {2, 4}, {3, 1, 3, 2, NaN, 0, 5, -1}); }

TEST(TopKKernelTest, LargestAndSmallestAlongRows) {
  auto L = topK(rows(), 2, 1);
  EXPECT_EQ(dimsOf(L[0]), (IV{2, 2}));
  expectValues(L[0], {3, 3, NaN, 5});
  EXPECT_EQ(L[1].dtype(), DType::I64);
  EXPECT_EQ(toInts(L[1]), (IV{0, 2, 0, 2})); // the tie keeps index order
  auto S = topK(rows(), 3, -1, 0);
  expectValues(S[0], {1, 2, 3, -1, 0, 5});
  EXPECT_EQ(toInts(S[1]), (IV{1, 3, 0, 3, 1, 2}));
}

TEST(TopKKernelTest, AlongColumnsIntegersAndEmpty) {
  auto C = topK(rows(), 1, 0);
  EXPECT_EQ(dimsOf(C[0]), (IV{1, 4}));
  EXPECT_EQ(toInts(C[1]), (IV{1, 0, 1, 0}));
  Tensor I = make(DType::I64, {3}, {-5, 7, 7});
  auto Big = topK(I, 2, 0, 0);
  EXPECT_EQ(toInts(Big[0]), (IV{-5, 7}));
  EXPECT_EQ(toInts(Big[1]), (IV{0, 1}));
  auto None = topK(I, 0, 0);
  EXPECT_EQ(dimsOf(None[0]), (IV{0}));
}

TEST(TopKKernelTest, Errors) {
  Tensor X = rows(), K = Tensor::fromInt64s({5});
  NodeRunner(OpKind::TopK, 2)
      .attr("axis", int64_t(1))
      .expectError({&X, &K}, "is not in [0, 4]");
  Tensor K1 = Tensor::fromInt64s({1});
  NodeRunner(OpKind::TopK, 2)
      .attr("axis", int64_t(2))
      .expectError({&X, &K1}, "out of range");
}

TEST(TopKKernelTest, TopK1TakesKFromItsAttribute) {
  ModelBuilder B(1);
  B.input("x", {"2", "4"});
  setInt(B.node("TopK", {"x"}, {"v", "i"}), "k", 1);
  B.output("v");
  B.output("i");
  auto R = importAndRun(B, {rows()});
  ASSERT_EQ(R.size(), 2u);
  EXPECT_EQ(dimsOf(R[0]), (IV{2, 1}));
  EXPECT_EQ(toInts(R[1]), (IV{0, 0}));
}

} // namespace
