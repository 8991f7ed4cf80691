//===- MemoryPlannerTest.cpp - Arena placement and plan building ----------===//
//
// CPU-only: the liveness-based placement itself, and the plans built from
// small graphs (views alias, buffers are reused, arena <= naive sum).
//
//===----------------------------------------------------------------------===//
#if SOLDER_HAVE_CUDA
#include "runtime/cuda/MemoryPlanner.h"
#include "RuntimeTestUtils.h"
#include "passes/Pipeline.h"
#include "llvm/ADT/StringExtras.h"

using namespace solder;
using namespace solder::test;

TEST(MemoryPlannerTest, DisjointLifetimesShareBytes) {
  // a: steps 0-1, b: 1-2, c: 2-3. a and c never live together.
  std::vector<BufferLifetime> B = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}};
  MemoryPlan P = planMemory(B);
  EXPECT_TRUE(isValidMemoryPlan(B, P));
  EXPECT_EQ(P.Offsets[0], P.Offsets[2]);
  EXPECT_NE(P.Offsets[0], P.Offsets[1]);
  EXPECT_EQ(P.ArenaBytes, 2 * alignTo256(1000));
  EXPECT_EQ(P.NaiveBytes, 3 * alignTo256(1000));
}

TEST(MemoryPlannerTest, OverlappingLifetimesNeverOverlapInBytes) {
  std::vector<BufferLifetime> B = {{300, 0, 5}, {5000, 1, 2}, {700, 2, 4},
                                   {100, 3, 5}, {4000, 4, 6}, {256, 0, 6}};
  MemoryPlan P = planMemory(B);
  EXPECT_TRUE(isValidMemoryPlan(B, P));
  for (uint64_t Off : P.Offsets)
    EXPECT_EQ(Off % ArenaAlignment, 0u);
  EXPECT_LE(P.ArenaBytes, P.NaiveBytes);
}

TEST(MemoryPlannerTest, BestFitFillsTheSmallestHole) {
  // Placed largest first: A [0,4096), B [4096,6144), C [6144,7168),
  // D [7168,8192). A and C die at step 1, leaving holes of 4096 and 1024
  // bytes; E (1024 bytes, from step 2) takes the smaller one, C's.
  std::vector<BufferLifetime> B = {
      {4096, 0, 1}, {2048, 0, 9}, {1024, 0, 1}, {1024, 0, 9}, {1024, 2, 3}};
  MemoryPlan P = planMemory(B);
  EXPECT_TRUE(isValidMemoryPlan(B, P));
  EXPECT_EQ(P.Offsets[2], 6144u);
  EXPECT_EQ(P.Offsets[4], P.Offsets[2]);
  EXPECT_EQ(P.ArenaBytes, 8192u);
}

TEST(MemoryPlannerTest, ValidatorCatchesOverlap) {
  std::vector<BufferLifetime> B = {{512, 0, 2}, {512, 1, 3}};
  MemoryPlan Bad;
  Bad.Offsets = {0, 256};
  Bad.ArenaBytes = 1024;
  EXPECT_FALSE(isValidMemoryPlan(B, Bad));
}

TEST(MemoryPlannerTest, RandomizedPlansAreValid) {
  uint64_t S = 12345;
  auto Next = [&] {
    S = S * 6364136223846793005ULL + 1442695040888963407ULL;
    return S >> 33;
  };
  for (int Round = 0; Round < 50; ++Round) {
    std::vector<BufferLifetime> B;
    for (int I = 0; I < 40; ++I) {
      unsigned First = Next() % 30;
      B.push_back({Next() % 100000, First, First + unsigned(Next() % 8)});
    }
    MemoryPlan P = planMemory(B);
    ASSERT_TRUE(isValidMemoryPlan(B, P)) << "round " << Round;
    EXPECT_LE(P.ArenaBytes, P.NaiveBytes);
  }
}

static const PlanStep *findStep(const Plan &P, llvm::StringRef Label) {
  for (const PlanStep &S : P.Steps)
    if (llvm::StringRef(S.Label).contains(Label))
      return &S;
  return nullptr;
}

TEST(PlanBuilderTest, ViewsAliasTheirOperands) {
  auto G = parseOrFail(mixedGraphText());
  ASSERT_TRUE(G);
  PlanOptions Opts;
  Opts.Arch = "sm_90";
  llvm::Expected<Plan> P = buildPlan(*G, Opts);
  ASSERT_TRUE(bool(P)) << llvm::toString(P.takeError());
  // Kernels: relu, exp, tanh + the conv bias helper; library: mm, gemm,
  // conv. The two views have no step.
  EXPECT_EQ(P->Gemms.size(), 2u);
  EXPECT_EQ(P->Convs.size(), 1u);
  EXPECT_EQ(P->Steps.size(), 7u);
  EXPECT_EQ(findStep(*P, "view"), nullptr);
  EXPECT_EQ(findStep(*P, "flat"), nullptr);
  // relu writes what exp reads through the Reshape: the same buffer.
  const PlanStep *Relu = findStep(*P, "relu");
  const PlanStep *Exp = findStep(*P, "exp");
  ASSERT_TRUE(Relu && Exp);
  ASSERT_EQ(Relu->Args.size(), 2u);
  ASSERT_EQ(Exp->Args.size(), 2u);
  EXPECT_EQ(Relu->Args[0], Exp->Args[1]);
  // The conv writes output #1's producer's operand through Flatten: tanh
  // reads the conv's buffer.
  const PlanStep *Tanh = findStep(*P, "tanh");
  ASSERT_TRUE(Tanh);
  EXPECT_EQ(P->Convs[0].Y, Tanh->Args[1]);
  // Outputs are written in place.
  EXPECT_EQ(Tanh->Args[0].Space, BufferSpace::Output);
  EXPECT_EQ(Tanh->Args[0].Index, 1u);
  EXPECT_EQ(P->Gemms[1].D.Space, BufferSpace::Output);
  // fp32 stays fp32; the bias of the Gemm goes through the epilogue.
  EXPECT_FALSE(P->Gemms[1].AllowTF32);
  EXPECT_EQ(P->Gemms[1].Epi, GemmConfig::Epilogue::Bias);
  EXPECT_LE(P->ArenaBytes, P->NaiveArenaBytes);
  for (const PlanBuffer &B : P->Buffers)
    EXPECT_EQ(B.Offset % ArenaAlignment, 0u);
}

