//===- ConvPadLegalizationTest.cpp ----------------------------------------===//
#include "passes/ConvPadLegalization.h"
#include "PassTestUtils.h"

using namespace solder;
using namespace solder::test;

namespace {
void expectSameFunction(llvm::StringRef Text, llvm::StringRef MustContain) {
  ConvPadLegalization P;
  expectRewriteKeepsFunction(P, Text, MustContain, 1e-5);
}
} // namespace

TEST(ConvPadLegalization, AsymmetricConvPadsBecomeAPad) {
  expectSameFunction(R"(
graph "g" opset 17 {
  input %x : f32[1,2,5,5]
  const %w : f32[3,2,2,2] = [0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, -0.8, 0.9, 1.0, -1.1, 1.2, 0.13, 0.14, -0.15, 0.16, 0.17, -0.18, 0.19, 0.2, 0.21, -0.22, 0.23, 0.24]
  const %b : f32[3] = [0.5, -0.5, 0.25]
  %y = Conv(%x, %w, %b) {pads = [0, 1, 1, 0], strides = [2, 1]} : f32[1,3,3,5]
  output %y
}
)",
                     "Pad(");
}

TEST(ConvPadLegalization, SameAutoPadBecomesExplicit) {
  expectSameFunction(R"(
graph "g" opset 17 {
  input %x : f32[1,1,4,4]
  const %w : f32[1,1,3,3] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
  %y = Conv(%x, %w) {auto_pad = "SAME_UPPER", strides = [2, 2]} : f32[1,1,2,2]
  output %y
}
)",
                     "pads = [");
}

TEST(ConvPadLegalization, ConvTransposeOutputShapeBecomesCropAndBias) {
  expectSameFunction(R"(
graph "g" opset 17 {
  input %x : f32[1,1,3,3]
  const %w : f32[1,2,3,3] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, -1.0, -2.0, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0, -9.0]
  const %b : f32[2] = [0.5, -0.25]
  %y = ConvTranspose(%x, %w, %b) {output_shape = [10, 8], strides = [3, 2]} : f32[1,2,10,8]
  output %y
}
)",
                     "Add(");
}

TEST(ConvPadLegalization, LeavesSymmetricExplicitPads) {
  ConvPadLegalization P;
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[1,1,4,4]
  const %w : f32[1,1,3,3] = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
  %y = Conv(%x, %w) {pads = [1, 1, 1, 1]} : f32[1,1,4,4]
  output %y
}
)";
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
}
