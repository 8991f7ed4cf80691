//===- PrecisionConversionTest.cpp ----------------------------------------===//
#include "passes/PrecisionConversion.h"
#include "PassTestUtils.h"
#include "ir/OpRegistry.h"
#include <cmath>
#include <cstring>

using namespace solder;
using namespace solder::test;

namespace {

std::pair<bool, std::string> convert(llvm::StringRef Text, Precision P,
                                     bool KeepModelIo = true) {
  PrecisionConversion Pass(P, KeepModelIo);
  return runPassOn(Pass, Text);
}

const char *Mlp = R"(graph "g" opset 17 {
  input %x : f32[2,4]
  const %w : f32[4,3] = [0.5, -0.25, 1, 2, 0.125, -1, 0.75, 0.5, -0.5, 1, 1, 1]
  const %b : f32[3] = [0.1, 0.2, 0.3]
  %m = MatMul(%x, %w) : f32[2,3] @"mm"
  %a = Add(%m, %b) : f32[2,3] @"add"
  %r = Relu(%a) : f32[2,3] @"relu"
  output %r
})";

/// Reference outputs of Before and After on the same random inputs (After
/// may take them in another float type when KeepModelIo is off).
double relativeDifference(llvm::StringRef Before, const std::string &After) {
  auto B = parseOrDie(Before), A = parseOrDie(After);
  if (!B || !A)
    return 1e9;
  auto RB = runRandom(*B, 3), RA = runRandom(*A, 3);
  double Max = 0, MaxRef = 0;
  for (size_t I = 0; I < RB.size() && I < RA.size(); ++I)
    for (int64_t J = 0; J < RB[I].numElements(); ++J) {
      Max = std::max(Max, std::fabs(RA[I].getDouble(J) - RB[I].getDouble(J)));
      MaxRef = std::max(MaxRef, std::fabs(RB[I].getDouble(J)));
    }
  return Max / std::max(MaxRef, 1e-30);
}

} // namespace

TEST(PrecisionConversion, Fp16KeepsTheModelsFp32InputsAndOutputs) {
  auto [Changed, After] = convert(Mlp, Precision::F16);
  EXPECT_TRUE(Changed);
  // Weights converted once; casts at the boundary only.
  EXPECT_NE(After.find("const %w.f16 : f16[4,3]"), std::string::npos) << After;
  EXPECT_NE(After.find("MatMul(%x.f16, %w.f16) : f16[2,3]"), std::string::npos)
      << After;
  EXPECT_NE(After.find("%r = Cast(%r.f16) {to = 1} : f32[2,3]"),
            std::string::npos)
      << After;
  EXPECT_NE(After.find("input %x : f32[2,4]"), std::string::npos) << After;
  EXPECT_LE(relativeDifference(Mlp, After), 1e-2);
}

TEST(PrecisionConversion, ComputeIoTakesTheReducedTypeAtTheBoundary) {
  auto [Changed, After] = convert(Mlp, Precision::BF16, false);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("input %x : bf16[2,4]"), std::string::npos) << After;
  EXPECT_EQ(After.find("Cast("), std::string::npos) << After;
}

TEST(PrecisionConversion, Fp32AndTf32PlansAreLeftAlone) {
  // Negative twin: nothing to convert.
  for (Precision P : {Precision::F32, Precision::TF32}) {
    auto [Changed, After] = convert(Mlp, P);
    EXPECT_FALSE(Changed);
    EXPECT_EQ(After, canonical(Mlp));
  }
}

// A transformer's additive padding mask, (1 - mask) * float32 min, added
// to the scores before the softmax.
const char *PaddingMaskSoftmax = R"(graph "g" opset 17 {
  input %scores : f32[1,4]
  input %mask : i64[1,4]
  const %one : f32[] = [1]
  const %min : f32[] = [-3.4028234663852886e38]
  %mf = Cast(%mask) {to = 1} : f32[1,4] @"cast"
  %inv = Sub(%one, %mf) : f32[1,4] @"sub"
  %add = Mul(%inv, %min) : f32[1,4] @"mul"
  %s = Add(%scores, %add) : f32[1,4] @"add"
  %p = Softmax(%s) {axis = -1} : f32[1,4] @"softmax"
  output %p
})";

