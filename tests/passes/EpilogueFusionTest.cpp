//===- EpilogueFusionTest.cpp ---------------------------------------------===//
#include "passes/EpilogueFusion.h"
#include "PassTestUtils.h"
#include "tests/AttentionGraph.h"

using namespace solder;
using namespace solder::test;

namespace {

/// Runs epilogue-fusion with the given disabled list on Text.
std::pair<bool, std::string> fuse(llvm::StringRef Text,
                                  std::vector<std::string> Disabled = {}) {
  return runFusionPass<EpilogueFusion>(Text, std::move(Disabled));
}

const char *ConvChain = R"(
graph "g" opset 17 {
  input %x : f32[1,3,8,8]
  input %w : f32[4,3,3,3]
  input %skip : f32[1,4,8,8]
  const %b : f32[4] = [0.5, -0.5, 0.25, 1.0]
  %c = Conv(%x, %w, %b) {dilations = [1, 1], group = 1, pads = [1, 1, 1, 1], strides = [1, 1]} : f32[1,4,8,8] @"conv"
  %a = Add(%c, %skip) : f32[1,4,8,8] @"add"
  %r = Relu(%a) : f32[1,4,8,8] @"relu"
  output %r
}
)";

TEST(EpilogueFusion, ConvTakesResidualAddAndRelu) {
  auto [Changed, After] = fuse(ConvChain);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("%r = FusedGroup(%x, %w, %b, %skip) {id = 0, kind = "
                       "\"contraction\", members = [\"conv\", \"add\", "
                       "\"relu\"]}"),
            std::string::npos)
      << After;
  expectFusionKeepsFunction<EpilogueFusion>(ConvChain, "kind = \"contraction\"",
                                            0.0);
}

TEST(EpilogueFusion, ChainStopsAtASecondUser) {
  // Negative twin: the Add's result is also a graph output, so only the
  // Conv and the Add are grouped... and the Relu is left alone.
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[2,4]
  input %w : f32[4,3]
  input %bias : f32[3]
  %m = MatMul(%x, %w) : f32[2,3] @"mm"
  %a = Add(%m, %bias) : f32[2,3] @"add"
  %r = Relu(%a) : f32[2,3] @"relu"
  output %r
  output %a
}
)";
  auto [Changed, After] = fuse(Text);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("members = [\"mm\", \"add\"]"), std::string::npos)
      << After;
  EXPECT_NE(After.find("%r = Relu(%a) : f32[2,3] @\"relu\""), std::string::npos)
      << After;
}

const char *ConvSilu = R"(
graph "g" opset 17 {
  input %x : f32[1,3,8,8]
  input %w : f32[4,3,3,3]
  const %b : f32[4] = [0.5, -0.5, 0.25, 1.0]
  %c = Conv(%x, %w, %b) {dilations = [1, 1], group = 1, pads = [1, 1, 1, 1], strides = [1, 1]} : f32[1,4,8,8] @"conv"
  %s = Sigmoid(%c) : f32[1,4,8,8] @"sig"
  %m = Mul(%c, %s) : f32[1,4,8,8] @"mul"
  %r = Relu(%m) : f32[1,4,8,8] @"relu"
  output %r
}
)";

TEST(EpilogueFusion, UsersThatMeetAgainJoinTheChain) {
  // SiLU exported as x * sigmoid(x): the conv result has two users, both
  // inside the chain; the chain goes on after their join.
  auto [Changed, After] = fuse(ConvSilu);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("%r = FusedGroup(%x, %w, %b) {id = 0, kind = "
                       "\"contraction\", members = [\"conv\", \"sig\", "
                       "\"mul\", \"relu\"]}"),
            std::string::npos)
      << After;
  expectFusionKeepsFunction<EpilogueFusion>(ConvSilu, "kind = \"contraction\"",
                                            0.0);
}

TEST(EpilogueFusion, UsersThatDoNotMeetAgainEndTheChain) {
  // Negative twins: the Sigmoid is also a graph output; the two users never
  // meet (each is an output).
  std::string SigOut(ConvSilu);
  const std::string Out = "  output %r";
  SigOut.replace(SigOut.find(Out), Out.size(), Out + "\n  output %s");
  auto [Changed, After] = fuse(SigOut);
  EXPECT_FALSE(Changed) << After;
  EXPECT_EQ(After, canonical(SigOut));
  const char *Apart = R"(
graph "g" opset 17 {
  input %x : f32[2,4]
  input %w : f32[4,3]
  %m = MatMul(%x, %w) : f32[2,3] @"mm"
  %s = Sigmoid(%m) : f32[2,3] @"sig"
  %t = Tanh(%m) : f32[2,3] @"tanh"
  output %s
  output %t
}
)";
  auto [ChangedApart, AfterApart] = fuse(Apart);
  EXPECT_FALSE(ChangedApart) << AfterApart;
  auto G = parseOrDie(Apart);
  ASSERT_TRUE(G);
  FusionState State({});
  EpilogueFusion P(State);
  DecisionLog Log;
  ASSERT_TRUE(bool(P.run(*G, Log)));
  ASSERT_EQ(Log.records().size(), 1u);
  EXPECT_NE(Log.records()[0].Reason.find("has a second user outside the chain"),
            std::string::npos)
      << Log.records()[0].Reason;
}

