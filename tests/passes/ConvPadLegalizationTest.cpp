//===- ConvPadLegalizationTest.cpp ----------------------------------------===//
#include "passes/ConvPadLegalization.h"
#include "PassTestUtils.h"
#include "runtime/reference/ReferenceExecutor.h"
#include <random>

using namespace solder;
using namespace solder::test;

namespace {
/// Runs the reference executor on G with seeded random inputs.
std::vector<Tensor> runRandom(const Graph &G, unsigned Seed) {
  std::mt19937 Rng(Seed);
  std::uniform_real_distribution<float> Dist(-1, 1);
  std::vector<Tensor> In;
  for (Value *V : G.inputs()) {
    Tensor T(V->dtype(), V->type().staticDims());
    for (int64_t I = 0; I < T.numElements(); ++I)
      T.mutableData<float>()[I] = Dist(Rng);
    In.push_back(T);
  }
  auto Out = runReference(G, In);
  if (!Out) {
    ADD_FAILURE() << llvm::toString(Out.takeError());
    return {};
  }
  return *Out;
}

/// The pass must change the graph and keep its function.
void expectSameFunction(llvm::StringRef Text, llvm::StringRef MustContain) {
  auto Before = parseOrDie(Text);
  auto After = parseOrDie(Text);
  ASSERT_TRUE(Before && After);
  ConvPadLegalization P;
  DecisionLog Log;
  llvm::Expected<bool> Changed = P.run(*After, Log);
  ASSERT_TRUE(bool(Changed)) << llvm::toString(Changed.takeError());
  EXPECT_TRUE(*Changed);
  ASSERT_FALSE(bool(verifyGraph(*After)));
  std::string AfterText = graphToString(*After);
  EXPECT_NE(AfterText.find(MustContain.str()), std::string::npos) << AfterText;
  auto A = runRandom(*Before, 7), B = runRandom(*After, 7);
  ASSERT_EQ(A.size(), B.size());
  for (size_t I = 0; I < A.size(); ++I) {
    ASSERT_EQ(A[I].dims(), B[I].dims());
    for (int64_t J = 0; J < A[I].numElements(); ++J)
      EXPECT_NEAR(A[I].data<float>()[J], B[I].data<float>()[J], 1e-5) << J;
  }
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
