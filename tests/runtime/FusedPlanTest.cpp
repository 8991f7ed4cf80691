//===- FusedPlanTest.cpp - Plans of fused groups, without a GPU -----------===//
//
// CPU-only: graphs with hand-outlined contraction groups become plans with
// ONE library step configured with the absorbed epilogue (cuBLASLt
// epilogue and separate C, cuDNN bias-activation with z), or a library
// step writing an arena temporary plus the rest kernel. Each case has an
// unfused twin that keeps the plain calls. Also: Plan::Groups entries and
// their buffers, step group ids, and plan-file round trips of every new
// field.
//
//===----------------------------------------------------------------------===//
#if SOLDER_HAVE_CUDA
#include "RuntimeTestUtils.h"
#include "codegen/KernelEmitter.h"
#include "frontend/OnnxImporter.h"
#include "passes/Pipeline.h"
#include "runtime/cuda/PlanFile.h"
#include <algorithm>

using namespace solder;
using namespace solder::test;

namespace {

const char *MatMulChain = R"(graph "g" opset 17 {
  input %a : f32[2,4,16]
  input %res : f32[2,4,8]
  const %b : f32[16,8] = elided
  const %bias : f32[8] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
  %m = MatMul(%a, %b) : f32[2,4,8] @"mm"
  %x = Add(%m, %bias) : f32[2,4,8] @"add_bias"
  %y = Add(%x, %res) : f32[2,4,8] @"add_res"
  %z = Relu(%y) : f32[2,4,8] @"relu"
  output %z
})";

/// MatMulChain with a real weight (elided constants do not parse).
std::string matMulChain() {
  std::string W;
  for (int I = 0; I < 16 * 8; ++I)
    W += (I ? ", " : "") + std::to_string((I % 7) * 0.125 - 0.375);
  std::string S = MatMulChain;
  S.replace(S.find("elided"), 6, "[" + W + "]");
  return S;
}

const char *ConvChain = R"(graph "g" opset 17 {
  input %x : f32[1,2,5,5]
  input %z : f32[1,3,5,5]
  const %w : f32[3,2,1,1] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
  const %cb : f32[1,3,1,1] = [0.01, 0.02, 0.03]
  %c = Conv(%x, %w, none) : f32[1,3,5,5] @"conv"
  %b = Add(%c, %cb) : f32[1,3,5,5] @"add_bias"
  %s = Add(%b, %z) : f32[1,3,5,5] @"add_res"
  %r = Relu(%s) : f32[1,3,5,5] @"relu"
  output %r
})";

Plan planOf(Graph &G) {
  PlanOptions Opts;
  Opts.Arch = "sm_90";
  llvm::Expected<Plan> P = buildPlan(G, Opts);
  if (!P) {
    ADD_FAILURE() << llvm::toString(P.takeError());
    return Plan();
  }
  return std::move(*P);
}

size_t countSteps(const Plan &P, PlanStep::Kind K) {
  size_t N = 0;
  for (const PlanStep &S : P.Steps)
    N += S.K == K;
  return N;
}

} // namespace

TEST(FusedPlanTest, MatMulGroupIsOneCublasLtCall) {
  auto G = parseOrFail(matMulChain());
  ASSERT_TRUE(G);
  ASSERT_TRUE(outlineByName(*G, {"mm", "add_bias", "add_res", "relu"},
                            GroupKind::Contraction, 3));
  Plan P = planOf(*G);
  ASSERT_EQ(P.Steps.size(), 1u);
  EXPECT_EQ(P.Steps[0].K, PlanStep::Kind::Gemm);
  EXPECT_EQ(P.Steps[0].GroupId, 3);
  ASSERT_EQ(P.Gemms.size(), 1u);
  const GemmConfig &C = P.Gemms[0];
  EXPECT_EQ(C.Epi, GemmConfig::Epilogue::ReluBias);
  EXPECT_EQ(C.CFrom, GemmConfig::CSource::Separate);
  EXPECT_EQ(C.Beta, 1.0f);
  // The batch folds into rows (B is shared): C is laid out like D.
  EXPECT_EQ(C.Batch, 1);
  EXPECT_EQ(C.C.Space, BufferSpace::Input);
  EXPECT_EQ(C.C.Index, 1u);
  EXPECT_EQ(C.BiasVec.Space, BufferSpace::Weights);
  EXPECT_EQ(P.ArenaBytes, 0u); // no temporary

  ASSERT_EQ(P.Groups.size(), 1u);
  const PlanGroup &Gr = P.Groups[0];
  EXPECT_EQ(Gr.Id, 3);
  EXPECT_EQ(Gr.Kind, "contraction");
  EXPECT_EQ(Gr.Members,
            (std::vector<std::string>{"mm", "add_bias", "add_res", "relu"}));
  EXPECT_EQ(Gr.RunsAs,
            "cuBLASLt matmul + RELU_BIAS epilogue + residual (beta C)");
  EXPECT_EQ(Gr.Steps, (std::vector<uint32_t>{0}));
  ASSERT_EQ(Gr.Operands.size(), 4u);
  ASSERT_EQ(Gr.Results.size(), 1u);
  EXPECT_EQ(Gr.Results[0].Name, "z");
  EXPECT_EQ(Gr.Results[0].Dims, (std::vector<int64_t>{2, 4, 8}));
  EXPECT_EQ(Gr.Results[0].Ref, C.D);
  bool SawRes = false;
  for (const PlanValue &V : Gr.Operands)
    if (V.Name == "res") {
      SawRes = true;
      EXPECT_EQ(V.Ref, C.C);
    }
  EXPECT_TRUE(SawRes);
}

