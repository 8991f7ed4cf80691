//===- GeluRecognitionTest.cpp --------------------------------------------===//
#include "passes/GeluRecognition.h"
#include "PassTestUtils.h"

using namespace solder;
using namespace solder::test;

namespace {
void expectUnchanged(const char *Text, llvm::StringRef Reason) {
  expectUnchangedWithReason<GeluRecognition>(Text, Reason);
}
} // namespace

// torch's legacy exporter: (x * (1 + erf(x / sqrt 2))) * 0.5.
TEST(GeluRecognition, ErfFormAsTorchExportsIt) {
  GeluRecognition P;
  auto [Changed, After] = runPassOn(P, R"(
graph "g" opset 14 {
  input %x : f32[2,3]
  const %sqrt2 : f32[] = [1.4142135]
  const %one : f32[] = [1.0]
  const %half : f32[] = [0.5]
  %d = Div(%x, %sqrt2) : f32[2,3]
  %e = Erf(%d) : f32[2,3]
  %a = Add(%e, %one) : f32[2,3]
  %m = Mul(%x, %a) : f32[2,3]
  %y = Mul(%m, %half) : f32[2,3] @"gelu_mul"
  output %y
}
)");
  EXPECT_TRUE(Changed);
  EXPECT_EQ(After, canonical(R"(
graph "g" opset 14 {
  input %x : f32[2,3]
  %y = Gelu(%x) : f32[2,3] @"gelu_mul"
  output %y
}
)"));
}

TEST(GeluRecognition, ErfFormTorchOrderKeepsFunction) {
  GeluRecognition P;
  expectRewriteKeepsFunction(P, R"(
graph "g" opset 14 {
  input %x : f32[4,8]
  const %sqrt2 : f32[] = [1.4142135]
  const %one : f32[] = [1.0]
  const %half : f32[] = [0.5]
  %d = Div(%x, %sqrt2) : f32[4,8]
  %e = Erf(%d) : f32[4,8]
  %a = Add(%one, %e) : f32[4,8]
  %m = Mul(%a, %x) : f32[4,8]
  %y = Mul(%half, %m) : f32[4,8]
  output %y
}
)",
                             "%y = Gelu(%x)", 1e-6);
}

// HF: x * 0.5 * (1 + erf(x * sqrt(0.5))).
TEST(GeluRecognition, ErfFormWithHalfXFirst) {
  GeluRecognition P;
  expectRewriteKeepsFunction(P, R"(
graph "g" opset 17 {
  input %x : f32[4,8]
  const %rsqrt2 : f32[1] = [0.70710677]
  const %one : f32[] = [1.0]
  const %half : f32[] = [0.5]
  %h = Mul(%x, %half) : f32[4,8]
  %d = Mul(%rsqrt2, %x) : f32[4,8]
  %e = Erf(%d) : f32[4,8]
  %a = Add(%e, %one) : f32[4,8]
  %y = Mul(%h, %a) : f32[4,8]
  output %y
}
)",
                             "%y = Gelu(%x)", 1e-6);
}

// (1 + erf) * 0.5, then * x.
TEST(GeluRecognition, ErfFormWithHalfAppliedToTheSum) {
  GeluRecognition P;
  expectRewriteKeepsFunction(P, R"(
graph "g" opset 17 {
  input %x : f32[4,8]
  const %sqrt2 : f32[] = [1.4142135]
  const %one : f32[] = [1.0]
  const %half : f32[] = [0.5]
  %d = Div(%x, %sqrt2) : f32[4,8]
  %e = Erf(%d) : f32[4,8]
  %a = Add(%e, %one) : f32[4,8]
  %k = Mul(%a, %half) : f32[4,8]
  %y = Mul(%x, %k) : f32[4,8]
  output %y
}
)",
                             "%y = Gelu(%x)", 1e-6);
}

TEST(GeluRecognition, LeavesErfFormWhenIntermediateHasSecondUser) {
  expectUnchanged(R"(
graph "g" opset 14 {
  input %x : f32[2,3]
  const %sqrt2 : f32[] = [1.4142135]
  const %one : f32[] = [1.0]
  const %half : f32[] = [0.5]
  %d = Div(%x, %sqrt2) : f32[2,3]
  %e = Erf(%d) : f32[2,3]
  %a = Add(%e, %one) : f32[2,3]
  %m = Mul(%x, %a) : f32[2,3]
  %y = Mul(%m, %half) : f32[2,3]
  output %y
  output %a
}
)",
                  "intermediate has a second user");
}

