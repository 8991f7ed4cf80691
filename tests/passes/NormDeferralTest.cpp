//===- NormDeferralTest.cpp -----------------------------------------------===//
//
// A post-LN sub-layer: LayerNorm(x) read by a matmul of constant weights
// and by a residual add. Each positive case has a negative twin; the
// rewritten graph computes the same function on the reference executor
// (within the rounding of the folded f16 weights), before and after
// epilogue-fusion takes the corrections into the matmul's group.
//
//===----------------------------------------------------------------------===//
#include "passes/NormDeferral.h"
#include "PassTestUtils.h"
#include "passes/EpilogueFusion.h"
#include "passes/LoopFusion.h"

using namespace solder;
using namespace solder::test;

namespace {

/// Values in [-0.75, 0.75], deterministic.
std::string values(int Count, int Seed) {
  std::string V;
  for (int I = 0; I < Count; ++I)
    V += (I ? ", " : "") + std::to_string(((I * 7 + Seed) % 13 - 6) / 8.0);
  return "[" + V + "]";
}

/// h = LayerNorm(x); q = h W + b; o = h + r. Options: the type, h also a
/// graph output, one more user of h (a Relu), no matmul user.
std::string subLayer(const std::string &T, bool HOutput = false,
                     bool Relu = false, bool MatMul = true) {
  std::string S = R"(graph "g" opset 23 {
  input %x : T[2,4,16]
  input %r : T[2,4,16]
  const %gamma : T[16] = )" +
                  values(16, 5) +
                  R"(
  const %beta : T[16] = )" +
                  values(16, 2) +
                  R"(
  const %w : T[16,8] = )" +
                  values(128, 1) +
                  R"(
  const %b : T[8] = )" +
                  values(8, 3) +
                  R"(
  %h = LayerNormalization(%x, %gamma, %beta) {axis = -1, epsilon = 1e-05} : T[2,4,16] @"norm"
)";
  if (MatMul)
    S += "  %m = MatMul(%h, %w) : T[2,4,8] @\"mm\"\n"
         "  %q = Add(%m, %b) : T[2,4,8] @\"bias\"\n  output %q\n";
  S += "  %o = Add(%h, %r) : T[2,4,16] @\"res\"\n  output %o\n";
  if (HOutput)
    S += "  output %h\n";
  if (Relu)
    S += "  %e = Relu(%h) : T[2,4,16] @\"relu\"\n  output %e\n";
  S += "}\n";
  for (size_t P = S.find("T["); P != std::string::npos; P = S.find("T[", P))
    S.replace(P, 1, T);
  return S;
}

TEST(NormDeferral, MatMulAndResidualTakeTheStatistics) {
  NormDeferral P;
  // f16 rounding of x W' against h W: a few units in the third digit.
  expectRewriteKeepsFunction(P, subLayer("f16"), "ApplyRowStats", 2e-2);
  auto [Changed, After] = runPassOn(P, subLayer("f16"));
  EXPECT_TRUE(Changed);
  // The normalization is left computing statistics only (f32), each user
  // rewritten, the scaled weights folded.
  EXPECT_NE(After.find("= LayerNormalization(%x, %gamma, %beta)"),
            std::string::npos)
      << After;
  EXPECT_NE(After.find("MatMul(%x, %w.scaled)"), std::string::npos) << After;
  EXPECT_NE(After.find("f32[2,4,1]"), std::string::npos) << After;
  EXPECT_EQ(After.find("MatMul(%h"), std::string::npos) << After;
  EXPECT_EQ(After.find("Add(%h"), std::string::npos) << After;
  // The textual IR round-trips, absent operands of ApplyRowStats included.
  EXPECT_EQ(canonical(After), After);
  EXPECT_EQ(noteReasons<NormDeferral>(subLayer("f16")),
            std::vector<std::string>{""});
}

TEST(NormDeferral, LeavesANormalizedGraphOutput) {
  expectUnchangedWithReason<NormDeferral>(subLayer("f16", /*HOutput=*/true),
                                          "its result is a graph output");
}

TEST(NormDeferral, LeavesOtherUsers) {
  expectUnchangedWithReason<NormDeferral>(
      subLayer("f16", false, /*Relu=*/true),
      "user Relu node 'relu' is neither a matmul of constant weights reading "
      "it as A nor an add of a value of its shape");
}

TEST(NormDeferral, LeavesResidualOnlyNorms) {
  expectUnchangedWithReason<NormDeferral>(
      subLayer("f16", false, false, /*MatMul=*/false),
      "no matmul reads it: deferring saves no kernel");
}

TEST(NormDeferral, BfloatTooAndNotF32) {
  NormDeferral P;
  expectRewriteKeepsFunction(P, subLayer("bf16"), "ApplyRowStats", 1e-1);
  expectUnchangedWithReason<NormDeferral>(
      subLayer("f32"), "f32: only f16/bf16 plans have generated GEMMs to take "
                       "the statistics");
}

TEST(NormDeferral, EpilogueFusionTakesTheCorrections) {
  // After the rewrite the matmul's group holds the correction and the
  // bias; the statistics stay a node of their own (a generated GEMM
  // computes them, GemmEmitter.cpp); the residual's correction too (no
  // matmul before it in this graph).
  auto G = parseOrDie(subLayer("f16"));
  ASSERT_TRUE(G);
  auto Before = parseOrDie(subLayer("f16"));
  NormDeferral ND;
  FusionState State({});
  EpilogueFusion EF(State);
  LoopFusion LF(State);
  DecisionLog Log;
  for (Pass *P : std::initializer_list<Pass *>{&ND, &EF, &LF}) {
    auto C = P->run(*G, Log);
    ASSERT_TRUE(bool(C)) << llvm::toString(C.takeError());
  }
  ASSERT_FALSE(bool(verifyGraph(*G)));
  std::string After = graphToString(*G);
  // (the bias folded into the correction's d)
  EXPECT_NE(After.find("kind = \"contraction\", members = [\"mm\", \"mm\"]"),
            std::string::npos)
      << After;
  EXPECT_EQ(After.find("\"bias\""), std::string::npos) << After;
  EXPECT_NE(After.find("= LayerNormalization(%x, %gamma, %beta)"),
            std::string::npos)
      << After;
  auto A = runRandom(*Before, 3), B = runRandom(*G, 3);
  ASSERT_EQ(A.size(), B.size());
  for (size_t I = 0; I < A.size(); ++I)
    for (int64_t J = 0; J < A[I].numElements(); ++J)
      EXPECT_NEAR(A[I].getDouble(J), B[I].getDouble(J), 2e-2) << J;
}

} // namespace
