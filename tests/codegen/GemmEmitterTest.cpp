//===- GemmEmitterTest.cpp - The generated tensor-core GEMM ---------------===//
//
// Each test runs the GPU pipeline on a small graph (so the groups are the
// ones epilogue-, loop- and norm-epilogue-fusion make), emits the generated
// GEMM of its contraction group and checks the launch facts, determinism,
// and that NVRTC compiles it for sm_90 (no GPU needed). Numbers are checked
// on the GPU (GpuRuntimeTest.GeneratedGemmMatchesReference). Negative twins:
// groups the generated kernel refuses, with the reason.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelEmitter.h"
#include "codegen/NvrtcCompiler.h"
#include "ir/FusedGroup.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "passes/Pipeline.h"
#include "tests/codegen/TestNvrtc.h"
#include <gtest/gtest.h>

using namespace solder;

namespace {

/// x [M, K] times a constant w [K, N] (+ constant bias), then Tail (IR
/// lines reading %mb, defining %y) in type T, through the GPU pipeline.
std::unique_ptr<Graph> pipelined(const std::string &T, int64_t M, int64_t N,
                                 int64_t K, const std::string &Inputs,
                                 const std::string &Tail) {
  auto S = [](int64_t V) { return std::to_string(V); };
  auto Values = [](int64_t Count) {
    std::string V;
    for (int64_t I = 0; I < Count; ++I)
      V += (I ? ", " : "") + std::to_string(double(I % 11 - 5) / 16);
    return "[" + V + "]";
  };
  std::string Text =
      "graph \"g\" opset 23 {\n  input %x : " + T + "[" + S(M) + "," + S(K) +
      "]\n" + Inputs + "  const %w : " + T + "[" + S(K) + "," + S(N) +
      "] = " + Values(K * N) + "\n  const %b : " + T + "[" + S(N) +
      "] = " + Values(N) + "\n  %m = MatMul(%x, %w) : " + T + "[" + S(M) + "," +
      S(N) + "] @\"mm\"\n  %mb = Add(%m, %b) : " + T + "[" + S(M) + "," + S(N) +
      "] @\"bias\"\n" + Tail + "  output %y\n}\n";
  auto G = parseGraph(Text);
  EXPECT_TRUE(bool(G)) << llvm::toString(G.takeError()) << "\n" << Text;
  if (!G)
    return nullptr;
  PipelineOptions PO;
  PO.TargetGpu = true;
  PO.Prec = T == "bf16"  ? Precision::BF16
            : T == "f32" ? Precision::F32
                         : Precision::F16;
  auto E = runPipeline(**G, PO);
  EXPECT_FALSE(bool(E)) << llvm::toString(std::move(E));
  return std::move(*G);
}

const Node *contractionGroup(const Graph &G) {
  for (const auto &N : G.nodes())
    if (isFusedGroup(*N) && groupInfo(*N).Kind == GroupKind::Contraction)
      return N.get();
  ADD_FAILURE() << "no contraction group in\n" << graphToString(G);
  return nullptr;
}

/// The group's generated GEMM (emitted twice: same bytes), compiled.
GeneratedKernel gemmKernel(const Graph &G, const Node &Group) {
  CodegenOptions O;
  O.GeneratedGemmGroups.insert(groupInfo(Group).Id);
  auto K = emitGraphKernels(G, O);
  auto Again = emitGraphKernels(G, O);
  EXPECT_TRUE(bool(K) && bool(Again));
  if (!K || !Again) {
    if (!K)
      ADD_FAILURE() << llvm::toString(K.takeError());
    else
      consumeError(Again.takeError());
    return {};
  }
  for (size_t I = 0; I < K->size(); ++I) {
    if (!llvm::StringRef((*K)[I].Name).endswith("_gemm"))
      continue;
    EXPECT_EQ((*K)[I].Source, (*Again)[I].Source);
    NvrtcOptions NO = solder::testing::testNvrtcOptions();
    auto Cubins = compileKernels({(*K)[I]}, NO);
    EXPECT_TRUE(bool(Cubins))
        << (Cubins ? "" : llvm::toString(Cubins.takeError())) << "\n"
        << (*K)[I].Source;
    return (*K)[I];
  }
  ADD_FAILURE() << "no generated GEMM kernel";
  return {};
}

bool has(const std::string &S, llvm::StringRef Piece) {
  return S.find(Piece.str()) != std::string::npos;
}

const char *LayerNormTail =
    "  %s = Add(%mb, %r) : f16[256,768] @\"res\"\n"
    "  %y = LayerNormalization(%s, %gamma, %beta) {axis = -1, epsilon = "
    "1e-12} : f16[256,768] @\"ln\"\n";
const char *LayerNormInputs = "  input %r : f16[256,768]\n"
                              "  input %gamma : f16[768]\n"
                              "  input %beta : f16[768]\n";

TEST(GeneratedGemm, LayerNormGroupIsOneClusterKernel) {
  auto G = pipelined("f16", 256, 768, 64, LayerNormInputs, LayerNormTail);
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  EXPECT_EQ(generatedGemmUnsupported(*Group, 90), "");
  GeneratedKernel K = gemmKernel(*G, *Group);
  // 768 columns: 6 blocks of 128 in one cluster; 256 rows in blocks of
  // 32 (the largest tile giving at least 120 blocks... or the smallest).
  EXPECT_TRUE(has(K.Source, "__cluster_dims__(1, 6, 1)")) << K.Source;
  EXPECT_EQ(K.Grid[1], 6u);
  EXPECT_TRUE(has(K.Source, "solder_ld_cluster(&part[0][i], r)"));
  EXPECT_TRUE(has(K.Source, "rsqrtf(t * "));
  EXPECT_TRUE(has(K.Source, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16"));
  EXPECT_TRUE(has(K.Summary, "LayerNormalization epilogue")) << K.Summary;
  EXPECT_GT(K.DynamicSharedBytes, 0u);
  EXPECT_EQ(K.NodeNames, (std::vector<std::string>{"mm", "bias", "res", "ln"}));
}

TEST(GeneratedGemm, LayerNormNeedsClustersBelowSm90) {
  // Negative twin: rows of 768 span 6 blocks, which need sm_90 clusters.
  auto G = pipelined("f16", 256, 768, 64, LayerNormInputs, LayerNormTail);
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  EXPECT_TRUE(has(generatedGemmUnsupported(*Group, 80), "clusters (sm_90)"));
}

TEST(GeneratedGemm, OddShapesTakeElementLoads) {
  // K = 12 and N = 20 are not multiples of 8: no 16-byte copies.
  auto G = pipelined("bf16", 9, 20, 12, "",
                     "  %y = Relu(%mb) : bf16[9,20] @\"relu\"\n");
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  GeneratedKernel K = gemmKernel(*G, *Group);
  EXPECT_TRUE(has(K.Summary, "element loads")) << K.Summary;
  EXPECT_FALSE(has(K.Source, "solder_cp16_u(a_dst")) << K.Source;
  EXPECT_FALSE(has(K.Source, "__cluster_dims__"));
  EXPECT_TRUE(has(K.Source, "__nv_bfloat16"));
}

TEST(GeneratedGemm, AlignedShapesCopyAsynchronously) {
  // Twin of the above: K and N multiples of 8.
  auto G = pipelined("f16", 64, 64, 32, "",
                     "  %y = Relu(%mb) : f16[64,64] @\"relu\"\n");
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  GeneratedKernel K = gemmKernel(*G, *Group);
  EXPECT_FALSE(has(K.Summary, "element loads")) << K.Summary;
  EXPECT_TRUE(has(K.Source, "solder_cp16_u(a_dst")) << K.Source;
}

TEST(GeneratedGemm, F32GroupsHaveNone) {
  // Negative twin: no f32 tensor-core path; the library runs them.
  auto G = pipelined("f32", 64, 64, 32, "",
                     "  %y = Relu(%mb) : f32[64,64] @\"relu\"\n");
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  EXPECT_TRUE(has(generatedGemmUnsupported(*Group, 90), "f16 or bf16"));
  CodegenOptions O;
  O.GeneratedGemmGroups.insert(groupInfo(*Group).Id);
  auto K = emitGraphKernels(*G, O);
  ASSERT_FALSE(bool(K));
  EXPECT_TRUE(has(llvm::toString(K.takeError()), "no generated GEMM"));
}

} // namespace