TEST(FusedPlanTest, UnfusedMatMulChainKeepsItsSteps) {
  auto G = parseOrFail(matMulChain());
  ASSERT_TRUE(G);
  Plan P = planOf(*G);
  ASSERT_EQ(P.Gemms.size(), 1u);
  EXPECT_EQ(P.Gemms[0].Epi, GemmConfig::Epilogue::None);
  EXPECT_EQ(P.Gemms[0].CFrom, GemmConfig::CSource::None);
  EXPECT_EQ(countSteps(P, PlanStep::Kind::Kernel), 3u);
  // One "single" entry per node with steps, each naming its own step.
  ASSERT_EQ(P.Groups.size(), 4u);
  for (size_t I = 0; I < P.Groups.size(); ++I) {
    EXPECT_EQ(P.Groups[I].Id, -1);
    EXPECT_EQ(P.Groups[I].Kind, "single");
    EXPECT_EQ(P.Groups[I].Steps, (std::vector<uint32_t>{uint32_t(I)}));
    EXPECT_EQ(P.Steps[I].GroupId, -1);
  }
  EXPECT_EQ(P.Groups[0].Members, (std::vector<std::string>{"mm"}));
  EXPECT_EQ(P.Groups[3].Members, (std::vector<std::string>{"relu"}));
}

TEST(FusedPlanTest, ScaleAndTanhGeluGoIntoTheGemm) {
  auto G = parseOrFail(R"(graph "g" opset 17 {
  input %a : f32[4,3]
  const %b : f32[2,3] = [1.0, 2.0, 3.0, -1.0, 0.5, 0.25]
  const %c : f32[2] = [0.5, -0.5]
  %m = Gemm(%a, %b, %c) {alpha = 0.5, transB = 1} : f32[4,2] @"gemm"
  %g = Gelu(%m) {approximate = "tanh"} : f32[4,2] @"gelu"
  output %g
})");
  ASSERT_TRUE(G);
  ASSERT_TRUE(outlineByName(*G, {"gemm", "gelu"}, GroupKind::Contraction, 0));
  Plan P = planOf(*G);
  ASSERT_EQ(P.Steps.size(), 1u);
  ASSERT_EQ(P.Gemms.size(), 1u);
  EXPECT_EQ(P.Gemms[0].Epi, GemmConfig::Epilogue::GeluBias);
  EXPECT_EQ(P.Gemms[0].Alpha, 0.5f);
  EXPECT_EQ(P.Gemms[0].CFrom, GemmConfig::CSource::None);
}

TEST(FusedPlanTest, ConvGroupIsOneBiasActivationCall) {
  auto G = parseOrFail(ConvChain);
  ASSERT_TRUE(G);
  ASSERT_TRUE(outlineByName(*G, {"conv", "add_bias", "add_res", "relu"},
                            GroupKind::Contraction, 5));
  Plan P = planOf(*G);
  ASSERT_EQ(P.Steps.size(), 1u);
  EXPECT_EQ(P.Steps[0].K, PlanStep::Kind::Conv);
  ASSERT_EQ(P.Convs.size(), 1u);
  const ConvConfig &C = P.Convs[0];
  EXPECT_TRUE(C.Fused);
  EXPECT_EQ(C.Act, ConvConfig::Activation::Relu);
  EXPECT_TRUE(C.HasZ);
  EXPECT_EQ(C.Alpha2, 1.0f);
  EXPECT_EQ(C.Z.Space, BufferSpace::Input);
  EXPECT_EQ(C.Z.Index, 1u);
  EXPECT_EQ(C.Bias.Space, BufferSpace::Weights);
  EXPECT_EQ(C.Y.Space, BufferSpace::Output);
  EXPECT_TRUE(P.Kernels.empty()); // no bias kernel
  ASSERT_EQ(P.Groups.size(), 1u);
  EXPECT_EQ(P.Groups[0].RunsAs, "cuDNN conv+bias+residual+ReLU "
                                "(cudnnConvolutionBiasActivationForward)");
}