TEST(GeluRecognition, LeavesErfOfAnotherScale) {
  expectUnchanged(R"(
graph "g" opset 14 {
  input %x : f32[2,3]
  const %two : f32[] = [2.0]
  const %one : f32[] = [1.0]
  const %half : f32[] = [0.5]
  %d = Div(%x, %two) : f32[2,3]
  %e = Erf(%d) : f32[2,3]
  %a = Add(%e, %one) : f32[2,3]
  %m = Mul(%x, %a) : f32[2,3]
  %y = Mul(%m, %half) : f32[2,3]
  output %y
}
)",
                  "Erf input is not x / sqrt(2)");
}

TEST(GeluRecognition, LeavesProductWithAnotherFactor) {
  expectUnchanged(R"(
graph "g" opset 14 {
  input %x : f32[2,3]
  const %sqrt2 : f32[] = [1.4142135]
  const %one : f32[] = [1.0]
  const %quarter : f32[] = [0.25]
  %d = Div(%x, %sqrt2) : f32[2,3]
  %e = Erf(%d) : f32[2,3]
  %a = Add(%e, %one) : f32[2,3]
  %m = Mul(%x, %a) : f32[2,3]
  %y = Mul(%m, %quarter) : f32[2,3]
  output %y
}
)",
                  "the activation is not multiplied out as 0.5 * x * (1 + "
                  "act)");
}

TEST(GeluRecognition, TanhFormWithPow) {
  GeluRecognition P;
  expectRewriteKeepsFunction(P, R"(
graph "g" opset 17 {
  input %x : f32[4,8]
  const %three : f32[] = [3.0]
  const %c : f32[] = [0.044715]
  const %k : f32[] = [0.7978846]
  const %one : f32[] = [1.0]
  const %half : f32[] = [0.5]
  %p = Pow(%x, %three) : f32[4,8]
  %q = Mul(%c, %p) : f32[4,8]
  %s = Add(%x, %q) : f32[4,8]
  %t = Mul(%k, %s) : f32[4,8]
  %th = Tanh(%t) : f32[4,8]
  %a = Add(%th, %one) : f32[4,8]
  %h = Mul(%half, %x) : f32[4,8]
  %y = Mul(%h, %a) : f32[4,8]
  output %y
}
)",
                             "%y = Gelu(%x) {approximate = \"tanh\"}", 1e-6);
}

TEST(GeluRecognition, TanhFormWithCubeAsProducts) {
  GeluRecognition P;
  expectRewriteKeepsFunction(P, R"(
graph "g" opset 17 {
  input %x : f32[4,8]
  const %c : f32[] = [0.044715]
  const %k : f32[] = [0.7978846]
  const %one : f32[] = [1.0]
  const %half : f32[] = [0.5]
  %x2 = Mul(%x, %x) : f32[4,8]
  %x3 = Mul(%x2, %x) : f32[4,8]
  %q = Mul(%x3, %c) : f32[4,8]
  %s = Add(%q, %x) : f32[4,8]
  %t = Mul(%s, %k) : f32[4,8]
  %th = Tanh(%t) : f32[4,8]
  %a = Add(%one, %th) : f32[4,8]
  %m = Mul(%x, %a) : f32[4,8]
  %y = Mul(%m, %half) : f32[4,8]
  output %y
}
)",
                             "%y = Gelu(%x) {approximate = \"tanh\"}", 1e-6);
}

TEST(GeluRecognition, LeavesPlainTanh) {
  expectUnchanged(R"(
graph "g" opset 17 {
  input %x : f32[4,8]
  %y = Tanh(%x) : f32[4,8]
  output %y
}
)",
                  "Tanh input is not sqrt(2/pi) * (x + 0.044715 * x^3)");
}

TEST(GeluRecognition, LeavesTanhFormWithWrongCubeCoefficient) {
  expectUnchanged(R"(
graph "g" opset 17 {
  input %x : f32[4,8]
  const %three : f32[] = [3.0]
  const %c : f32[] = [0.05]
  const %k : f32[] = [0.7978846]
  const %one : f32[] = [1.0]
  const %half : f32[] = [0.5]
  %p = Pow(%x, %three) : f32[4,8]
  %q = Mul(%c, %p) : f32[4,8]
  %s = Add(%x, %q) : f32[4,8]
  %t = Mul(%k, %s) : f32[4,8]
  %th = Tanh(%t) : f32[4,8]
  %a = Add(%th, %one) : f32[4,8]
  %h = Mul(%half, %x) : f32[4,8]
  %y = Mul(%h, %a) : f32[4,8]
  output %y
}
)",
                  "Tanh input is not sqrt(2/pi) * (x + 0.044715 * x^3)");
}
