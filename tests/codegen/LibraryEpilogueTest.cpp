//===- LibraryEpilogueTest.cpp - What a library call absorbs of a group ---===//
//
// Each case writes an unfused chain as IR text, outlines every node into
// one contraction group and checks the split matchLibraryEpilogue makes:
// which nodes the cuBLASLt/cuDNN call absorbs (and as what) and which are
// left for the rest kernel. Every absorbing case has a twin where the same
// node must stay in the rest.
//
//===----------------------------------------------------------------------===//
#include "codegen/LibraryEpilogue.h"
#include "tests/codegen/EmitterTestUtils.h"
#include <gtest/gtest.h>

using namespace solder;

namespace {

struct Split {
  std::unique_ptr<Graph> G;
  const Node *Group = nullptr;
  LibraryEpilogue E;
};

/// Parses Body, outlines all its nodes as contraction group 1 and matches.
Split split(llvm::StringRef Body) {
  Split S;
  S.G = solder::testing::parseBody(Body.str());
  if (!S.G)
    return S;
  S.Group = solder::testing::outlineAll(*S.G, GroupKind::Contraction, /*Id=*/1);
  if (S.Group)
    S.E = matchLibraryEpilogue(*S.Group);
  return S;
}

std::vector<std::string> names(const std::vector<const Node *> &Nodes) {
  std::vector<std::string> R;
  for (const Node *N : Nodes)
    R.push_back(N->name());
  return R;
}
using Names = std::vector<std::string>;

std::string nameOf(const Value *V) { return V ? V->name() : "<null>"; }

TEST(LibraryEpilogue, MatMulTakesBiasResidualAndRelu) {
  Split S = split(R"(  input %a : f32[2,4,16]
  input %b : f32[16,8]
  input %bias : f32[8]
  input %res : f32[2,4,8]
  %m = MatMul(%a, %b) : f32[2,4,8] @"mm"
  %x = Add(%m, %bias) : f32[2,4,8] @"add_bias"
  %y = Add(%res, %x) : f32[2,4,8] @"add_res"
  %z = Relu(%y) : f32[2,4,8] @"relu"
  output %z)");
  ASSERT_TRUE(S.Group);
  const LibraryEpilogue &E = S.E;
  ASSERT_TRUE(E.Anchor);
  EXPECT_EQ(E.Anchor->name(), "mm");
  EXPECT_EQ(names(E.Absorbed), (Names{"add_bias", "add_res", "relu"}));
  EXPECT_TRUE(E.Rest.empty());
  EXPECT_EQ(nameOf(E.Bias), "bias");
  EXPECT_EQ(nameOf(E.Residual), "res");
  EXPECT_EQ(E.Activation, EpilogueActivation::Relu);
  EXPECT_EQ(E.Alpha, 1.0f);
  EXPECT_EQ(E.LibraryResult, S.Group->body()->outputs()[0]);
  EXPECT_EQ(E.Description,
            "cuBLASLt matmul + RELU_BIAS epilogue + residual (beta C)");
}

TEST(LibraryEpilogue, ActivationBeforeTheBiasEndsThePrefix) {
  Split S = split(R"(  input %a : f32[4,16]
  input %b : f32[16,8]
  input %bias : f32[8]
  %m = MatMul(%a, %b) : f32[4,8] @"mm"
  %r = Relu(%m) : f32[4,8] @"relu"
  %x = Add(%r, %bias) : f32[4,8] @"add_bias"
  output %x)");
  ASSERT_TRUE(S.E.Anchor);
  EXPECT_EQ(names(S.E.Absorbed), (Names{"relu"}));
  EXPECT_EQ(names(S.E.Rest), (Names{"add_bias"}));
  EXPECT_EQ(S.E.Bias, nullptr);
  EXPECT_EQ(nameOf(S.E.LibraryResult), "r");
  EXPECT_EQ(S.E.Description, "cuBLASLt matmul + RELU epilogue");
}

TEST(LibraryEpilogue, ScalarMulAndDivBecomeAlpha) {
  Split S = split(R"(  input %a : f32[4,16]
  input %b : f32[16,8]
  input %bias : f32[1,8]
  const %s : f32[] = [8.0]
  %m = MatMul(%a, %b) : f32[4,8] @"mm"
  %d = Div(%m, %s) : f32[4,8] @"div"
  %x = Add(%d, %bias) : f32[4,8] @"add_bias"
  output %x)");
  ASSERT_TRUE(S.E.Anchor);
  EXPECT_EQ(names(S.E.Absorbed), (Names{"div", "add_bias"}));
  EXPECT_TRUE(S.E.Rest.empty());
  EXPECT_FLOAT_EQ(S.E.Alpha, 0.125f);
  EXPECT_EQ(S.E.Description, "cuBLASLt matmul + alpha 0.125 + BIAS epilogue");
}

TEST(LibraryEpilogue, ScaleAfterTheBiasIsNotAlpha) {
  Split S = split(R"(  input %a : f32[4,16]
  input %b : f32[16,8]
  input %bias : f32[8]
  const %s : f32[] = [0.5]
  %m = MatMul(%a, %b) : f32[4,8] @"mm"
  %x = Add(%m, %bias) : f32[4,8] @"add_bias"
  %y = Mul(%s, %x) : f32[4,8] @"mul"
  output %y)");
  ASSERT_TRUE(S.E.Anchor);
  EXPECT_EQ(names(S.E.Absorbed), (Names{"add_bias"}));
  EXPECT_EQ(names(S.E.Rest), (Names{"mul"}));
  EXPECT_EQ(S.E.Alpha, 1.0f);
}

TEST(LibraryEpilogue, TanhGeluIsAnEpilogue) {
  Split S = split(R"(  input %a : f32[4,16]
  input %b : f32[8,16]
  input %c : f32[8]
  %m = Gemm(%a, %b, %c) {transB = 1} : f32[4,8] @"gemm"
  %g = Gelu(%m) {approximate = "tanh"} : f32[4,8] @"gelu"
  output %g)");
  ASSERT_TRUE(S.E.Anchor);
  EXPECT_EQ(names(S.E.Absorbed), (Names{"gelu"}));
  EXPECT_TRUE(S.E.Rest.empty());
  EXPECT_EQ(S.E.Activation, EpilogueActivation::GeluTanh);
  // The Gemm's own C is the bias; nothing else took the slot.
  EXPECT_EQ(S.E.Bias, nullptr);
  EXPECT_EQ(S.E.Description, "cuBLASLt gemm + GELU_BIAS epilogue");
}

TEST(LibraryEpilogue, ErfGeluIsNotAnEpilogue) {
  Split S = split(R"(  input %a : f32[4,16]
  input %b : f32[16,8]
  input %bias : f32[8]
  %m = MatMul(%a, %b) : f32[4,8] @"mm"
  %x = Add(%m, %bias) : f32[4,8] @"add_bias"
  %g = Gelu(%x) : f32[4,8] @"gelu"
  output %g)");
  ASSERT_TRUE(S.E.Anchor);
  EXPECT_EQ(names(S.E.Absorbed), (Names{"add_bias"}));
  EXPECT_EQ(names(S.E.Rest), (Names{"gelu"}));
  EXPECT_EQ(S.E.Activation, EpilogueActivation::None);
  EXPECT_EQ(nameOf(S.E.LibraryResult), "x");
  EXPECT_EQ(S.E.Description, "cuBLASLt matmul + BIAS epilogue");
}

TEST(LibraryEpilogue, ErfGeluInHalfPrecisionIsTheTanhEpilogue) {
  // Twin of the test above in f16 (and bf16): within the type's rounding,
  // so cuBLASLt's GELU takes it and no kernel is left.
  for (const char *T : {"f16", "bf16"}) {
    std::string Text = std::string(R"(  input %a : T[4,16]
  input %b : T[16,8]
  input %bias : T[8]
  %m = MatMul(%a, %b) : T[4,8] @"mm"
  %x = Add(%m, %bias) : T[4,8] @"add_bias"
  %g = Gelu(%x) : T[4,8] @"gelu"
  output %g)");
    for (size_t P = Text.find("T["); P != std::string::npos;
         P = Text.find("T[", P))
      Text.replace(P, 1, T);
    Split S = split(Text);
    ASSERT_TRUE(S.E.Anchor) << T;
    EXPECT_EQ(names(S.E.Absorbed), (Names{"add_bias", "gelu"})) << T;
    EXPECT_TRUE(S.E.Rest.empty()) << T;
    EXPECT_EQ(S.E.Activation, EpilogueActivation::GeluTanh) << T;
  }
}

TEST(LibraryEpilogue, BroadcastResidualIsNotC) {
  // %t broadcasts along the batch dim: neither a per-column bias nor a
  // tensor of the result's shape.
  Split S = split(R"(  input %a : f32[2,4,16]
  input %b : f32[16,8]
  input %t : f32[4,8]
  %m = MatMul(%a, %b) : f32[2,4,8] @"mm"
  %x = Add(%m, %t) : f32[2,4,8] @"add"
  %r = Relu(%x) : f32[2,4,8] @"relu"
  output %r)");
  ASSERT_TRUE(S.E.Anchor);
  EXPECT_TRUE(S.E.Absorbed.empty());
  EXPECT_EQ(names(S.E.Rest), (Names{"add", "relu"}));
  EXPECT_EQ(S.E.LibraryResult, S.E.Anchor->result(0));
  EXPECT_EQ(S.E.Description, "cuBLASLt matmul");
}

TEST(LibraryEpilogue, GemmWithFullCHasNoFreeCSlotOrAlpha) {
  Split S = split(R"(  input %a : f32[4,16]
  input %b : f32[16,8]
  input %c : f32[4,8]
  input %res : f32[4,8]
  const %s : f32[] = [2.0]
  %m = Gemm(%a, %b, %c) {beta = 0.5} : f32[4,8] @"gemm"
  %y = Mul(%m, %s) : f32[4,8] @"mul"
  %x = Add(%y, %res) : f32[4,8] @"add_res"
  output %x)");
  ASSERT_TRUE(S.E.Anchor);
  EXPECT_TRUE(S.E.Absorbed.empty());
  EXPECT_EQ(names(S.E.Rest), (Names{"mul", "add_res"}));
}

TEST(LibraryEpilogue, GemmWithoutCTakesResidual) {
  Split S = split(R"(  input %a : f32[4,16]
  input %b : f32[16,8]
  input %res : f32[4,8]
  const %s : f32[] = [2.0]
  %m = Gemm(%a, %b) : f32[4,8] @"gemm"
  %y = Mul(%m, %s) : f32[4,8] @"mul"
  %x = Add(%y, %res) : f32[4,8] @"add_res"
  output %x)");
  ASSERT_TRUE(S.E.Anchor);
  EXPECT_EQ(names(S.E.Absorbed), (Names{"mul", "add_res"}));
  EXPECT_FLOAT_EQ(S.E.Alpha, 2.0f);
  EXPECT_EQ(nameOf(S.E.Residual), "res");
}

TEST(LibraryEpilogue, F64TakesNoEpilogue) {
  Split S = split(R"(  input %a : f64[4,16]
  input %b : f64[16,8]
  input %bias : f64[8]
  %m = MatMul(%a, %b) : f64[4,8] @"mm"
  %x = Add(%m, %bias) : f64[4,8] @"add_bias"
  output %x)");
  ASSERT_TRUE(S.E.Anchor);
  EXPECT_TRUE(S.E.Absorbed.empty());
  EXPECT_EQ(names(S.E.Rest), (Names{"add_bias"}));
}

TEST(LibraryEpilogue, ConvTakesBiasResidualAndRelu) {
  Split S = split(R"(  input %x : f32[1,3,8,8]
  input %w : f32[4,3,3,3]
  input %bias : f32[1,4,1,1]
  input %z : f32[1,4,8,8]
  %c = Conv(%x, %w, none) {pads = [1, 1, 1, 1]} : f32[1,4,8,8] @"conv"
  %b = Add(%c, %bias) : f32[1,4,8,8] @"add_bias"
  %s = Add(%b, %z) : f32[1,4,8,8] @"add_res"
  %r = Relu(%s) : f32[1,4,8,8] @"relu"
  output %r)");
  ASSERT_TRUE(S.E.Anchor);
  EXPECT_EQ(names(S.E.Absorbed), (Names{"add_bias", "add_res", "relu"}));
  EXPECT_TRUE(S.E.Rest.empty());
  EXPECT_EQ(nameOf(S.E.Bias), "bias");
  EXPECT_EQ(nameOf(S.E.Residual), "z");
  EXPECT_EQ(S.E.Description, "cuDNN conv+bias+residual+ReLU "
                             "(cudnnConvolutionBiasActivationForward)");
}

TEST(LibraryEpilogue, ConvWithOwnBiasTakesNoSecondBias) {
  Split S = split(R"(  input %x : f32[1,3,8,8]
  input %w : f32[4,3,3,3]
  input %b0 : f32[4]
  input %bias : f32[4,1,1]
  %c = Conv(%x, %w, %b0) {pads = [1, 1, 1, 1]} : f32[1,4,8,8] @"conv"
  %b = Add(%c, %bias) : f32[1,4,8,8] @"add_bias"
  %r = Relu(%b) : f32[1,4,8,8] @"relu"
  output %r)");
  ASSERT_TRUE(S.E.Anchor);
  EXPECT_TRUE(S.E.Absorbed.empty());
  EXPECT_EQ(names(S.E.Rest), (Names{"add_bias", "relu"}));
  EXPECT_EQ(S.E.Description,
            "cuDNN conv+bias (cudnnConvolutionBiasActivationForward)");
}

TEST(LibraryEpilogue, ConvBiasAlongTheWrongAxisIsNotBias) {
  // One value per column (the last dim), not per channel.
  Split S = split(R"(  input %x : f32[1,3,8,8]
  input %w : f32[4,3,3,3]
  input %v : f32[8]
  %c = Conv(%x, %w, none) {pads = [1, 1, 1, 1]} : f32[1,4,8,8] @"conv"
  %b = Add(%c, %v) : f32[1,4,8,8] @"add"
  output %b)");
  ASSERT_TRUE(S.E.Anchor);
  EXPECT_TRUE(S.E.Absorbed.empty());
  EXPECT_EQ(names(S.E.Rest), (Names{"add"}));
  EXPECT_EQ(S.E.Description, "cuDNN conv");
}

TEST(LibraryEpilogue, ConvSigmoidStaysInTheRest) {
  Split S = split(R"(  input %x : f32[1,3,8,8]
  input %w : f32[4,3,3,3]
  input %b0 : f32[4]
  %c = Conv(%x, %w, %b0) {pads = [1, 1, 1, 1]} : f32[1,4,8,8] @"conv"
  %s = Sigmoid(%c) : f32[1,4,8,8] @"sigmoid"
  output %s)");
  ASSERT_TRUE(S.E.Anchor);
  EXPECT_TRUE(S.E.Absorbed.empty());
  EXPECT_EQ(names(S.E.Rest), (Names{"sigmoid"}));
  EXPECT_EQ(S.E.LibraryResult, S.E.Anchor->result(0));
}

TEST(LibraryEpilogue, ConvTransposeTakesOnlyTheBias) {
  Split S = split(R"(  input %x : f32[1,4,4,4]
  input %w : f32[4,2,2,2]
  input %bias : f32[1,2,1,1]
  %c = ConvTranspose(%x, %w, none) {strides = [2, 2]} : f32[1,2,8,8] @"deconv"
  %b = Add(%bias, %c) : f32[1,2,8,8] @"add_bias"
  %r = Relu(%b) : f32[1,2,8,8] @"relu"
  output %r)");
  ASSERT_TRUE(S.E.Anchor);
  EXPECT_EQ(names(S.E.Absorbed), (Names{"add_bias"}));
  EXPECT_EQ(names(S.E.Rest), (Names{"relu"}));
  EXPECT_EQ(S.E.Description, "cuDNN conv-transpose + bias kernel");
}

} // namespace
