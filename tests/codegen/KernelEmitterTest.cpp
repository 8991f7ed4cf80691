//===- KernelEmitterTest.cpp - Emitted kernel sources ---------------------===//
//
// Golden-ish checks on the emitted CUDA: the pieces each kernel family must
// contain (signature, baked shapes, vectorized accesses, reductions by warp
// or block), its parameters and launch, determinism, and the clear errors
// for what code generation refuses. Whether the sources compile is checked
// in NvrtcTest.cpp and CompileAllTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelEmitter.h"
#include "ir/Parser.h"
#include <gtest/gtest.h>

using namespace solder;

namespace {

std::unique_ptr<Graph> parse(llvm::StringRef Body) {
  std::string Text = "graph \"g\" opset 21 {\n" + Body.str() + "\n}\n";
  auto G = parseGraph(Text);
  EXPECT_TRUE(bool(G)) << llvm::toString(G.takeError()) << "\n" << Text;
  return G ? std::move(*G) : nullptr;
}

/// The kernels of a graph (failing the test on an error).
std::vector<GeneratedKernel> kernels(const Graph &G,
                                     const CodegenOptions &O = {}) {
  auto K = emitGraphKernels(G, O);
  EXPECT_TRUE(bool(K)) << llvm::toString(K.takeError());
  return K ? std::move(*K) : std::vector<GeneratedKernel>();
}

std::string errorOf(const Graph &G) {
  auto K = emitGraphKernels(G);
  if (K)
    return "<no error>";
  return llvm::toString(K.takeError());
}

bool has(const std::string &S, llvm::StringRef Piece) {
  return S.find(Piece.str()) != std::string::npos;
}

TEST(KernelEmitter, DependentLaunchWaitsFirstOnSm90Only) {
  // With DependentLaunch every sm_90 kernel first lets the next launch start
  // and then waits for the grid before it (griddepcontrol, compiled for
  // sm_90 only), and says so; the negative twins: without the option, and
  // for sm_80, the kernel is as before.
  auto G = parse(R"(  input %x : f32[4,256]
  %y = Relu(%x)
  %s = Softmax(%y) {axis = 1}
  output %s)");
  ASSERT_TRUE(G);
  CodegenOptions O;
  O.DependentLaunch = true;
  for (const GeneratedKernel &K : kernels(*G, O)) {
    EXPECT_TRUE(K.DependentLaunch) << K.Name;
    size_t Body = K.Source.find("extern \"C\" __global__");
    ASSERT_NE(Body, std::string::npos);
    size_t Open = K.Source.find("{", Body);
    // The calls are the body's first statements: trigger, then wait.
    EXPECT_EQ(K.Source.find_first_not_of(" \n", Open + 1),
              K.Source.find("solder_launch_dependents();\n  "
                            "solder_grid_wait();",
                            Open))
        << K.Source;
    EXPECT_TRUE(has(K.Source, "griddepcontrol.wait;"));
    EXPECT_TRUE(has(K.Source, "#if __CUDA_ARCH__ >= 900"));
  }
  for (unsigned Sm : {90u, 80u}) {
    CodegenOptions Off;
    Off.SmVersion = Sm;
    Off.DependentLaunch = Sm == 80;
    for (const GeneratedKernel &K : kernels(*G, Off)) {
      EXPECT_FALSE(K.DependentLaunch) << K.Name;
      EXPECT_FALSE(has(K.Source, "griddepcontrol")) << K.Source;
    }
  }
}

TEST(KernelEmitter, UnaryF32IsVectorized) {
  auto G = parse(R"(  input %x : f32[4,256]
  %y = Relu(%x)
  output %y)");
  ASSERT_TRUE(G);
  auto K = kernels(*G);
  ASSERT_EQ(K.size(), 1u);
  const GeneratedKernel &R = K[0];
  EXPECT_EQ(R.Name, "solder_0_relu");
  EXPECT_TRUE(has(R.Source, "extern \"C\" __global__ void __launch_bounds__("
                            "256) solder_0_relu(float *__restrict__ out0, "
                            "const float *__restrict__ in0, const long long "
                            "cnt0)"))
      << R.Source;
  EXPECT_TRUE(has(R.Source, "reinterpret_cast<const uint4 *>(in0)[v]"));
  EXPECT_TRUE(has(R.Source, "v < (idx_t)cnt0;")) << R.Source;
  EXPECT_EQ(R.Counts, std::vector<int64_t>{256}); // 1024 floats / 4
  EXPECT_TRUE(has(R.Source, "typedef int idx_t;"));
  EXPECT_FALSE(has(R.Source, "#include"));
  ASSERT_EQ(R.Outputs.size(), 1u);
  ASSERT_EQ(R.Inputs.size(), 1u);
  EXPECT_EQ(R.Outputs[0]->name(), "y");
  EXPECT_EQ(R.Inputs[0]->name(), "x");
  EXPECT_EQ(R.Block[0], 256u);
  EXPECT_EQ(R.Grid[0], 1u);
}

TEST(KernelEmitter, HalfComputesInFloatAndIncludesHeader) {
  auto G = parse(R"(  input %x : f16[3,5]
  %y = Sigmoid(%x)
  output %y)");
  ASSERT_TRUE(G);
  auto K = kernels(*G);
  ASSERT_EQ(K.size(), 1u);
  const std::string &S = K[0].Source;
  EXPECT_TRUE(has(S, "#include <cuda_fp16.h>"));
  EXPECT_FALSE(has(S, "cuda_bf16.h"));
  EXPECT_TRUE(has(S, "__half2float(in0[i])")) << S;
  EXPECT_TRUE(has(S, "__float2half_rn(")) << S;
  EXPECT_TRUE(has(S, "expf(")) << S;
  // 15 halves do not fill 16-byte vectors.
  EXPECT_FALSE(has(S, "uint4"));
}

TEST(KernelEmitter, BroadcastBakesStridesAndScalars) {
  auto G = parse(R"(  input %a : f32[2,3,4]
  input %b : f32[3,1]
  const %half : f32[] = [0.5]
  %s = Add(%a, %b)
  %y = Mul(%s, %half)
  output %y)");
  ASSERT_TRUE(G);
  auto K = kernels(*G);
  ASSERT_EQ(K.size(), 2u);
  const std::string &Add = K[0].Source;
  EXPECT_FALSE(has(Add, "uint4"));
  EXPECT_TRUE(has(Add, "i % 4")) << Add;
  EXPECT_EQ(K[0].Inputs.size(), 2u);
  // The scalar is baked in: one pointer parameter, and vectorized.
  const std::string &Mul = K[1].Source;
  EXPECT_EQ(K[1].Inputs.size(), 1u);
  EXPECT_TRUE(has(Mul, "(0x1p-1f)")) << Mul;
  EXPECT_TRUE(has(Mul, "uint4")) << Mul;
  EXPECT_EQ(K[1].Name, "solder_1_mul");
}

TEST(KernelEmitter, ViewsAndLibraryCallsGetNoKernel) {
  auto G = parse(R"(  input %x : f32[2,6]
  input %w : f32[6,3]
  const %shape : i64[2] = [3, 4]
  %r = Reshape(%x, %shape)
  %m = MatMul(%x, %w)
  %t = Tanh(%m)
  output %r
  output %t)");
  ASSERT_TRUE(G);
  auto K = kernels(*G);
  ASSERT_EQ(K.size(), 1u);
  EXPECT_EQ(K[0].Name, "solder_2_tanh");
  KernelNamer Names(*G);
  auto R = emitKernel(*G->nodes().front(), {}, Names);
  ASSERT_TRUE(bool(R));
  EXPECT_FALSE(R->has_value());
}

TEST(KernelEmitter, DeterministicBytes) {
  const char *Body = R"(  input %x : bf16[8,64]
  input %g : bf16[64]
  %n = LayerNormalization(%x, %g) {epsilon = 0.001}
  %s = Softmax(%n)
  %c = Cast(%s) {to = 1}
  output %c)";
  auto G1 = parse(Body), G2 = parse(Body);
  ASSERT_TRUE(G1 && G2);
  auto A = kernels(*G1), B = kernels(*G1), C = kernels(*G2);
  ASSERT_EQ(A.size(), 3u);
  ASSERT_EQ(C.size(), 3u);
  for (size_t I = 0; I < A.size(); ++I) {
    EXPECT_EQ(A[I].Name, C[I].Name);
    EXPECT_EQ(A[I].Source, B[I].Source);
    EXPECT_EQ(A[I].Source, C[I].Source);
  }
  EXPECT_TRUE(has(A[0].Source, "#include <cuda_bf16.h>"));
}

