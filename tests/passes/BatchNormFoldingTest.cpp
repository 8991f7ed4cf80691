//===- BatchNormFoldingTest.cpp -------------------------------------------===//
#include "passes/BatchNormFolding.h"
#include "PassTestUtils.h"
#include "llvm/Support/FormatVariadic.h"

using namespace solder;
using namespace solder::test;

namespace {
/// N deterministic values in [-1, 1] as an IR constant list; Offset makes
/// lists differ and Positive keeps them in (0, 2] (variances).
std::string list(int N, int Offset, bool Positive = false) {
  std::string S = "[";
  for (int I = 0; I < N; ++I) {
    double V = double((I * 37 + Offset * 11) % 17 - 8) / 8.0;
    if (Positive)
      V = V + 1.0 + 1.0 / 16;
    S += (I ? ", " : "") + llvm::formatv("{0:f4}", V).str();
  }
  return S + "]";
}

/// The reasons the pass noted, in order.
std::vector<std::string> reasons(llvm::StringRef Text) {
  return noteReasons<BatchNormFolding>(Text);
}

/// Conv [1,4,5,5] -> BatchNormalization on 4 channels, the conv's result
/// read by Extra as well when given.
std::string convBn(llvm::StringRef Extra = "") {
  return llvm::formatv(R"(
graph "g" opset 17 {{
  input %x : f32[1,4,5,5]
  const %w : f32[4,2,3,3] = {0}
  const %b : f32[4] = {1}
  const %scale : f32[4] = {2}
  const %beta : f32[4] = {3}
  const %mean : f32[4] = {4}
  const %var : f32[4] = {5}
  %c = Conv(%x, %w, %b) {{group = 2, pads = [1, 1, 1, 1]} : f32[1,4,5,5] @"conv"
  %y = BatchNormalization(%c, %scale, %beta, %mean, %var) {{epsilon = 0.001} : f32[1,4,5,5] @"bn"
  {6}
  output %y
}
)",
                       list(72, 1), list(4, 2), list(4, 3), list(4, 4),
                       list(4, 5), list(4, 6, true), Extra)
      .str();
}
} // namespace

TEST(BatchNormFolding, FoldsIntoConvExactly) {
  BatchNormFolding P;
  // s = scale / sqrt(var + eps) = [0.5, 4]; t = B - mean * s = [-0.5, 7].
  auto [Changed, After] = runPassOn(P, R"(
graph "g" opset 17 {
  input %x : f32[1,2,3,3]
  const %w : f32[2,2,1,1] = [1.0, 2.0, 3.0, 4.0]
  const %b : f32[2] = [0.5, -1.0]
  const %scale : f32[2] = [1.0, 2.0]
  const %beta : f32[2] = [0.0, 3.0]
  const %mean : f32[2] = [1.0, -1.0]
  const %var : f32[2] = [4.0, 0.25]
  %c = Conv(%x, %w, %b) : f32[1,2,3,3] @"conv"
  %y = BatchNormalization(%c, %scale, %beta, %mean, %var) {epsilon = 0.0} : f32[1,2,3,3] @"bn"
  output %y
}
)");
  EXPECT_TRUE(Changed);
  EXPECT_EQ(After, canonical(R"(
graph "g" opset 17 {
  input %x : f32[1,2,3,3]
  const %w.folded : f32[2,2,1,1] = [0.5, 1.0, 12.0, 16.0]
  const %b.folded : f32[2] = [-0.25, 3.0]
  %y = Conv(%x, %w.folded, %b.folded) : f32[1,2,3,3] @"conv"
  output %y
}
)"));
}

TEST(BatchNormFolding, FoldsIntoGroupedConv) {
  BatchNormFolding P;
  expectRewriteKeepsFunction(P, convBn(), "Conv(%x, %w.folded, %b.folded)",
                             1e-5);
}

TEST(BatchNormFolding, DecomposesWhenConvResultHasSecondUser) {
  std::string Text = convBn("%z = Relu(%c) : f32[1,4,5,5]\n  output %z");
  BatchNormFolding P;
  expectRewriteKeepsFunction(P, Text, "Conv(%x, %w, %b)", 1e-5);
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_EQ(After.find("BatchNormalization"), std::string::npos) << After;
  EXPECT_NE(After.find("%y = Add(%y.scaled, %y.bn_shift)"), std::string::npos)
      << After;
  EXPECT_EQ(reasons(Text),
            std::vector<std::string>{"not folded (Conv result has a second "
                                     "user): became a per-channel Mul and "
                                     "Add"});
}

TEST(BatchNormFolding, DecomposesWithoutConvExactly) {
  BatchNormFolding P;
  auto [Changed, After] = runPassOn(P, R"(
graph "g" opset 17 {
  input %x : f32[1,2,3]
  const %scale : f32[2] = [1.0, 2.0]
  const %beta : f32[2] = [0.0, 3.0]
  const %mean : f32[2] = [1.0, -1.0]
  const %var : f32[2] = [4.0, 0.25]
  %r = Relu(%x) : f32[1,2,3]
  %y = BatchNormalization(%r, %scale, %beta, %mean, %var) {epsilon = 0.0} : f32[1,2,3] @"bn"
  output %y
}
)");
  EXPECT_TRUE(Changed);
  EXPECT_EQ(After, canonical(R"(
graph "g" opset 17 {
  input %x : f32[1,2,3]
  const %y.bn_scale : f32[2,1] = [0.5, 4.0]
  const %y.bn_shift : f32[2,1] = [-0.5, 7.0]
  %r = Relu(%x) : f32[1,2,3]
  %y.scaled = Mul(%r, %y.bn_scale) : f32[1,2,3] @"bn"
  %y = Add(%y.scaled, %y.bn_shift) : f32[1,2,3] @"bn"
  output %y
}
)"));
}

TEST(BatchNormFolding, DecomposedBatchNormKeepsFunction) {
  BatchNormFolding P;
  expectRewriteKeepsFunction(P,
                             llvm::formatv(R"(
graph "g" opset 17 {{
  input %x : f32[2,3,4,2]
  const %scale : f32[3] = {0}
  const %beta : f32[3] = {1}
  const %mean : f32[3] = {2}
  const %var : f32[3] = {3}
  %y = BatchNormalization(%x, %scale, %beta, %mean, %var) : f32[2,3,4,2]
  output %y
}
)",
                                           list(3, 1), list(3, 2), list(3, 3),
                                           list(3, 4, true))
                                 .str(),
                             "Mul(%x, %y.bn_scale)", 1e-5);
}

TEST(BatchNormFolding, LeavesBatchNormWithNonConstantParameters) {
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[1,2,3]
  input %scale : f32[2]
  const %beta : f32[2] = [0.0, 3.0]
  const %mean : f32[2] = [1.0, -1.0]
  const %var : f32[2] = [4.0, 0.25]
  %y = BatchNormalization(%x, %scale, %beta, %mean, %var) : f32[1,2,3]
  output %y
}
)";
  BatchNormFolding P;
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
  EXPECT_EQ(reasons(Text),
            std::vector<std::string>{"batchnorm parameters are not constant"});
}

TEST(BatchNormFolding, FoldsIntoGroupedConvTranspose) {
  BatchNormFolding P;
  // Weights [Cin=4, Cout/group=3, 2, 2], group 2: 6 output channels.
  expectRewriteKeepsFunction(P,
                             llvm::formatv(R"(
graph "g" opset 17 {{
  input %x : f32[1,4,3,3]
  const %w : f32[4,3,2,2] = {0}
  const %scale : f32[6] = {1}
  const %beta : f32[6] = {2}
  const %mean : f32[6] = {3}
  const %var : f32[6] = {4}
  %c = ConvTranspose(%x, %w) {{group = 2, strides = [2, 2]} : f32[1,6,6,6]
  %y = BatchNormalization(%c, %scale, %beta, %mean, %var) : f32[1,6,6,6]
  output %y
}
)",
                                           list(48, 1), list(6, 2), list(6, 3),
                                           list(6, 4), list(6, 5, true))
                                 .str(),
                             "ConvTranspose(%x, %w.folded, %w.bias.folded)",
                             1e-5);
}

TEST(BatchNormFolding, FoldsConvBatchNormMulAddChainInOneRun) {
  std::string Text = llvm::formatv(R"(
graph "g" opset 17 {{
  input %x : f32[1,2,4,4]
  const %w : f32[3,2,1,1] = {0}
  const %scale : f32[3] = {1}
  const %beta : f32[3] = {2}
  const %mean : f32[3] = {3}
  const %var : f32[3] = {4}
  const %m : f32[1,3,1,1] = {5}
  const %a : f32[] = [0.25]
  %c = Conv(%x, %w) : f32[1,3,4,4]
  %bn = BatchNormalization(%c, %scale, %beta, %mean, %var) : f32[1,3,4,4]
  %mul = Mul(%m, %bn) : f32[1,3,4,4]
  %y = Add(%mul, %a) : f32[1,3,4,4]
  output %y
}
)",
                                   list(6, 1), list(3, 2), list(3, 3),
                                   list(3, 4), list(3, 5, true), list(3, 6))
                         .str();
  BatchNormFolding P;
  expectRewriteKeepsFunction(P, Text, "%y = Conv(", 1e-5);
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_EQ(After.find("Mul"), std::string::npos) << After;
  EXPECT_EQ(After.find("Add"), std::string::npos) << After;
}

TEST(BatchNormFolding, AddCreatesConvBias) {
  BatchNormFolding P;
  auto [Changed, After] = runPassOn(P, R"(
graph "g" opset 17 {
  input %x : f32[1,1,2,2]
  const %w : f32[2,1,1,1] = [1.0, 2.0]
  const %t : f32[2,1,1] = [3.0, -4.0]
  %c = Conv(%x, %w) : f32[1,2,2,2]
  %y = Add(%c, %t) : f32[1,2,2,2]
  output %y
}
)");
  EXPECT_TRUE(Changed);
  EXPECT_EQ(After, canonical(R"(
graph "g" opset 17 {
  input %x : f32[1,1,2,2]
  const %w : f32[2,1,1,1] = [1.0, 2.0]
  const %w.bias.folded : f32[2] = [3.0, -4.0]
  %y = Conv(%x, %w, %w.bias.folded) : f32[1,2,2,2]
  output %y
}
)"));
}

TEST(BatchNormFolding, LeavesMulThatIsNotPerChannel) {
  // The constant varies along the width: it cannot scale output channels.
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[1,1,2,2]
  const %w : f32[2,1,1,1] = [1.0, 2.0]
  const %s : f32[1,1,1,2] = [3.0, -4.0]
  %c = Conv(%x, %w) : f32[1,2,2,2]
  %y = Mul(%c, %s) : f32[1,2,2,2]
  output %y
}
)";
  BatchNormFolding P;
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
  EXPECT_EQ(reasons(Text),
            std::vector<std::string>{"the constant is not per-channel"});
}

TEST(BatchNormFolding, LeavesMulWhenConvResultIsAlsoAnOutput) {
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[1,1,2,2]
  const %w : f32[2,1,1,1] = [1.0, 2.0]
  const %s : f32[2,1,1] = [3.0, -4.0]
  %c = Conv(%x, %w) : f32[1,2,2,2]
  %y = Mul(%c, %s) : f32[1,2,2,2]
  output %y
  output %c
}
)";
  BatchNormFolding P;
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
  EXPECT_EQ(reasons(Text),
            std::vector<std::string>{"Conv result is a graph output"});
}