TEST(FusedPlanTest, UnfusedConvWithBiasKeepsThePlainCall) {
  auto G = parseOrFail(R"(graph "g" opset 17 {
  input %x : f32[1,2,5,5]
  const %w : f32[3,2,1,1] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
  const %cb : f32[3] = [0.01, 0.02, 0.03]
  %c = Conv(%x, %w, %cb) : f32[1,3,5,5] @"conv"
  %r = Relu(%c) : f32[1,3,5,5] @"relu"
  output %r
})");
  ASSERT_TRUE(G);
  Plan P = planOf(*G);
  ASSERT_EQ(P.Convs.size(), 1u);
  EXPECT_FALSE(P.Convs[0].Fused);
  // Conv, its bias kernel, the Relu kernel; the conv writes a temporary.
  EXPECT_EQ(P.Steps.size(), 3u);
  EXPECT_EQ(P.Convs[0].Y.Space, BufferSpace::Arena);
  ASSERT_EQ(P.Groups.size(), 2u);
  EXPECT_EQ(P.Groups[0].Steps, (std::vector<uint32_t>{0, 1}));
}

TEST(FusedPlanTest, ConvReluWithoutBiasGetsZeroBias) {
  auto G = parseOrFail(R"(graph "g" opset 17 {
  input %x : f32[1,2,5,5]
  const %w : f32[3,2,1,1] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
  %c = Conv(%x, %w, none) : f32[1,3,5,5] @"conv"
  %r = Relu(%c) : f32[1,3,5,5] @"relu"
  output %r
})");
  ASSERT_TRUE(G);
  ASSERT_TRUE(outlineByName(*G, {"conv", "relu"}, GroupKind::Contraction, 1));
  Plan P = planOf(*G);
  ASSERT_EQ(P.Steps.size(), 1u);
  const ConvConfig &C = P.Convs[0];
  EXPECT_TRUE(C.Fused);
  EXPECT_FALSE(C.HasZ);
  ASSERT_EQ(C.Bias.Space, BufferSpace::Weights);
  std::string W = P.Weights.str();
  ASSERT_GE(W.size(), C.Bias.Offset + 12);
  EXPECT_EQ(W.substr(C.Bias.Offset, 12), std::string(12, '\0'));
  EXPECT_NE(C.Bias.Offset, C.W.Offset);
}

TEST(FusedPlanTest, RestKernelReadsTheLibraryTemporary) {
  auto G = parseOrFail(R"(graph "g" opset 17 {
  input %x : f32[1,2,5,5]
  const %w : f32[3,2,1,1] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
  const %cb : f32[3] = [0.01, 0.02, 0.03]
  %c = Conv(%x, %w, %cb) : f32[1,3,5,5] @"conv"
  %s = Sigmoid(%c) : f32[1,3,5,5] @"sigmoid"
  output %s
})");
  ASSERT_TRUE(G);
  ASSERT_TRUE(
      outlineByName(*G, {"conv", "sigmoid"}, GroupKind::Contraction, 2));
  // The rest kernel comes from code generation's fused-group emitter.
  auto K = emitGraphKernels(*G);
  ASSERT_TRUE(bool(K)) << llvm::toString(K.takeError());
  if (K->empty())
    GTEST_SKIP() << "code generation emits no contraction rest kernels yet";
  Plan P = planOf(*G);
  ASSERT_EQ(P.Steps.size(), 2u);
  EXPECT_EQ(P.Steps[0].K, PlanStep::Kind::Conv);
  EXPECT_EQ(P.Steps[1].K, PlanStep::Kind::Kernel);
  EXPECT_EQ(P.Steps[0].GroupId, 2);
  EXPECT_EQ(P.Steps[1].GroupId, 2);
  // cuDNN adds the conv's own bias; the kernel reads what it wrote.
  const ConvConfig &C = P.Convs[0];
  EXPECT_TRUE(C.Fused);
  EXPECT_EQ(C.Act, ConvConfig::Activation::Identity);
  EXPECT_EQ(C.Y.Space, BufferSpace::Arena);
  ASSERT_EQ(P.Buffers.size(), 1u);
  EXPECT_EQ(P.Buffers[0].FirstStep, 0u);
  EXPECT_EQ(P.Buffers[0].LastStep, 1u);
  const std::vector<BufferRef> &Args = P.Steps[1].Args;
  EXPECT_TRUE(std::find(Args.begin(), Args.end(), C.Y) != Args.end());
  EXPECT_NE(P.Groups[0].RunsAs.find("+ generated kernel "), std::string::npos)
      << P.Groups[0].RunsAs;
}