TEST(PrecisionConversion, HugeMaskConstantsStayFinite) {
  // A transformer's additive mask: (1 - mask) * float32 min. Rounded to
  // fp16 the constant would be -inf and 0 * -inf = NaN for kept tokens.
  const char *Text = PaddingMaskSoftmax;
  for (Precision P : {Precision::F16, Precision::BF16}) {
    auto [Changed, After] = convert(Text, P);
    EXPECT_TRUE(Changed);
    auto G = parseOrDie(After);
    ASSERT_TRUE(G);
    Tensor Scores(DType::F32, {1, 4}), Mask(DType::I64, {1, 4});
    for (int I = 0; I < 4; ++I) {
      Scores.setDouble(I, 0.5 * I);
      Mask.setDouble(I, I < 3 ? 1 : 0); // the last token is padding
    }
    auto Out = runReference(*G, {Scores, Mask});
    ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
    for (int I = 0; I < 4; ++I)
      EXPECT_TRUE(std::isfinite((*Out)[0].getDouble(I))) << After;
    EXPECT_NEAR((*Out)[0].getDouble(3), 0.0, 1e-6);
    EXPECT_NEAR((*Out)[0].getDouble(0) + (*Out)[0].getDouble(1) +
                    (*Out)[0].getDouble(2),
                1.0, 1e-2);
  }
}

TEST(PrecisionConversion, AFullyPaddedRowStaysUniformInFp16) {
  // Clamped to -65504, the mask would not swamp the scores once a kernel
  // adds in fp32: a sequence that is all padding would attend by its
  // scores instead of uniformly, as it does in fp32. In fp16 plans the
  // nodes reading the constant compute in fp32, and so do the Add and the
  // Softmax after them.
  const char *Text = PaddingMaskSoftmax;
  auto [Changed, After] = convert(Text, Precision::F16);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("Mul(%inv.f32, %min) : f32[1,4]"), std::string::npos)
      << After;
  EXPECT_NE(After.find("Softmax(%s) {axis = -1} : f32[1,4]"), std::string::npos)
      << After;
  auto G = parseOrDie(After);
  ASSERT_TRUE(G);
  Tensor Scores(DType::F32, {1, 4}), Mask(DType::I64, {1, 4});
  for (int I = 0; I < 4; ++I) {
    Scores.setDouble(I, 1.5 * I);
    Mask.setDouble(I, 0); // every token is padding
  }
  auto Out = runReference(*G, {Scores, Mask});
  ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
  for (int I = 0; I < 4; ++I)
    EXPECT_NEAR((*Out)[0].getDouble(I), 0.25, 1e-3) << After;
}

TEST(PrecisionConversion, ConstantsInRangeAndBf16MasksStayReduced) {
  // Negative twins: -1e4 fits fp16, and bf16 reaches -3.39e38, whose
  // clamp still swamps the scores: those nodes compute reduced.
  const char *Text = R"(graph "g" opset 17 {
  input %scores : f32[1,4]
  input %mask : f32[1,4]
  const %big : f32[] = [-10000]
  const %min : f32[] = [-3.4028234663852886e38]
  %a = Mul(%mask, %big) : f32[1,4] @"mul"
  %b = Mul(%mask, %min) : f32[1,4] @"mul2"
  %s = Add(%scores, %a) : f32[1,4] @"add"
  output %s
  output %b
})";
  auto [Changed, After] = convert(Text, Precision::F16);
  EXPECT_NE(After.find("Add(%scores.f16, %a) : f16[1,4]"), std::string::npos)
      << After;
  EXPECT_NE(After.find("Mul(%mask, %min) : f32[1,4]"), std::string::npos)
      << After;
  auto [ChangedBf, AfterBf] = convert(Text, Precision::BF16);
  EXPECT_NE(AfterBf.find(": bf16[1,4] @\"mul2\""), std::string::npos)
      << AfterBf;
}

