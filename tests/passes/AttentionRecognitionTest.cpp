//===- AttentionRecognitionTest.cpp ---------------------------------------===//
#include "passes/AttentionRecognition.h"
#include "PassTestUtils.h"
#include "passes/Pipeline.h"
#include "tests/AttentionGraph.h"

using namespace solder;
using namespace solder::test;

namespace {

std::pair<bool, std::string> recognize(llvm::StringRef Text,
                                       std::vector<std::string> Disabled = {}) {
  return runFusionPass<AttentionRecognition>(Text, std::move(Disabled));
}

/// The one reason attention-recognition notes on Text, which it leaves
/// unchanged.
void expectRejected(llvm::StringRef Text, llvm::StringRef Reason) {
  auto G = parseOrDie(Text);
  ASSERT_TRUE(G);
  FusionState State({});
  AttentionRecognition P(State);
  DecisionLog Log;
  llvm::Expected<bool> Changed = P.run(*G, Log);
  ASSERT_TRUE(bool(Changed)) << llvm::toString(Changed.takeError());
  EXPECT_FALSE(*Changed);
  EXPECT_EQ(graphToString(*G), canonical(Text));
  ASSERT_EQ(Log.records().size(), 1u);
  EXPECT_EQ(Log.records()[0].Reason, Reason.str());
}

/// attention-recognition rewrites Text into IR holding each of Pieces and
/// lacking each of Absent, with the reference outputs kept within 1e-5.
void expectRecognized(llvm::StringRef Text,
                      const std::vector<std::string> &Pieces,
                      const std::vector<std::string> &Absent = {}) {
  auto [Changed, After] = recognize(Text);
  EXPECT_TRUE(Changed);
  for (const std::string &P : Pieces)
    EXPECT_NE(After.find(P), std::string::npos) << P << "\n" << After;
  for (const std::string &P : Absent)
    EXPECT_EQ(After.find(P), std::string::npos) << P << "\n" << After;
  expectFusionKeepsFunction<AttentionRecognition>(Text, "= Attention(", 1e-5);
}

TEST(AttentionRecognition, LegacyExportBecomesOneThreeDimensionalAttention) {
  std::string Text = attentionGraphText(2);
  auto [Changed, After] = recognize(Text);
  EXPECT_TRUE(Changed);
  // Head split and merge are gone: the op reads the 3-D slices and the
  // merge Reshape reads its 3-D result.
  EXPECT_NE(After.find("= Attention(%q, %k, %v) {id = 0, kv_num_heads = 2, "
                       "members = [\"reshape_q\", \"reshape_k\", "
                       "\"reshape_v\", \"transpose_q\", \"transpose_k\", "
                       "\"transpose_v\", \"scores\", \"scale\", \"softmax\", "
                       "\"context\", \"merge_t\"], q_num_heads = 2, scale = "
                       "0.5} : f32[2,5,8]"),
            std::string::npos)
      << After;
  EXPECT_EQ(After.find("Transpose"), std::string::npos) << After;
  EXPECT_EQ(After.find("Softmax"), std::string::npos) << After;
  expectFusionKeepsFunction<AttentionRecognition>(Text, "= Attention(", 1e-5);
}

// Four-dimensional operands with a Div scale, an additive mask, and the
// dynamo exporter's sqrt(scale) on both Q and K^T.
const char *FourDim = R"(
graph "g" opset 17 {
  input %q : f32[2,3,4,8]
  input %k : f32[2,3,6,8]
  input %v : f32[2,3,6,5]
  input %mask : f32[2,1,1,6]
  const %c : f32[] = [0.5]
  const %d : f32[] = [2.0]
  %qs = Mul(%q, %c) : f32[2,3,4,8] @"scale_q"
  %kt = Transpose(%k) {perm = [0, 1, 3, 2]} : f32[2,3,8,6] @"kt"
  %ks = Mul(%kt, %c) : f32[2,3,8,6] @"scale_k"
  %s = MatMul(%qs, %ks) : f32[2,3,4,6] @"scores"
  %sd = Div(%s, %d) : f32[2,3,4,6] @"div"
  %sm = Add(%mask, %sd) : f32[2,3,4,6] @"mask_add"
  %p = Softmax(%sm) {axis = 3} : f32[2,3,4,6] @"softmax"
  %o = MatMul(%p, %v) : f32[2,3,4,5] @"context"
  output %o
}
)";

