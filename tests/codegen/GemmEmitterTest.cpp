//===- GemmEmitterTest.cpp - The generated tensor-core GEMM ---------------===//
//
// Each test runs the GPU pipeline on a small graph (so the groups are the
// ones epilogue-, loop- and norm-epilogue-fusion make), emits the generated
// GEMM of its contraction group and checks the launch facts, determinism,
// and that NVRTC compiles it for sm_90 (no GPU needed): the mma.sync loop
// by default, the wgmma loop (sm_90a) where a test forces it (GemmVariant;
// not taken by default until it has run on a GPU). Numbers are checked on
// the GPU (GpuRuntimeTest.GeneratedGemmMatchesReference,
// GpuRuntimeTest.GemmVariantsMatchReference). Negative twins: groups
// the generated kernel refuses, with the reason; the loop a group does not
// take.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelEmitter.h"
#include "codegen/NvrtcCompiler.h"
#include "codegen/TensorCoreSupport.h"
#include "codegen/WgmmaGemm.h"
#include "ir/FusedGroup.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "passes/Pipeline.h"
#include "tests/GemmGroupGraph.h"
#include "tests/TestFiles.h"
#include "tests/codegen/TestNvrtc.h"
#include <cstring>
#include <gtest/gtest.h>

using namespace solder;
using namespace solder::codegen;

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

/// The group's generated GEMM for compute capability Sm (emitted twice:
/// same bytes), compiled; a dependent launch where Dependent.
GeneratedKernel gemmKernel(const Graph &G, const Node &Group, unsigned Sm = 90,
                           bool Dependent = false) {
  CodegenOptions O;
  O.SmVersion = Sm;
  O.DependentLaunch = Dependent;
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
    NO.Arch = "sm_" + std::to_string(Sm);
    auto Cubins = compileKernels({(*K)[I]}, NO);
    EXPECT_TRUE(bool(Cubins))
        << (Cubins ? "" : llvm::toString(Cubins.takeError())) << "\n"
        << (*K)[I].Source;
    return (*K)[I];
  }
  ADD_FAILURE() << "no generated GEMM kernel";
  return {};
}

/// The group's kernel with the wgmma loop forced (Tile {0, 0, 0}: the
/// chosen tile); compiled when it emits.
llvm::Expected<GeneratedKernel> wgmmaKernel(const Graph &G, const Node &Group,
                                            WgmmaTile Tile = {0, 0, 0},
                                            unsigned Sm = 90) {
  CodegenOptions O;
  O.SmVersion = Sm;
  KernelNamer Names(G);
  GemmVariant V;
  V.Wgmma = true;
  V.Tile = Tile;
  auto K = emitGeneratedGemmVariant(Group, O, Names, &V);
  if (!K)
    return K.takeError();
  auto Cubins = compileKernels({*K}, solder::testing::testNvrtcOptions());
  if (!Cubins)
    return Cubins.takeError();
  return K;
}

bool has(const std::string &S, llvm::StringRef Piece) {
  return S.find(Piece.str()) != std::string::npos;
}

/// residual + LayerNorm over rows of 768, M rows.
std::string layerNormTail(int64_t M) {
  std::string D = "f16[" + std::to_string(M) + ",768]";
  return "  %s = Add(%mb, %r) : " + D +
         " @\"res\"\n"
         "  %y = LayerNormalization(%s, %gamma, %beta) {axis = -1, epsilon = "
         "1e-12} : " +
         D + " @\"ln\"\n";
}
std::string layerNormInputs(int64_t M) {
  return "  input %r : f16[" + std::to_string(M) +
         ",768]\n"
         "  input %gamma : f16[768]\n"
         "  input %beta : f16[768]\n";
}
const std::string LayerNormTail = layerNormTail(256);
const std::string LayerNormInputs = layerNormInputs(256);

TEST(GeneratedGemm, LayerNormGroupIsOneCooperativeKernel) {
  // 256 rows: TMA tiles of 64 x 64, 12 blocks a row and 48 in all (one
  // wave), so the row statistics meet through global memory: the blocks'
  // (mean, centred sum of squares) in the kernel's scratch, counters that
  // the last block to leave resets, a cooperative launch. The residual's
  // tile comes through shared memory (the producers' idle warps). A row's
  // 12 blocks are launched one after another (column tiles along x).
  auto G = pipelined("f16", 256, 768, 64, LayerNormInputs, LayerNormTail);
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  EXPECT_EQ(generatedGemmUnsupported(*Group, 90), "");
  GeneratedKernel K = gemmKernel(*G, *Group);
  EXPECT_TRUE(K.Cooperative);
  EXPECT_GT(K.ScratchBytes, 12u * 256 * 8) << "a part per block and row";
  EXPECT_FALSE(has(K.Source, "__cluster_dims__")) << K.Source;
  EXPECT_EQ(K.Grid[0], 12u);
  EXPECT_EQ(K.Grid[1], 4u);
  EXPECT_TRUE(has(K.Source, "solder_rowgroup_wait(scratch + blockIdx.y, 12)"));
  EXPECT_TRUE(has(K.Source, "xpart[blockIdx.x * MP + m0 + lrow]"));
  EXPECT_TRUE(has(K.Source, "m0 = (long long)blockIdx.y * BM"));
  EXPECT_TRUE(has(K.Summary, "launched together")) << K.Summary;
  EXPECT_TRUE(has(K.Source, "solder_rowgroup_leave("));
  EXPECT_TRUE(has(K.Source, "__ldcg(&xpart["));
  EXPECT_TRUE(has(K.Source, "rsqrtf(m2 * "));
  EXPECT_TRUE(has(K.Source, "tile_s[lrow * 72 + (col - n0)]")) << K.Source;
  EXPECT_TRUE(has(K.Summary, "row statistics through global memory"))
      << K.Summary;
  EXPECT_TRUE(has(K.Summary, "LayerNormalization epilogue")) << K.Summary;
  EXPECT_EQ(K.NodeNames, (std::vector<std::string>{"mm", "bias", "res", "ln"}));
  EXPECT_TRUE(has(K.Source, ArchSpecificMarker));
}

