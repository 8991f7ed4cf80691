//===- NormEpilogueFusionTest.cpp -----------------------------------------===//
//
// The inputs are the groups epilogue-fusion and loop-fusion make of an
// unfused transformer sub-layer (run first, sharing one FusionState, as
// the pipeline does); each positive case has a negative twin.
//
//===----------------------------------------------------------------------===//
#include "passes/NormEpilogueFusion.h"
#include "PassTestUtils.h"
#include "passes/EpilogueFusion.h"
#include "passes/LoopFusion.h"

using namespace solder;
using namespace solder::test;

namespace {

/// MatMul + bias, residual Add + LayerNorm (or RMSNormalization) in type T;
/// Extra adds a second user of the biased matmul result.
std::string subLayer(const std::string &T, bool Rms = false,
                     bool Extra = false) {
  // Constant weights and bias, as exports have them (epilogue-fusion
  // leaves an Add of a non-constant before a LayerNorm to loop-fusion).
  auto Values = [](int Count, int Seed) {
    std::string V;
    for (int I = 0; I < Count; ++I)
      V += (I ? ", " : "") + std::to_string(((I * 7 + Seed) % 13 - 6) / 8.0);
    return "[" + V + "]";
  };
  std::string S = R"(graph "g" opset 23 {
  input %x : T[2,4,8]
  const %w : T[8,16] = )" +
                  Values(128, 1) + R"(
  const %b : T[16] = )" +
                  Values(16, 3) + R"(
  input %r : T[2,4,16]
  input %gamma : T[16]
  input %beta : T[16]
  %m = MatMul(%x, %w) : T[2,4,16] @"mm"
  %mb = Add(%m, %b) : T[2,4,16] @"bias"
  %s = Add(%mb, %r) : T[2,4,16] @"res"
)";
  S += Rms ? "  %y = RMSNormalization(%s, %gamma) {axis = -1, epsilon = "
             "1e-05} : T[2,4,16] @\"norm\"\n"
           : "  %y = LayerNormalization(%s, %gamma, %beta) {axis = -1, "
             "epsilon = 1e-05} : T[2,4,16] @\"norm\"\n";
  S += "  output %y\n";
  if (Extra)
    S += "  %e = Relu(%mb) : T[2,4,16] @\"other\"\n  output %e\n";
  S += "}\n";
  for (size_t P = S.find("T["); P != std::string::npos; P = S.find("T[", P))
    S.replace(P, 1, T);
  return S;
}

struct Result {
  bool Changed = false;
  std::string After;
  std::vector<std::string> Reasons;
  std::unique_ptr<Graph> G;
};

/// Epilogue and loop fusion, then norm-epilogue-fusion, on Text.
Result run(const std::string &Text, std::vector<std::string> Disabled = {}) {
  Result R;
  R.G = parseOrDie(Text);
  if (!R.G)
    return R;
  FusionState State(Disabled);
  EpilogueFusion EF(State);
  LoopFusion LF(State);
  NormEpilogueFusion NF(State);
  DecisionLog Log;
  for (Pass *P : std::initializer_list<Pass *>{&EF, &LF}) {
    auto C = P->run(*R.G, Log);
    EXPECT_TRUE(bool(C)) << llvm::toString(C.takeError());
  }
  Log.clear();
  auto C = NF.run(*R.G, Log);
  EXPECT_TRUE(bool(C)) << llvm::toString(C.takeError());
  R.Changed = C && *C;
  if (auto E = verifyGraph(*R.G))
    ADD_FAILURE() << "IR invalid after pass: " << llvm::toString(std::move(E));
  R.After = graphToString(*R.G);
  for (const DecisionRecord &D : Log.records())
    R.Reasons.push_back(D.Reason);
  return R;
}

std::string joined(const std::vector<std::string> &V) {
  std::string S;
  for (const std::string &X : V)
    S += X + "\n";
  return S;
}

/// The reference outputs of Text and of the rewritten graph agree exactly
/// (the group runs its body: the same ops on the same values).
void expectSameFunction(const std::string &Text, const Graph &After) {
  auto Before = parseOrDie(Text);
  ASSERT_TRUE(Before);
  auto A = runRandom(*Before, 5), B = runRandom(After, 5);
  ASSERT_EQ(A.size(), B.size());
  for (size_t I = 0; I < A.size(); ++I) {
    ASSERT_EQ(A[I].dims(), B[I].dims());
    for (int64_t J = 0; J < A[I].numElements(); ++J)
      EXPECT_EQ(A[I].getDouble(J), B[I].getDouble(J)) << J;
  }
}