TEST(PrecisionConversion, LargeConstantsConvertBitExactlyInSlices) {
  // A constant big enough to be converted in slices on several threads,
  // full of the cases the fast path must hand to the exact one (halves'
  // subnormals, ties, values rounding up to the next binade or past the
  // largest half, infinities, NaN, -0): every element has the bits
  // floatToHalf / floatToBF16 give its clamped value. Twin: a small
  // constant (one slice, no threads) the same.
  const float Special[] = {
      0.0f,           -0.0f,    1.0f,           -2.5f,
      65504.0f,       65519.0f, 65520.0f,       1e6f,
      -1e6f,          6.0e-8f,  3.0e-8f,        2.98e-8f,
      6.1e-5f,        6.09e-5f, 1.0009766f,     1.00048828125f,
      1.00146484375f, 3.4e38f,  -3.4028235e38f, INFINITY,
      -INFINITY,      NAN,      1e-45f,         0.33333334f};
  for (int64_t N : {int64_t(3) << 18 | 5, int64_t(1000)}) {
    Tensor W(DType::F32, {N, 1});
    float *P = W.mutableData<float>();
    uint32_t Seed = 12345;
    for (int64_t I = 0; I < N; ++I) {
      Seed = Seed * 1664525u + 1013904223u;
      if (I % 7 == 0) {
        P[I] = Special[(Seed >> 8) % (sizeof(Special) / sizeof(float))];
      } else {
        // Any float bits but NaNs (with the exponents halves care about
        // more likely).
        uint32_t U = Seed & 0x807fffffu;
        U |= (100u + (Seed >> 23) % 60u) << 23;
        std::memcpy(&P[I], &U, 4);
      }
    }
    for (Precision Prec : {Precision::F16, Precision::BF16}) {
      Graph G("g");
      // A contraction: its constant is clamped and reduced whatever the
      // values (an elementwise user of 1e6 would stay fp32 in fp16 plans).
      Value *X = G.addInput(
          "x", TensorType(DType::F32, llvm::ArrayRef<int64_t>{1, N}));
      Value *C = G.addConstant("w", W);
      Node *M = G.addNode(OpKind::MatMul, {X, C}, {"y"}, "matmul");
      ASSERT_FALSE(bool(inferNodeTypes(*M)));
      G.addOutput(M->result(0));
      PrecisionConversion Pass(Prec, /*KeepModelIo=*/true);
      DecisionLog Log;
      llvm::Expected<bool> Changed = Pass.run(G, Log);
      ASSERT_TRUE(bool(Changed)) << llvm::toString(Changed.takeError());
      const Tensor *R = M->operand(1)->constant();
      ASSERT_TRUE(R);
      DType T = Prec == Precision::F16 ? DType::F16 : DType::BF16;
      ASSERT_EQ(R->dtype(), T);
      float Max = Prec == Precision::F16 ? 65504.0f : 3.3895314e38f;
      int64_t Bad = 0;
      for (int64_t I = 0; I < N; ++I) {
        float V = P[I];
        V = V > Max && V != INFINITY ? Max : V;
        V = V < -Max && V != -INFINITY ? -Max : V;
        uint16_t Want = T == DType::F16 ? floatToHalf(V) : floatToBF16(V);
        Bad += R->data<uint16_t>()[I] != Want;
      }
      EXPECT_EQ(Bad, 0) << N << " " << int(Prec);
    }
  }
}

TEST(PrecisionConversion, ExpAndItsSumStayFp32UntilTheNextMatMul) {
  // A decomposed softmax: exp(12) overflows fp16, so Exp, the sum and the
  // division run in fp32; the matmul after them takes fp16 again.
  const char *Text = R"(graph "g" opset 17 {
  input %x : f32[2,4]
  const %axes : i64[1] = [1]
  const %w : f32[4,2] = [1, 0, 0, 1, 1, 0, 0, 1]
  %e = Exp(%x) : f32[2,4] @"exp"
  %s = ReduceSum(%e, %axes) {keepdims = 1} : f32[2,1] @"sum"
  %p = Div(%e, %s) : f32[2,4] @"div"
  %m = MatMul(%p, %w) : f32[2,2] @"mm"
  output %m
})";
  auto [Changed, After] = convert(Text, Precision::F16);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("Exp(%x) : f32[2,4]"), std::string::npos) << After;
  EXPECT_NE(After.find("Div(%e, %s) : f32[2,4]"), std::string::npos) << After;
  EXPECT_NE(After.find("MatMul(%p.f16, %w.f16) : f16[2,2]"), std::string::npos)
      << After;
  EXPECT_LE(relativeDifference(Text, After), 1e-2);
}