TEST(GeneratedGemm, CooperativeKernelLetsTheNextLaunchAfterItsExchange) {
  // In a chain of dependent launches the global-memory LayerNorm kernel is
  // one too: it fetches its weights before waiting for the previous grid,
  // and lets the next grid launch only after its row exchange, when all of
  // its blocks are resident (earlier, the next grid's blocks could hold
  // SMs its own waiting blocks need).
  auto G = pipelined("f16", 256, 768, 64, LayerNormInputs, LayerNormTail);
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  GeneratedKernel K = gemmKernel(*G, *Group, 90, /*Dependent=*/true);
  EXPECT_TRUE(K.Cooperative);
  EXPECT_TRUE(K.DependentLaunch);
  EXPECT_TRUE(has(K.Summary, "B fetched before the previous grid ends"))
      << K.Summary;
  size_t Trigger = K.Source.find("solder_launch_dependents();");
  size_t Leave = K.Source.find("solder_rowgroup_leave(scratch");
  ASSERT_NE(Trigger, std::string::npos) << K.Source;
  ASSERT_NE(Leave, std::string::npos) << K.Source;
  EXPECT_GT(Trigger, Leave) << "the next grid may launch before the exchange";
  EXPECT_EQ(K.Source.find("solder_launch_dependents();", Trigger + 1),
            std::string::npos)
      << "triggered twice";
  EXPECT_LT(K.Source.find("solder_grid_wait();"), Leave);
}

TEST(GeneratedGemm, CooperativeKernelOutsideAChainNeverTriggers) {
  // Negative twin: without dependent launches the same kernel neither
  // waits for the previous grid nor lets the next one launch.
  auto G = pipelined("f16", 256, 768, 64, LayerNormInputs, LayerNormTail);
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  GeneratedKernel K = gemmKernel(*G, *Group);
  EXPECT_TRUE(K.Cooperative);
  EXPECT_FALSE(K.DependentLaunch);
  EXPECT_FALSE(has(K.Source, "solder_launch_dependents();")) << K.Source;
  EXPECT_FALSE(has(K.Source, "solder_grid_wait();")) << K.Source;
}

