//===- DeadCodeEliminationTest.cpp ----------------------------------------===//
#include "passes/DeadCodeElimination.h"
#include "PassTestUtils.h"

using namespace solder;
using namespace solder::test;

TEST(DeadCodeElimination, RemovesUnusedChainAndConstants) {
  DeadCodeElimination P;
  auto [Changed, After] = runPassOn(P, R"(
graph "g" opset 17 {
  input %x : f32[2,3]
  const %c : f32[1] = [2.0]
  %dead1 = Mul(%x, %c) : f32[2,3]
  %dead2 = Relu(%dead1) : f32[2,3]
  %y = Relu(%x) : f32[2,3]
  output %y
}
)");
  EXPECT_TRUE(Changed);
  EXPECT_EQ(After, canonical(R"(
graph "g" opset 17 {
  input %x : f32[2,3]
  %y = Relu(%x) : f32[2,3]
  output %y
}
)"));
}

TEST(DeadCodeElimination, KeepsUsedNodesOutputsAndUnusedInputs) {
  DeadCodeElimination P;
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[2,3]
  input %unused : f32[4]
  const %c : f32[1] = [2.0]
  %a = Mul(%x, %c) : f32[2,3]
  %y = Relu(%a) : f32[2,3]
  output %y
  output %a
}
)";
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
}