TEST(FusedPlanTest, NewFieldsRoundTripThroughThePlanFile) {
  auto G = parseOrFail(matMulChain());
  ASSERT_TRUE(G);
  ASSERT_TRUE(outlineByName(*G, {"mm", "add_bias", "add_res", "relu"},
                            GroupKind::Contraction, 3));
  Plan P = planOf(*G);
  auto G2 = parseOrFail(ConvChain);
  ASSERT_TRUE(G2);
  ASSERT_TRUE(outlineByName(*G2, {"conv", "add_bias", "add_res", "relu"},
                            GroupKind::Contraction, 5));
  Plan Q = planOf(*G2);
  ASSERT_EQ(Q.Convs.size(), 1u);
  P.Convs = Q.Convs; // one plan with both kinds of fused call
  P.Decisions.push_back(
      {"epilogue-fusion", "Relu 'relu'", "relu", true, "into group 3"});
  P.Decisions.push_back(
      {"loop-fusion", "Exp 'e'", "", false, "second user outside"});
  std::string Bytes = serializePlan(P);
  llvm::Expected<Plan> Back = deserializePlan(Bytes);
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  EXPECT_EQ(serializePlan(*Back), Bytes);
  const GemmConfig &C = Back->Gemms[0];
  EXPECT_EQ(C.Epi, GemmConfig::Epilogue::ReluBias);
  EXPECT_EQ(C.CFrom, GemmConfig::CSource::Separate);
  EXPECT_EQ(C.C, P.Gemms[0].C);
  const ConvConfig &V = Back->Convs[0];
  EXPECT_TRUE(V.Fused);
  EXPECT_EQ(V.Act, ConvConfig::Activation::Relu);
  EXPECT_TRUE(V.HasZ);
  EXPECT_EQ(V.Alpha2, 1.0f);
  EXPECT_EQ(V.Bias, Q.Convs[0].Bias);
  EXPECT_EQ(V.Z, Q.Convs[0].Z);
  EXPECT_EQ(Back->Steps[0].GroupId, 3);
  ASSERT_EQ(Back->Groups.size(), 1u);
  EXPECT_EQ(Back->Groups[0].Members, P.Groups[0].Members);
  EXPECT_EQ(Back->Groups[0].RunsAs, P.Groups[0].RunsAs);
  EXPECT_EQ(Back->Groups[0].Steps, P.Groups[0].Steps);
  EXPECT_EQ(Back->Groups[0].Operands, P.Groups[0].Operands);
  EXPECT_EQ(Back->Groups[0].Results, P.Groups[0].Results);
  ASSERT_EQ(Back->Decisions.size(), 2u);
  EXPECT_EQ(Back->Decisions[1].Pass, "loop-fusion");
  EXPECT_FALSE(Back->Decisions[1].Applied);
  EXPECT_EQ(Back->Decisions[1].Reason, "second user outside");
  EXPECT_TRUE(Back->Decisions[0].Applied);
  EXPECT_EQ(Back->Decisions[0].OnnxName, "relu");
}

/// An NHWC f16 conv + bias + Clip(0, 6) (a MobileNet block), outlined as
/// contraction group 7.
std::unique_ptr<Graph> convClipGroup() {
  std::string W, B;
  for (int I = 0; I < 8 * 8; ++I)
    W += (I ? ", " : "") + std::to_string((I % 5) * 0.25 - 0.5);
  for (int I = 0; I < 8; ++I)
    B += (I ? ", " : "") + std::to_string(I * 0.125);
  auto G = parseOrFail(R"(graph "g" opset 17 {
  input %x : f16[1,4,4,8]
  const %w : f16[8,1,1,8] = [)" +
                       W + R"(]
  const %b : f16[8] = [)" +
                       B + R"(]
  const %lo : f16[] = [0.0]
  const %hi : f16[] = [6.0]
  %c = Conv(%x, %w, %b) {kernel_shape = [1, 1], layout = "NHWC"} : f16[1,4,4,8] @"conv"
  %y = Clip(%c, %lo, %hi) : f16[1,4,4,8] @"clip"
  output %y
})");
  if (G && !outlineByName(*G, {"conv", "clip"}, GroupKind::Contraction, 7))
    return nullptr;
  return G;
}

