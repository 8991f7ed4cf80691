//===- ConvGraphEpilogueTest.cpp - A conv group as one cuDNN graph --------===//
//
// Each case writes a convolution chain as IR text, outlines it into one
// contraction group and checks lowerConvGraph: the pointwise operations,
// the tensors they read (NCHW-ordered dims, NHWC strides) and what the
// report says. Every lowered case has a twin the lowering must refuse,
// naming why.
//
//===----------------------------------------------------------------------===//
#include "codegen/ConvGraphEpilogue.h"
#include "tests/codegen/EmitterTestUtils.h"
#include <cfloat>
#include <gtest/gtest.h>

using namespace solder;

namespace {

struct Lowered {
  std::unique_ptr<Graph> G;
  ConvGraphLowering L;
};

/// Parses Body, outlines all its nodes as contraction group 1, lowers it.
Lowered lower(llvm::StringRef Body) {
  Lowered S;
  S.G = solder::testing::parseBody(Body.str());
  if (!S.G)
    return S;
  if (Node *Group =
          solder::testing::outlineAll(*S.G, GroupKind::Contraction, 1))
    S.L = lowerConvGraph(*Group);
  return S;
}

const char *ConvClip = R"(  input %x : f16[1,6,6,8]
  input %w : f16[16,3,3,8]
  input %b : f16[16]
  const %lo : f16[] = [0.0]
  const %hi : f16[] = [6.0]
  %c = Conv(%x, %w, %b) {kernel_shape = [3, 3], layout = "NHWC", pads = [1, 1, 1, 1]} : f16[1,6,6,16] @"conv"
  %y = Clip(%c, %lo, %hi) : f16[1,6,6,16] @"clip"
  output %y)";

using Kind = ConvGraphTensor::Kind;

TEST(ConvGraphEpilogue, BiasAndClipBecomeAnAddAndAClampedRelu) {
  Lowered S = lower(ConvClip);
  const ConvGraphLowering &L = S.L;
  ASSERT_TRUE(L.Anchor) << L.Why;
  EXPECT_EQ(L.Anchor->name(), "conv");
  ASSERT_EQ(L.Ops.size(), 2u);
  EXPECT_EQ(L.Ops[0].Mode, ConvPointwise::Add);
  EXPECT_EQ(L.Ops[0].X, 0);
  const ConvGraphTensor &Bias = L.Tensors[L.Ops[0].B];
  EXPECT_EQ(Bias.K, Kind::Operand);
  EXPECT_EQ(Bias.Elem, DType::F16);
  EXPECT_EQ(Bias.Dims, (std::array<int64_t, 4>{1, 16, 1, 1}));
  ASSERT_TRUE(L.Reads[L.Ops[0].B]);
  EXPECT_EQ(L.Reads[L.Ops[0].B]->name(), "b");
  EXPECT_EQ(L.Ops[1].Mode, ConvPointwise::Relu);
  EXPECT_EQ(L.Ops[1].X, L.Ops[0].Y);
  EXPECT_EQ(L.Ops[1].Lower, 0.0f);
  EXPECT_EQ(L.Ops[1].Upper, 6.0f);
  EXPECT_EQ(L.Ops[1].Slope, 0.0f);
  EXPECT_EQ(L.Tensors[0].K, Kind::Virtual);
  EXPECT_EQ(L.Tensors[L.Ops[0].Y].K, Kind::Virtual);
  EXPECT_EQ(L.Tensors[L.Ops[1].Y].K, Kind::Output);
  EXPECT_EQ(L.Tensors[L.Ops[1].Y].Elem, DType::F16);
  EXPECT_EQ(L.Description,
            "cuDNN graph conv+add+relu(clip 0..6) (runtime fusion)");
}

TEST(ConvGraphEpilogue, NchwConvolutionIsNotLowered) {
  std::string Body = ConvClip;
  Body.replace(Body.find("layout = \"NHWC\", "), 17, "");
  Body.replace(Body.find("f16[1,6,6,8]"), 12, "f16[1,8,6,6]");
  Body.replace(Body.find("f16[16,3,3,8]"), 13, "f16[16,8,3,3]");
  for (size_t P; (P = Body.find("f16[1,6,6,16]")) != std::string::npos;)
    Body.replace(P, 13, "f16[1,16,6,6]");
  Lowered S = lower(Body);
  EXPECT_FALSE(S.L.Anchor);
  EXPECT_NE(S.L.Why.find("not NHWC"), std::string::npos) << S.L.Why;
  EXPECT_TRUE(S.L.Ops.empty());
}

TEST(ConvGraphEpilogue, SiluReadsTheChainTwice) {
  Lowered S = lower(R"(  input %x : f16[2,4,4,8]
  input %w : f16[8,1,1,8]
  %c = Conv(%x, %w) {kernel_shape = [1, 1], layout = "NHWC"} : f16[2,4,4,8] @"conv"
  %s = Sigmoid(%c) : f16[2,4,4,8] @"sig"
  %y = Mul(%c, %s) : f16[2,4,4,8] @"mul"
  output %y)");
  const ConvGraphLowering &L = S.L;
  ASSERT_TRUE(L.Anchor) << L.Why;
  ASSERT_EQ(L.Ops.size(), 2u);
  EXPECT_EQ(L.Ops[0].Mode, ConvPointwise::Sigmoid);
  EXPECT_EQ(L.Ops[0].X, 0);
  EXPECT_EQ(L.Ops[0].B, -1);
  EXPECT_EQ(L.Ops[1].Mode, ConvPointwise::Mul);
  EXPECT_EQ(L.Ops[1].X, 0);
  EXPECT_EQ(L.Ops[1].B, L.Ops[0].Y);
  EXPECT_EQ(L.Tensors[L.Ops[1].Y].K, Kind::Output);
}