TEST(AttentionRecognition, FourDimensionalFormTakesScalesAndMask) {
  auto [Changed, After] = recognize(FourDim);
  EXPECT_TRUE(Changed);
  // 0.5 * 0.5 / 2; K^T's Transpose is composed away.
  EXPECT_NE(After.find("%o = Attention(%q, %k, %v, %mask) {id = 0, members = "
                       "[\"scale_q\", \"kt\", \"scale_k\", \"scores\", "
                       "\"div\", \"mask_add\", \"softmax\", \"context\"], "
                       "scale = 0.125} : f32[2,3,4,5]"),
            std::string::npos)
      << After;
  expectFusionKeepsFunction<AttentionRecognition>(FourDim, "= Attention(",
                                                  1e-5);
}

// Two additive masks (T5's position bias and a padding mask) become one.
TEST(AttentionRecognition, SeveralMasksAreSummedIntoOne) {
  const char *Text = R"(
graph "g" opset 17 {
  input %q : f32[1,2,4,8]
  input %kt : f32[1,2,8,4]
  input %v : f32[1,2,4,8]
  input %bias : f32[1,2,4,4]
  input %pad : f32[1,1,1,4]
  %s = MatMul(%q, %kt) : f32[1,2,4,4] @"scores"
  %a = Add(%s, %bias) : f32[1,2,4,4] @"add_bias"
  %b = Add(%a, %pad) : f32[1,2,4,4] @"add_pad"
  %p = Softmax(%b) {axis = -1} : f32[1,2,4,4] @"softmax"
  %o = MatMul(%p, %v) : f32[1,2,4,8] @"context"
  output %o
}
)";
  auto [Changed, After] = recognize(Text);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("= Add(%bias, %pad)"), std::string::npos) << After;
  EXPECT_NE(After.find("Transpose(%kt) {perm = [0, 1, 3, 2]}"),
            std::string::npos)
      << After;
  expectFusionKeepsFunction<AttentionRecognition>(Text, "= Attention(", 1e-5);
}

// A mask read elsewhere too stays as it is and is the Attention's operand.
TEST(AttentionRecognition, MaskUsedElsewhereStaysAnOperand) {
  std::string Text = FourDim;
  Text.replace(Text.find("  output %o"), 0,
               "  %m2 = Neg(%mask) : f32[2,1,1,6] @\"other\"\n");
  Text.replace(Text.find("output %o\n") + 10, 0, "  output %m2\n");
  auto [Changed, After] = recognize(Text);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("Attention(%q, %k, %v, %mask)"), std::string::npos)
      << After;
  EXPECT_NE(After.find("Neg(%mask)"), std::string::npos) << After;
}

// An fp16 plan keeps the additive mask (-3.4e38) in fp32: the scores are
// widened before its Add and the probabilities narrowed after the Softmax.
const char *HalfWithWideMask = R"(
graph "g" opset 17 {
  input %q : f16[2,3,4,8]
  input %kt : f16[2,3,8,6]
  input %v : f16[2,3,6,5]
  input %mask : f32[2,1,1,6]
  const %d : f16[] = [2.0]
  %s = MatMul(%q, %kt) : f16[2,3,4,6] @"scores"
  %sd = Div(%s, %d) : f16[2,3,4,6] @"div"
  %sw = Cast(%sd) {to = 1} : f32[2,3,4,6] @"widen"
  %sm = Add(%sw, %mask) : f32[2,3,4,6] @"mask_add"
  %p = Softmax(%sm) {axis = -1} : f32[2,3,4,6] @"softmax"
  %ph = Cast(%p) {to = 10} : f16[2,3,4,6] @"narrow"
  %o = MatMul(%ph, %v) : f16[2,3,4,5] @"context"
  output %o
}
)";