TEST(KernelEmitter, DynamicShapesAreRefusedNamingTheNode) {
  auto G = parse(R"(  input %x : f32[N,4]
  %y = Exp(%x) @"exp1"
  output %y)");
  ASSERT_TRUE(G);
  std::string E = errorOf(*G);
  EXPECT_TRUE(has(E, "Exp node 'exp1'")) << E;
  EXPECT_TRUE(has(E, "static shapes")) << E;
}

TEST(KernelEmitter, UnsupportedDTypeIsRefusedNamingTheNode) {
  auto G = parse(R"(  input %x : i32[4]
  %y = Softsign(%x) @"ss"
  output %y)");
  ASSERT_TRUE(G);
  std::string E = errorOf(*G);
  EXPECT_TRUE(has(E, "Softsign node 'ss'")) << E;
  EXPECT_TRUE(has(E, "does not support Softsign on i32")) << E;
}

TEST(KernelEmitter, WideIndexWhenForced) {
  auto G = parse(R"(  input %x : f32[4,3]
  %y = Neg(%x)
  output %y)");
  ASSERT_TRUE(G);
  CodegenOptions O;
  O.Force64BitIndex = true;
  auto K = kernels(*G, O);
  ASSERT_EQ(K.size(), 1u);
  EXPECT_TRUE(has(K[0].Source, "typedef long long idx_t;"));
  EXPECT_TRUE(has(K[0].Source, "v < (idx_t)cnt0;")) << K[0].Source;
}