TEST(GeneratedGemm, LayerNormGroupIsOneClusterKernel) {
  // Negative twin: 900 rows would take 180 blocks of 64 x 64 (more than
  // one wave, which blocks waiting for each other must be), so the row's
  // blocks form a cluster instead: 6 blocks of 128 columns of the
  // mma.sync loop (wgmmaPreferred: not below 1024 rows).
  auto G =
      pipelined("f16", 900, 768, 64, layerNormInputs(900), layerNormTail(900));
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  EXPECT_EQ(generatedGemmUnsupported(*Group, 90), "");
  GeneratedKernel K = gemmKernel(*G, *Group);
  EXPECT_FALSE(K.Cooperative);
  EXPECT_EQ(K.ScratchBytes, 0u);
  EXPECT_TRUE(has(K.Source, "__cluster_dims__(1, 6, 1)")) << K.Source;
  EXPECT_EQ(K.Grid[1], 6u);
  EXPECT_FALSE(has(K.Summary, "launched together")) << K.Summary;
  // One exchange: each block's (mean, centred sum of squares), combined.
  EXPECT_TRUE(has(K.Source, "solder_ld_cluster(&part[0][i], r)"));
  EXPECT_TRUE(has(K.Source, "solder_ld_cluster(&part[1][i], r)"));
  EXPECT_TRUE(has(K.Source, "rsqrtf(m2 * "));
  EXPECT_TRUE(has(K.Source, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16"));
  EXPECT_TRUE(has(K.Summary, "LayerNormalization epilogue")) << K.Summary;
  EXPECT_GT(K.DynamicSharedBytes, 0u);
  EXPECT_FALSE(wgmmaPreferred(900, 768, 64, /*Norm=*/true));
  EXPECT_FALSE(has(K.Source, "solder_wgmma("));
  EXPECT_FALSE(has(K.Source, ArchSpecificMarker));
}

TEST(GeneratedGemm, DefaultLoopIsTheOneMeasuredFaster) {
  // wgmmaPreferred: without a row normalization, wgmma (with its TMA
  // producer) above 64 rows; with one, wgmma from 1024 rows. Negative
  // twins: 64 rows, and a 128-row LayerNorm.
  EXPECT_TRUE(wgmmaPreferred(4096, 768, 768, false));
  EXPECT_TRUE(wgmmaPreferred(4096, 768, 3072, false));
  EXPECT_TRUE(wgmmaPreferred(4096, 768, 768, true));
  EXPECT_TRUE(wgmmaPreferred(128, 2304, 768, false));
  EXPECT_TRUE(wgmmaPreferred(128, 768, 3072, false));
  EXPECT_FALSE(wgmmaPreferred(64, 128, 2048, false));
  EXPECT_FALSE(wgmmaPreferred(128, 768, 768, true));
  // And the kernel follows it: a 4096-row group through the default path
  // is a wgmma kernel (sm_90a) fed by TMA through two tensor-map
  // parameters (128 x 192 tiles: 384 threads), a 64-row one is mma.sync
  // with plain pointers.
  for (int64_t M : {4096, 64}) {
    auto G = pipelined("f16", M, 256, 256, "",
                       "  %y = Relu(%mb) : f16[" + std::to_string(M) +
                           ",256] @\"relu\"\n");
    ASSERT_TRUE(G);
    const Node *Group = contractionGroup(*G);
    ASSERT_TRUE(Group);
    GeneratedKernel K = gemmKernel(*G, *Group);
    bool Big = M == 4096;
    EXPECT_EQ(has(K.Source, "solder_wgmma("), Big) << M;
    EXPECT_EQ(has(K.Source, ArchSpecificMarker), Big) << M;
    EXPECT_EQ(has(K.Source, "const __grid_constant__ solder_tmap_t tmap1"), Big)
        << K.Source;
    EXPECT_EQ(has(K.Summary, "TMA producer"), Big) << K.Summary;
    ASSERT_EQ(K.TensorMaps.size(), Big ? 2u : 0u);
    if (!Big)
      continue;
    EXPECT_EQ(K.Block[0], 384u);
    // A [4096, 256] in boxes of 64 x 128 rows; B [256, 256] (N-major) in
    // boxes of 64 x 64.
    EXPECT_EQ(K.TensorMaps[0].Input, 0u);
    EXPECT_EQ(K.TensorMaps[0].Dims[0], 256);
    EXPECT_EQ(K.TensorMaps[0].Dims[1], 4096);
    EXPECT_EQ(K.TensorMaps[0].RowBytes, 512);
    EXPECT_EQ(K.TensorMaps[0].Box[1], 128u);
    EXPECT_EQ(K.TensorMaps[1].Box[0], 64u);
    EXPECT_EQ(K.TensorMaps[1].Box[1], 64u);
  }
}

TEST(GeneratedGemm, FewTilesSplitKOverACluster) {
  // 64 x 128 x 2048: 8 tiles of 16 x 64 leave the GPU idle, so K (32
  // steps of 64) is split over a cluster of 2 blocks along z (16 steps
  // each), whose block 0 adds the partial sums and runs the epilogue.
  // Negative twin: sm_80 has no clusters, so the same group runs unsplit
  // there.
  auto G = pipelined("f16", 64, 128, 2048, "",
                     "  %y = Relu(%mb) : f16[64,128] @\"relu\"\n");
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  GeneratedKernel K = gemmKernel(*G, *Group);
  EXPECT_TRUE(has(K.Summary, "K split over a cluster of 2")) << K.Summary;
  EXPECT_TRUE(has(K.Source, "__cluster_dims__(1, 1, 2)"));
  EXPECT_TRUE(has(K.Source, "solder_ld_cluster(&red["));
  EXPECT_EQ(K.Grid[2], 2u);
  EXPECT_FALSE(has(K.Source, "solder_wgmma("));
  GeneratedKernel Old = gemmKernel(*G, *Group, 80);
  EXPECT_FALSE(has(Old.Summary, "K split")) << Old.Summary;
  EXPECT_FALSE(has(Old.Source, "__cluster_dims__"));
  EXPECT_EQ(Old.Grid[2], 1u);
}

TEST(GeneratedGemm, WarpSpecializedLoopAddsAProducerWarpgroup) {
  // The forced warp-specialized wgmma loop: 2 consumer warpgroups for a
  // 128-row tile plus one producer, full/empty barriers per stage after
  // the stages. Negative twins: a row normalization (its epilogue's block
  // barriers would wait for producers that have left) and the mma.sync
  // loop are refused.
  auto G = pipelined("f16", 256, 256, 256, "",
                     "  %y = Relu(%mb) : f16[256,256] @\"relu\"\n");
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  CodegenOptions O;
  O.SmVersion = 90;
  KernelNamer Names(*G);
  GemmVariant V;
  V.Wgmma = true;
  V.Specialized = true;
  V.Tile = {128, 128, 4};
  auto K = emitGeneratedGemmVariant(*Group, O, Names, &V);
  ASSERT_TRUE(bool(K)) << llvm::toString(K.takeError());
  EXPECT_EQ(K->Block[0], 384u);
  EXPECT_EQ(K->DynamicSharedBytes, wgmmaSharedBytes(V.Tile, true));
  EXPECT_EQ(wgmmaSharedBytes(V.Tile, true), wgmmaSharedBytes(V.Tile) + 64);
  EXPECT_TRUE(has(K->Source, "solder_mbar_wait(full_u"));
  EXPECT_TRUE(has(K->Summary, "warp-specialized")) << K->Summary;
  auto Cubins = compileKernels({*K}, solder::testing::testNvrtcOptions());
  EXPECT_TRUE(bool(Cubins))
      << (Cubins ? "" : llvm::toString(Cubins.takeError()));

  auto Ln = pipelined("f16", 256, 768, 64, LayerNormInputs, LayerNormTail);
  ASSERT_TRUE(Ln);
  KernelNamer LnNames(*Ln);
  auto Refused =
      emitGeneratedGemmVariant(*contractionGroup(*Ln), O, LnNames, &V);
  ASSERT_FALSE(bool(Refused));
  EXPECT_TRUE(has(llvm::toString(Refused.takeError()), "row normalization"));
  V.Wgmma = false;
  auto Mma = emitGeneratedGemmVariant(*Group, O, Names, &V);
  ASSERT_FALSE(bool(Mma));
  EXPECT_TRUE(has(llvm::toString(Mma.takeError()), "needs the wgmma loop"));
}

/// M x 384 x 200 + bias + Relu in f16, through the GPU pipeline.
std::unique_ptr<Graph> reluGemm(int64_t M) {
  return pipelined("f16", M, 384, 200, "",
                   "  %y = Relu(%mb) : f16[" + std::to_string(M) +
                       ",384] @\"relu\"\n");
}

/// The TMA loop with 128 x 192 tiles and B multicast forced.
GemmVariant multicastVariant() {
  GemmVariant V;
  V.Wgmma = V.Specialized = V.Tma = true;
  V.Tile = {128, 192, 5};
  V.KSplit = 1;
  V.Multicast = true;
  return V;
}

TEST(GeneratedGemm, BMulticastPairsBlocksAlongM) {
  // 256 rows of 128: two row tiles, so the TMA loop may run in clusters of
  // two blocks along M, each fetching half of B's stage (32 of its 64 rows
  // of K: B is [K, N]) into both; the consumers release a stage to both
  // producers.
  auto G = reluGemm(256);
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  CodegenOptions O;
  O.SmVersion = 90;
  KernelNamer Names(*G);
  GemmVariant V = multicastVariant();
  auto K = emitGeneratedGemmVariant(*Group, O, Names, &V);
  ASSERT_TRUE(bool(K)) << llvm::toString(K.takeError());
  EXPECT_TRUE(has(K->Source, "__cluster_dims__(2, 1, 1)")) << K->Source;
  EXPECT_TRUE(has(K->Source, "solder_tma_2d_mc(")) << K->Source;
  EXPECT_TRUE(has(K->Source, "solder_mbar_arrive_peer(empty_u + 8 * prev, "
                             "crank ^ 1u)"));
  EXPECT_TRUE(has(K->Source, "solder_cluster_sync();"));
  EXPECT_TRUE(has(K->Summary, "B multicast over clusters of 2")) << K->Summary;
  ASSERT_EQ(K->TensorMaps.size(), 2u);
  EXPECT_EQ(K->TensorMaps[1].Box[1], 32u) << "half a stage of B's K rows";
  auto Cubins = compileKernels({*K}, solder::testing::testNvrtcOptions());
  EXPECT_TRUE(bool(Cubins))
      << (Cubins ? "" : llvm::toString(Cubins.takeError()));
  // Without the pair: whole boxes, no cluster.
  V.Multicast = false;
  auto Plain = emitGeneratedGemmVariant(*Group, O, Names, &V);
  ASSERT_TRUE(bool(Plain)) << llvm::toString(Plain.takeError());
  EXPECT_FALSE(has(Plain->Source, "__cluster_dims__"));
  EXPECT_FALSE(has(Plain->Source, "solder_tma_2d_mc("));
  EXPECT_EQ(Plain->TensorMaps[1].Box[1], 64u);
}

TEST(GeneratedGemm, BMulticastNeedsRowTilesInPairs) {
  // Negative twin: 320 rows of 128 are three row tiles, one of which would
  // have no partner: a forced multicast is refused, not dropped; so is one
  // with K split (its cluster is along z).
  CodegenOptions O;
  O.SmVersion = 90;
  GemmVariant V = multicastVariant();
  auto Odd = reluGemm(320), Even = reluGemm(256);
  ASSERT_TRUE(Odd && Even);
  KernelNamer OddNames(*Odd), EvenNames(*Even);
  auto K = emitGeneratedGemmVariant(*contractionGroup(*Odd), O, OddNames, &V);
  ASSERT_FALSE(bool(K));
  EXPECT_TRUE(has(llvm::toString(K.takeError()), "no B multicast"));
  V.KSplit = 2;
  auto Split =
      emitGeneratedGemmVariant(*contractionGroup(*Even), O, EvenNames, &V);
  ASSERT_FALSE(bool(Split));
  EXPECT_TRUE(has(llvm::toString(Split.takeError()), "no B multicast"));
  // The row-major launch order is only for a row's blocks that wait for
  // each other: refused on a plain GEMM.
  V.KSplit = 1;
  V.Multicast = false;
  V.RowsTogether = true;
  auto Rows =
      emitGeneratedGemmVariant(*contractionGroup(*Even), O, EvenNames, &V);
  ASSERT_FALSE(bool(Rows));
  EXPECT_TRUE(has(llvm::toString(Rows.takeError()), "no row-major launch"));
}

TEST(GeneratedGemm, ForcedSplitKNeedsProducersThatStay) {
  // The TMA loop splits K over a cluster when forced; negative twins: with
  // the persistent schedule or 256-wide tiles (whose producers leave
  // before the reduction's barriers) a forced split is refused, not
  // silently dropped.
  auto G = pipelined("f16", 256, 512, 1024, "",
                     "  %y = Relu(%mb) : f16[256,512] @\"relu\"\n");
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  CodegenOptions O;
  O.SmVersion = 90;
  KernelNamer Names(*G);
  GemmVariant V;
  V.Wgmma = true;
  V.Specialized = true;
  V.Tma = true;
  V.Tile = {128, 128, 4};
  V.KSplit = 2;
  auto K = emitGeneratedGemmVariant(*Group, O, Names, &V);
  ASSERT_TRUE(bool(K)) << llvm::toString(K.takeError());
  EXPECT_TRUE(has(K->Summary, "K split over a cluster of 2")) << K->Summary;
  GemmVariant P = V;
  P.Persistent = true;
  GemmVariant W = V;
  W.Tile = {128, 256, 3};
  for (const GemmVariant *Bad : {&P, &W}) {
    auto Refused = emitGeneratedGemmVariant(*Group, O, Names, Bad);
    ASSERT_FALSE(bool(Refused));
    EXPECT_TRUE(has(llvm::toString(Refused.takeError()), "no split K with"));
  }
}

TEST(GeneratedGemm, WgmmaLayerNormGroupIsOneClusterKernel) {
  // The same group through the wgmma loop: 768 columns in blocks of BN,
  // all of a row's blocks one cluster, the same cluster epilogue.
  auto G = pipelined("f16", 256, 768, 64, LayerNormInputs, LayerNormTail);
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  auto K = wgmmaKernel(*G, *Group);
  ASSERT_TRUE(bool(K)) << llvm::toString(K.takeError());
  WgmmaTile T = chooseWgmmaTile(256, 768, 64, /*Norm=*/true);
  unsigned Cluster = unsigned((768 + T.BN - 1) / T.BN);
  EXPECT_TRUE(
      has(K->Source, "__cluster_dims__(1, " + std::to_string(Cluster) + ", 1)"))
      << K->Source;
  EXPECT_LE(Cluster, 8u);
  EXPECT_EQ(K->Grid[1], Cluster);
  EXPECT_EQ(K->Grid[0], unsigned((256 + T.BM - 1) / T.BM));
  EXPECT_EQ(K->Block[0], unsigned(T.BM / 64 * 128));
  EXPECT_TRUE(has(K->Source, "solder_ld_cluster(&part[0][i], r)"));
  EXPECT_TRUE(has(K->Source, "rsqrtf(m2 * "));
  EXPECT_TRUE(has(K->Source, "wgmma.mma_async.sync.aligned.m64n" +
                                 std::to_string(T.BN) + "k16.f32.f16.f16"));
  // The accumulators are read where mma.sync's would be: warp w is warp
  // row w of 16 rows, one warp column of BN.
  EXPECT_TRUE(has(K->Source, "WM = NWG * 4, WN = 1, TM = 16, TN = BN"));
  EXPECT_TRUE(has(K->Source, ArchSpecificMarker));
  EXPECT_TRUE(has(K->Summary, "(wgmma)")) << K->Summary;
  EXPECT_TRUE(has(K->Summary, "LayerNormalization epilogue")) << K->Summary;
  EXPECT_EQ(K->DynamicSharedBytes, wgmmaSharedBytes(T));
  EXPECT_EQ(K->NodeNames,
            (std::vector<std::string>{"mm", "bias", "res", "ln"}));
}

TEST(GeneratedGemm, WgmmaNeedsSm90AndAlignedRows) {
  // Negative twins of the forced wgmma loop: below sm_90, and rows that
  // 16-byte copies cannot fill (N = 20 with B as [K, N]); the default
  // there is the mma.sync loop.
  auto G = pipelined("f16", 256, 128, 64,
                     "  input %r : f16[256,128]\n"
                     "  input %gamma : f16[128]\n  input %beta : f16[128]\n",
                     "  %s = Add(%mb, %r) : f16[256,128] @\"res\"\n"
                     "  %y = LayerNormalization(%s, %gamma, %beta) {axis = -1, "
                     "epsilon = 1e-12} : f16[256,128] @\"ln\"\n");
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  auto Sm80 = wgmmaKernel(*G, *Group, {0, 0, 0}, 80);
  ASSERT_FALSE(bool(Sm80));
  EXPECT_TRUE(has(llvm::toString(Sm80.takeError()), "needs sm_90"));
  GeneratedKernel K = gemmKernel(*G, *Group, 80);
  EXPECT_TRUE(has(K.Source, "solder_mma16816(acc[mt][nt]")) << K.Source;
  EXPECT_FALSE(has(K.Source, "__cluster_dims__"));

  auto Odd = pipelined("f16", 64, 20, 64, "",
                       "  %y = Relu(%mb) : f16[64,20] @\"relu\"\n");
  ASSERT_TRUE(Odd);
  const Node *OddGroup = contractionGroup(*Odd);
  ASSERT_TRUE(OddGroup);
  auto Unaligned = wgmmaKernel(*Odd, *OddGroup);
  ASSERT_FALSE(bool(Unaligned));
  EXPECT_TRUE(has(llvm::toString(Unaligned.takeError()), "multiple of 8"));
  // A tile the loop cannot take: B as [K, N] comes in 64-column blocks.
  auto G2 = pipelined("f16", 128, 128, 64, "",
                      "  %y = Relu(%mb) : f16[128,128] @\"relu\"\n");
  ASSERT_TRUE(G2);
  auto BadTile = wgmmaKernel(*G2, *contractionGroup(*G2), {64, 96, 4});
  ASSERT_FALSE(bool(BadTile));
  EXPECT_TRUE(has(llvm::toString(BadTile.takeError()), "tile 64x96"));
}

TEST(GeneratedGemm, WgmmaTilesCompile) {
  // Every tile the chooser may take, for B as [K, N] (N-major, wgmma's
  // transposed B) and as [N, K] (Gemm transB, K-major; then any multiple
  // of 8 columns), with K not a multiple of 64 and M, N edges. Each
  // compiles for sm_90a with no stack frame.
  struct Case {
    bool TransB;
    WgmmaTile T;
  };
  const Case Cases[] = {
      {false, {64, 64, 4}},   {false, {128, 128, 6}}, {false, {192, 128, 5}},
      {false, {128, 192, 5}}, {false, {128, 256, 4}}, {false, {256, 128, 4}},
      {true, {64, 104, 4}},   {true, {128, 128, 4}},  {true, {192, 64, 5}}};
  std::vector<GeneratedKernel> Kernels;
  std::vector<std::unique_ptr<Graph>> Graphs;
  for (const Case &C : Cases) {
    SCOPED_TRACE(std::to_string(C.T.BM) + "x" + std::to_string(C.T.BN) +
                 (C.TransB ? " transB" : ""));
    std::string Tail, Inputs;
    std::unique_ptr<Graph> G;
    if (C.TransB) {
      auto P = parseGraph(
          "graph \"g\" opset 23 {\n  input %x : bf16[300,200]\n"
          "  input %w : bf16[360,200]\n  input %c : bf16[360]\n"
          "  %g = Gemm(%x, %w, %c) {alpha = 0.5, transB = 1} : bf16[300,360] "
          "@\"gemm\"\n  %y = Relu(%g) : bf16[300,360] @\"relu\"\n"
          "  output %y\n}\n");
      ASSERT_TRUE(bool(P)) << llvm::toString(P.takeError());
      PipelineOptions PO;
      PO.TargetGpu = true;
      PO.Prec = Precision::BF16;
      ASSERT_FALSE(bool(runPipeline(**P, PO)));
      G = std::move(*P);
    } else {
      G = pipelined("f16", 300, 384, 200, "",
                    "  %y = Gelu(%mb) : f16[300,384] @\"gelu\"\n");
    }
    ASSERT_TRUE(G);
    const Node *Group = contractionGroup(*G);
    ASSERT_TRUE(Group);
    CodegenOptions O;
    KernelNamer Names(*G);
    GemmVariant V;
    V.Wgmma = true;
    V.Tile = C.T;
    auto K = emitGeneratedGemmVariant(*Group, O, Names, &V);
    ASSERT_TRUE(bool(K)) << llvm::toString(K.takeError());
    EXPECT_EQ(K->Block[0], unsigned(C.T.BM / 64 * 128));
    EXPECT_EQ(K->Grid[0], unsigned((300 + C.T.BM - 1) / C.T.BM));
    EXPECT_EQ(K->DynamicSharedBytes, wgmmaSharedBytes(C.T));
    EXPECT_TRUE(has(K->Source, "m64n" + std::to_string(C.T.BN) + "k16"));
    EXPECT_TRUE(has(K->Source, C.TransB ? "p, 1, 1, 0, 0;" : "p, 1, 1, 0, 1;"));
    Kernels.push_back(std::move(*K));
    Graphs.push_back(std::move(G));
  }
  auto Cubins = compileKernels(Kernels, solder::testing::testNvrtcOptions());
  ASSERT_TRUE(bool(Cubins)) << llvm::toString(Cubins.takeError());
  EXPECT_EQ(Cubins->size(), Kernels.size());
}

TEST(GeneratedGemm, WgmmaTileOfALayerNormRowIsOneCluster) {
  // Tiles for BERT-base's shapes: whole 64-column blocks, and a row of N
  // under a LayerNorm over at most 8 blocks.
  for (int64_t M : {1, 128, 4096})
    for (auto [N, K] : {std::pair<int64_t, int64_t>{768, 768},
                        {2304, 768},
                        {3072, 768},
                        {768, 3072},
                        {1000, 64}})
      for (bool Norm : {false, true}) {
        if (Norm && N > 1024)
          continue;
        WgmmaTile T = chooseWgmmaTile(M, N, K, Norm);
        SCOPED_TRACE(std::to_string(M) + "x" + std::to_string(N) + "x" +
                     std::to_string(K));
        EXPECT_EQ(T.BM % 64, 0);
        EXPECT_EQ(T.BN % 64, 0);
        EXPECT_GE(T.Stages, 4);
        EXPECT_LE(wgmmaSharedBytes(T), 220u * 1024);
        if (Norm) {
          EXPECT_LE((N + T.BN - 1) / T.BN, 8);
        }
      }
}

TEST(GeneratedGemm, WgmmaKernelsCompileForSm90aOnly) {
  // The marker line makes NVRTC target sm_90a; without it the same kernel
  // fails (wgmma is not in plain sm_90), and no other target takes it.
  auto G = pipelined("f16", 128, 128, 64, "",
                     "  %y = Relu(%mb) : f16[128,128] @\"relu\"\n");
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  auto KO = wgmmaKernel(*G, *Group);
  ASSERT_TRUE(bool(KO)) << llvm::toString(KO.takeError());
  GeneratedKernel K = std::move(*KO);
  ASSERT_TRUE(needsArchSpecificTarget(K.Source)) << K.Source;
  NvrtcOptions NO = solder::testing::testNvrtcOptions();
  solder::testing::TempDir Fail(
      "solder-wgmma"); // the failing source is saved there
  NO.FailureDir = std::string(Fail.Path.str());
  NO.Arch = "sm_100";
  auto Other = compileKernels({K}, NO);
  ASSERT_FALSE(bool(Other));
  EXPECT_TRUE(has(llvm::toString(Other.takeError()), "sm_90a"));
  GeneratedKernel Plain = K;
  size_t At = Plain.Source.find(ArchSpecificMarker);
  Plain.Source.erase(At, std::strlen(ArchSpecificMarker));
  NO.Arch = "sm_90";
  auto Failed = compileKernels({Plain}, NO);
  ASSERT_FALSE(bool(Failed)) << "wgmma compiled for plain sm_90";
  EXPECT_TRUE(has(llvm::toString(Failed.takeError()), "wgmma"));
}

TEST(GeneratedGemm, SplitNormGroupIsGemmThenRowKernel) {
  // Split (tuning's chain): the GEMM stores its product plus bias, a row
  // kernel adds the residual and normalizes.
  auto G = pipelined("f16", 256, 768, 64, LayerNormInputs, LayerNormTail);
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  const Value *X = normSplitValue(*Group);
  ASSERT_TRUE(X);
  ASSERT_TRUE(X->producer());
  EXPECT_EQ(memberName(*X->producer()), "bias");
  CodegenOptions O;
  O.GeneratedGemmGroups.insert(groupInfo(*Group).Id);
  O.SplitNormGroups.insert(groupInfo(*Group).Id);
  auto K = emitGraphKernels(*G, O);
  ASSERT_TRUE(bool(K)) << llvm::toString(K.takeError());
  ASSERT_EQ(K->size(), 2u);
  EXPECT_TRUE(has((*K)[0].Summary, "up to the LayerNormalization"))
      << (*K)[0].Summary;
  EXPECT_EQ((*K)[0].Outputs, std::vector<const Value *>{X});
  EXPECT_FALSE(has((*K)[0].Source, "__cluster_dims__")) << (*K)[0].Source;
  EXPECT_TRUE(llvm::is_contained((*K)[1].Inputs, X));
  EXPECT_TRUE(has((*K)[1].Summary, "LayerNormalization")) << (*K)[1].Summary;
  auto Cubins = compileKernels(*K, solder::testing::testNvrtcOptions());
  EXPECT_TRUE(bool(Cubins)) << llvm::toString(Cubins.takeError());
}

TEST(GeneratedGemm, NoSplitWhenTheRowPartReadsTheEpilogue) {
  // Negative twin: after the LayerNorm a member reads the bias sum too,
  // which the GEMM's part would have to store as well; and a group with
  // no normalization has nothing to split.
  const char *Text = R"(graph "g" opset 23 {
  input %x : f16[4,8]
  input %w : f16[8,16]
  input %b : f16[16]
  input %gamma : f16[16]
  input %beta : f16[16]
  %z = FusedGroup(%x, %w, %b, %gamma, %beta) {id = 0, kind = "contraction", members = ["mm", "bias", "ln", "again"]} : f16[4,16] body graph "g0" opset 23 {
    input %x : f16[4,8]
    input %w : f16[8,16]
    input %b : f16[16]
    input %gamma : f16[16]
    input %beta : f16[16]
    %m = MatMul(%x, %w) : f16[4,16] @"mm"
    %mb = Add(%m, %b) : f16[4,16] @"bias"
    %y = LayerNormalization(%mb, %gamma, %beta) {axis = -1, epsilon = 1e-05} : f16[4,16] @"ln"
    %z = Add(%y, %m) : f16[4,16] @"again"
    output %z
  }
  output %z
}
)";
  auto G = parseGraph(Text);
  ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
  const Node *Group = contractionGroup(**G);
  ASSERT_TRUE(Group);
  EXPECT_EQ(normSplitValue(*Group), nullptr);
  auto Plain = pipelined("f16", 64, 64, 32, "",
                         "  %y = Relu(%mb) : f16[64,64] @\"relu\"\n");
  ASSERT_TRUE(Plain);
  const Node *PlainGroup = contractionGroup(*Plain);
  ASSERT_TRUE(PlainGroup);
  EXPECT_EQ(normSplitValue(*PlainGroup), nullptr);
}