TEST(FusedPlanTest, ConvGroupAsOneCudnnGraph) {
  auto G = convClipGroup();
  ASSERT_TRUE(G);
  PlanOptions Opts;
  Opts.Arch = "sm_90";
  Opts.Conv = ConvEpilogues::Graph;
  llvm::Expected<Plan> P = buildPlan(*G, Opts);
  ASSERT_TRUE(bool(P)) << llvm::toString(P.takeError());
  ASSERT_EQ(P->Steps.size(), 1u);
  EXPECT_EQ(P->Steps[0].K, PlanStep::Kind::Conv);
  EXPECT_TRUE(P->Kernels.empty()); // no rest kernel for the Clip
  ASSERT_EQ(P->Convs.size(), 1u);
  const ConvConfig &C = P->Convs[0];
  EXPECT_TRUE(C.Graph);
  EXPECT_FALSE(C.Fused);
  EXPECT_EQ(C.Y.Space, BufferSpace::Output);
  ASSERT_EQ(C.GraphOps.size(), 2u);
  EXPECT_EQ(C.GraphOps[1].Mode, ConvPointwise::Relu);
  EXPECT_EQ(C.GraphOps[1].Upper, 6.0f);
  // The bias tensor reads the weights.
  int32_t Bias = C.GraphOps[0].B;
  EXPECT_EQ(C.GraphTensors[Bias].K, ConvGraphTensor::Kind::Operand);
  EXPECT_EQ(C.GraphReads[Bias].Space, BufferSpace::Weights);
  ASSERT_EQ(P->Groups.size(), 1u);
  EXPECT_EQ(P->Groups[0].RunsAs,
            "cuDNN graph conv+add+relu(clip 0..6) (runtime fusion)");

  EXPECT_EQ(C.GraphEngine, -1); // untuned: the heuristics' first
  P->Convs[0].GraphEngine = 2;  // as tuning records it
  std::string Bytes = serializePlan(*P);
  llvm::Expected<Plan> Back = deserializePlan(Bytes);
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  EXPECT_EQ(serializePlan(*Back), Bytes);
  EXPECT_TRUE(Back->Convs[0].Graph);
  EXPECT_EQ(Back->Convs[0].GraphEngine, 2);
  EXPECT_EQ(Back->Convs[0].GraphReads[Bias], C.GraphReads[Bias]);
  // Malformed graphs are refused: an operand past the tensors, a unary
  // op given a second operand, no output, a graph on an NCHW conv.
  for (int Bad = 0; Bad < 4; ++Bad) {
    Plan Q = *Back;
    ConvConfig &B = Q.Convs[0];
    if (Bad == 0)
      B.GraphOps[0].B = int32_t(B.GraphTensors.size());
    else if (Bad == 1)
      B.GraphOps[1].B = 0;
    else if (Bad == 2)
      B.GraphTensors[B.GraphOps[1].Y].K = ConvGraphTensor::Kind::Virtual;
    else
      B.Nhwc = false;
    llvm::Expected<Plan> Refused = deserializePlan(serializePlan(Q));
    ASSERT_FALSE(bool(Refused)) << Bad;
    std::string Msg = llvm::toString(Refused.takeError());
    EXPECT_NE(Msg.find("convolution graph of the plan is malformed"),
              std::string::npos)
        << Bad << ": " << Msg;
  }
}

TEST(FusedPlanTest, ConvGroupFusedKeepsItsRestKernel) {
  // The twin: the fused call takes the bias; the Clip is a rest kernel.
  auto G = convClipGroup();
  ASSERT_TRUE(G);
  PlanOptions Opts;
  Opts.Arch = "sm_90";
  Opts.Conv = ConvEpilogues::Fused;
  llvm::Expected<Plan> P = buildPlan(*G, Opts);
  ASSERT_TRUE(bool(P)) << llvm::toString(P.takeError());
  ASSERT_EQ(P->Convs.size(), 1u);
  EXPECT_FALSE(P->Convs[0].Graph);
  EXPECT_TRUE(P->Convs[0].Fused);
  EXPECT_EQ(P->Kernels.size(), 1u);
  EXPECT_EQ(P->Steps.size(), 2u);
  // Auto without a tuning choice is the fused call too.
  Opts.Conv = ConvEpilogues::Auto;
  llvm::Expected<Plan> A = buildPlan(*G, Opts);
  ASSERT_TRUE(bool(A)) << llvm::toString(A.takeError());
  EXPECT_FALSE(A->Convs[0].Graph);
  Opts.ConvGraphNotes[7] = "tuned: cuDNN graph 2.0 us, fused call 1.0 us";
  llvm::Expected<Plan> F = buildPlan(*G, Opts);
  ASSERT_TRUE(bool(F)) << llvm::toString(F.takeError());
  EXPECT_FALSE(F->Convs[0].Graph);
  // A group kept on the fused call says why in the report too.
  EXPECT_NE(F->Groups[0].RunsAs.find("(tuned: cuDNN graph"), std::string::npos)
      << F->Groups[0].RunsAs;
  Opts.ConvGraphChoices[7] = true;
  Opts.ConvGraphEngines[7] = 1;
  Opts.ConvGraphNotes[7] = "tuned: cuDNN graph 1.0 us, fused call 2.0 us";
  llvm::Expected<Plan> T = buildPlan(*G, Opts);
  ASSERT_TRUE(bool(T)) << llvm::toString(T.takeError());
  EXPECT_TRUE(T->Convs[0].Graph);
  EXPECT_EQ(T->Convs[0].GraphEngine, 1);
  EXPECT_NE(T->Groups[0].RunsAs.find("(tuned: cuDNN graph"), std::string::npos)
      << T->Groups[0].RunsAs;
}