TEST(NormEpilogueFusion, MatMulGroupTakesTheLayerNormAfterIt) {
  std::string Text = subLayer("f16");
  Result R = run(Text);
  EXPECT_TRUE(R.Changed);
  EXPECT_NE(R.After.find("kind = \"contraction\", members = [\"mm\", "
                         "\"bias\", \"res\", \"norm\"]"),
            std::string::npos)
      << R.After;
  EXPECT_EQ(R.After.find("kind = \"reduction\""), std::string::npos) << R.After;
  EXPECT_NE(joined(R.Reasons).find("and its LayerNormalization group"),
            std::string::npos)
      << joined(R.Reasons);
  expectSameFunction(Text, *R.G);
}

TEST(NormEpilogueFusion, F32KeepsTwoGroups) {
  // Negative twin: no generated GEMM runs f32, so nothing is merged.
  Result R = run(subLayer("f32"));
  EXPECT_FALSE(R.Changed);
  EXPECT_NE(R.After.find("kind = \"reduction\""), std::string::npos) << R.After;
  EXPECT_NE(joined(R.Reasons).find("f32 (only f16/bf16"), std::string::npos)
      << joined(R.Reasons);
}

TEST(NormEpilogueFusion, RmsNormInBf16IsTakenToo) {
  std::string Text = subLayer("bf16", /*Rms=*/true);
  Result R = run(Text);
  EXPECT_TRUE(R.Changed);
  EXPECT_NE(R.After.find("\"res\", \"norm\"]"), std::string::npos) << R.After;
  expectSameFunction(Text, *R.G);
}

TEST(NormEpilogueFusion, BareMatMulJoinsItsRmsNormGroup) {
  // Llama's output projection: MatMul (no bias), residual Add, RMS norm.
  // epilogue-fusion forms no group for the bare MatMul (the Add reads a
  // non-constant and flows into the norm), so the MatMul itself joins.
  std::string Text = R"(graph "g" opset 23 {
  input %x : f16[4,8]
  const %w : f16[8,16] = [)";
  for (int I = 0; I < 128; ++I)
    Text += (I ? ", " : "") + std::to_string((I % 9 - 4) / 8.0);
  Text += R"(]
  input %r : f16[4,16]
  input %gamma : f16[16]
  %m = MatMul(%x, %w) : f16[4,16] @"mm"
  %s = Add(%m, %r) : f16[4,16] @"res"
  %y = RMSNormalization(%s, %gamma) {axis = -1, epsilon = 1e-05} : f16[4,16] @"norm"
  output %y
}
)";
  Result R = run(Text);
  EXPECT_TRUE(R.Changed);
  EXPECT_NE(R.After.find("kind = \"contraction\", members = [\"mm\", "
                         "\"res\", \"norm\"]"),
            std::string::npos)
      << R.After;
  EXPECT_NE(joined(R.Reasons).find("mm and its RMSNormalization group"),
            std::string::npos)
      << joined(R.Reasons);
  expectSameFunction(Text, *R.G);
}

TEST(NormEpilogueFusion, MatMulResultWithAnotherUserStaysApart) {
  // Negative twin: the biased product is also read by a Relu outside, so
  // the matmul group's result is not only the normalization's.
  Result R = run(subLayer("f16", false, /*Extra=*/true));
  EXPECT_NE(R.After.find("kind = \"reduction\""), std::string::npos) << R.After;
  EXPECT_NE(joined(R.Reasons).find("user outside the reduction group"),
            std::string::npos)
      << joined(R.Reasons);
}

TEST(NormEpilogueFusion, DisabledIdKeepsTheGroupsApart) {
  // Ids: 0 the matmul group, 1 the reduction group, 2 the merged one.
  Result On = run(subLayer("f16"));
  EXPECT_NE(On.After.find("{id = 2, kind = \"contraction\""), std::string::npos)
      << On.After;
  Result Off = run(subLayer("f16"), {"2"});
  EXPECT_FALSE(Off.Changed);
  EXPECT_NE(Off.After.find("kind = \"reduction\""), std::string::npos)
      << Off.After;
  EXPECT_NE(joined(Off.Reasons).find("--disable-fusion 2"), std::string::npos)
      << joined(Off.Reasons);
}

} // namespace