TEST(AttentionRecognition, CastsAroundAnFp32MaskAndSoftmaxAreAbsorbed) {
  auto [Changed, After] = recognize(HalfWithWideMask);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("\"div\", \"widen\", \"mask_add\", \"softmax\", "
                       "\"narrow\", \"context\"], scale = 0.5} : "
                       "f16[2,3,4,5]"),
            std::string::npos)
      << After;
  EXPECT_NE(After.find(", %mask) {id = 0"), std::string::npos) << After;
  EXPECT_EQ(After.find("Cast("), std::string::npos) << After;
  expectFusionKeepsFunction<AttentionRecognition>(HalfWithWideMask,
                                                  "= Attention(", 1e-2);
}

TEST(AttentionRecognition, MaskOfAThirdFloatTypeIsLeftAlone) {
  // Negative twin: a bf16 mask with f16 Q, K and V.
  std::string Text = HalfWithWideMask;
  Text.replace(Text.find("input %mask : f32"), 17, "input %mask : bf16");
  Text.replace(Text.find("{to = 1} : f32"), 14, "{to = 16} : bf16");
  Text.replace(Text.find("Add(%sw, %mask) : f32"), 21,
               "Add(%sw, %mask) : bf16");
  Text.replace(Text.find("{axis = -1} : f32"), 17, "{axis = -1} : bf16");
  expectRejected(Text, "the masks are not all of Q's type, f32 or bool");
}

// transformers 5 expands its padding mask to [B, 1, Sq, Sk] before the
// Where: the Attention takes the Where over the unexpanded [B, 1, 1, Sk]
// mask instead (one value per key for the kernel), and the expanded mask
// dies.
const char *ExpandedPadding = R"(
graph "g" opset 17 {
  input %q : f32[2,3,4,8]
  input %kt : f32[2,3,8,6]
  input %v : f32[2,3,6,5]
  input %pad : bool[2,1,1,6]
  const %shape : i64[4] = [2, 1, 4, 6]
  const %zero : f32[] = [0]
  const %min : f32[] = [-3.4028234663852886e38]
  %e = Expand(%pad, %shape) : bool[2,1,4,6] @"expand"
  %mask = Where(%e, %zero, %min) : f32[2,1,4,6] @"where"
  %s = MatMul(%q, %kt) : f32[2,3,4,6] @"scores"
  %sm = Add(%s, %mask) : f32[2,3,4,6] @"mask_add"
  %p = Softmax(%sm) {axis = -1} : f32[2,3,4,6] @"softmax"
  %o = MatMul(%p, %v) : f32[2,3,4,5] @"context"
  output %o
}
)";

TEST(AttentionRecognition, ExpandedPaddingMaskIsTakenUnexpanded) {
  auto [Changed, After] = recognize(ExpandedPadding);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("%mask.rows = Where(%pad, %zero, %min) : f32[2,1,1,6]"),
            std::string::npos)
      << After;
  EXPECT_NE(After.find(", %mask.rows) {id = 0"), std::string::npos) << After;
  EXPECT_EQ(After.find("Expand("), std::string::npos) << After;
  expectFusionKeepsFunction<AttentionRecognition>(ExpandedPadding,
                                                  "= Attention(", 1e-5);
}

TEST(AttentionRecognition, MaskVaryingAlongTheRowsStaysExpanded) {
  // Negative twin: the source already differs per row (a causal-style
  // [2, 1, 4, 6] mask expanded over the heads): it stays as it is.
  std::string Text = ExpandedPadding;
  Text.replace(Text.find("input %pad : bool[2,1,1,6]"), 26,
               "input %pad : bool[2,1,4,6]");
  Text.replace(Text.find("[2, 1, 4, 6]"), 12, "[2, 3, 4, 6]");
  Text.replace(Text.find(": bool[2,1,4,6] @\"expand\""), 15, ": bool[2,3,4,6]");
  Text.replace(Text.find(": f32[2,1,4,6] @\"where\""), 14, ": f32[2,3,4,6]");
  auto [Changed, After] = recognize(Text);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("Expand(%pad, %shape)"), std::string::npos) << After;
  EXPECT_NE(After.find(", %mask) {id = 0"), std::string::npos) << After;
}

