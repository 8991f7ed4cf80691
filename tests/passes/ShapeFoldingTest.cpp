//===- ShapeFoldingTest.cpp -----------------------------------------------===//
#include "passes/ShapeFolding.h"
#include "PassTestUtils.h"

using namespace solder;
using namespace solder::test;

TEST(ShapeFolding, FoldsShapeOfStaticTensor) {
  ShapeFolding P;
  auto [Changed, After] = runPassOn(P, R"(
graph "g" opset 17 {
  input %x : f32[1,3,4]
  %s = Shape(%x) {start = 1} : i64[2]
  %y = Reshape(%x, %s) : f32[?,?]
  output %y
}
)");
  EXPECT_TRUE(Changed);
  // The Reshape's type is re-inferred from the now-constant shape.
  EXPECT_EQ(After, canonical(R"(
graph "g" opset 17 {
  input %x : f32[1,3,4]
  const %s : i64[2] = [3, 4]
  %y = Reshape(%x, %s) : f32[3,4]
  output %y
}
)"));
}

TEST(ShapeFolding, LeavesShapeOfSymbolicTensor) {
  ShapeFolding P;
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[N,4]
  %s = Shape(%x) : i64[2]
  output %s
}
)";
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
}
