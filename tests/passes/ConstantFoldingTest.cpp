//===- ConstantFoldingTest.cpp --------------------------------------------===//
#include "passes/ConstantFolding.h"
#include "PassTestUtils.h"

using namespace solder;
using namespace solder::test;

TEST(ConstantFolding, FoldsChainsInOneSweep) {
  ConstantFolding P(1 << 20);
  auto [Changed, After] = runPassOn(P, R"(
graph "g" opset 17 {
  input %x : f32[2]
  const %a : f32[2] = [1.0, 2.0]
  const %b : f32[2] = [3.0, -4.0]
  %s = Add(%a, %b) : f32[2]
  %r = Relu(%s) : f32[2]
  %y = Mul(%x, %r) : f32[2]
  output %y
}
)");
  EXPECT_TRUE(Changed);
  // Folded constants come after the original ones; unused originals stay
  // for dead-code elimination to remove.
  EXPECT_EQ(After, canonical(R"(
graph "g" opset 17 {
  input %x : f32[2]
  const %a : f32[2] = [1.0, 2.0]
  const %b : f32[2] = [3.0, -4.0]
  const %s : f32[2] = [4.0, -2.0]
  const %r : f32[2] = [4.0, 0.0]
  %y = Mul(%x, %r) : f32[2]
  output %y
}
)"));
}

TEST(ConstantFolding, FoldsShapeArithmeticForReshape) {
  ConstantFolding P(1 << 20);
  auto [Changed, After] = runPassOn(P, R"(
graph "g" opset 17 {
  input %x : f32[6,4]
  const %d : i64[1] = [3]
  const %m : i64[1] = [-1]
  %shape = Concat(%d, %m) {axis = 0} : i64[2]
  %y = Reshape(%x, %shape) : f32[?,?]
  output %y
}
)");
  EXPECT_TRUE(Changed);
  EXPECT_EQ(After, canonical(R"(
graph "g" opset 17 {
  input %x : f32[6,4]
  const %d : i64[1] = [3]
  const %m : i64[1] = [-1]
  const %shape : i64[2] = [3, -1]
  %y = Reshape(%x, %shape) : f32[3,8]
  output %y
}
)"));
}

TEST(ConstantFolding, LeavesNodesWithRuntimeOperands) {
  ConstantFolding P(1 << 20);
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[2]
  const %a : f32[2] = [1.0, 2.0]
  %y = Add(%x, %a) : f32[2]
  output %y
}
)";
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
}

TEST(ConstantFolding, LeavesResultsAboveTheSizeLimit) {
  ConstantFolding P(/*MaxResultBytes=*/64);
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[1000]
  const %a : f32[1] = [1.0]
  const %shape : i64[1] = [1000]
  %big = Expand(%a, %shape) : f32[1000]
  %y = Add(%x, %big) : f32[1000]
  output %y
}
)";
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
}