// Negative twins.
TEST(AttentionRecognition, ScoresWithASecondUserAreLeftAlone) {
  std::string Text = FourDim;
  Text.replace(Text.find("  output %o"), 0,
               "  %leak = Relu(%sm) : f32[2,3,4,6] @\"leak\"\n");
  Text.replace(Text.find("output %o\n") + 10, 0, "  output %leak\n");
  expectRejected(Text, "an intermediate of the attention has a second user");
}

TEST(AttentionRecognition, NonConstantScaleIsLeftAlone) {
  std::string Text = FourDim;
  Text.replace(Text.find("input %mask"), 0, "input %t : f32[] \n  ");
  Text.replace(Text.find("Div(%s, %d)"), 11, "Div(%s, %t)");
  expectRejected(Text, "the scores are scaled by a non-constant");
}

TEST(AttentionRecognition, SoftmaxOverAnotherAxisIsLeftAlone) {
  std::string Text = FourDim;
  Text.replace(Text.find("{axis = 3}"), 10, "{axis = 2}");
  expectRejected(Text, "the Softmax is not over the last axis");
}

TEST(AttentionRecognition, ProbabilitiesNotMultiplyingVAreLeftAlone) {
  std::string Text = FourDim;
  Text.replace(Text.find("MatMul(%p, %v)"), 14, "MatMul(%v, %p)");
  Text.replace(Text.find("input %v : f32[2,3,6,5]"), 23,
               "input %v : f32[2,3,4,4]");
  Text.replace(Text.find(": f32[2,3,4,5] @\"context\""), 14, ": f32[2,3,4,6]");
  expectRejected(Text, "the probabilities do not multiply V");
}

TEST(AttentionRecognition, HeadDimsAboveTheGpuLimitAreLeftAlone) {
  // For the GPU (limit 4 here) the head dim 8 of FourDim stays unfused;
  // without a limit (the reference backend) it is fused.
  auto G = parseOrDie(FourDim);
  ASSERT_TRUE(G);
  FusionState State({});
  AttentionRecognition P(State, /*MaxHeadDim=*/4);
  DecisionLog Log;
  llvm::Expected<bool> Changed = P.run(*G, Log);
  ASSERT_TRUE(bool(Changed)) << llvm::toString(Changed.takeError());
  EXPECT_FALSE(*Changed);
  ASSERT_EQ(Log.records().size(), 1u);
  EXPECT_EQ(Log.records()[0].Reason,
            "head dims above 4 (the GPU attention kernels' limit)");
  EXPECT_TRUE(recognize(FourDim).first);
}

TEST(AttentionRecognition, AutomaticModeNeedsEnoughBlocks) {
  // FourDim's scores [2,3,4,6] make 2*3*ceil(4/64) = 6 blocks of 64 query
  // rows: fused at a threshold of 6, left alone (with the count) at 7.
  for (int64_t Min : {6, 7}) {
    auto G = parseOrDie(FourDim);
    ASSERT_TRUE(G);
    FusionState State({});
    AttentionRecognition P(State, /*MaxHeadDim=*/0, /*MinBlocks=*/Min);
    DecisionLog Log;
    llvm::Expected<bool> Changed = P.run(*G, Log);
    ASSERT_TRUE(bool(Changed)) << llvm::toString(Changed.takeError());
    EXPECT_EQ(*Changed, Min == 6);
    ASSERT_EQ(Log.records().size(), 1u);
    if (Min == 7) {
      EXPECT_EQ(Log.records()[0].Reason,
                "automatic attention fusion: B*H*ceil(Sq/64) = 6 blocks, "
                "below 7 (too few to fill the GPU; --fuse-attention forces "
                "it)");
    }
  }
}

