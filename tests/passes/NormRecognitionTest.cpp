//===- NormRecognitionTest.cpp --------------------------------------------===//
#include "passes/NormRecognition.h"
#include "PassTestUtils.h"

using namespace solder;
using namespace solder::test;

namespace {
void expectUnchanged(const char *Text, llvm::StringRef Reason) {
  expectUnchangedWithReason<NormRecognition>(Text, Reason);
}

/// torch's legacy LayerNorm export over the last dim of f32[2,3,4].
const char *TorchLayerNorm = R"(
graph "g" opset 14 {
  input %x : f32[2,3,4]
  const %axes : i64[1] = [-1]
  const %two : f32[] = [2.0]
  const %eps : f32[] = [1e-05]
  const %gamma : f32[4] = [1.0, 2.0, -1.0, 0.5]
  const %beta : f32[4] = [0.0, 0.5, 1.0, -2.0]
  %m = ReduceMean(%x, %axes) : f32[2,3,1]
  %d = Sub(%x, %m) : f32[2,3,4]
  %p = Pow(%d, %two) : f32[2,3,4]
  %v = ReduceMean(%p, %axes) : f32[2,3,1]
  %ve = Add(%v, %eps) : f32[2,3,1]
  %s = Sqrt(%ve) : f32[2,3,1]
  %n = Div(%d, %s) : f32[2,3,4]
  %y = Mul(%n, %gamma) : f32[2,3,4]
  %z = Add(%y, %beta) : f32[2,3,4] @"ln_add"
  output %z
}
)";
} // namespace

TEST(NormRecognition, TorchLayerNormBecomesOneOp) {
  NormRecognition P;
  auto [Changed, After] = runPassOn(P, TorchLayerNorm);
  EXPECT_TRUE(Changed);
  EXPECT_EQ(After, canonical(R"(
graph "g" opset 14 {
  input %x : f32[2,3,4]
  const %gamma : f32[4] = [1.0, 2.0, -1.0, 0.5]
  const %beta : f32[4] = [0.0, 0.5, 1.0, -2.0]
  %z = LayerNormalization(%x, %gamma, %beta) {axis = 2, epsilon = 1e-05} : f32[2,3,4] @"ln_add"
  output %z
}
)"));
}

TEST(NormRecognition, TorchLayerNormKeepsFunction) {
  NormRecognition P;
  expectRewriteKeepsFunction(P, TorchLayerNorm, "LayerNormalization", 1e-5);
}

TEST(NormRecognition, LayerNormWithReciprocalOverTwoDimsWithoutAffine) {
  NormRecognition P;
  expectRewriteKeepsFunction(P, R"(
graph "g" opset 13 {
  input %x : f32[2,3,4]
  const %axes : i64[2] = [2, 1]
  const %eps : f32[] = [0.001]
  %m = ReduceMean(%x, %axes) : f32[2,1,1]
  %d = Sub(%x, %m) : f32[2,3,4]
  %p = Mul(%d, %d) : f32[2,3,4]
  %v = ReduceMean(%p, %axes) : f32[2,1,1]
  %ve = Add(%eps, %v) : f32[2,1,1]
  %s = Sqrt(%ve) : f32[2,1,1]
  %r = Reciprocal(%s) : f32[2,1,1]
  %n = Mul(%r, %d) : f32[2,3,4]
  %y = Relu(%n) : f32[2,3,4]
  output %y
}
)",
                             "%n = LayerNormalization(%x, %n.ones) {axis = 1",
                             1e-5);
}

TEST(NormRecognition, LayerNormWithBroadcastConstantScale) {
  NormRecognition P;
  expectRewriteKeepsFunction(
      P, R"(
graph "g" opset 14 {
  input %x : f32[2,3,4]
  const %axes : i64[1] = [2]
  const %two : f32[] = [2.0]
  const %eps : f32[] = [1e-05]
  const %gamma : f32[1,1,4] = [1.0, 2.0, -1.0, 0.5]
  %m = ReduceMean(%x, %axes) : f32[2,3,1]
  %d = Sub(%x, %m) : f32[2,3,4]
  %p = Pow(%d, %two) : f32[2,3,4]
  %v = ReduceMean(%p, %axes) : f32[2,3,1]
  %ve = Add(%v, %eps) : f32[2,3,1]
  %s = Sqrt(%ve) : f32[2,3,1]
  %n = Div(%d, %s) : f32[2,3,4]
  %y = Mul(%gamma, %n) : f32[2,3,4]
  output %y
}
)",
      "%y = LayerNormalization(%x, %gamma.normalized) {axis = 2", 1e-5);
}

TEST(NormRecognition, LeavesLayerNormWhenTheMeanHasSecondUser) {
  expectUnchanged(R"(
graph "g" opset 14 {
  input %x : f32[2,4]
  const %axes : i64[1] = [-1]
  const %two : f32[] = [2.0]
  const %eps : f32[] = [1e-05]
  %m = ReduceMean(%x, %axes) : f32[2,1]
  %d = Sub(%x, %m) : f32[2,4]
  %p = Pow(%d, %two) : f32[2,4]
  %v = ReduceMean(%p, %axes) : f32[2,1]
  %ve = Add(%v, %eps) : f32[2,1]
  %s = Sqrt(%ve) : f32[2,1]
  %n = Div(%d, %s) : f32[2,4]
  output %n
  output %m
}
)",
                  "intermediate has a second user");
}