TEST(FusedPlanTest, AttentionMatMulsReadAndWriteHeadLayoutsInPlace) {
  // Two sequences: heads of [2, 5, 2, 4] need pointer-array batches. The
  // plan has the two matmuls and the softmax kernel, no transpose copies.
  auto G = parseOrFail(attentionGraphText(2));
  ASSERT_TRUE(G);
  ASSERT_TRUE(
      outlineByName(*G, attentionScoresMembers(), GroupKind::Contraction, 1));
  ASSERT_TRUE(
      outlineByName(*G, attentionContextMembers(), GroupKind::Contraction, 2));
  Plan P = planOf(*G);
  ASSERT_EQ(P.Gemms.size(), 2u);
  EXPECT_EQ(countSteps(P, PlanStep::Kind::Gemm), 2u);
  EXPECT_EQ(countSteps(P, PlanStep::Kind::Kernel), 1u); // the softmax
  const GemmConfig &S = P.Gemms[0], &C = P.Gemms[1];
  EXPECT_EQ(S.BatchDims, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(S.Alpha, 0.5f);
  EXPECT_TRUE(S.TransA); // K^T read transposed out of the packed buffer
  EXPECT_EQ(S.Lda, 24);
  EXPECT_EQ(S.A.Offset, 8 * sizeof(float)); // K starts at column 8
  EXPECT_EQ(C.BatchDims, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(C.Ldd, 8); // rows of the merged [2, 5, 8] result
  EXPECT_EQ(C.BatchStrideD, (std::vector<int64_t>{40, 4}));
  // A tuned plan keeps the GPU and the algorithms (opaque to solder).
  P.TunedOn = "NVIDIA H100 80GB HBM3";
  P.Gemms[0].HasAlgo = true;
  P.Gemms[0].AlgoData = {1, 2, 3, 4, 5, 6, 7, 8};
  P.Gemms[0].AlgoWorkspace = 4096;
  P.Prec = Precision::F16;
  std::string Bytes = serializePlan(P);
  llvm::Expected<Plan> Back = deserializePlan(Bytes);
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  EXPECT_EQ(Back->Gemms[1].BatchStrideD, C.BatchStrideD);
  EXPECT_EQ(Back->TunedOn, P.TunedOn);
  EXPECT_EQ(Back->Prec, Precision::F16);
  EXPECT_TRUE(Back->Gemms[0].HasAlgo);
  EXPECT_EQ(Back->Gemms[0].AlgoData, P.Gemms[0].AlgoData);
  EXPECT_EQ(Back->Gemms[0].AlgoWorkspace, 4096u);
  EXPECT_FALSE(Back->Gemms[1].HasAlgo);
  EXPECT_EQ(serializePlan(*Back), Bytes);
}

TEST(FusedPlanTest, UnfusedAttentionKeepsItsTransposeKernels) {
  // Negative twin: without the groups every transpose is a kernel and the
  // matmuls are plain strided batches.
  auto G = parseOrFail(attentionGraphText(2));
  ASSERT_TRUE(G);
  Plan P = planOf(*G);
  EXPECT_EQ(countSteps(P, PlanStep::Kind::Gemm), 2u);
  for (const GemmConfig &C : P.Gemms)
    EXPECT_TRUE(C.BatchDims.empty());
  EXPECT_GE(countSteps(P, PlanStep::Kind::Kernel), 5u);
}

TEST(FusedPlanTest, OlderPlanIsRefusedWithRecompile) {
  auto G = parseOrFail(matMulChain());
  ASSERT_TRUE(G);
  std::string Bytes = serializePlan(planOf(*G));
  Bytes[8] = char(PlanFormatVersion - 1);
  llvm::Expected<Plan> P = deserializePlan(Bytes);
  ASSERT_FALSE(bool(P));
  std::string Msg = llvm::toString(P.takeError());
  EXPECT_NE(Msg.find("recompile"), std::string::npos) << Msg;
  // Negative twin: the current version reads.
  Bytes[8] = char(PlanFormatVersion);
  EXPECT_TRUE(bool(deserializePlan(Bytes)));
}

/// attentionGraphText(2) through the GPU pipeline with attention fusion
/// (and, with ExtraOutput, the Q slice also a graph output).
Plan attentionPlan(bool ExtraOutput) {
  std::string Text = attentionGraphText(2);
  if (ExtraOutput)
    Text.replace(Text.find("  output %r"), 0, "  output %q\n");
  auto G = parseOrFail(Text);
  if (!G)
    return Plan();
  PipelineOptions PO;
  PO.TargetGpu = true;
  PO.FuseAttention = true;
  if (llvm::Error E = runPipeline(*G, PO)) {
    ADD_FAILURE() << llvm::toString(std::move(E));
    return Plan();
  }
  return planOf(*G);
}

TEST(FusedPlanTest, AttentionKernelReadsQkvThroughItsSlices) {
  // One generated kernel for the whole block: Q, K and V are read straight
  // out of the packed input (no Slice, Transpose or matmul steps), and the
  // result is written where the merge Reshape views it.
  Plan P = attentionPlan(false);
  ASSERT_EQ(P.Steps.size(), 1u);
  const PlanStep &S = P.Steps[0];
  ASSERT_EQ(S.K, PlanStep::Kind::Kernel);
  EXPECT_NE(P.Kernels[S.Index].Name.find("attention"), std::string::npos);
  ASSERT_EQ(S.Args.size(), 4u);
  for (unsigned I = 1; I < 4; ++I)
    EXPECT_EQ(S.Args[I], (BufferRef{BufferSpace::Input, 0, 0}));
  EXPECT_EQ(S.Args[0].Space, BufferSpace::Output);
  ASSERT_EQ(P.Groups.size(), 1u);
  EXPECT_EQ(P.Groups[0].Kind, "attention");
  EXPECT_EQ(P.Groups[0].Id, 0);
  ASSERT_EQ(P.Groups[0].Operands.size(), 3u);
  EXPECT_EQ(P.Groups[0].Operands[0].Name, "qkv");
}

TEST(FusedPlanTest, AttentionKernelReadsQkvThroughASplit) {
  // The dynamo and torch.split form: one Split into Q, K and V.
  std::string Text = attentionGraphText(2);
  size_t From = Text.find("  %q = Slice");
  size_t To = Text.find("  %q4 = Reshape");
  Text.replace(From, To - From,
               "  const %parts : i64[3] = [8, 8, 8]\n"
               "  %q, %k, %v = Split(%qkv, %parts) {axis = 2} : f32[2,5,8], "
               "f32[2,5,8], f32[2,5,8] @\"split\"\n");
  auto G = parseOrFail(Text);
  ASSERT_TRUE(G);
  PipelineOptions PO;
  PO.TargetGpu = true;
  PO.FuseAttention = true;
  ASSERT_FALSE(bool(runPipeline(*G, PO)));
  Plan P = planOf(*G);
  ASSERT_EQ(P.Steps.size(), 1u);
  const std::string &Src = P.Kernels[P.Steps[0].Index].Source;
  // K starts 8 elements into each 24-wide row, V 16.
  EXPECT_NE(Src.find("kbase = 8LL + b * 120LL"), std::string::npos) << Src;
  EXPECT_NE(Src.find("vbase = 16LL + b * 120LL"), std::string::npos) << Src;
}

TEST(FusedPlanTest, SliceThatIsAlsoAnOutputStillRuns) {
  // Negative twin: the Q slice is a graph output, so it is computed (one
  // kernel writes it) while the attention kernel still reads K and V
  // through theirs.
  Plan P = attentionPlan(true);
  EXPECT_EQ(countSteps(P, PlanStep::Kind::Kernel), 2u);
  bool SliceKernel = false;
  for (const auto &K : P.Kernels)
    SliceKernel |= K.Name.find("slice") != std::string::npos;
  EXPECT_TRUE(SliceKernel);
}

#endif

TEST(FusedPlanTest, NhwcConvTakesItsOwnBiasInTheCudnnCall) {
  // Twin of UnfusedConvWithBiasKeepsThePlainCall in NHWC: the bias goes
  // into cudnnConvolutionBiasActivationForward (identity activation), no
  // bias kernel; the Relu stays a kernel of its own.
  auto G = parseOrFail(R"(graph "g" opset 17 {
  input %x : f16[1,5,5,2]
  const %w : f16[3,1,1,2] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]
  const %cb : f16[3] = [0.01, 0.02, 0.03]
  %c = Conv(%x, %w, %cb) {layout = "NHWC"} : f16[1,5,5,3] @"conv"
  %r = Relu(%c) : f16[1,5,5,3] @"relu"
  output %r
})");
  ASSERT_TRUE(G);
  Plan P = planOf(*G);
  ASSERT_EQ(P.Convs.size(), 1u);
  EXPECT_TRUE(P.Convs[0].Nhwc);
  EXPECT_TRUE(P.Convs[0].Fused);
  EXPECT_EQ(P.Convs[0].Act, ConvConfig::Activation::Identity);
  // cuDNN's dims stay NCHW-ordered.
  EXPECT_EQ(P.Convs[0].XDims, (std::vector<int64_t>{1, 2, 5, 5}));
  EXPECT_EQ(P.Convs[0].WDims, (std::vector<int64_t>{3, 2, 1, 1}));
  EXPECT_EQ(P.Steps.size(), 2u);
}

