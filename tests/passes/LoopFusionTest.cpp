//===- LoopFusionTest.cpp -------------------------------------------------===//
#include "passes/LoopFusion.h"
#include "PassTestUtils.h"

using namespace solder;
using namespace solder::test;

namespace {

std::pair<bool, std::string> fuse(llvm::StringRef Text,
                                  std::vector<std::string> Disabled = {}) {
  return runFusionPass<LoopFusion>(Text, std::move(Disabled));
}

void expectKeepsFunction(llvm::StringRef Text, llvm::StringRef MustContain) {
  expectFusionKeepsFunction<LoopFusion>(Text, MustContain, 1e-6);
}

const char *Chain = R"(
graph "g" opset 17 {
  input %x : f32[2,8]
  input %b : f32[8]
  const %half : f32[] = [0.5]
  %a = Add(%x, %b) : f32[2,8] @"add"
  %m = Mul(%a, %half) : f32[2,8] @"mul"
  %r = Sigmoid(%m) : f32[2,8] @"sig"
  output %r
}
)";

TEST(LoopFusion, ElementwiseChainBecomesOneGroup) {
  auto [Changed, After] = fuse(Chain);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("%r = FusedGroup(%x, %b) {id = 0, kind = \"loop\", "
                       "members = [\"add\", \"mul\", \"sig\"]}"),
            std::string::npos)
      << After;
  expectKeepsFunction(Chain, "kind = \"loop\"");
}

TEST(LoopFusion, ProducerWithOutsideUserOfOtherShapeStaysOut) {
  // Negative twin: %a is also read by a Transpose and its shape is not the
  // loop domain of %r's group, so it is not pulled in (it would have to be
  // computed twice). The Relu and Transpose may still fuse with each other.
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[2,8]
  input %y : f32[3,2,8]
  %a = Relu(%x) : f32[2,8] @"relu"
  %r = Add(%a, %y) : f32[3,2,8] @"add"
  %t = Transpose(%a) {perm = [1, 0]} : f32[8,2] @"t"
  output %r
  output %t
}
)";
  auto [Changed, After] = fuse(Text);
  EXPECT_NE(After.find("%a = Relu(%x)"), std::string::npos) << After;
}

TEST(LoopFusion, ProducerUsedOutsideWithTheDomainShapeIsAnExtraOutput) {
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[2,8]
  %a = Relu(%x) : f32[2,8] @"relu"
  %r = Sigmoid(%a) : f32[2,8] @"sig"
  output %r
  output %a
}
)";
  auto [Changed, After] = fuse(Text);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("%a, %r = FusedGroup(%x)"), std::string::npos) << After;
  expectKeepsFunction(Text, "kind = \"loop\"");
}

TEST(LoopFusion, TransposeAndReshapeComposeIntoTheLoop) {
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[2,3,4]
  const %shape : i64[2] = [4, 6]
  %a = Relu(%x) : f32[2,3,4] @"relu"
  %t = Transpose(%a) {perm = [2, 0, 1]} : f32[4,2,3] @"t"
  %r = Reshape(%t, %shape) : f32[4,6] @"reshape"
  output %r
}
)";
  auto [Changed, After] = fuse(Text);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("members = [\"relu\", \"t\", \"reshape\"]"),
            std::string::npos)
      << After;
  expectKeepsFunction(Text, "kind = \"loop\"");
}

TEST(LoopFusion, ViewsAloneAreNotGrouped) {
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[2,3,4]
  const %shape : i64[2] = [6, 4]
  %r = Reshape(%x, %shape) : f32[6,4] @"reshape"
  %f = Flatten(%r) {axis = 1} : f32[6,4] @"flat"
  output %f
}
)";
  auto [Changed, After] = fuse(Text);
  EXPECT_FALSE(Changed);
}

const char *Softmax = R"(
graph "g" opset 17 {
  input %s : f32[2,2,4,4]
  input %mask : f32[2,1,1,4]
  const %scale : f32[] = [0.25]
  %d = Mul(%s, %scale) : f32[2,2,4,4] @"scale"
  %a = Add(%d, %mask) : f32[2,2,4,4] @"mask"
  %p = Softmax(%a) {axis = -1} : f32[2,2,4,4] @"softmax"
  %q = Mul(%p, %scale) : f32[2,2,4,4] @"post"
  output %q
}
)";

TEST(LoopFusion, SoftmaxTakesPrologueAndEpilogue) {
  auto [Changed, After] = fuse(Softmax);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("%q = FusedGroup(%s, %mask) {id = 0, kind = "
                       "\"reduction\", members = [\"scale\", \"mask\", "
                       "\"softmax\", \"post\"]}"),
            std::string::npos)
      << After;
  expectKeepsFunction(Softmax, "kind = \"reduction\"");
}