TEST(AttentionRecognition, ShortKeysFuseASmallGridLongOnesDoNot) {
  // FourDim: 6 blocks, 6 keys. With a short-key bound of 6 it is fused;
  // with 5 (its keys now "long") it is left alone and the reason says both.
  for (int64_t Short : {6, 5}) {
    auto G = parseOrDie(FourDim);
    ASSERT_TRUE(G);
    FusionState State({});
    AttentionRecognition P(State, /*MaxHeadDim=*/0, /*MinBlocks=*/7, Short);
    DecisionLog Log;
    llvm::Expected<bool> Changed = P.run(*G, Log);
    ASSERT_TRUE(bool(Changed)) << llvm::toString(Changed.takeError());
    EXPECT_EQ(*Changed, Short == 6);
    ASSERT_EQ(Log.records().size(), 1u);
    if (Short == 5) {
      EXPECT_EQ(Log.records()[0].Reason,
                "automatic attention fusion: B*H*ceil(Sq/64) = 6 blocks, "
                "below 7, with 6 keys (above 5) (too few to fill the GPU; "
                "--fuse-attention forces it)");
    }
  }
}

TEST(AttentionRecognition, PipelineFusesAutomaticallyOnlyReducedGpuPlans) {
  // The pipeline's automatic mode runs attention-recognition for fp16/bf16
  // GPU plans (FourDim's few keys make it fuse despite its small grid) and
  // not for fp32 ones or with AutoAttention off.
  struct Case {
    Precision Prec;
    bool Auto;
    bool Expect;
  };
  for (Case C :
       {Case{Precision::F16, true, true}, Case{Precision::BF16, true, true},
        Case{Precision::F32, true, false},
        Case{Precision::F16, false, false}}) {
    auto G = parseOrDie(FourDim);
    ASSERT_TRUE(G);
    PipelineOptions PO;
    PO.TargetGpu = true;
    PO.Prec = C.Prec;
    PO.AutoAttention = C.Auto;
    std::vector<DecisionRecord> Decisions;
    PO.Decisions = &Decisions;
    ASSERT_FALSE(bool(runPipeline(*G, PO)));
    // FourDim has 6 keys: a short key range, fused despite its 6 blocks.
    bool Noted = llvm::any_of(Decisions, [](const DecisionRecord &D) {
      return D.Pass == "attention-recognition" && D.Applied;
    });
    EXPECT_EQ(Noted, C.Expect) << precisionName(C.Prec).str() << " " << C.Auto;
  }
}

TEST(AttentionRecognition, PipelineFusesEveryAttentionForCudnn) {
  // FourDim with 300 keys: 6 blocks of long keys, which the automatic
  // thresholds (the generated kernel's) leave unfused; with cuDNN asked
  // for, the pipeline fuses it all the same, and only then.
  std::string Long = FourDim;
  for (auto [From, To] :
       {std::pair<std::string, std::string>{"3,6,", "3,300,"}, {"6]", "300]"}})
    for (size_t At = Long.find(From); At != std::string::npos;
         At = Long.find(From, At + To.size()))
      Long.replace(At, From.size(), To);
  for (AttentionKernels K : {AttentionKernels::Auto, AttentionKernels::Cudnn,
                             AttentionKernels::Generated}) {
    auto G = parseOrDie(Long);
    ASSERT_TRUE(G);
    PipelineOptions PO;
    PO.TargetGpu = true;
    PO.Prec = Precision::F16;
    PO.Attention = K;
    ASSERT_FALSE(bool(runPipeline(*G, PO)));
    bool Fused = llvm::any_of(G->nodes(), [](const std::unique_ptr<Node> &N) {
      return N->kind() == OpKind::Attention;
    });
    EXPECT_EQ(Fused, K == AttentionKernels::Cudnn) << int(K);
  }
}

TEST(AttentionRecognition, DisabledByNodeNameIsLeftAlone) {
  auto [Changed, After] = recognize(FourDim, {"softmax"});
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(FourDim));
}