TEST(FusedPlanTest, KernelsIdenticalButForTheirNamesCompileOnce) {
  // Two chains of the same ops and shapes on different inputs become two
  // kernels whose sources differ only in their names (and group headers):
  // the second runs the first's function from the first's cubin, and a
  // plan file keeps that. Negative twin: the Sigmoid chain's kernel,
  // different code, is compiled on its own.
  auto G = parseOrFail(R"(graph "g" opset 17 {
  input %a : f32[4,64]
  input %b : f32[4,64]
  input %c : f32[4,64]
  %t1 = Tanh(%a) : f32[4,64] @"tanh_a"
  %y1 = Mul(%t1, %t1) : f32[4,64] @"square_a"
  %t2 = Tanh(%b) : f32[4,64] @"tanh_b"
  %y2 = Mul(%t2, %t2) : f32[4,64] @"square_b"
  %t3 = Sigmoid(%c) : f32[4,64] @"sigmoid_c"
  %y3 = Mul(%t3, %t3) : f32[4,64] @"square_c"
  output %y1
  output %y2
  output %y3
})");
  ASSERT_TRUE(G);
  PipelineOptions PO;
  PO.TargetGpu = true;
  ASSERT_FALSE(bool(runPipeline(*G, PO)));
  PlanOptions Opts;
  Opts.Arch = "sm_90";
  Opts.CacheDir = testCacheDir();
  llvm::Expected<Plan> P = buildPlan(*G, Opts);
  ASSERT_TRUE(bool(P)) << llvm::toString(P.takeError());
  ASSERT_EQ(P->Kernels.size(), 3u);
  llvm::Error E = compilePlanKernels(*P, Opts);
  ASSERT_FALSE(bool(E)) << llvm::toString(std::move(E));
  auto Implements = [&](llvm::StringRef Node) -> const PlanKernel * {
    for (const PlanKernel &K : P->Kernels)
      if (llvm::is_contained(K.NodeNames, Node))
        return &K;
    return nullptr;
  };
  const PlanKernel *A = Implements("tanh_a"), *B = Implements("tanh_b"),
                   *C = Implements("sigmoid_c");
  ASSERT_TRUE(A && B && C);
  EXPECT_NE(A->Name, B->Name);
  // Whichever came first is compiled; the other runs its function.
  const PlanKernel *First = A->Symbol.empty() ? A : B;
  const PlanKernel *Second = A->Symbol.empty() ? B : A;
  EXPECT_TRUE(First->Symbol.empty());
  EXPECT_EQ(Second->Symbol, First->Name);
  EXPECT_EQ(Second->symbol(), First->Name);
  EXPECT_EQ(Second->Cubin, First->Cubin);
  EXPECT_TRUE(C->Symbol.empty());
  EXPECT_NE(C->Cubin, First->Cubin);
  // The plan file keeps the shared function.
  llvm::Expected<Plan> Back = deserializePlan(serializePlan(*P));
  ASSERT_TRUE(bool(Back)) << llvm::toString(Back.takeError());
  size_t Shared = 0;
  for (const PlanKernel &K : Back->Kernels)
    if (!K.Symbol.empty()) {
      ++Shared;
      EXPECT_EQ(K.Symbol, First->Name);
    }
  EXPECT_EQ(Shared, 1u);
}

