//===- ConvLayoutTest.cpp -------------------------------------------------===//
#include "passes/ConvLayout.h"
#include "PassTestUtils.h"
#include "llvm/Support/FormatVariadic.h"

using namespace solder;
using namespace solder::test;

namespace {

/// N deterministic values in [-1, 1] as an IR constant list.
std::string list(int N, int Offset) {
  std::string S = "[";
  for (int I = 0; I < N; ++I) {
    double V = double((I * 37 + Offset * 11) % 17 - 8) / 8.0;
    S += (I ? ", " : "") + llvm::formatv("{0:f4}", V).str();
  }
  return S + "]";
}

size_t count(llvm::StringRef Text, llvm::StringRef What) {
  size_t N = 0;
  for (size_t P = Text.find(What); P != llvm::StringRef::npos;
       P = Text.find(What, P + 1))
    ++N;
  return N;
}

/// A ResNet-shaped block: conv + relu, max pool, conv scaled per channel
/// plus the residual, relu, global average pool, flatten.
std::string resnetBlock(llvm::StringRef T = "f32") {
  return llvm::formatv(R"(
graph "g" opset 17 {{
  input %x : {0}[2,3,8,8]
  const %w1 : {0}[4,3,3,3] = {1}
  const %b1 : {0}[4] = {2}
  const %w2 : {0}[4,4,3,3] = {3}
  const %s : {0}[4,1,1] = {4}
  %c1 = Conv(%x, %w1, %b1) {{pads = [1, 1, 1, 1]} : {0}[2,4,8,8] @"c1"
  %r1 = Relu(%c1) : {0}[2,4,8,8] @"r1"
  %p = MaxPool(%r1) {{kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]} : {0}[2,4,4,4] @"pool"
  %c2 = Conv(%p, %w2) {{pads = [1, 1, 1, 1]} : {0}[2,4,4,4] @"c2"
  %m = Mul(%c2, %s) : {0}[2,4,4,4] @"scale"
  %a = Add(%m, %p) : {0}[2,4,4,4] @"residual"
  %r2 = Relu(%a) : {0}[2,4,4,4] @"r2"
  %g = GlobalAveragePool(%r2) : {0}[2,4,1,1] @"gap"
  %f = Flatten(%g) {{axis = 1} : {0}[2,4] @"flat"
  output %f
}
)",
                       T, list(108, 1), list(4, 2), list(144, 3), list(4, 4))
      .str();
}

/// A SqueezeNet fire module: squeeze, two expands, channel Concat.
std::string fire() {
  return llvm::formatv(R"(
graph "g" opset 17 {{
  input %x : f32[1,4,6,6]
  const %ws : f32[2,4,1,1] = {0}
  const %we1 : f32[3,2,1,1] = {1}
  const %we3 : f32[3,2,3,3] = {2}
  %s = Conv(%x, %ws) : f32[1,2,6,6] @"squeeze"
  %e1 = Conv(%s, %we1) : f32[1,3,6,6] @"expand1"
  %e3 = Conv(%s, %we3) {{pads = [1, 1, 1, 1]} : f32[1,3,6,6] @"expand3"
  %cat = Concat(%e1, %e3) {{axis = 1} : f32[1,6,6,6] @"cat"
  %r = Relu(%cat) : f32[1,6,6,6] @"relu"
  output %r
}
)",
                       list(8, 5), list(6, 6), list(54, 7))
      .str();
}

std::pair<bool, std::string> convert(llvm::StringRef Text, ConvLayout Mode,
                                     bool TargetGpu = true) {
  ConvLayoutPass P(Mode, TargetGpu);
  return runPassOn(P, Text);
}

} // namespace

TEST(ConvLayout, ResNetBlockIsNhwcWithOneTransposeAtTheInput) {
  std::string Text = resnetBlock();
  ConvLayoutPass P(ConvLayout::Nhwc, false);
  expectRewriteKeepsFunction(P, Text, "layout = \"NHWC\"", 1e-5);
  auto [Changed, After] = convert(Text, ConvLayout::Nhwc);
  EXPECT_TRUE(Changed);
  // The input's transpose only: the pool, residual, scale and global pool
  // all run channels-last, and the pooled [2,1,1,4] is reshaped (a view).
  EXPECT_EQ(count(After, "Transpose("), 1u) << After;
  EXPECT_NE(After.find("Transpose(%x) {perm = [0, 2, 3, 1]}"),
            std::string::npos)
      << After;
  EXPECT_EQ(count(After, "layout = \"NHWC\""), 3u) << After;
  EXPECT_NE(After.find("ReduceMean("), std::string::npos) << After;
  EXPECT_NE(After.find("Reshape("), std::string::npos) << After;
  // Weights and the per-channel scale were permuted at compile time.
  EXPECT_NE(After.find("const %w1.nhwc : f32[4,3,3,3]"), std::string::npos)
      << After;
  EXPECT_NE(After.find("const %s.nhwc : f32[1,1,1,4]"), std::string::npos)
      << After;
  EXPECT_NE(After.find("output %f"), std::string::npos) << After;
}

TEST(ConvLayout, ConcatAlongChannelsBecomesTheLastAxis) {
  ConvLayoutPass P(ConvLayout::Nhwc, false);
  expectRewriteKeepsFunction(P, fire(), "Concat(", 1e-5);
  auto [Changed, After] = convert(fire(), ConvLayout::Nhwc);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("{axis = 3}"), std::string::npos) << After;
  // At the input and at the model output.
  EXPECT_EQ(count(After, "Transpose("), 2u) << After;
}

TEST(ConvLayout, TransposeStaysBeforeALayoutSensitiveOp) {
  // Softmax over the channels cannot run on NHWC data as it is: the
  // region ends there, with the transpose back to NCHW.
  std::string Text = llvm::formatv(R"(
graph "g" opset 17 {{
  input %x : f32[1,2,3,3]
  const %w : f32[2,2,1,1] = {0}
  %c = Conv(%x, %w) : f32[1,2,3,3] @"conv"
  %y = Softmax(%c) {{axis = 1} : f32[1,2,3,3] @"softmax"
  output %y
}
)",
                                   list(4, 1))
                         .str();
  ConvLayoutPass P(ConvLayout::Nhwc, false);
  expectRewriteKeepsFunction(P, Text, "Softmax(", 1e-6);
  auto [Changed, After] = convert(Text, ConvLayout::Nhwc);
  EXPECT_EQ(count(After, "Transpose("), 2u) << After;
  EXPECT_NE(After.find("perm = [0, 3, 1, 2]"), std::string::npos) << After;
}

TEST(ConvLayout, AutoConvertsReducedPrecisionConvsForTheGpu) {
  auto [Changed, After] = convert(resnetBlock("f16"), ConvLayout::Auto);
  EXPECT_TRUE(Changed);
  EXPECT_EQ(count(After, "layout = \"NHWC\""), 3u) << After;
  EXPECT_EQ(count(After, "Transpose("), 1u) << After;
}

TEST(ConvLayout, AutoLeavesFp32AndCpuPlansAlone) {
  // Negative twins of the test above: fp32 on the GPU, fp16 for the CPU.
  for (auto [Text, Gpu] : {std::pair{resnetBlock("f32"), true},
                           std::pair{resnetBlock("f16"), false}}) {
    auto [Changed, After] = convert(Text, ConvLayout::Auto, Gpu);
    EXPECT_FALSE(Changed);
    EXPECT_EQ(After, canonical(Text));
  }
  auto [Changed, After] = convert(resnetBlock(), ConvLayout::Nchw);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(resnetBlock()));
}

TEST(ConvLayout, ComputedWeightsStayNchw) {
  const char *Text = R"(graph "g" opset 17 {
  input %x : f32[1,2,3,3]
  input %w : f32[2,2,1,1]
  %c = Conv(%x, %w) : f32[1,2,3,3] @"conv"
  output %c
})";
  auto [Changed, After] = convert(Text, ConvLayout::Nhwc);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
  ConvLayoutPass P(ConvLayout::Nhwc, true);
  auto G = parseOrDie(Text);
  ASSERT_TRUE(G);
  DecisionLog Log;
  ASSERT_TRUE(bool(P.run(*G, Log)));
  ASSERT_EQ(Log.records().size(), 1u);
  EXPECT_EQ(Log.records()[0].Reason,
            "only 2-D convolutions with constant weights run in NHWC");
}

TEST(ConvLayout, SpatialMeanNeedsNoTransposeBack) {
  // The dynamo exporter's global pool: ReduceMean over H and W without
  // keepdims. On NHWC data it reduces axes 1 and 2 and its [N, C] result
  // is already in order.
  std::string Text = llvm::formatv(R"(
graph "g" opset 18 {{
  input %x : f32[2,2,3,3]
  const %w : f32[3,2,1,1] = {0}
  const %axes : i64[2] = [2, 3]
  %c = Conv(%x, %w) : f32[2,3,3,3] @"conv"
  %r = Relu(%c) : f32[2,3,3,3] @"relu"
  %m = ReduceMean(%r, %axes) {{keepdims = 0} : f32[2,3] @"mean"
  output %m
}
)",
                                   list(6, 2))
                         .str();
  ConvLayoutPass P(ConvLayout::Nhwc, false);
  expectRewriteKeepsFunction(P, Text, "ReduceMean(", 1e-5);
  auto [Changed, After] = convert(Text, ConvLayout::Nhwc);
  EXPECT_EQ(count(After, "Transpose("), 1u) << After;
  EXPECT_NE(After.find("[1, 2]"), std::string::npos) << After;
}

/// A block whose residual is the block's input (%x, or another input %r
/// when Other): conv + Add(residual) + Relu, then a second conv.
std::string inputResidual(bool Other) {
  return llvm::formatv(R"(
graph "g" opset 17 {{
  input %x : f32[1,2,4,4]
  {2}
  const %w1 : f32[2,2,3,3] = {0}
  const %w2 : f32[2,2,1,1] = {1}
  %c1 = Conv(%x, %w1) {{pads = [1, 1, 1, 1]} : f32[1,2,4,4] @"c1"
  %a = Add(%c1, {3}) : f32[1,2,4,4] @"residual"
  %y = Relu(%a) : f32[1,2,4,4] @"relu"
  %c2 = Conv(%y, %w2) : f32[1,2,4,4] @"c2"
  output %c2
}
)",
                       list(36, 1), list(4, 2),
                       Other ? "input %r : f32[1,2,4,4]" : "",
                       Other ? "%r" : "%x")
      .str();
}

TEST(ConvLayout, ResidualOfTheBlockInputReadsItsTranspose) {
  // The Add reads %x, which the first conv already reads transposed: the
  // Add takes that transpose, so the block runs NHWC between the input's
  // transpose and the output's.
  std::string Text = inputResidual(false);
  ConvLayoutPass P(ConvLayout::Nhwc, false);
  expectRewriteKeepsFunction(P, Text, "layout = \"NHWC\"", 1e-5);
  auto [Changed, After] = convert(Text, ConvLayout::Nhwc);
  EXPECT_TRUE(Changed);
  EXPECT_EQ(count(After, "Transpose("), 2u) << After;
  EXPECT_NE(After.find("Add(%c1.nhwc, %x.nhwc)"), std::string::npos) << After;
}

TEST(ConvLayout, ResidualOfAnotherInputStaysNchw) {
  // The twin: %r has no transpose to read, so the Add (and the Relu) stay
  // NCHW between transposes.
  std::string Text = inputResidual(true);
  ConvLayoutPass P(ConvLayout::Nhwc, false);
  expectRewriteKeepsFunction(P, Text, "layout = \"NHWC\"", 1e-5);
  auto [Changed, After] = convert(Text, ConvLayout::Nhwc);
  EXPECT_TRUE(Changed);
  EXPECT_EQ(count(After, "Transpose("), 4u) << After;
  EXPECT_NE(After.find("Add(%c1, %r)"), std::string::npos) << After;
}
