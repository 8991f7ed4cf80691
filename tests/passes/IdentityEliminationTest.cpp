//===- IdentityEliminationTest.cpp ----------------------------------------===//
#include "passes/IdentityElimination.h"
#include "PassTestUtils.h"

using namespace solder;
using namespace solder::test;

TEST(IdentityElimination, RemovesIdentityAndDropout) {
  IdentityElimination P;
  auto [Changed, After] = runPassOn(P, R"(
graph "g" opset 17 {
  input %x : f32[2,3]
  %a = Relu(%x) : f32[2,3]
  %b = Identity(%a) : f32[2,3]
  %c = Dropout(%b) : f32[2,3]
  %y = Sigmoid(%c) : f32[2,3]
  output %y
}
)");
  EXPECT_TRUE(Changed);
  EXPECT_EQ(After, canonical(R"(
graph "g" opset 17 {
  input %x : f32[2,3]
  %a = Relu(%x) : f32[2,3]
  %y = Sigmoid(%a) : f32[2,3]
  output %y
}
)"));
}

TEST(IdentityElimination, OutputTakesOverTheInputName) {
  IdentityElimination P;
  auto [Changed, After] = runPassOn(P, R"(
graph "g" opset 17 {
  input %x : f32[2]
  %a = Relu(%x) : f32[2]
  %out = Identity(%a) : f32[2]
  output %out
}
)");
  EXPECT_TRUE(Changed);
  EXPECT_EQ(After, canonical(R"(
graph "g" opset 17 {
  input %x : f32[2]
  %out = Relu(%x) : f32[2]
  output %out
}
)"));
}

TEST(IdentityElimination, KeepsIdentityFromInputToOutput) {
  IdentityElimination P;
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[2]
  %out = Identity(%x) : f32[2]
  output %out
}
)";
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
}

TEST(IdentityElimination, UsedMaskBecomesAllTrueConstant) {
  IdentityElimination P;
  auto [Changed, After] = runPassOn(P, R"(
graph "g" opset 17 {
  input %x : f32[2]
  %a = Relu(%x) : f32[2]
  %d, %m = Dropout(%a) : f32[2], bool[2]
  %y = Not(%m) : bool[2]
  output %d
  output %y
}
)");
  EXPECT_TRUE(Changed);
  EXPECT_EQ(After, canonical(R"(
graph "g" opset 17 {
  input %x : f32[2]
  const %m : bool[2] = [true, true]
  %d = Relu(%x) : f32[2]
  %y = Not(%m) : bool[2]
  output %d
  output %y
}
)"));
}

TEST(IdentityElimination, KeepsDropoutWithDynamicMask) {
  IdentityElimination P;
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[N]
  %a = Relu(%x) : f32[N]
  %d, %m = Dropout(%a) : f32[N], bool[N]
  output %d
  output %m
}
)";
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
}

TEST(IdentityElimination, RemovesSameTypeCastAndOneOperandConcat) {
  IdentityElimination P;
  auto [Changed, After] = runPassOn(P, R"(
graph "g" opset 17 {
  input %x : f32[2,3]
  %a = Relu(%x) : f32[2,3]
  %b = Cast(%a) {to = 1} : f32[2,3]
  %c = Concat(%b) {axis = 0} : f32[2,3]
  %y = Sigmoid(%c) : f32[2,3]
  output %y
}
)");
  EXPECT_TRUE(Changed);
  EXPECT_EQ(After, canonical(R"(
graph "g" opset 17 {
  input %x : f32[2,3]
  %a = Relu(%x) : f32[2,3]
  %y = Sigmoid(%a) : f32[2,3]
  output %y
}
)"));
}

TEST(IdentityElimination, KeepsConvertingCastAndTwoOperandConcat) {
  IdentityElimination P;
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[2,3]
  %a = Relu(%x) : f32[2,3]
  %b = Cast(%a) {to = 10} : f16[2,3]
  %c = Concat(%b, %b) {axis = 0} : f16[4,3]
  output %c
}
)";
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
}