TEST(GeneratedGemm, LayerNormNeedsClustersBelowSm90) {
  // Negative twin: rows of 768 span 6 blocks, which need sm_90 clusters.
  auto G = pipelined("f16", 256, 768, 64, LayerNormInputs, LayerNormTail);
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  EXPECT_TRUE(has(generatedGemmUnsupported(*Group, 80), "clusters (sm_90)"));
}

/// gemmGroupGraph(T, ...) through the GPU pipeline, f16.
std::unique_ptr<Graph> pipelinedGroupGraph(const std::string &Epi) {
  auto G = parseGraph(test::gemmGroupGraph("f16", 0, 128, 256, 128, Epi,
                                           /*TransB=*/false));
  EXPECT_TRUE(bool(G)) << llvm::toString(G.takeError());
  if (!G)
    return nullptr;
  PipelineOptions PO;
  PO.TargetGpu = true;
  PO.Prec = Precision::F16;
  auto E = runPipeline(**G, PO);
  EXPECT_FALSE(bool(E)) << llvm::toString(std::move(E));
  return std::move(*G);
}

/// G's contraction group, which must hold the layout op named Member
/// (null otherwise).
const Node *groupHolding(const Graph &G, llvm::StringRef Member) {
  const Node *Group = contractionGroup(G);
  if (!Group || !llvm::is_contained(groupInfo(*Group).Members, Member)) {
    ADD_FAILURE() << "no contraction group holding " << Member.str() << "\n"
                  << graphToString(G);
    return nullptr;
  }
  return Group;
}