TEST(FusedPlanTest, NvrtcFailureNamesTheKernelsOnnxNodes) {
  // A kernel NVRTC cannot compile (its source broken on purpose: an
  // #error, a missing header) fails the compile with NVRTC's log, the kernel's
  // name and the ONNX nodes it implements; its twin, the same plan unbroken,
  // compiles.
  auto G =
      importOnnxFile(std::string(SOLDER_TEST_DATA_DIR) + "/fusion_chain.onnx");
  ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
  PipelineOptions PO;
  PO.TargetGpu = true;
  ASSERT_FALSE(bool(runPipeline(**G, PO)));
  PlanOptions Opts;
  Opts.Arch = "sm_90";
  Opts.CacheDir = testCacheDir();
  llvm::Expected<Plan> P = buildPlan(**G, Opts);
  ASSERT_TRUE(bool(P)) << llvm::toString(P.takeError());
  auto It = llvm::find_if(
      P->Kernels, [](const PlanKernel &K) { return !K.NodeNames.empty(); });
  ASSERT_NE(It, P->Kernels.end());
  Plan Good = *P;
  EXPECT_FALSE(bool(compilePlanKernels(Good, Opts)));
  // A compile error, and a header NVRTC cannot find (as when the CUDA
  // include folder is missing).
  size_t Index = size_t(It - P->Kernels.begin());
  for (const char *Breakage :
       {"\n#error broken on purpose by the test\n",
        "\n#include \"solder_missing_header_on_purpose.h\"\n"}) {
    SCOPED_TRACE(Breakage);
    Plan Bad = *P;
    Bad.Kernels[Index].Source += Breakage;
    llvm::Error E = compilePlanKernels(Bad, Opts);
    ASSERT_TRUE(bool(E));
    std::string Msg = llvm::toString(std::move(E));
    EXPECT_NE(Msg.find("NVRTC failed to compile kernel " + It->Name),
              std::string::npos)
        << Msg;
    EXPECT_NE(Msg.find(llvm::StringRef(Breakage).contains("#error")
                           ? "broken on purpose"
                           : "solder_missing_header_on_purpose.h"),
              std::string::npos)
        << Msg;
    EXPECT_NE(Msg.find("implements ONNX nodes: " + It->NodeNames[0]),
              std::string::npos)
        << Msg;
  }
}