// MaxViT's window attention: [batch, windows, heads, tokens, dim] with a
// relative-position bias broadcast over batch and windows.
const char *FiveDim = R"(
graph "g" opset 17 {
  input %q : f32[1,4,2,5,8]
  input %kt : f32[1,4,2,8,5]
  input %v : f32[1,4,2,5,8]
  input %bias : f32[2,5,5]
  const %c : f32[] = [0.25]
  %s = MatMul(%q, %kt) : f32[1,4,2,5,5] @"scores"
  %sc = Mul(%s, %c) : f32[1,4,2,5,5] @"scale"
  %sb = Add(%sc, %bias) : f32[1,4,2,5,5] @"bias_add"
  %p = Softmax(%sb) {axis = -1} : f32[1,4,2,5,5] @"softmax"
  %o = MatMul(%p, %v) : f32[1,4,2,5,8] @"context"
  output %o
}
)";

TEST(AttentionRecognition, FiveDimensionalScoresCollapseIntoTheBatch) {
  // Q, K^T, V and the bias are viewed as 4-D with batch 1 * 4; the result
  // is viewed back.
  expectRecognized(FiveDim, {"Reshape(%q, %q.4d.shape) : f32[4,2,5,8]",
                             "Reshape(%bias, %bias.4d.shape) : f32[1,2,5,5]",
                             "scale = 0.25} : f32[4,2,5,8]"});
}

TEST(AttentionRecognition, MaskOverSomeLeadingDimsOnlyIsLeftAlone) {
  // Negative twin: a mask varying over windows but broadcast over the
  // batch of 2 cannot be viewed with the two dims collapsed.
  std::string Text = FiveDim;
  size_t P;
  while ((P = Text.find("[1,4,2,")) != std::string::npos)
    Text.replace(P, 7, "[2,4,2,");
  Text.replace(Text.find("input %bias : f32[2,5,5]"), 24,
               "input %bias : f32[4,1,5,5]");
  expectRejected(Text, "a mask broadcasts over some of the leading dims only");
}

// Swin's shifted windows: the window mask is added to a 5-D view of the
// 4-D scores ([windows, heads, ...] split into [batch, windows, heads]).
const char *ShiftedWindows = R"(
graph "g" opset 17 {
  input %q : f32[4,2,5,8]
  input %kt : f32[4,2,8,5]
  input %v : f32[4,2,5,8]
  input %wmask : f32[1,4,1,5,5]
  const %s5 : i64[5] = [1, 4, 2, 5, 5]
  const %s4 : i64[4] = [4, 2, 5, 5]
  %s = MatMul(%q, %kt) : f32[4,2,5,5] @"scores"
  %r5 = Reshape(%s, %s5) : f32[1,4,2,5,5] @"to5d"
  %m5 = Add(%r5, %wmask) : f32[1,4,2,5,5] @"mask_add"
  %r4 = Reshape(%m5, %s4) : f32[4,2,5,5] @"to4d"
  %p = Softmax(%r4) {axis = -1} : f32[4,2,5,5] @"softmax"
  %o = MatMul(%p, %v) : f32[4,2,5,8] @"context"
  output %o
}
)";

TEST(AttentionRecognition, MaskAddedToAFiveDimensionalViewIsReshaped) {
  expectRecognized(ShiftedWindows,
                   {"Reshape(%wmask, %wmask.4d.shape) : f32[4,1,5,5]"},
                   {"@\"to5d\"", "%s5"});
}

TEST(AttentionRecognition, ReshapeAcrossRowsIsLeftAlone) {
  // Negative twin: the 5-D view moves the rows into other dims.
  std::string Text = ShiftedWindows;
  Text.replace(Text.find("[1, 4, 2, 5, 5]"), 15, "[4, 2, 5, 5, 1]");
  Text.replace(Text.find(": f32[1,4,2,5,5] @\"to5d\""), 16, ": f32[4,2,5,5,1]");
  Text.replace(Text.find(": f32[1,4,2,5,5] @\"mask_add\""), 16,
               ": f32[4,2,5,5,1]");
  Text.replace(Text.find("input %wmask : f32[1,4,1,5,5]"), 29,
               "input %wmask : f32[1,1,1,1,1]");
  expectRejected(Text, "the scores are reshaped across heads or rows");
}

} // namespace