TEST(PrecisionConversion, IntegerGraphsAreUntouched) {
  // Negative twin: no float tensor, nothing to do but report no casts.
  const char *Text = R"(graph "g" opset 17 {
  input %a : i64[3]
  input %b : i64[3]
  %c = Add(%a, %b) : i64[3] @"add"
  output %c
})";
  auto [Changed, After] = convert(Text, Precision::F16);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
}

TEST(PrecisionConversion, PolicyGivesEveryEntryAReason) {
  for (const PrecisionRule &R : precisionPolicy())
    EXPECT_GT(std::strlen(R.Reason), 20u);
}

namespace {
/// The Mlp graph with its weight and bias replaced by views of File at
/// offsets 0 and 64 (as an imported model's constants view its file).
std::unique_ptr<Graph> mlpViewing(const std::shared_ptr<std::string> &File) {
  auto G = parseOrDie(Mlp);
  if (!G)
    return nullptr;
  for (auto [Name, Offset] : {std::pair<const char *, size_t>{"w", 0},
                              std::pair<const char *, size_t>{"b", 64}}) {
    Value *Old = G->lookup(Name);
    const Tensor &T = *Old->constant();
    std::memcpy(File->data() + Offset, T.bytes().data(), T.byteSize());
    Value *New = G->addConstant(
        std::string(Name) + ".view",
        Tensor::view(T.dtype(), T.dims(), File->data() + Offset, File));
    G->replaceAllUsesWith(Old, New);
  }
  G->removeUnusedConstants();
  return G;
}

/// The reduced constant MatMul "mm" reads as its weight.
const Tensor *reducedWeight(const Graph &G) {
  for (const auto &N : G.nodes())
    if (N->name() == "mm")
      return N->operand(1)->constant();
  return nullptr;
}
} // namespace

TEST(PrecisionConversion, WeightsOfTheModelFileAreConvertedOnce) {
  // Two compiles of one mapped model (two shape variants) with one cache:
  // the second takes the first one's converted weight, the same bytes,
  // and computes as before.
  auto File = std::make_shared<std::string>(128, '\0');
  ReducedWeightCache Cache(*File, File);
  const Tensor *First = nullptr;
  for (int Compile = 0; Compile < 2; ++Compile) {
    auto G = mlpViewing(File);
    ASSERT_TRUE(G);
    PrecisionConversion Pass(Precision::F16, true, &Cache);
    DecisionLog Log;
    llvm::Expected<bool> Changed = Pass.run(*G, Log);
    ASSERT_TRUE(bool(Changed)) << llvm::toString(Changed.takeError());
    EXPECT_TRUE(*Changed);
    const Tensor *W = reducedWeight(*G);
    ASSERT_TRUE(W && W->dtype() == DType::F16);
    if (!First) {
      First = W;
      EXPECT_LE(relativeDifference(Mlp, graphToString(*G)), 1e-2);
    } else {
      EXPECT_EQ(W->bytes().data(), First->bytes().data())
          << "the second compile converted the weight again";
    }
    // The converted weight and the bias's range check.
    EXPECT_EQ(Cache.size(), 2u);
  }
}

TEST(PrecisionConversion, ConstantsOutsideTheModelFileAreNotKept) {
  // Negative twin: constants with bytes of their own (folded, parsed from
  // text) are converted by each compile and the cache stays empty.
  auto File = std::make_shared<std::string>(128, '\0');
  ReducedWeightCache Cache(*File, File);
  std::vector<std::unique_ptr<Graph>> Compiled; // alive: no address reuse
  for (int Compile = 0; Compile < 2; ++Compile) {
    Compiled.push_back(parseOrDie(Mlp));
    Graph *G = Compiled.back().get();
    ASSERT_TRUE(G);
    PrecisionConversion Pass(Precision::F16, true, &Cache);
    DecisionLog Log;
    llvm::Expected<bool> Changed = Pass.run(*G, Log);
    ASSERT_TRUE(bool(Changed)) << llvm::toString(Changed.takeError());
    const Tensor *W = reducedWeight(*G);
    ASSERT_TRUE(W && W->dtype() == DType::F16);
    if (Compile == 1) {
      EXPECT_NE(W->bytes().data(), reducedWeight(*Compiled[0])->bytes().data());
    }
    EXPECT_EQ(Cache.size(), 0u);
  }
}