TEST(NormRecognition, LeavesMeanOverLeadingDims) {
  expectUnchanged(R"(
graph "g" opset 14 {
  input %x : f32[2,4]
  const %axes : i64[1] = [0]
  const %two : f32[] = [2.0]
  const %eps : f32[] = [1e-05]
  %m = ReduceMean(%x, %axes) : f32[1,4]
  %d = Sub(%x, %m) : f32[2,4]
  %p = Pow(%d, %two) : f32[2,4]
  %v = ReduceMean(%p, %axes) : f32[1,4]
  %ve = Add(%v, %eps) : f32[1,4]
  %s = Sqrt(%ve) : f32[1,4]
  %n = Div(%d, %s) : f32[2,4]
  output %n
}
)",
                  "the mean is not over the trailing dims with keepdims = 1");
}

TEST(NormRecognition, RmsNormBecomesOneOp) {
  NormRecognition P;
  auto [Changed, After] = runPassOn(P, R"(
graph "g" opset 17 {
  input %x : f32[2,4]
  const %axes : i64[1] = [-1]
  const %two : f32[] = [2.0]
  const %eps : f32[] = [1e-06]
  const %w : f32[4] = [1.0, 2.0, -1.0, 0.5]
  %p = Pow(%x, %two) : f32[2,4]
  %v = ReduceMean(%p, %axes) : f32[2,1]
  %ve = Add(%v, %eps) : f32[2,1]
  %s = Sqrt(%ve) : f32[2,1]
  %n = Div(%x, %s) : f32[2,4]
  %y = Mul(%w, %n) : f32[2,4] @"rms"
  output %y
}
)");
  EXPECT_TRUE(Changed);
  EXPECT_EQ(After, canonical(R"(
graph "g" opset 17 {
  input %x : f32[2,4]
  const %w : f32[4] = [1.0, 2.0, -1.0, 0.5]
  %y = RMSNormalization(%x, %w) {axis = 1, epsilon = 1e-06} : f32[2,4] @"rms"
  output %y
}
)"));
}

TEST(NormRecognition, RmsNormWithReciprocalKeepsFunction) {
  NormRecognition P;
  expectRewriteKeepsFunction(P, R"(
graph "g" opset 17 {
  input %x : f32[3,5,8]
  const %axes : i64[1] = [-1]
  const %eps : f32[] = [1e-06]
  const %w : f32[8] = [1.0, 2.0, -1.0, 0.5, 0.25, 3.0, -0.5, 1.5]
  %p = Mul(%x, %x) : f32[3,5,8]
  %v = ReduceMean(%p, %axes) : f32[3,5,1]
  %ve = Add(%v, %eps) : f32[3,5,1]
  %s = Sqrt(%ve) : f32[3,5,1]
  %r = Reciprocal(%s) : f32[3,5,1]
  %n = Mul(%x, %r) : f32[3,5,8]
  %y = Mul(%n, %w) : f32[3,5,8]
  output %y
}
)",
                             "%y = RMSNormalization(%x, %w) {axis = 2", 1e-5);
}

// torch exports rsqrt as Div(1, Sqrt(..)).
TEST(NormRecognition, RmsNormWithRsqrtAsDivision) {
  NormRecognition P;
  expectRewriteKeepsFunction(P, R"(
graph "g" opset 17 {
  input %x : f32[3,8]
  const %axes : i64[1] = [1]
  const %two : f32[] = [2.0]
  const %one : f32[] = [1.0]
  const %eps : f32[] = [1e-06]
  %p = Pow(%x, %two) : f32[3,8]
  %v = ReduceMean(%p, %axes) : f32[3,1]
  %ve = Add(%v, %eps) : f32[3,1]
  %s = Sqrt(%ve) : f32[3,1]
  %r = Div(%one, %s) : f32[3,1]
  %y = Mul(%x, %r) : f32[3,8]
  output %y
}
)",
                             "%y = RMSNormalization(%x, %y.ones) {axis = 1",
                             1e-5);
}

TEST(NormRecognition, LeavesRmsNormWhenTheSquareHasSecondUser) {
  expectUnchanged(R"(
graph "g" opset 17 {
  input %x : f32[2,4]
  const %axes : i64[1] = [-1]
  const %two : f32[] = [2.0]
  const %eps : f32[] = [1e-06]
  %p = Pow(%x, %two) : f32[2,4]
  %v = ReduceMean(%p, %axes) : f32[2,1]
  %ve = Add(%v, %eps) : f32[2,1]
  %s = Sqrt(%ve) : f32[2,1]
  %n = Div(%x, %s) : f32[2,4]
  %y = Add(%n, %p) : f32[2,4]
  output %y
}
)",
                  "intermediate has a second user");
}

TEST(NormRecognition, LeavesSqrtThatIsNotDividedInto) {
  expectUnchanged(R"(
graph "g" opset 17 {
  input %x : f32[2,4]
  const %axes : i64[1] = [-1]
  const %two : f32[] = [2.0]
  const %eps : f32[] = [1e-06]
  %p = Pow(%x, %two) : f32[2,4]
  %v = ReduceMean(%p, %axes) : f32[2,1]
  %ve = Add(%v, %eps) : f32[2,1]
  %s = Sqrt(%ve) : f32[2,1]
  %n = Mul(%x, %s) : f32[2,4]
  output %n
}
)",
                  "the normalization is not d / sqrt(var + eps)");
}