TEST(GeneratedGemm, ReadsAThroughAContiguousReshape) {
  // Attention's heads merged back ([M, 4, K / 4] -> [M, K]) sit in the
  // group before the matmul; the kernel reads the bytes under the view.
  auto G = pipelinedGroupGraph("heads");
  ASSERT_TRUE(G);
  const Node *Group = groupHolding(*G, "merge");
  ASSERT_TRUE(Group);
  EXPECT_EQ(generatedGemmUnsupported(*Group, 90), "");
  GeneratedKernel K = gemmKernel(*G, *Group);
  // The kernel reads the group's operand, the tensor under the view.
  EXPECT_TRUE(llvm::any_of(K.Inputs, [](const Value *V) {
    return V->name() == "xh";
  })) << K.Source;
}

TEST(GeneratedGemm, RefusesANonContiguousLayoutPrologue) {
  // Negative twin: A transposed is a strided view the library reads as it
  // is (transposed A); the generated kernel reads rows of A.
  auto G = pipelinedGroupGraph("xt");
  ASSERT_TRUE(G);
  const Node *Group = groupHolding(*G, "swap");
  ASSERT_TRUE(Group);
  std::string Why = generatedGemmUnsupported(*Group, 90);
  EXPECT_TRUE(has(Why, "not contiguous")) << Why << "\n" << graphToString(*G);
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
  // Rows not 16-byte aligned: no wgmma on sm_90 either.
  EXPECT_FALSE(has(K.Source, "wgmma"));
  EXPECT_FALSE(has(K.Source, ArchSpecificMarker));
}

TEST(GeneratedGemm, AlignedShapesCopyAsynchronously) {
  // Twin of the above: K and N multiples of 8, in both loops.
  auto G = pipelined("f16", 64, 64, 32, "",
                     "  %y = Relu(%mb) : f16[64,64] @\"relu\"\n");
  ASSERT_TRUE(G);
  const Node *Group = contractionGroup(*G);
  ASSERT_TRUE(Group);
  GeneratedKernel K = gemmKernel(*G, *Group);
  EXPECT_FALSE(has(K.Summary, "element loads")) << K.Summary;
  EXPECT_TRUE(has(K.Source, "solder_cp16_u(a_dst")) << K.Source;
  auto W = wgmmaKernel(*G, *Group);
  ASSERT_TRUE(bool(W)) << llvm::toString(W.takeError());
  EXPECT_TRUE(has(W->Source, "solder_cp16_u(a_dst")) << W->Source;
  EXPECT_TRUE(has(W->Source, "solder_wgmma(acc[0]"));
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