TEST(ConvGraphEpilogue, OpWithoutAPointwiseFormIsNamed) {
  Lowered S = lower(R"(  input %x : f16[2,4,4,8]
  input %w : f16[8,1,1,8]
  %c = Conv(%x, %w) {kernel_shape = [1, 1], layout = "NHWC"} : f16[2,4,4,8] @"conv"
  %f = Floor(%c) : f16[2,4,4,8] @"floor"
  output %f)");
  EXPECT_FALSE(S.L.Anchor);
  EXPECT_NE(S.L.Why.find("floor"), std::string::npos) << S.L.Why;
  EXPECT_NE(S.L.Why.find("no cuDNN pointwise form"), std::string::npos)
      << S.L.Why;
}

TEST(ConvGraphEpilogue, ResidualIsReadWithNhwcStrides) {
  Lowered S = lower(R"(  input %x : bf16[1,4,4,8]
  input %w : bf16[8,1,1,8]
  input %r : bf16[1,4,4,8]
  %c = Conv(%x, %w) {kernel_shape = [1, 1], layout = "NHWC"} : bf16[1,4,4,8] @"conv"
  %a = Add(%r, %c) : bf16[1,4,4,8] @"add"
  %y = Relu(%a) : bf16[1,4,4,8] @"relu"
  output %y)");
  const ConvGraphLowering &L = S.L;
  ASSERT_TRUE(L.Anchor) << L.Why;
  ASSERT_EQ(L.Ops.size(), 2u);
  // The chain's value goes first whichever side the model wrote it on.
  EXPECT_EQ(L.Ops[0].X, 0);
  const ConvGraphTensor &R = L.Tensors[L.Ops[0].B];
  EXPECT_EQ(R.K, Kind::Operand);
  EXPECT_EQ(R.Elem, DType::BF16);
  EXPECT_EQ(R.Dims, (std::array<int64_t, 4>{1, 8, 4, 4}));
  EXPECT_EQ(R.Strides, (std::array<int64_t, 4>{128, 1, 32, 8}));
  EXPECT_EQ(L.Ops[1].Mode, ConvPointwise::Relu);
  EXPECT_EQ(L.Ops[1].Upper, FLT_MAX);
}

TEST(ConvGraphEpilogue, F32ConvolutionIsNotLowered) {
  Lowered S = lower(R"(  input %x : f32[1,4,4,8]
  input %w : f32[8,1,1,8]
  input %r : f32[1,4,4,8]
  %c = Conv(%x, %w) {kernel_shape = [1, 1], layout = "NHWC"} : f32[1,4,4,8] @"conv"
  %a = Add(%r, %c) : f32[1,4,4,8] @"add"
  output %a)");
  EXPECT_FALSE(S.L.Anchor);
  EXPECT_NE(S.L.Why.find("f16/bf16"), std::string::npos) << S.L.Why;
}

TEST(ConvGraphEpilogue, HardSwishIsWrittenOutWithScalarsByValue) {
  Lowered S = lower(R"(  input %x : f16[1,4,4,8]
  input %w : f16[8,1,1,8]
  %c = Conv(%x, %w) {kernel_shape = [1, 1], layout = "NHWC"} : f16[1,4,4,8] @"conv"
  %y = HardSwish(%c) : f16[1,4,4,8] @"hswish"
  output %y)");
  const ConvGraphLowering &L = S.L;
  ASSERT_TRUE(L.Anchor) << L.Why;
  ASSERT_EQ(L.Ops.size(), 4u);
  EXPECT_EQ(L.Ops[0].Mode, ConvPointwise::Mul);
  EXPECT_EQ(L.Tensors[L.Ops[0].B].K, Kind::Scalar);
  EXPECT_FLOAT_EQ(L.Tensors[L.Ops[0].B].ByValue, 1.0f / 6.0f);
  EXPECT_EQ(L.Ops[1].Mode, ConvPointwise::Add);
  EXPECT_FLOAT_EQ(L.Tensors[L.Ops[1].B].ByValue, 0.5f);
  EXPECT_EQ(L.Ops[2].Mode, ConvPointwise::Relu);
  EXPECT_EQ(L.Ops[2].Upper, 1.0f);
  EXPECT_EQ(L.Ops[3].Mode, ConvPointwise::Mul);
  EXPECT_EQ(L.Ops[3].X, 0);
  EXPECT_EQ(L.Ops[3].B, L.Ops[2].Y);
}

TEST(ConvGraphEpilogue, ClipWithAComputedBoundIsNotLowered) {
  Lowered S = lower(R"(  input %x : f16[1,4,4,8]
  input %w : f16[8,1,1,8]
  input %hi : f16[]
  %c = Conv(%x, %w) {kernel_shape = [1, 1], layout = "NHWC"} : f16[1,4,4,8] @"conv"
  %y = Clip(%c, none, %hi) : f16[1,4,4,8] @"clip"
  output %y)");
  EXPECT_FALSE(S.L.Anchor);
  EXPECT_NE(S.L.Why.find("upper bound is not a constant"), std::string::npos)
      << S.L.Why;
}

} // namespace
