//===- MatMulBroadcastLegalizationTest.cpp --------------------------------===//
#include "passes/MatMulBroadcastLegalization.h"
#include "PassTestUtils.h"

using namespace solder;
using namespace solder::test;

namespace {
/// Expanding is a copy: the results must be bitwise equal.
void expectExpanded(llvm::StringRef Text, llvm::StringRef MustContain) {
  MatMulBroadcastLegalization P;
  expectRewriteKeepsFunction(P, Text, MustContain, 0.0);
}
} // namespace

TEST(MatMulBroadcastLegalization, CrossBroadcastExpandsBothOperands) {
  expectExpanded(R"(
graph "g" opset 17 {
  input %a : f32[2,1,3,4]
  input %b : f32[1,5,4,2]
  %y = MatMul(%a, %b) : f32[2,5,3,2]
  output %y
}
)",
                 "Expand(%a, %a.batched.shape) : f32[2,5,3,4]");
}

TEST(MatMulBroadcastLegalization, PartlyBatchedOperandIsExpanded) {
  expectExpanded(R"(
graph "g" opset 17 {
  input %a : f32[4,3,5]
  input %b : f32[2,4,5,6]
  %y = MatMul(%a, %b) : f32[2,4,3,6]
  output %y
}
)",
                 "Expand(%a, %a.batched.shape) : f32[2,4,3,5]");
}

TEST(MatMulBroadcastLegalization, LeavesStridedBatchesAlone) {
  MatMulBroadcastLegalization P;
  // Fully batched against unbatched, and a 1-D operand: cuBLASLt takes both.
  const char *Text = R"(
graph "g" opset 17 {
  input %a : f32[2,3,3,4]
  input %b : f32[1,1,4,2]
  input %v : f32[4]
  %y = MatMul(%a, %b) : f32[2,3,3,2]
  %z = MatMul(%a, %v) : f32[2,3,3]
  output %y
  output %z
}
)";
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
}