TEST(BatchNormFolding, FoldsMulAndAddIntoGemm) {
  BatchNormFolding P;
  expectRewriteKeepsFunction(
      P,
      llvm::formatv(R"(
graph "g" opset 17 {{
  input %a : f32[3,4]
  const %b : f32[5,4] = {0}
  const %c : f32[1,5] = {1}
  const %s : f32[5] = {2}
  const %t : f32[1,5] = {3}
  %g = Gemm(%a, %b, %c) {{alpha = 0.5, beta = 2.0, transB = 1} : f32[3,5]
  %m = Mul(%g, %s) : f32[3,5]
  %y = Add(%t, %m) : f32[3,5]
  output %y
}
)",
                    list(20, 1), list(5, 2), list(5, 3), list(5, 4))
          .str(),
      "%y = Gemm(%a, %b.folded, %c.folded.folded)", 1e-5);
}

TEST(BatchNormFolding, AddCreatesGemmBias) {
  BatchNormFolding P;
  expectRewriteKeepsFunction(P,
                             llvm::formatv(R"(
graph "g" opset 17 {{
  input %a : f32[3,4]
  input %b : f32[4,5]
  const %t : f32[5] = {0}
  %g = Gemm(%a, %b) : f32[3,5]
  %y = Add(%g, %t) : f32[3,5]
  output %y
}
)",
                                           list(5, 1))
                                 .str(),
                             "%y = Gemm(%a, %b, %b.bias.folded)", 1e-5);
}

TEST(BatchNormFolding, LeavesPerRowMulAfterGemm) {
  const char *Text = R"(
graph "g" opset 17 {
  input %a : f32[2,2]
  const %b : f32[2,2] = [1.0, 2.0, 3.0, 4.0]
  const %s : f32[2,1] = [3.0, -4.0]
  %g = Gemm(%a, %b) : f32[2,2]
  %y = Mul(%g, %s) : f32[2,2]
  output %y
}
)";
  BatchNormFolding P;
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
  EXPECT_EQ(reasons(Text),
            std::vector<std::string>{"the constant is not per-column"});
}