TEST(KernelEmitter, ReductionGroupFollowsRowLength) {
  auto G = parse(R"(  input %a : f32[64,16]
  input %b : f32[64,128]
  input %c : f32[2,4096]
  %x = Softmax(%a)
  %y = Softmax(%b)
  %z = Softmax(%c)
  output %x
  output %y
  output %z)");
  ASSERT_TRUE(G);
  auto K = kernels(*G);
  ASSERT_EQ(K.size(), 3u);
  // Thread per row, warp per row, block per row.
  EXPECT_FALSE(has(K[0].Source, "solder_warp_reduce(mx"));
  EXPECT_FALSE(has(K[0].Source, "solder_block_reduce(mx"));
  EXPECT_TRUE(has(K[1].Source, "mx = solder_warp_reduce(mx, SolderMax());"));
  EXPECT_EQ(K[1].Grid[0], 8u); // 64 rows, 8 warps per block
  EXPECT_TRUE(has(K[2].Source, "mx = solder_block_reduce(mx, SolderMax());"));
  EXPECT_EQ(K[2].Grid[0], 2u);
}

TEST(KernelEmitter, ReduceOverMiddleAxis) {
  auto G = parse(R"(  input %x : f16[2,3,5]
  const %axes : i64[1] = [1]
  %y = ReduceMean(%x, %axes) {keepdims = 0}
  output %y)");
  ASSERT_TRUE(G);
  auto K = kernels(*G);
  ASSERT_EQ(K.size(), 1u);
  const std::string &S = K[0].Source;
  // 10 rows of 3 elements, 5 apart; accumulated in float.
  EXPECT_TRUE(has(S, "row < (idx_t)cnt0")) << S;
  EXPECT_EQ(K[0].Counts, std::vector<int64_t>{10});
  EXPECT_TRUE(has(S, "j < 3")) << S;
  EXPECT_TRUE(has(S, "j * 5")) << S;
  EXPECT_TRUE(has(S, "float acc")) << S;
  EXPECT_EQ(K[0].Inputs.size(), 1u); // axes are baked in
}