TEST(LoopFusion, ReductionOverAnOuterAxisIsNotFused) {
  // Negative twin: Softmax over axis 1 is not a row of contiguous
  // elements; the prologue and epilogue then form plain loop groups, the
  // Softmax stays alone.
  const char *Text = R"(
graph "g" opset 17 {
  input %s : f32[2,4,4]
  const %scale : f32[] = [0.25]
  %d = Mul(%s, %scale) : f32[2,4,4] @"scale"
  %p = Softmax(%d) {axis = 1} : f32[2,4,4] @"softmax"
  output %p
}
)";
  auto [Changed, After] = fuse(Text);
  EXPECT_FALSE(Changed);
  EXPECT_NE(After.find("Softmax(%d) {axis = 1}"), std::string::npos) << After;
}

TEST(LoopFusion, LayerNormWithResidualOutput) {
  // The residual sum feeds the LayerNorm and is also a graph output: it
  // becomes a second result of the reduction group.
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[3,8]
  input %y : f32[3,8]
  input %g : f32[8]
  input %b : f32[8]
  %h = Add(%x, %y) : f32[3,8] @"residual"
  %n = LayerNormalization(%h, %g, %b) {axis = -1, epsilon = 1e-05} : f32[3,8] @"ln"
  output %n
  output %h
}
)";
  auto [Changed, After] = fuse(Text);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("%h, %n = FusedGroup(%x, %y, %g, %b)"),
            std::string::npos)
      << After;
  expectKeepsFunction(Text, "kind = \"reduction\"");
}

/// The reasons LoopFusion noted on the graph in Text.
static std::string loopFusionReasons(const char *Text) {
  FusionState State({});
  LoopFusion P(State);
  auto G = parseOrDie(Text);
  if (!G)
    return "";
  DecisionLog Log;
  auto Changed = P.run(*G, Log);
  EXPECT_TRUE(bool(Changed));
  std::string All;
  for (const DecisionRecord &R : Log.records())
    All += R.Reason + "\n";
  return All;
}

TEST(LoopFusion, ReductionsWithoutARowKernelSayWhy) {
  // ReduceL2 has no fused row kernel at all; a ReduceSum does, but not
  // with axes computed at run time. Neither takes the Relu.
  const char *L2 = R"(
graph "g" opset 18 {
  input %x : f32[2,4]
  const %axes : i64[1] = [1]
  %r = Relu(%x) : f32[2,4] @"relu"
  %y = ReduceL2(%r, %axes) {keepdims = 1} : f32[2,1] @"l2"
  output %y
}
)";
  std::string Why = loopFusionReasons(L2);
  EXPECT_NE(Why.find("ReduceL2 has no fused row kernel: it runs as its own "
                     "kernel"),
            std::string::npos)
      << Why;
  const char *RuntimeAxes = R"(
graph "g" opset 18 {
  input %x : f32[2,4]
  input %axes : i64[1]
  %r = Relu(%x) : f32[2,4] @"relu"
  %y = ReduceSum(%r, %axes) {keepdims = 1} : f32[?,?] @"sum"
  output %y
}
)";
  Why = loopFusionReasons(RuntimeAxes);
  EXPECT_NE(Why.find("ReduceSum: axes not constant"), std::string::npos) << Why;
}

TEST(LoopFusion, CycleIsRefused) {
  // %a -> Softmax's prologue would need %c, which is computed from %a
  // outside the group: fusing %a's producer chain would create a cycle.
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[2,4]
  input %w : f32[4,4]
  %a = Relu(%x) : f32[2,4] @"relu"
  %c = MatMul(%a, %w) : f32[2,4] @"mm"
  %s = Add(%a, %c) : f32[2,4] @"add"
  %p = Softmax(%s) {axis = -1} : f32[2,4] @"softmax"
  output %p
}
)";
  FusionState State({});
  LoopFusion P(State);
  auto G = parseOrDie(Text);
  ASSERT_TRUE(G);
  DecisionLog Log;
  auto Changed = P.run(*G, Log);
  ASSERT_TRUE(bool(Changed));
  EXPECT_FALSE(bool(verifyGraph(*G)));
  bool SawCycle = false;
  for (const DecisionRecord &R : Log.records())
    SawCycle |= R.Reason.find("cycle") != std::string::npos;
  EXPECT_TRUE(SawCycle);
  // The Relu stays outside (the MatMul reads it); Add + Softmax fuse.
  std::string After = graphToString(*G);
  EXPECT_NE(After.find("members = [\"add\", \"softmax\"]"), std::string::npos)
      << After;
}

TEST(LoopFusion, DisabledGroupIsNotFormed) {
  auto [Changed, After] = fuse(Chain, {"0"});
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Chain));
}

} // namespace