TEST(BatchNormFolding, FoldsMulIntoMatMulWeights) {
  BatchNormFolding P;
  expectRewriteKeepsFunction(P,
                             llvm::formatv(R"(
graph "g" opset 17 {{
  input %a : f32[2,3,4]
  const %b : f32[4,5] = {0}
  const %s : f32[1,5] = {1}
  %m = MatMul(%a, %b) : f32[2,3,5]
  %y = Mul(%m, %s) : f32[2,3,5]
  output %y
}
)",
                                           list(20, 1), list(5, 2))
                                 .str(),
                             "%y = MatMul(%a, %b.folded)", 1e-5);
}

TEST(BatchNormFolding, LeavesAddAfterMatMul) {
  const char *Text = R"(
graph "g" opset 17 {
  input %a : f32[2,2]
  const %b : f32[2,2] = [1.0, 2.0, 3.0, 4.0]
  const %t : f32[2] = [3.0, -4.0]
  %m = MatMul(%a, %b) : f32[2,2]
  %y = Add(%m, %t) : f32[2,2]
  output %y
}
)";
  BatchNormFolding P;
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
  EXPECT_EQ(reasons(Text),
            std::vector<std::string>{"MatMul has no bias operand: the Add is "
                                     "left for epilogue fusion"});
}

TEST(BatchNormFolding, LeavesMulAfterMatMulWithNonConstantWeights) {
  const char *Text = R"(
graph "g" opset 17 {
  input %a : f32[2,2]
  input %b : f32[2,2]
  const %s : f32[2] = [3.0, -4.0]
  %m = MatMul(%a, %b) : f32[2,2]
  %y = Mul(%m, %s) : f32[2,2]
  output %y
}
)";
  BatchNormFolding P;
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
  EXPECT_EQ(reasons(Text), std::vector<std::string>{
                               "MatMul B operand is not a constant matrix"});
}