TEST(KernelEmitter, LayerNormWritesStatistics) {
  auto G = parse(R"(  input %x : f32[4,32]
  input %g : f32[32]
  input %b : f32[32]
  %y, %m, %r = LayerNormalization(%x, %g, %b)
  output %y
  output %m
  output %r)");
  ASSERT_TRUE(G);
  auto K = kernels(*G);
  ASSERT_EQ(K.size(), 1u);
  EXPECT_EQ(K[0].Outputs.size(), 3u);
  EXPECT_EQ(K[0].Inputs.size(), 3u);
  EXPECT_TRUE(has(K[0].Source, "out1[row] =")) << K[0].Source;
  EXPECT_TRUE(has(K[0].Source, "out2[row] =")) << K[0].Source;
}

TEST(KernelEmitter, ConcatAndSplit) {
  auto G = parse(R"(  input %a : f32[2,3,4]
  input %b : f32[2,5,4]
  %c = Concat(%a, %b) {axis = 1}
  %p, %q = Split(%c) {axis = 1, num_outputs = 2}
  output %p
  output %q)");
  ASSERT_TRUE(G);
  auto K = kernels(*G);
  ASSERT_EQ(K.size(), 2u);
  EXPECT_TRUE(has(K[0].Source, "if (a < 3) out0[i] = in0[")) << K[0].Source;
  EXPECT_TRUE(has(K[0].Source, "else out0[i] = in1[")) << K[0].Source;
  // One kernel writes both parts of the split.
  EXPECT_EQ(K[1].Outputs.size(), 2u);
  EXPECT_EQ(K[1].Inputs.size(), 1u);
  EXPECT_TRUE(has(K[1].Source, "out1[")) << K[1].Source;
}

TEST(KernelEmitter, SliceWithNegativeStep) {
  auto G = parse(R"(  input %x : f32[10]
  const %s : i64[1] = [-1]
  const %e : i64[1] = [-11]
  const %ax : i64[1] = [0]
  const %st : i64[1] = [-2]
  %y = Slice(%x, %s, %e, %ax, %st)
  output %y)");
  ASSERT_TRUE(G);
  auto K = kernels(*G);
  ASSERT_EQ(K.size(), 1u);
  // Starts at element 9 and walks back by 2.
  EXPECT_TRUE(has(K[0].Source, "in0[9 + (i * (-2))]")) << K[0].Source;
  EXPECT_EQ(K[0].Counts, std::vector<int64_t>{5});
}

TEST(KernelEmitter, PadModes) {
  for (const char *Mode : {"constant", "reflect", "edge", "wrap"}) {
    auto G = parse(std::string(R"(  input %x : f32[3,4]
  const %p : i64[4] = [1, 2, 1, 0]
  %y = Pad(%x, %p) {mode = ")") +
                   Mode + R"("}
  output %y)");
    ASSERT_TRUE(G);
    auto K = kernels(*G);
    ASSERT_EQ(K.size(), 1u) << Mode;
    EXPECT_EQ(K[0].Inputs.size(), 1u) << Mode;
    EXPECT_EQ(K[0].Counts, std::vector<int64_t>{30}) << Mode;
  }
}

TEST(KernelEmitter, MaxPoolWithIndices) {
  auto G = parse(R"(  input %x : f32[1,2,5,5]
  %y, %i = MaxPool(%x) {kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [2, 2]}
  output %y
  output %i)");
  ASSERT_TRUE(G);
  auto K = kernels(*G);
  ASSERT_EQ(K.size(), 1u);
  EXPECT_EQ(K[0].Outputs.size(), 2u);
  const std::string &S = K[0].Source;
  EXPECT_TRUE(has(S, "long long *__restrict__ out1")) << S;
  EXPECT_TRUE(has(S, "k0 < 3")) << S;
  EXPECT_TRUE(has(S, "k1 < 3")) << S;
  EXPECT_EQ(K[0].Counts, std::vector<int64_t>{18}); // 2 planes x 3 x 3
}

TEST(KernelEmitter, GatherHandlesNegativeIndices) {
  auto G = parse(R"(  input %x : f32[10,8]
  input %i : i64[2,3]
  %y = Gather(%x, %i) {axis = 0}
  output %y)");
  ASSERT_TRUE(G);
  auto K = kernels(*G);
  ASSERT_EQ(K.size(), 1u);
  EXPECT_TRUE(has(K[0].Source, "if (k < 0) k += 10LL;")) << K[0].Source;
  EXPECT_EQ(K[0].Inputs.size(), 2u);
}

} // namespace