TEST(EpilogueFusion, LeavesAContractionWithoutEpilogueAlone) {
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[2,4]
  input %w : f32[4,3]
  %m = MatMul(%x, %w) : f32[2,3] @"mm"
  %t = Transpose(%m) {perm = [1, 0]} : f32[3,2] @"t"
  output %t
}
)";
  auto [Changed, After] = fuse(Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
}

TEST(EpilogueFusion, BroadcastThatEnlargesEndsTheChain) {
  const char *Text = R"(
graph "g" opset 17 {
  input %x : f32[2,4]
  input %w : f32[4,3]
  input %big : f32[5,2,3]
  %m = MatMul(%x, %w) : f32[2,3] @"mm"
  %a = Add(%m, %big) : f32[5,2,3] @"add"
  output %a
}
)";
  auto [Changed, After] = fuse(Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
}

TEST(EpilogueFusion, MaskAddIsLeftToTheSoftmax) {
  // Attention scores: the scale joins the MatMul, the mask add stays for
  // the Softmax's prologue (loop-fusion).
  const char *Text = R"(
graph "g" opset 17 {
  input %q : f32[2,4,8]
  input %k : f32[2,8,4]
  input %mask : f32[2,1,4]
  const %s : f32[] = [0.125]
  %m = MatMul(%q, %k) : f32[2,4,4] @"mm"
  %d = Mul(%m, %s) : f32[2,4,4] @"scale"
  %a = Add(%d, %mask) : f32[2,4,4] @"mask"
  %p = Softmax(%a) {axis = -1} : f32[2,4,4] @"softmax"
  output %p
}
)";
  auto [Changed, After] = fuse(Text);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("members = [\"mm\", \"scale\"]"), std::string::npos)
      << After;
  EXPECT_NE(After.find("Add(%d, %mask)"), std::string::npos) << After;
}

TEST(EpilogueFusion, DisabledById) {
  auto [Changed, After] = fuse(ConvChain, {"0"});
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After.find("FusedGroup"), std::string::npos) << After;
  // Negative twin: another id does not touch this group.
  auto [Changed1, After1] = fuse(ConvChain, {"1"});
  EXPECT_TRUE(Changed1);
}

TEST(EpilogueFusion, DisabledNodeStaysOutOfTheGroup) {
  auto [Changed, After] = fuse(ConvChain, {"relu"});
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("members = [\"conv\", \"add\"]"), std::string::npos)
      << After;
  EXPECT_NE(After.find("Relu(%a) : f32[1,4,8,8] @\"relu\""), std::string::npos)
      << After;
  auto [Changed1, After1] = fuse(ConvChain, {"conv"});
  EXPECT_FALSE(Changed1);
}

} // namespace

namespace {
const std::string Attention = attentionGraphText(2);
} // namespace

TEST(EpilogueFusion, AttentionMatMulsReadAndWriteThroughHeadLayouts) {
  auto [Changed, After] = fuse(Attention);
  EXPECT_TRUE(Changed);
  // Scores: both operands' slice/reshape/transpose chains and the scale.
  EXPECT_NE(After.find("members = [\"slice_q\", \"slice_k\", "
                       "\"reshape_q\", \"reshape_k\", \"transpose_q\", "
                       "\"transpose_k\", \"scores\", \"scale\"]"),
            std::string::npos)
      << After;
  // Context: V's chain, and the head merge it writes through.
  EXPECT_NE(After.find("members = [\"slice_v\", \"reshape_v\", "
                       "\"transpose_v\", \"context\", \"merge_t\", "
                       "\"merge_r\"]"),
            std::string::npos)
      << After;
  expectFusionKeepsFunction<EpilogueFusion>(Attention, "kind = \"contraction\"",
                                            1e-6);
}

TEST(EpilogueFusion, LayoutOpWithASecondUserStaysOutside) {
  // Negative twin: the transposed K is also a graph output, so it must be
  // materialised; the scores matmul reads it as it is.
  std::string Text = Attention;
  Text.replace(Text.find("output %r"), 9, "output %r\n  output %kt");
  auto [Changed, After] = fuse(Text);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("members = [\"slice_q\", \"reshape_q\", "
                       "\"transpose_q\", \"scores\", \"scale\"]"),
            std::string::npos)
      << After;
  EXPECT_NE(After.find("@\"transpose_k\""), std::string::npos) << After;
}

TEST(EpilogueFusion, NoHeadMergeWriteWithABiasEpilogue) {
  // Negative twin: a bias add after the batched matmul needs cuBLASLt's
  // epilogue, which pointer-array batches do not take: the merge stays out.
  std::string Text = Attention;
  Text.replace(Text.find("  %ot = Transpose(%o)"), 0,
               "  %ob = Add(%o, %scale) : f32[2,2,5,4] @\"bias\"\n");
  Text.replace(Text.find("Transpose(%o)"), 13, "Transpose(%ob)");
  auto [Changed, After] = fuse(Text);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("@\"merge_t\""), std::string::npos) << After;
}