TEST(PlanBuilderTest, ArenaReusesBuffersOfAChain) {
  // A chain of 8 elementwise ops over 1 MiB tensors: two buffers suffice.
  std::string Text = "graph \"chain\" opset 17 {\n  input %x : f32[262144]\n";
  std::string Prev = "x";
  for (int I = 0; I < 8; ++I) {
    std::string Name = "y" + std::to_string(I);
    Text += "  %" + Name + " = " + (I % 2 ? "Relu" : "Neg") + "(%" + Prev +
            ") : f32[262144] @\"n" + std::to_string(I) + "\"\n";
    Prev = Name;
  }
  Text += "  output %" + Prev + "\n}\n";
  auto G = parseOrFail(Text);
  ASSERT_TRUE(G);
  PlanOptions Opts;
  Opts.Arch = "sm_90";
  llvm::Expected<Plan> P = buildPlan(*G, Opts);
  ASSERT_TRUE(bool(P)) << llvm::toString(P.takeError());
  EXPECT_EQ(P->Buffers.size(), 7u); // the last one is the output
  EXPECT_EQ(P->NaiveArenaBytes, 7u * 1048576);
  EXPECT_EQ(P->ArenaBytes, 2u * 1048576);
}

TEST(PlanBuilderTest, OutputThatIsAnInputIsCopied) {
  auto G = parseOrFail(R"(graph "g" opset 17 {
  input %x : f32[4]
  %y = Relu(%x) : f32[4] @"r"
  output %y
  output %x
})");
  ASSERT_TRUE(G);
  PlanOptions Opts;
  Opts.Arch = "sm_90";
  llvm::Expected<Plan> P = buildPlan(*G, Opts);
  ASSERT_TRUE(bool(P)) << llvm::toString(P.takeError());
  ASSERT_EQ(P->Copies.size(), 1u);
  EXPECT_EQ(P->Copies[0].Src.Space, BufferSpace::Input);
  EXPECT_EQ(P->Copies[0].Dst.Space, BufferSpace::Output);
  EXPECT_EQ(P->Copies[0].Dst.Index, 1u);
  EXPECT_EQ(P->Copies[0].Bytes, 16u);
}

TEST(PlanBuilderTest, SymbolicShapesAreRefused) {
  auto G = parseOrFail(R"(graph "g" opset 17 {
  input %x : f32[N,4]
  %y = Relu(%x) : f32[N,4] @"r"
  output %y
})");
  ASSERT_TRUE(G);
  PlanOptions Opts;
  Opts.Arch = "sm_90";
  llvm::Expected<Plan> P = buildPlan(*G, Opts);
  ASSERT_FALSE(bool(P));
  EXPECT_NE(llvm::toString(P.takeError()).find("--shape"), std::string::npos);
}

TEST(PlanBuilderTest, AsymmetricConvPadsAreAClearError) {
  auto G = parseOrFail(R"(graph "g" opset 17 {
  input %x : f32[1,1,4,4]
  const %w : f32[1,1,2,2] = [1.0, 1.0, 1.0, 1.0]
  %y = Conv(%x, %w) {pads = [0, 0, 1, 1]} : f32[1,1,4,4] @"c1"
  output %y
})");
  ASSERT_TRUE(G);
  PlanOptions Opts;
  Opts.Arch = "sm_90";
  llvm::Expected<Plan> P = buildPlan(*G, Opts);
  ASSERT_FALSE(bool(P));
  std::string Msg = llvm::toString(P.takeError());
  EXPECT_NE(Msg.find("Conv node 'c1'"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("asymmetric pads"), std::string::npos) << Msg;
}

TEST(PlanBuilderTest, BroadcastBatchMatMulFoldsIntoOneGemm) {
  // [3,5,8] x [8,4]: B is shared, so the batch folds into 15 rows.
  std::string W = "[";
  for (int I = 0; I < 32; ++I)
    W += std::string(I ? ", " : "") + std::to_string(I % 7) + ".0";
  W += "]";
  auto G = parseOrFail(R"(graph "g" opset 17 {
  input %x : f32[3,5,8]
  const %w : f32[8,4] = )" +
                       W + R"(
  %y = MatMul(%x, %w) : f32[3,5,4] @"mm"
  output %y
})");
  ASSERT_TRUE(G);
  PlanOptions Opts;
  Opts.Arch = "sm_90";
  llvm::Expected<Plan> P = buildPlan(*G, Opts);
  ASSERT_TRUE(bool(P)) << llvm::toString(P.takeError());
  ASSERT_EQ(P->Gemms.size(), 1u);
  EXPECT_EQ(P->Gemms[0].Batch, 1);
  EXPECT_EQ(P->Gemms[0].N, 15);
  EXPECT_EQ(P->Gemms[0].M, 4);
  EXPECT_EQ(P->Gemms[0].K, 8);
}

#else
#include "gtest/gtest.h"
TEST(MemoryPlannerTest, NeedsCuda) {
  GTEST_SKIP() << "built without the CUDA toolkit: no GPU runtime";
}
#endif
