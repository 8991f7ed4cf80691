//===- GpuRuntimeTest.cpp - The GPU runtime against the reference ---------===//
//
// Needs a GPU; every test skips with a message where there is none. Models
// from the shared folder run on the GPU and on the reference executor with
// the same random inputs (max|gpu-ref| / max|ref| <= 1e-4 for fp32); several
// contexts run one model from 4 threads; CUDA graph replay gives the same
// results as step-by-step launches; steady-state runs allocate nothing;
// a plan compiled for another architecture is recompiled at load.
//
//===----------------------------------------------------------------------===//
#if SOLDER_HAVE_CUDA
#include "RuntimeTestUtils.h"
#include "codegen/KernelEmitter.h"
#include "codegen/LibraryEpilogue.h"
#include "codegen/NvrtcCompiler.h"
#include "codegen/WgmmaGemm.h"
#include "frontend/OnnxImporter.h"
#include "ir/Printer.h"
#include "passes/Pipeline.h"
#include "runtime/cuda/CudaLibraries.h"
#include "runtime/cuda/CudaSupport.h"
#include "runtime/cuda/KernelCompiler.h"
#include "runtime/cuda/LibraryCalls.h"
#include "runtime/cuda/PlanBuilder.h"
#include "runtime/reference/ReferenceExecutor.h"
#include "solder/Solder.h"
#include "tests/GemmGroupGraph.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <random>
#include <thread>

using namespace solder;
using namespace solder::test;

namespace {

#define SKIP_WITHOUT_GPU()                                                     \
  do {                                                                         \
    llvm::Expected<int> Dev_ = requireDevice();                                \
    if (!Dev_)                                                                 \
      GTEST_SKIP() << "GPU test skipped: "                                     \
                   << llvm::toString(Dev_.takeError());                        \
  } while (0)

/// max|A-B| / max|B| over float tensors (exact equality for others).
double relativeError(const Tensor &A, const Tensor &B) {
  if (A.dtype() != B.dtype() || A.dims() != B.dims())
    return INFINITY;
  double MaxDiff = 0, MaxRef = 0;
  for (int64_t I = 0; I < A.numElements(); ++I) {
    double X = A.getDouble(I), Y = B.getDouble(I);
    if (std::isnan(X) != std::isnan(Y))
      return INFINITY;
    if (std::isnan(X))
      continue;
    MaxDiff = std::max(MaxDiff, std::fabs(X - Y));
    MaxRef = std::max(MaxRef, std::fabs(Y));
  }
  return MaxRef > 0 ? MaxDiff / MaxRef : MaxDiff;
}

std::vector<Tensor> randomInputs(const Graph &G, unsigned Seed) {
  std::mt19937 Rng(Seed);
  std::vector<Tensor> Out;
  for (const Value *V : G.inputs()) {
    auto Dims = V->type().staticDims();
    Tensor T(V->dtype(), Dims);
    bool Mask = llvm::StringRef(V->name()).contains("mask");
    for (int64_t I = 0; I < T.numElements(); ++I) {
      if (isFloat(V->dtype()))
        T.setDouble(I, std::uniform_real_distribution<double>(-1, 1)(Rng));
      else
        T.setDouble(I, Mask ? 1 : double(Rng() % 10));
    }
    Out.push_back(std::move(T));
  }
  return Out;
}

struct ModelCase {
  const char *File;
  std::vector<std::pair<std::string, int64_t>> Symbols;
};

std::vector<ModelCase> sharedModels() {
  return {{"resnet10_dynamo.onnx", {}},
          {"mobilenetv2_050_opset17.onnx", {{"N", 2}}},
          {"squeezenet11_opset13.onnx", {}},
          {"bert_mini_opset14.onnx", {{"B", 2}, {"S", 32}}}};
}

std::string modelPath(const char *File) {
  return sharedDir() + "/models/" + File;
}

ImportOptions importOptionsFor(const ModelCase &C) {
  ImportOptions IO;
  for (const auto &[Name, Size] : C.Symbols)
    IO.SymbolSizes[Name] = Size;
  return IO;
}

CompileOptions compileOptionsFor(const ModelCase &C) {
  CompileOptions CO;
  CO.CacheDir = testCacheDir();
  for (const auto &[Name, Size] : C.Symbols)
    CO.SymbolSizes[Name] = Size;
  return CO;
}

/// Reference outputs of a model for the given inputs.
std::vector<Tensor> referenceOutputs(const ModelCase &C,
                                     llvm::ArrayRef<Tensor> Inputs) {
  auto G = importOnnxFile(modelPath(C.File), importOptionsFor(C));
  EXPECT_TRUE(bool(G)) << llvm::toString(G.takeError());
  auto Ref = runReference(**G, Inputs);
  EXPECT_TRUE(bool(Ref)) << llvm::toString(Ref.takeError());
  return std::move(*Ref);
}

} // namespace

/// Compiles G for this GPU and checks Runs runs on In against the
/// reference.
/// With LibraryCalls >= 0, the plan must make that many library calls.
static void expectGpuMatchesReferenceOn(const Graph &G,
                                        const std::vector<Tensor> &In, int Runs,
                                        double Tol, CompileOptions CO = {},
                                        int LibraryCalls = -1) {
  auto Ref = runReference(G, In);
  ASSERT_TRUE(bool(Ref)) << llvm::toString(Ref.takeError());
  auto Copy = parseOrFail(graphToString(G)); // compiling rewrites the graph
  ASSERT_TRUE(Copy);
  CO.CacheDir = testCacheDir();
  auto M = CompiledModel::compileGraph(*Copy, CO);
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  if (LibraryCalls >= 0) {
    EXPECT_EQ((*M)->stats().LibraryCalls, size_t(LibraryCalls));
  }
  auto Ctx = (*M)->createContext();
  ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
  for (int Run = 0; Run < Runs; ++Run) {
    auto Out = (*Ctx)->runHost(In);
    ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
    ASSERT_EQ(Out->size(), Ref->size());
    for (size_t I = 0; I < Out->size(); ++I)
      EXPECT_LE(relativeError((*Out)[I], (*Ref)[I]), Tol)
          << "run " << Run << " output " << I;
  }
}

/// The same on seeded random inputs.
static void expectGpuMatchesReference(const Graph &G, unsigned Seed, int Runs,
                                      double Tol, CompileOptions CO = {}) {
  expectGpuMatchesReferenceOn(G, randomInputs(G, Seed), Runs, Tol, CO);
}

TEST(GpuRuntimeTest, MixedGraphMatchesReference) {
  SKIP_WITHOUT_GPU();
  auto G = parseOrFail(mixedGraphText());
  ASSERT_TRUE(G);
  expectGpuMatchesReference(*G, 1, 3, 1e-4);
}

TEST(GpuRuntimeTest, PartlyBroadcastMatMulsMatchReference) {
  SKIP_WITHOUT_GPU();
  // Batch dims no strided batch can express: the GPU pipeline expands them
  // (passes/MatMulBroadcastLegalization.h).
  auto G = parseOrFail(R"(
graph "g" opset 17 {
  input %a : f32[2,1,3,4]
  input %b : f32[1,5,4,2]
  input %c : f32[5,2,6]
  %y = MatMul(%a, %b) : f32[2,5,3,2]
  %z = MatMul(%y, %c) : f32[2,5,3,6]
  output %z
}
)");
  ASSERT_TRUE(G);
  expectGpuMatchesReference(*G, 5, 1, 1e-5);
}

namespace {

/// Hand-outlined contraction groups (the fusion passes' output form) run
/// as one cuBLASLt/cuDNN call with its epilogue, or a call plus the rest
/// kernel, and match the reference executor (which runs group bodies).
struct GroupCase {
  const char *Name;
  std::string Text;
  std::vector<std::string> Members;
};

std::vector<GroupCase> contractionGroupCases() {
  return {
      {"matmul+bias+residual+relu (rows folded)",
       R"(graph "g" opset 17 {
  input %a : f32[2,4,16]
  input %b : f32[16,8]
  input %bias : f32[8]
  input %res : f32[2,4,8]
  %m = MatMul(%a, %b) : f32[2,4,8] @"mm"
  %x = Add(%m, %bias) : f32[2,4,8] @"add_bias"
  %y = Add(%res, %x) : f32[2,4,8] @"add_res"
  %z = Relu(%y) : f32[2,4,8] @"relu"
  output %z
})",
       {"mm", "add_bias", "add_res", "relu"}},
      {"batched matmul+scale+residual",
       R"(graph "g" opset 17 {
  input %a : f32[3,5,16]
  input %b : f32[3,16,8]
  input %res : f32[3,5,8]
  const %s : f32[] = [0.25]
  %m = MatMul(%a, %b) : f32[3,5,8] @"mm"
  %d = Mul(%m, %s) : f32[3,5,8] @"scale"
  %y = Add(%d, %res) : f32[3,5,8] @"add_res"
  output %y
})",
       {"mm", "scale", "add_res"}},
      {"gemm+bias+tanh gelu",
       R"(graph "g" opset 17 {
  input %a : f32[6,16]
  input %b : f32[12,16]
  input %c : f32[12]
  %m = Gemm(%a, %b, %c) {transB = 1} : f32[6,12] @"gemm"
  %g = Gelu(%m) {approximate = "tanh"} : f32[6,12] @"gelu"
  output %g
})",
       {"gemm", "gelu"}},
      {"conv+bias+residual+relu",
       R"(graph "g" opset 17 {
  input %x : f32[2,3,8,8]
  input %w : f32[4,3,3,3]
  input %bias : f32[1,4,1,1]
  input %z : f32[2,4,8,8]
  %c = Conv(%x, %w, none) {pads = [1, 1, 1, 1]} : f32[2,4,8,8] @"conv"
  %b = Add(%c, %bias) : f32[2,4,8,8] @"add_bias"
  %s = Add(%b, %z) : f32[2,4,8,8] @"add_res"
  %r = Relu(%s) : f32[2,4,8,8] @"relu"
  output %r
})",
       {"conv", "add_bias", "add_res", "relu"}},
      {"conv with own bias",
       R"(graph "g" opset 17 {
  input %x : f32[1,4,6,6]
  input %w : f32[8,2,3,3]
  input %b0 : f32[8]
  %c = Conv(%x, %w, %b0) {group = 2, pads = [1, 1, 1, 1]} : f32[1,8,6,6] @"conv"
  %r = Relu(%c) : f32[1,8,6,6] @"relu"
  output %r
})",
       {"conv", "relu"}},
      {"conv+sigmoid (rest kernel)",
       R"(graph "g" opset 17 {
  input %x : f32[1,3,8,8]
  input %w : f32[4,3,3,3]
  input %b0 : f32[4]
  %c = Conv(%x, %w, %b0) {pads = [1, 1, 1, 1]} : f32[1,4,8,8] @"conv"
  %s = Sigmoid(%c) : f32[1,4,8,8] @"sigmoid"
  output %s
})",
       {"conv", "sigmoid"}},
      // SiLU exported as x * sigmoid(x): the diamond after the library's
      // bias is one rest kernel reading the library result once.
      {"conv+bias+silu diamond",
       R"(graph "g" opset 17 {
  input %x : f32[2,3,8,8]
  input %w : f32[6,3,3,3]
  input %b0 : f32[6]
  %c = Conv(%x, %w, %b0) {pads = [1, 1, 1, 1]} : f32[2,6,8,8] @"conv"
  %s = Sigmoid(%c) : f32[2,6,8,8] @"sigmoid"
  %y = Mul(%c, %s) : f32[2,6,8,8] @"silu"
  output %y
})",
       {"conv", "sigmoid", "silu"}},
      {"matmul+bias+silu diamond",
       R"(graph "g" opset 17 {
  input %a : f32[2,5,16]
  input %b : f32[16,24]
  input %bias : f32[24]
  %m = MatMul(%a, %b) : f32[2,5,24] @"mm"
  %x = Add(%m, %bias) : f32[2,5,24] @"add_bias"
  %s = Sigmoid(%x) : f32[2,5,24] @"sigmoid"
  %y = Mul(%s, %x) : f32[2,5,24] @"silu"
  output %y
})",
       {"mm", "add_bias", "sigmoid", "silu"}},
      // Batched matmuls reading the heads straight out of a packed QKV
      // projection and writing merged heads: pointer-array batches above
      // one sequence, a strided batch of heads at one.
      {"attention scores, pointer arrays", attentionGraphText(3),
       attentionScoresMembers()},
      {"attention context, pointer arrays", attentionGraphText(3),
       attentionContextMembers()},
      {"attention scores, strided heads", attentionGraphText(1),
       attentionScoresMembers()},
      {"attention context, strided heads", attentionGraphText(1),
       attentionContextMembers()},
  };
}

/// The graph of C with its members outlined as contraction group 1.
std::unique_ptr<Graph> groupedGraph(const GroupCase &C) {
  auto G = parseOrFail(C.Text);
  if (G && !outlineByName(*G, C.Members, GroupKind::Contraction, 1))
    return nullptr;
  return G;
}

/// True when code generation emits every kernel G needs (the contraction
/// rest kernels come from the fused-group emitter).
bool hasRestKernels(const Graph &G) {
  for (const auto &N : G.nodes())
    if (isFusedGroup(*N) && !matchLibraryEpilogue(*N).Rest.empty()) {
      auto K = emitGraphKernels(G);
      return K && !K->empty();
    }
  return true;
}

} // namespace

TEST(GpuRuntimeTest, ContractionGroupsMatchReference) {
  SKIP_WITHOUT_GPU();
  for (const GroupCase &C : contractionGroupCases()) {
    SCOPED_TRACE(C.Name);
    auto G = groupedGraph(C);
    ASSERT_TRUE(G);
    if (!hasRestKernels(*G)) {
      ADD_FAILURE() << "code generation emits no contraction rest kernel "
                       "yet (codegen/FusedLoopEmitter): "
                    << C.Name;
      continue;
    }
    CompileOptions CO;
    CO.NoFusion = true; // keep exactly the hand-made group
    expectGpuMatchesReference(*G, 11, 2, 1e-4, CO);
  }
}

/// One Attention node over inputs q, k, v (and mask when MaskType is
/// set), in the 4-D form unless ThreeD.
static std::string attentionOpGraph(const std::string &T, int64_t B, int64_t Hq,
                                    int64_t Hkv, int64_t Sq, int64_t Sk,
                                    int64_t D, bool ThreeD,
                                    const std::string &MaskType, bool Causal) {
  auto Dims = [&](int64_t H, int64_t S, int64_t X) {
    std::string R = std::to_string(B) + ",";
    if (ThreeD)
      return "[" + R + std::to_string(S) + "," + std::to_string(H * X) + "]";
    return "[" + R + std::to_string(H) + "," + std::to_string(S) + "," +
           std::to_string(X) + "]";
  };
  std::string G = "graph \"g\" opset 17 {\n";
  G += "  input %q : " + T + Dims(Hq, Sq, D) + "\n";
  G += "  input %k : " + T + Dims(Hkv, Sk, D) + "\n";
  G += "  input %v : " + T + Dims(Hkv, Sk, D) + "\n";
  std::string Mask;
  if (!MaskType.empty()) {
    // "key<type>": a key-padding mask [B, 1, 1, Sk], else [B, 1, Sq, Sk].
    bool Key = MaskType.rfind("key", 0) == 0;
    G += "  input %mask : " + (Key ? MaskType.substr(3) : MaskType) + "[" +
         std::to_string(B) + ",1," + std::to_string(Key ? 1 : Sq) + "," +
         std::to_string(Sk) + "]\n";
    Mask = ", %mask";
  }
  std::string Attrs = "is_causal = " + std::to_string(int(Causal)) +
                      (ThreeD ? ", kv_num_heads = " + std::to_string(Hkv) +
                                    ", q_num_heads = " + std::to_string(Hq)
                              : "") +
                      ", scale = 0.125";
  G += "  %y = Attention(%q, %k, %v" + Mask + ") {" + Attrs + "} : " + T +
       Dims(Hq, Sq, D) + " @\"attn\"\n  output %y\n}\n";
  return G;
}

/// One problem of the attention tests. Mask: "" (none), "bool", "keybool",
/// a float type, or "key" + a type (a key-padding mask [B, 1, 1, Sk]); "T"
/// stands for the operands' type.
struct AttentionCase {
  int64_t B, Hq, Hkv, Sq, Sk, D;
  bool ThreeD;
  const char *Mask;
  bool Causal;
};

/// The graph of C with operands of type T; Mask gets C's mask resolved.
static std::string attentionCaseGraph(const AttentionCase &C,
                                      const std::string &T, std::string &Mask) {
  Mask = C.Mask;
  if (Mask == "T" || Mask == "keyT")
    Mask = Mask.substr(0, Mask.size() - 1) + T;
  return attentionOpGraph(T, C.B, C.Hq, C.Hkv, C.Sq, C.Sk, C.D, C.ThreeD, Mask,
                          C.Causal);
}

TEST(GpuRuntimeTest, AttentionKernelMatchesReference) {
  // The generated flash-attention kernels (SIMT for f32 and head dims not
  // a multiple of 16, tensor cores for the rest) against the reference:
  // odd lengths (tails of the 32-key tiles and 16-row blocks), head dims 32
  // to 128, grouped heads, 3-D and 4-D, additive and boolean masks (some
  // rows masked entirely), causal; f32 within 1e-4, f16/bf16 operands
  // within 1e-2 / 3e-2 of the reference on the same rounded operands.
  SKIP_WITHOUT_GPU();
  const AttentionCase Cases[] = {
      {1, 2, 2, 1, 1, 32, false, "", false},
      {2, 4, 4, 7, 7, 64, true, "T", false},
      {1, 4, 2, 77, 77, 64, false, "bool", true},
      {2, 3, 1, 129, 129, 128, true, "", true},
      {1, 2, 2, 33, 65, 96, false, "T", false},
      {1, 2, 2, 9, 9, 40, false, "", false}, // f16/bf16 SIMT (D % 16 != 0)
      {1, 12, 12, 384, 384, 64, true, "T", false},
      // Key-padding masks (staged per tile by the tensor-core kernel):
      // warps of two 16-row blocks (enough blocks for that), a bool mask
      // whose last batch sees no key, head dim 48 (an odd count of 16-wide
      // steps) with Sk > Sq.
      {24, 12, 12, 128, 128, 64, true, "keyT", false},
      {8, 16, 16, 200, 200, 64, false, "", true},
      {3, 2, 2, 77, 77, 64, false, "keybool", false},
      {1, 2, 2, 50, 300, 48, false, "keyT", true},
  };
  for (const AttentionCase &C : Cases)
    for (const char *T : {"f32", "f16", "bf16"}) {
      std::string Mask;
      std::string Text = attentionCaseGraph(C, T, Mask);
      SCOPED_TRACE(Text);
      auto G = parseOrFail(Text);
      ASSERT_TRUE(G);
      std::vector<Tensor> In = randomInputs(*G, 5);
      if (Mask == "bool") // row 3 of each batch sees no key
        for (int64_t I = 0; I < In[3].numElements(); ++I)
          In[3].setDouble(I, (I / C.Sk) % C.Sq == 3 ? 0 : (I % 5 != 0));
      if (Mask == "keybool") // the last batch sees no key
        for (int64_t I = 0; I < In[3].numElements(); ++I)
          In[3].setDouble(I, I / C.Sk == C.B - 1 ? 0 : (I % 5 != 0));
      CompileOptions CO;
      CO.FuseAttention = true;
      double Tol = std::string(T) == "f32"   ? 1e-4
                   : std::string(T) == "f16" ? 1e-2
                                             : 3e-2;
      expectGpuMatchesReferenceOn(*G, In, 2, Tol, CO);
    }
}

TEST(GpuRuntimeTest, CudnnAttentionMatchesReference) {
  // cuDNN's fused attention (--attention-kernels cudnn) against the
  // reference: odd lengths, head dims 48 to 128, grouped heads, 3-D (Q, K,
  // V and O strided in [B, S, H*D]) and 4-D, full and key-padding masks
  // (f32 masks on f16 operands too) with a sequence all padding, causal
  // with Sk > Sq. Each plan must run the attention as one library call.
  SKIP_WITHOUT_GPU();
  const AttentionCase Cases[] = {
      {2, 4, 4, 7, 7, 64, true, "T", false},
      {1, 4, 2, 77, 77, 64, false, "", true},
      {2, 3, 1, 129, 129, 128, true, "", true},
      {1, 2, 2, 33, 65, 96, false, "T", false},
      {24, 12, 12, 128, 128, 64, true, "keyT", false},
      {3, 2, 2, 77, 77, 64, false, "keyf32", false},
      {1, 12, 12, 512, 512, 64, true, "keyT", false},
      {1, 2, 2, 50, 300, 48, false, "keyT", true},
  };
  for (const AttentionCase &C : Cases)
    for (const char *T : {"f16", "bf16"}) {
      std::string Mask;
      std::string Text = attentionCaseGraph(C, T, Mask);
      SCOPED_TRACE(Text);
      auto G = parseOrFail(Text);
      ASSERT_TRUE(G);
      std::vector<Tensor> In = randomInputs(*G, 5);
      // Key-padding masks as transformers fill them (the type's lowest
      // value): the last sequence all padding (its rows attend uniformly),
      // or, alone, padded from half way.
      if (Mask.rfind("key", 0) == 0) {
        double Lowest = In[3].dtype() == DType::F16    ? -65504.0
                        : In[3].dtype() == DType::BF16 ? -3.3895314e38
                                                       : -3.4028235e38;
        for (int64_t I = 0; I < In[3].numElements(); ++I)
          if (I / C.Sk == C.B - 1 && (C.B > 1 || I % C.Sk >= C.Sk / 2))
            In[3].setDouble(I, Lowest);
      }
      CompileOptions CO;
      CO.FuseAttention = true;
      CO.Attention = AttentionKernels::Cudnn;
      expectGpuMatchesReferenceOn(*G, In, 2,
                                  std::string(T) == "f16" ? 1e-2 : 3e-2, CO,
                                  /*LibraryCalls=*/1);
    }
}

TEST(GpuRuntimeTest, DependentLaunchMatchesReference) {
  // --dependent-launch: generated kernels launched as programmatic
  // dependents (sm_90+) must compute what they did, across library calls
  // (the mixed graph's matmul and conv) and replays of the captured graph.
  SKIP_WITHOUT_GPU();
  CompileOptions CO;
  CO.DependentLaunch = true;
  auto G = parseOrFail(mixedGraphText());
  ASSERT_TRUE(G);
  expectGpuMatchesReference(*G, 1, 4, 1e-4, CO);
  auto A = parseOrFail(
      attentionOpGraph("f16", 4, 12, 12, 128, 128, 64, true, "keyf16", false));
  ASSERT_TRUE(A);
  CO.FuseAttention = true;
  expectGpuMatchesReference(*A, 3, 4, 1e-2, CO);
}

TEST(GpuRuntimeTest, CudnnAttentionLeavesBoolMasksToTheKernel) {
  // Negative twin: a boolean mask is not cuDNN's; the plan keeps the
  // generated kernel (no library call) and still matches.
  SKIP_WITHOUT_GPU();
  std::string Text =
      attentionOpGraph("f16", 2, 4, 4, 33, 33, 64, false, "bool", false);
  auto G = parseOrFail(Text);
  ASSERT_TRUE(G);
  CompileOptions CO;
  CO.FuseAttention = true;
  CO.Attention = AttentionKernels::Cudnn;
  expectGpuMatchesReferenceOn(*G, randomInputs(*G, 5), 2, 1e-2, CO,
                              /*LibraryCalls=*/0);
}

TEST(GpuRuntimeTest, GeneratedGemmMatchesReference) {
  // The generated tensor-core GEMM (codegen/GemmEmitter.cpp) with every
  // epilogue kind against the reference: BERT-base shapes, row
  // normalizations over one block and over clusters of 2 to 8 blocks
  // (N = 1000: a partial last block), odd M/N/K (element loads when K or N
  // is not a multiple of 8), K = 1, N = 1, K not a multiple of 64, batched
  // A, Gemm with transB, alpha and a C bias (with a LayerNorm too). Each
  // case runs twice: planned for this GPU (on sm_90 the wgmma loop where
  // rows are 16-byte aligned) and planned for sm_80 (the mma.sync loop;
  // the plan's kernels are recompiled for this GPU when loaded), where
  // sm_80 has a generated kernel for the group (codegen::wgmmaPreferred
  // picks the loop on sm_90 per shape; GemmVariantsMatchReference
  // forces wgmma for every case). Each plan must run the
  // group as the generated kernel (one launch), not fall back to the
  // library. Row normalizations whose TMA tiles fit one wave meet through
  // global memory (a cooperative launch keeping counters in the context's
  // scratch between the two runs, the second a graph replay).
  SKIP_WITHOUT_GPU();
  unsigned Cooperative = 0;
  struct Case {
    int64_t Lead, M, N, K;
    const char *Epi;
    bool TransB;
  };
  const Case Cases[] = {
      {1, 128, 768, 768, "ln", false},    {0, 512, 768, 3072, "ln", false},
      {0, 256, 2304, 768, "bias", false}, {0, 256, 3072, 768, "gelu", false},
      {0, 77, 100, 40, "bias", false},    {0, 33, 1000, 64, "ln", false},
      {2, 7, 256, 64, "rms", false},      {0, 5, 1, 16, "bias", false},
      {0, 19, 24, 1, "bias", false},      {0, 64, 96, 72, "gelu", true},
      {0, 130, 128, 200, "ln", false},    {0, 1, 64, 8, "bias", false},
      {0, 200, 320, 136, "gelu", false},  {0, 100, 512, 136, "ln", true},
      {0, 600, 384, 96, "bias", false},   {0, 300, 136, 64, "rms", true},
      {0, 128, 768, 768, "heads", false}, {0, 100, 64, 40, "heads", false},
  };
  for (const Case &C : Cases)
    for (const char *T : {"f16", "bf16"})
      for (const char *Arch : {"", "sm_80"}) {
        std::string Text =
            test::gemmGroupGraph(T, C.Lead, C.M, C.N, C.K, C.Epi, C.TransB);
        SCOPED_TRACE(std::string(Arch) + "\n" + Text);
        auto G = parseOrFail(Text);
        ASSERT_TRUE(G);
        CompileOptions CO;
        CO.Gemm = GemmKernels::Generated;
        CO.Prec = std::string(T) == "f16" ? Precision::F16 : Precision::BF16;
        CO.ComputeIo = true;
        CO.Arch = Arch;
        {
          auto Copy = parseOrFail(Text);
          CO.CacheDir = testCacheDir();
          auto M = CompiledModel::compileGraph(*Copy, CO);
          ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
          size_t Gemms = 0;
          for (const PlanKernel &K : (*M)->plan().Kernels) {
            Gemms += llvm::StringRef(K.Name).endswith("_gemm");
            Cooperative += K.Cooperative;
          }
          // sm_80 has no clusters: rows over 128 columns stay with the
          // library there.
          bool Sm80Refuses =
              *Arch && C.N > 128 &&
              (std::string(C.Epi) == "ln" || std::string(C.Epi) == "rms");
          if (Sm80Refuses)
            continue;
          EXPECT_EQ(Gemms, 1u) << "the group did not run as a generated GEMM";
        }
        double Tol = std::string(T) == "f16" ? 1e-2 : 3e-2;
        expectGpuMatchesReference(*G, 21, 2, Tol, CO);
      }
  EXPECT_GT(Cooperative, 0u);
}

TEST(GpuRuntimeTest, GemmVariantsMatchReference) {
  // Forced loops of the generated GEMM, each launched on its own on the
  // group's operands (the output poisoned with NaN first) and checked
  // against the reference executor, f16 and bf16: the wgmma loop
  // (codegen/WgmmaGemm.cpp) with chosen and explicit tiles, warp
  // specialized, fed by TMA (tensor maps encoded here), K split over a
  // cluster, and the mma.sync loop with K split (tests/GemmGroupGraph.h
  // lists the cases). The weights repeat every 24 rows of K, so reading
  // the wrong 16 rows of B fails.
  SKIP_WITHOUT_GPU();
  llvm::Expected<std::string> DevArch = currentDeviceArch();
  ASSERT_TRUE(bool(DevArch)) << llvm::toString(DevArch.takeError());
  if (*DevArch != "sm_90")
    GTEST_SKIP() << "wgmma needs sm_90; this GPU is " << *DevArch;
  llvm::Expected<int> Dev = requireDevice();
  ASSERT_TRUE(bool(Dev)) << llvm::toString(Dev.takeError());
  llvm::Expected<const CudaLibraries *> Libs = loadCudaLibraries();
  ASSERT_TRUE(bool(Libs)) << llvm::toString(Libs.takeError());
  for (const test::GemmVariantCase &C : test::gemmVariantCases())
    for (const char *T : {"f16", "bf16"}) {
      std::string Text =
          test::gemmGroupGraph(T, C.Lead, C.M, C.N, C.K, C.Epi, C.TransB);
      SCOPED_TRACE(C.name() + "\n" + Text);
      auto G = parseOrFail(Text);
      ASSERT_TRUE(G);
      std::vector<Tensor> In = randomInputs(*G, 21);
      auto Ref = runReference(*G, In);
      ASSERT_TRUE(bool(Ref)) << llvm::toString(Ref.takeError());
      // The group as a plan would have it.
      auto Copy = parseOrFail(Text);
      ASSERT_TRUE(Copy);
      PipelineOptions PO;
      PO.TargetGpu = true;
      PO.Prec = std::string(T) == "f16" ? Precision::F16 : Precision::BF16;
      ASSERT_FALSE(bool(runPipeline(*Copy, PO)));
      const Node *Group = nullptr;
      for (const auto &N : Copy->nodes())
        if (isFusedGroup(*N) && groupInfo(*N).Kind == GroupKind::Contraction)
          Group = N.get();
      ASSERT_TRUE(Group) << graphToString(*Copy);
      CodegenOptions O;
      O.SmVersion = 90;
      KernelNamer Names(*Copy);
      auto K = codegen::emitGeneratedGemmVariant(*Group, O, Names, &C.V);
      ASSERT_TRUE(bool(K)) << llvm::toString(K.takeError());
      NvrtcOptions NO;
      NO.Arch = "sm_90";
      NO.CacheDir = testCacheDir();
      NO.Progress = [](unsigned, unsigned) {};
      auto Cubins = compileKernels({*K}, NO);
      ASSERT_TRUE(bool(Cubins)) << llvm::toString(Cubins.takeError());

      cudaLibrary_t Lib;
      ASSERT_EQ(cudaLibraryLoadData(&Lib, (*Cubins)[0].data(), nullptr, nullptr,
                                    0, nullptr, nullptr, 0),
                cudaSuccess);
      cudaKernel_t Kern;
      ASSERT_EQ(cudaLibraryGetKernel(&Kern, Lib, K->Name.c_str()), cudaSuccess);
      if (K->DynamicSharedBytes > 48 * 1024) {
        ASSERT_EQ(cudaKernelSetAttributeForDevice(
                      Kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                      int(K->DynamicSharedBytes), *Dev),
                  cudaSuccess);
      }
      // Buffers: results poisoned with NaN (all ones in f16 and bf16),
      // operands from the inputs by name or the folded constants.
      std::vector<void *> Ptrs;
      auto Bytes = [](const Value *X) {
        return size_t(X->type().numElements()) * dtypeSize(X->dtype());
      };
      for (const Value *X : K->Outputs) {
        void *P = nullptr;
        ASSERT_EQ(cudaMalloc(&P, Bytes(X)), cudaSuccess);
        ASSERT_EQ(cudaMemset(P, 0xFF, Bytes(X)), cudaSuccess);
        Ptrs.push_back(P);
      }
      for (const Value *X : K->Inputs) {
        const Tensor *Host = X->constant();
        for (size_t I = 0; I < G->inputs().size() && !Host; ++I)
          if (G->inputs()[I]->name() == X->name())
            Host = &In[I];
        ASSERT_TRUE(Host) << "operand " << X->name()
                          << " is neither an input nor a constant";
        ASSERT_EQ(Host->byteSize(), Bytes(X)) << X->name();
        void *P = nullptr;
        ASSERT_EQ(cudaMalloc(&P, Bytes(X)), cudaSuccess);
        ASSERT_EQ(
            cudaMemcpy(P, Host->rawData(), Bytes(X), cudaMemcpyHostToDevice),
            cudaSuccess);
        Ptrs.push_back(P);
      }
      std::vector<void *> Args;
      for (void *&P : Ptrs)
        Args.push_back(&P);
      // Row statistics through global memory: zeroed scratch after the
      // pointers, a cooperative launch (twice: the counters must be back
      // at zero for the second).
      void *Scratch = nullptr;
      if (K->ScratchBytes) {
        ASSERT_EQ(cudaMalloc(&Scratch, K->ScratchBytes), cudaSuccess);
        ASSERT_EQ(cudaMemset(Scratch, 0, K->ScratchBytes), cudaSuccess);
        Args.push_back(&Scratch);
      }
      EXPECT_EQ(K->Cooperative, C.V.GridNorm);
      // TMA kernels take their operands' tensor maps after the pointers.
      std::vector<CUtensorMap> Maps(K->TensorMaps.size());
      for (size_t I = 0; I < Maps.size(); ++I) {
        const KernelTensorMap &TM = K->TensorMaps[I];
        llvm::Error E =
            encodeTensorMap(TM, Ptrs[K->Outputs.size() + TM.Input], Maps[I],
                            "tensor map " + llvm::Twine(I));
        ASSERT_FALSE(bool(E)) << llvm::toString(std::move(E));
        Args.push_back(&Maps[I]);
      }
      cudaLaunchAttribute Coop;
      Coop.id = cudaLaunchAttributeCooperative;
      Coop.val.cooperative = 1;
      cudaLaunchConfig_t Cfg = {};
      Cfg.gridDim = dim3(K->Grid[0], K->Grid[1], K->Grid[2]);
      Cfg.blockDim = dim3(K->Block[0], K->Block[1], K->Block[2]);
      Cfg.dynamicSmemBytes = K->DynamicSharedBytes;
      Cfg.attrs = &Coop;
      Cfg.numAttrs = K->Cooperative ? 1 : 0;
      for (int Launch = 0; Launch < (K->Cooperative ? 2 : 1); ++Launch)
        ASSERT_EQ(cudaLaunchKernelExC(
                      &Cfg, reinterpret_cast<const void *>(Kern), Args.data()),
                  cudaSuccess);
      // A fault is sticky: stop at the first.
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess) << K->Summary;
      if (Scratch) {
        // Two counters a row of tiles (rows along x, or along y when a
        // row's blocks launch together).
        std::vector<unsigned> Counters(2 * std::max(K->Grid[0], K->Grid[1]));
        ASSERT_EQ(cudaMemcpy(Counters.data(), Scratch, Counters.size() * 4,
                             cudaMemcpyDeviceToHost),
                  cudaSuccess);
        for (size_t I = 0; I < Counters.size(); ++I)
          EXPECT_EQ(Counters[I], 0u) << "counter " << I << " not reset";
        cudaFree(Scratch);
      }
      double Tol = std::string(T) == "f16" ? 1e-2 : 3e-2;
      for (size_t J = 0; J < K->Outputs.size(); ++J) {
        const Value *X = K->Outputs[J];
        Tensor Got(X->dtype(), X->type().staticDims());
        ASSERT_EQ(cudaMemcpy(Got.mutableRawData(), Ptrs[J], Bytes(X),
                             cudaMemcpyDeviceToHost),
                  cudaSuccess);
        bool Found = false;
        for (size_t I = 0; I < G->outputs().size(); ++I)
          if (G->outputs()[I]->name() == X->name()) {
            Found = true;
            EXPECT_LE(relativeError(Got, (*Ref)[I]), Tol)
                << X->name() << ", " << K->Summary;
          }
        EXPECT_TRUE(Found) << "kernel result " << X->name()
                           << " is no graph output";
      }
      for (void *P : Ptrs)
        cudaFree(P);
      cudaLibraryUnload(Lib);
    }
}

TEST(GpuRuntimeTest, TunedGemmChoiceIsRecordedAndReloads) {
  // compile with Tune times both ways of each matmul group on this GPU:
  // the fusion report (RunsAs) carries both times, a second compile reuses
  // them from the cache, the plan file keeps the choice, and the reloaded
  // plan runs it without tuning again.
  SKIP_WITHOUT_GPU();
  std::string Text = test::gemmGroupGraph("f16", 1, 128, 768, 768, "ln", false);
  auto G = parseOrFail(Text);
  ASSERT_TRUE(G);
  CompileOptions CO;
  CO.Prec = Precision::F16;
  CO.ComputeIo = true;
  CO.Tune = true;
  CO.CacheDir = testCacheDir();
  auto M = CompiledModel::compileGraph(*G, CO);
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  bool Noted = false;
  for (const PlanGroup &Grp : (*M)->plan().Groups)
    Noted |= llvm::StringRef(Grp.RunsAs).contains("tuned: generated GEMM");
  EXPECT_TRUE(Noted);
  // A second compile of the same graph reuses the cached timings.
  {
    auto Again = parseOrFail(Text);
    ASSERT_TRUE(Again);
    auto M2 = CompiledModel::compileGraph(*Again, CO);
    ASSERT_TRUE(bool(M2)) << llvm::toString(M2.takeError());
    bool Cached = false;
    for (const PlanGroup &Grp : (*M2)->plan().Groups)
      Cached |= llvm::StringRef(Grp.RunsAs).contains("(cached)");
    EXPECT_TRUE(Cached);
    EXPECT_EQ((*M2)->plan().Steps.size(), (*M)->plan().Steps.size());
  }
  std::string Path = testCacheDir() + "/tuned_gemm.plan";
  ASSERT_FALSE(bool((*M)->savePlan(Path)));
  auto L = CompiledModel::loadPlan(Path);
  ASSERT_TRUE(bool(L)) << llvm::toString(L.takeError());
  EXPECT_EQ((*L)->plan().Steps.size(), (*M)->plan().Steps.size());
  auto Orig = parseOrFail(Text);
  std::vector<Tensor> In = randomInputs(*Orig, 3);
  auto Ref = runReference(*Orig, In);
  ASSERT_TRUE(bool(Ref));
  auto Ctx = (*L)->createContext();
  ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
  auto Out = (*Ctx)->runHost(In);
  ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
  EXPECT_LE(relativeError((*Out)[0], (*Ref)[0]), 1e-2);
}

TEST(GpuRuntimeTest, SplitNormChainMatchesReference) {
  // Tuning's chain, forced: a matmul group with a LayerNorm merged in runs
  // split (the generated GEMM stores its product plus bias, a row kernel
  // adds the residual and normalizes), every generated kernel a dependent
  // launch (the GEMM fetching its weights before it waits); or fused, the
  // one kernel exchanging row statistics through global memory both a
  // cooperative and a dependent launch, after the input cast's kernel.
  // 128 rows (64 x 64 tiles) and 4096 (128 x 192), f16 and bf16, against
  // the reference, twice (the second run a graph replay, with the
  // counters the first left).
  SKIP_WITHOUT_GPU();
  llvm::Expected<std::string> Arch = currentDeviceArch();
  ASSERT_TRUE(bool(Arch)) << llvm::toString(Arch.takeError());
  if (smVersionOf(*Arch) < 90)
    GTEST_SKIP() << "dependent launches need sm_90 (this GPU: " << *Arch << ")";
  for (bool Fused : {false, true})
    for (int64_t M : {128, 4096})
      for (const char *T : {"f16", "bf16"}) {
        std::string Text =
            test::gemmGroupGraph(T, 0, M, 768, 768, "ln", /*TransB=*/false);
        SCOPED_TRACE(std::string(T) + " M=" + std::to_string(M) +
                     (Fused ? " fused" : " split"));
        auto G = parseOrFail(Text);
        auto Orig = parseOrFail(Text);
        ASSERT_TRUE(G && Orig);
        PipelineOptions PO;
        PO.TargetGpu = true;
        PO.Prec = std::string(T) == "f16" ? Precision::F16 : Precision::BF16;
        ASSERT_FALSE(bool(runPipeline(*G, PO)));
        PlanOptions Opts;
        Opts.Arch = *Arch;
        Opts.Prec = PO.Prec;
        Opts.CacheDir = testCacheDir();
        Opts.DependentLaunch = true;
        for (const auto &N : G->nodes())
          if (isFusedGroup(*N) && normSplitValue(*N)) {
            Opts.GemmChoices[groupInfo(*N).Id] = true;
            if (!Fused)
              Opts.SplitNormGroups.insert(groupInfo(*N).Id);
          }
        ASSERT_EQ(Opts.GemmChoices.size(), 1u) << graphToString(*G);
        auto P = buildPlan(*G, Opts);
        ASSERT_TRUE(bool(P)) << llvm::toString(P.takeError());
        ASSERT_FALSE(bool(compilePlanKernels(*P, Opts)));
        bool Split = false;
        for (const PlanGroup &Grp : P->Groups)
          Split |= llvm::StringRef(Grp.RunsAs)
                       .contains("generated tensor-core "
                                 "GEMM") &&
                   llvm::StringRef(Grp.RunsAs).contains("+ generated kernel");
        EXPECT_EQ(Split, !Fused) << "the group ran split or fused wrongly";
        size_t Prefetching = 0, CooperativeDependent = 0, Kernels = 0;
        for (const PlanKernel &K : P->Kernels) {
          Prefetching += llvm::StringRef(K.Summary).contains(
              "B fetched before the previous grid ends");
          CooperativeDependent += K.Cooperative && K.DependentLaunch;
          ++Kernels;
        }
        EXPECT_EQ(Prefetching, 1u);
        // Both tile shapes fit one wave: the fused form meets through
        // global memory, behind the input cast (the output's is in its
        // epilogue).
        EXPECT_EQ(CooperativeDependent, Fused ? 1u : 0u);
        EXPECT_GE(Kernels, 2u);
        auto Model = CompiledModel::fromPlan(std::move(*P));
        ASSERT_TRUE(bool(Model)) << llvm::toString(Model.takeError());
        std::vector<Tensor> In = randomInputs(*Orig, 9);
        auto Ref = runReference(*Orig, In);
        ASSERT_TRUE(bool(Ref)) << llvm::toString(Ref.takeError());
        auto Ctx = (*Model)->createContext();
        ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
        for (int Run = 0; Run < 2; ++Run) {
          auto Out = (*Ctx)->runHost(In);
          ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
          EXPECT_LE(relativeError((*Out)[0], (*Ref)[0]),
                    std::string(T) == "f16" ? 1e-2 : 3e-2);
        }
      }
}

TEST(GpuRuntimeTest, FusedAttentionModelsMatchTheReference) {
  // attention-recognition on the shared BERT export and the test block:
  // the plan runs one attention kernel per layer and agrees with the
  // reference executor on the unfused graph (fp32 1e-4, fp16 1e-2).
  SKIP_WITHOUT_GPU();
  {
    auto G = parseOrFail(attentionGraphText(3));
    ASSERT_TRUE(G);
    CompileOptions CO;
    CO.FuseAttention = true;
    expectGpuMatchesReference(*G, 3, 2, 1e-4, CO);
  }
  ModelCase C = sharedModels()[3]; // bert_mini
  if (!llvm::sys::fs::exists(modelPath(C.File)))
    GTEST_SKIP() << "no " << modelPath(C.File);
  auto G = importOnnxFile(modelPath(C.File), importOptionsFor(C));
  ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
  std::vector<Tensor> In = randomInputs(**G, 7);
  std::vector<Tensor> Ref = referenceOutputs(C, In);
  for (auto [P, Tol] :
       {std::pair{Precision::F32, 1e-4}, std::pair{Precision::F16, 1e-2}}) {
    SCOPED_TRACE(precisionName(P).str());
    CompileOptions CO = compileOptionsFor(C);
    CO.Prec = P;
    CO.FuseAttention = true;
    auto M = CompiledModel::compileFile(modelPath(C.File), CO);
    ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
    auto Ctx = (*M)->createContext();
    ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
    auto Out = (*Ctx)->runHost(In);
    ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
    for (size_t I = 0; I < Out->size(); ++I)
      EXPECT_LE(relativeError((*Out)[I], Ref[I]), Tol) << "output " << I;
    std::printf("[ attention ] %s %s: %zu steps\n", C.File,
                precisionName(P).str().c_str(), (*M)->stats().Steps);
  }
}

TEST(GpuRuntimeTest, StepByStepEqualsRun) {
  SKIP_WITHOUT_GPU();
  auto G = groupedGraph(contractionGroupCases()[0]);
  ASSERT_TRUE(G);
  std::vector<Tensor> In = randomInputs(*G, 3);
  CompileOptions CO;
  CO.CacheDir = testCacheDir();
  CO.NoFusion = true;
  auto M = CompiledModel::compileGraph(*G, CO);
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  auto Ctx = (*M)->createContext();
  ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
  auto Out = (*Ctx)->runHost(In);
  ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
  const Plan &P = (*M)->plan();
  ASSERT_FALSE(P.Groups.empty());
  // Zero the output so the step-by-step run must write it again.
  std::vector<char> Zeros((*Out)[0].byteSize(), 0);
  ASSERT_EQ(cudaMemcpy((*Ctx)->outputBuffer(0), Zeros.data(), Zeros.size(),
                       cudaMemcpyHostToDevice),
            cudaSuccess);
  std::vector<std::pair<size_t, bool>> Calls;
  std::vector<Tensor> GroupResults;
  auto E = (*Ctx)->runStepByStep(
      nullptr, [&](size_t Step, bool After) -> llvm::Error {
        Calls.push_back({Step, After});
        for (const PlanGroup &Gr : P.Groups)
          if (After && Gr.Steps.back() == Step)
            for (const PlanValue &V : Gr.Results) {
              Tensor T(V.Elem, V.Dims);
              if (auto Err = (*Ctx)->readBuffer(V.Ref, T.mutableRawData(),
                                                T.byteSize()))
                return Err;
              GroupResults.push_back(std::move(T));
            }
        return llvm::Error::success();
      });
  ASSERT_FALSE(bool(E)) << llvm::toString(std::move(E));
  ASSERT_EQ(Calls.size(), 2 * P.Steps.size());
  for (size_t I = 0; I < P.Steps.size(); ++I) {
    EXPECT_EQ(Calls[2 * I], std::make_pair(I, false));
    EXPECT_EQ(Calls[2 * I + 1], std::make_pair(I, true));
  }
  Tensor Again((*Out)[0].dtype(), (*Out)[0].dims());
  ASSERT_FALSE(bool((*Ctx)->copyOutputToHost(0, Again.mutableRawData(),
                                             Again.byteSize(), nullptr)));
  EXPECT_EQ(relativeError(Again, (*Out)[0]), 0.0);
  ASSERT_FALSE(GroupResults.empty());
  EXPECT_EQ(relativeError(GroupResults.back(), (*Out)[0]), 0.0);
  // readBuffer refuses a range past its buffer.
  BufferRef Past = P.Groups[0].Results[0].Ref;
  Past.Offset += 1 << 20;
  float X;
  llvm::Error Bad = (*Ctx)->readBuffer(Past, &X, sizeof(X));
  EXPECT_TRUE(bool(Bad)) << "a read past the end was accepted";
  llvm::consumeError(std::move(Bad));
}

TEST(GpuRuntimeTest, SharedModelsMatchReference) {
  SKIP_WITHOUT_GPU();
  unsigned Ran = 0;
  for (const ModelCase &C : sharedModels()) {
    if (!llvm::sys::fs::exists(modelPath(C.File)))
      continue;
    SCOPED_TRACE(C.File);
    auto G = importOnnxFile(modelPath(C.File), importOptionsFor(C));
    ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
    std::vector<Tensor> In = randomInputs(**G, 7);
    std::vector<Tensor> Ref = referenceOutputs(C, In);
    auto M =
        CompiledModel::compileFile(modelPath(C.File), compileOptionsFor(C));
    ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
    auto Ctx = (*M)->createContext();
    ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
    for (int Run = 0; Run < 3; ++Run) { // eager+capture, then replays
      auto Out = (*Ctx)->runHost(In);
      ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
      ASSERT_EQ(Out->size(), Ref.size());
      for (size_t I = 0; I < Out->size(); ++I) {
        double Err = relativeError((*Out)[I], Ref[I]);
        EXPECT_LE(Err, 1e-4) << "output " << I << " run " << Run;
        if (Run == 2)
          std::printf("[ model    ] %s output %zu: rel err %.3g, arena %llu "
                      "/ naive %llu bytes, %zu steps\n",
                      C.File, I, Err,
                      (unsigned long long)(*M)->stats().ArenaBytes,
                      (unsigned long long)(*M)->stats().NaiveArenaBytes,
                      (*M)->stats().Steps);
      }
    }
    EXPECT_EQ((*Ctx)->cudaGraphFailure(), "");
    EXPECT_EQ((*Ctx)->graphLaunches(), 2u);
    ++Ran;
  }
  if (Ran == 0)
    GTEST_SKIP() << "no shared models under " << sharedDir();
}

TEST(GpuRuntimeTest, ReducedPrecisionModelsMatchTheFp32Reference) {
  // fp16 and bf16 plans (model inputs and outputs kept fp32) against the
  // reference executor on the original fp32 graph, within the precision
  // bounds of the precision issue: 1e-2 (fp16), 3e-2 (bf16), 1e-3 (tf32).
  SKIP_WITHOUT_GPU();
  struct Bound {
    Precision P;
    double Tol;
  };
  unsigned Ran = 0;
  for (const ModelCase &C : sharedModels()) {
    if (!llvm::sys::fs::exists(modelPath(C.File)))
      continue;
    auto G = importOnnxFile(modelPath(C.File), importOptionsFor(C));
    ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
    std::vector<Tensor> In = randomInputs(**G, 7);
    std::vector<Tensor> Ref = referenceOutputs(C, In);
    for (Bound B : {Bound{Precision::F16, 1e-2}, Bound{Precision::BF16, 3e-2},
                    Bound{Precision::TF32, 1e-3}}) {
      SCOPED_TRACE(std::string(C.File) + " " + precisionName(B.P).str());
      CompileOptions CO = compileOptionsFor(C);
      CO.Prec = B.P;
      auto M = CompiledModel::compileFile(modelPath(C.File), CO);
      ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
      auto Ctx = (*M)->createContext();
      ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
      for (int Run = 0; Run < 2; ++Run) {
        auto Out = (*Ctx)->runHost(In);
        ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
        ASSERT_EQ(Out->size(), Ref.size());
        for (size_t I = 0; I < Out->size(); ++I) {
          double Err = relativeError((*Out)[I], Ref[I]);
          EXPECT_LE(Err, B.Tol) << "output " << I << " run " << Run;
          if (Run == 1)
            std::printf("[ %-8s ] %s output %zu: rel err %.3g, %zu steps\n",
                        precisionName(B.P).str().c_str(), C.File, I, Err,
                        (*M)->stats().Steps);
        }
      }
    }
    ++Ran;
  }
  if (Ran == 0)
    GTEST_SKIP() << "no shared models under " << sharedDir();
}

TEST(GpuRuntimeTest, DeferredNormsMatchTheFp32Reference) {
  // --defer-norms on BERT-mini (B=1, S=128 and B=2, S=64): every LayerNorm
  // but the embeddings' and the last one is computed as statistics by the
  // generated GEMM that reads its input (dependent launches), or by its own
  // kernel before cuBLASLt; both against the fp32 reference.
  SKIP_WITHOUT_GPU();
  ModelCase C = sharedModels()[3]; // bert_mini
  if (!llvm::sys::fs::exists(modelPath(C.File)))
    GTEST_SKIP() << "no shared models under " << sharedDir();
  for (int64_t S : {128, 64}) {
    C.Symbols = {{"B", S == 128 ? 1 : 2}, {"S", S}};
    auto G = importOnnxFile(modelPath(C.File), importOptionsFor(C));
    ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
    std::vector<Tensor> In = randomInputs(**G, 11);
    std::vector<Tensor> Ref = referenceOutputs(C, In);
    for (Precision P : {Precision::F16, Precision::BF16})
      for (GemmKernels Gemm : {GemmKernels::Generated, GemmKernels::Library}) {
        SCOPED_TRACE(
            precisionName(P).str() + " S=" + std::to_string(S) +
            (Gemm == GemmKernels::Generated ? " generated" : " library"));
        CompileOptions CO = compileOptionsFor(C);
        CO.Prec = P;
        CO.DeferNorms = true;
        CO.Gemm = Gemm;
        CO.DependentLaunch = Gemm == GemmKernels::Generated;
        auto M = CompiledModel::compileFile(modelPath(C.File), CO);
        ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
        // Generated: 2 layers x 5 kernels + embeddings + mask; library: the
        // three deferred statistics as kernels of their own, and the
        // corrections after cuBLASLt.
        if (Gemm == GemmKernels::Generated) {
          EXPECT_EQ((*M)->stats().Steps, 12u);
        }
        auto Ctx = (*M)->createContext();
        ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
        for (int Run = 0; Run < 2; ++Run) {
          auto Out = (*Ctx)->runHost(In);
          ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
          ASSERT_EQ(Out->size(), Ref.size());
          for (size_t I = 0; I < Out->size(); ++I) {
            double Err = relativeError((*Out)[I], Ref[I]);
            EXPECT_LE(Err, P == Precision::F16 ? 1e-2 : 3e-2)
                << "output " << I << " run " << Run;
            if (Run == 1)
              std::printf("[ deferred ] %s S=%lld output %zu: rel err %.3g, "
                          "%zu steps\n",
                          precisionName(P).str().c_str(), (long long)S, I, Err,
                          (*M)->stats().Steps);
          }
        }
      }
  }
}

TEST(GpuRuntimeTest, PoisonedArenaRunsStillMatchTheReference) {
  // Every arena byte set to 0xFF before each run (NaN in every float
  // type): a step reading memory no earlier step of the run wrote would
  // make the outputs NaN or wrong. Fused fp32, fp16 and fp16 with fused
  // attention plans of the shared models, graph and eager runs. Its twin:
  // the padding after an arena buffer, which no step writes, reads 0xFF
  // after a poisoned run, so the poison did happen.
  SKIP_WITHOUT_GPU();
  struct Variant {
    Precision P;
    bool Attention;
    double Tol;
  };
  unsigned Ran = 0;
  for (const ModelCase &C : sharedModels()) {
    if (!llvm::sys::fs::exists(modelPath(C.File)))
      continue;
    auto G = importOnnxFile(modelPath(C.File), importOptionsFor(C));
    ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
    std::vector<Tensor> In = randomInputs(**G, 11);
    std::vector<Tensor> Ref = referenceOutputs(C, In);
    for (Variant V : {Variant{Precision::F32, false, 1e-4},
                      Variant{Precision::F16, false, 1e-2},
                      Variant{Precision::F16, true, 1e-2}}) {
      SCOPED_TRACE(std::string(C.File) + " " + precisionName(V.P).str() +
                   (V.Attention ? " attention" : ""));
      CompileOptions CO = compileOptionsFor(C);
      CO.Prec = V.P;
      CO.FuseAttention = V.Attention;
      auto M = CompiledModel::compileFile(modelPath(C.File), CO);
      ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
      auto Ctx = (*M)->createContext();
      ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
      (*Ctx)->setPoisonArena(true);
      for (int Run = 0; Run < 3; ++Run) { // eager+capture, replay, eager
        (*Ctx)->setUseCudaGraph(Run < 2);
        auto Out = (*Ctx)->runHost(In);
        ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
        ASSERT_EQ(Out->size(), Ref.size());
        for (size_t I = 0; I < Out->size(); ++I)
          EXPECT_LE(relativeError((*Out)[I], Ref[I]), V.Tol)
              << "output " << I << " run " << Run;
      }
      const Plan &P = (*M)->plan();
      for (const PlanBuffer &B : P.Buffers) {
        uint64_t End = (B.Offset + B.Bytes + 255) / 256 * 256;
        uint64_t At = B.Offset + B.Bytes;
        if (B.Bytes % 256 == 0 || End > P.ArenaBytes ||
            llvm::any_of(P.Buffers, [&](const PlanBuffer &O) {
              return O.Offset <= At && At < O.Offset + O.Bytes;
            }))
          continue;
        unsigned char Pad = 0;
        BufferRef R;
        R.Space = BufferSpace::Arena;
        R.Offset = At;
        ASSERT_FALSE(bool((*Ctx)->readBuffer(R, &Pad, 1)));
        EXPECT_EQ(Pad, 0xFF) << "padding after " << B.Name;
        break;
      }
    }
    ++Ran;
  }
  if (Ran == 0)
    GTEST_SKIP() << "no shared models under " << sharedDir();
}

TEST(GpuRuntimeTest, NhwcConvolutionsMatchTheNchwReference) {
  // fp32 with every 2-D convolution forced to NHWC (cuDNN NHWC tensors,
  // KRSC filters, NHWC pools, the boundary transposes), fused and unfused,
  // against the reference on the original NCHW graph.
  SKIP_WITHOUT_GPU();
  unsigned Ran = 0;
  for (const ModelCase &C : sharedModels()) {
    if (!llvm::sys::fs::exists(modelPath(C.File)) ||
        llvm::StringRef(C.File).startswith("bert"))
      continue;
    auto G = importOnnxFile(modelPath(C.File), importOptionsFor(C));
    ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
    std::vector<Tensor> In = randomInputs(**G, 11);
    std::vector<Tensor> Ref = referenceOutputs(C, In);
    for (bool NoFusion : {false, true}) {
      SCOPED_TRACE(std::string(C.File) + (NoFusion ? " unfused" : " fused"));
      CompileOptions CO = compileOptionsFor(C);
      CO.Layout = ConvLayout::Nhwc;
      CO.NoFusion = NoFusion;
      auto M = CompiledModel::compileFile(modelPath(C.File), CO);
      ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
      auto Ctx = (*M)->createContext();
      ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
      auto Out = (*Ctx)->runHost(In);
      ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
      ASSERT_EQ(Out->size(), Ref.size());
      for (size_t I = 0; I < Out->size(); ++I)
        EXPECT_LE(relativeError((*Out)[I], Ref[I]), 1e-4) << "output " << I;
    }
    ++Ran;
  }
  if (Ran == 0)
    GTEST_SKIP() << "no shared models under " << sharedDir();
}

namespace {

/// An fp32 NCHW graph: x [2,8,10,10] through one conv (CxK, kernel Kk,
/// groups Gr) and then Chain, whose text reads %c (the conv + bias) and
/// may read %res (an input of the conv's result shape); writes %y.
std::string convChainGraph(const std::string &Chain, int K, int Kk, int Gr,
                           unsigned Seed) {
  std::mt19937 Rng(Seed);
  auto Values = [&](int N, double Scale) {
    std::string S;
    for (int I = 0; I < N; ++I)
      S += (I ? ", " : "") +
           std::to_string(
               std::uniform_real_distribution<double>(-Scale, Scale)(Rng));
    return S;
  };
  int C = 8, Pad = Kk / 2;
  std::string Dims = "f32[2," + std::to_string(K) + ",10,10]";
  std::string T = "graph \"g\" opset 17 {\n  input %x : f32[2,8,10,10]\n";
  if (Chain.find("%res") != std::string::npos)
    T += "  input %res : " + Dims + "\n";
  T += "  const %w : f32[" + std::to_string(K) + "," + std::to_string(C / Gr) +
       "," + std::to_string(Kk) + "," + std::to_string(Kk) + "] = [" +
       Values(K * (C / Gr) * Kk * Kk, 0.3) + "]\n";
  T += "  const %b : f32[" + std::to_string(K) + "] = [" + Values(K, 0.5) +
       "]\n";
  T += "  const %lo : f32[] = [0.0]\n  const %hi : f32[] = [6.0]\n";
  T += "  %c = Conv(%x, %w, %b) {group = " + std::to_string(Gr) +
       ", kernel_shape = [" + std::to_string(Kk) + ", " + std::to_string(Kk) +
       "], pads = [" + std::to_string(Pad) + ", " + std::to_string(Pad) + ", " +
       std::to_string(Pad) + ", " + std::to_string(Pad) + "]} : " + Dims +
       " @\"conv\"\n";
  std::string Body = Chain;
  for (size_t P; (P = Body.find("$T")) != std::string::npos;)
    Body.replace(P, 2, Dims);
  return T + Body + "  output %y\n}\n";
}

} // namespace

TEST(GpuRuntimeTest, CudnnConvGraphsMatchTheFp32Reference) {
  // fp16 plans whose convolution groups run as one cuDNN operation graph
  // each (--conv-epilogues graph) against the fp32 reference (1e-2). cuDNN
  // may have no engine for a chain on this GPU: the load then fails naming
  // cuDNN (printed); the MobileNet and ResNet chains must run.
  SKIP_WITHOUT_GPU();
  struct Case {
    const char *Name, *Chain;
    int K, Kk, Groups;
    bool Required;
  };
  const Case Cases[] = {
      {"bias+clip (MobileNet)", "  %y = Clip(%c, %lo, %hi) : $T @\"clip\"\n",
       16, 3, 1, true},
      // A block between convs, so the residual and the result stay NHWC
      // (a chain at the model's edge runs NCHW, outside the group, around
      // the layout boundary).
      {"bias+residual+relu (ResNet)",
       "  %r0 = Relu(%c) : $T @\"relu0\"\n"
       "  %c2 = Conv(%r0, %w, %b) {kernel_shape = [1, 1]} : $T @\"conv2\"\n"
       "  %a = Add(%c2, %r0) : $T @\"add\"\n"
       "  %r = Relu(%a) : $T @\"relu\"\n"
       "  %y = Conv(%r, %w, %b) {kernel_shape = [1, 1]} : $T @\"next\"\n",
       8, 1, 1, true},
      {"silu",
       "  %s = Sigmoid(%c) : $T @\"sig\"\n"
       "  %y = Mul(%c, %s) : $T @\"mul\"\n",
       16, 1, 1, false},
      {"hardswish", "  %y = HardSwish(%c) : $T @\"hs\"\n", 16, 3, 1, false},
      {"leaky relu", "  %y = LeakyRelu(%c) {alpha = 0.1} : $T @\"lr\"\n", 16, 1,
       1, false},
      {"relu then residual",
       "  %r = Relu(%c) : $T @\"relu\"\n"
       "  %y = Add(%r, %res) : $T @\"add\"\n",
       16, 3, 1, false},
      {"depthwise bias+clip", "  %y = Clip(%c, %lo, %hi) : $T @\"clip\"\n", 8,
       3, 8, false}};
  unsigned Seed = 21;
  for (const Case &K : Cases) {
    SCOPED_TRACE(K.Name);
    std::string Text = convChainGraph(K.Chain, K.K, K.Kk, K.Groups, ++Seed);
    auto G = parseOrFail(Text);
    ASSERT_TRUE(G);
    std::vector<Tensor> In = randomInputs(*G, Seed);
    auto Ref = runReference(*G, In);
    ASSERT_TRUE(bool(Ref)) << llvm::toString(Ref.takeError());
    auto Copy = parseOrFail(Text);
    ASSERT_TRUE(Copy);
    CompileOptions CO;
    CO.Prec = Precision::F16;
    CO.Conv = ConvEpilogues::Graph;
    CO.CacheDir = testCacheDir();
    auto M = CompiledModel::compileGraph(*Copy, CO);
    ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
    std::string RunsAs;
    for (const PlanGroup &Grp : (*M)->plan().Groups)
      if (llvm::StringRef(Grp.RunsAs).startswith("cuDNN graph") &&
          (RunsAs.empty() || llvm::is_contained(Grp.Members, "add")))
        RunsAs = Grp.RunsAs;
    EXPECT_FALSE(RunsAs.empty()) << "no group runs as a cuDNN graph";
    auto Ctx = (*M)->createContext();
    if (!Ctx) {
      std::string Msg = llvm::toString(Ctx.takeError());
      EXPECT_FALSE(K.Required) << Msg;
      EXPECT_NE(Msg.find("cuDNN cannot run this convolution graph"),
                std::string::npos)
          << Msg;
      std::printf("[ conv graph ] %-28s refused by cuDNN: %s\n", K.Name,
                  Msg.c_str());
      continue;
    }
    for (int Run = 0; Run < 2; ++Run) {
      auto Out = (*Ctx)->runHost(In);
      ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
      double Err = relativeError((*Out)[0], (*Ref)[0]);
      EXPECT_LE(Err, 1e-2) << "run " << Run;
      if (Run == 1)
        std::printf("[ conv graph ] %-28s rel err %.3g: %s\n", K.Name, Err,
                    RunsAs.c_str());
    }
  }
}

TEST(GpuRuntimeTest, TunedConvGraphChoicesMatchTheReference) {
  // The shared CNNs in fp16 with tuning: each convolution group that
  // lowers is timed as cuDNN's fused call and as a cuDNN graph; whatever
  // was kept runs within 1e-2 of the fp32 reference, and the fusion report
  // names the timings.
  SKIP_WITHOUT_GPU();
  unsigned Ran = 0;
  for (const ModelCase &C : sharedModels()) {
    if (!llvm::sys::fs::exists(modelPath(C.File)) ||
        llvm::StringRef(C.File).startswith("bert"))
      continue;
    SCOPED_TRACE(C.File);
    auto G = importOnnxFile(modelPath(C.File), importOptionsFor(C));
    ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
    std::vector<Tensor> In = randomInputs(**G, 5);
    std::vector<Tensor> Ref = referenceOutputs(C, In);
    CompileOptions CO = compileOptionsFor(C);
    CO.Prec = Precision::F16;
    CO.Tune = true;
    auto M = CompiledModel::compileFile(modelPath(C.File), CO);
    ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
    unsigned Timed = 0, Graphs = 0;
    for (const PlanGroup &Grp : (*M)->plan().Groups) {
      llvm::StringRef R(Grp.RunsAs);
      Timed += R.contains("cuDNN graph") && R.contains("fused call");
      Graphs += R.startswith("cuDNN graph");
    }
    auto Ctx = (*M)->createContext();
    ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
    auto Out = (*Ctx)->runHost(In);
    ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
    for (size_t I = 0; I < Out->size(); ++I)
      EXPECT_LE(relativeError((*Out)[I], Ref[I]), 1e-2) << "output " << I;
    std::printf("[ conv tune  ] %s: %u groups timed, %u run as cuDNN graphs\n",
                C.File, Timed, Graphs);
    EXPECT_GT(Timed, 0u);
    ++Ran;
  }
  if (Ran == 0)
    GTEST_SKIP() << "no shared models under " << sharedDir();
}

TEST(GpuRuntimeTest, FourThreadsShareOneModel) {
  SKIP_WITHOUT_GPU();
  ModelCase C = sharedModels()[0];
  if (!llvm::sys::fs::exists(modelPath(C.File)))
    GTEST_SKIP() << "no " << modelPath(C.File);
  auto G = importOnnxFile(modelPath(C.File), importOptionsFor(C));
  ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
  auto M = CompiledModel::compileFile(modelPath(C.File), compileOptionsFor(C));
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  constexpr int Threads = 4;
  // Fewer under compute-sanitizer, as in EightThreadsTwoModels... below
  // (50 runs a thread did not finish in 560 s under racecheck).
  const char *RunsEnv = std::getenv("SOLDER_STRESS_RUNS");
  const int Runs = RunsEnv ? std::max(1, std::min(50, std::atoi(RunsEnv))) : 50;
  std::vector<std::vector<Tensor>> In(Threads), Ref(Threads);
  for (int T = 0; T < Threads; ++T) {
    In[T] = randomInputs(**G, 100 + T);
    Ref[T] = referenceOutputs(C, In[T]);
  }
  std::vector<std::string> Failures(Threads);
  std::vector<std::thread> Pool;
  for (int T = 0; T < Threads; ++T)
    Pool.emplace_back([&, T] {
      auto Ctx = (*M)->createContext();
      if (!Ctx) {
        Failures[T] = llvm::toString(Ctx.takeError());
        return;
      }
      cudaStream_t S;
      cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking);
      for (int R = 0; R < Runs && Failures[T].empty(); ++R) {
        auto Out = (*Ctx)->runHost(In[T], S);
        if (!Out) {
          Failures[T] = llvm::toString(Out.takeError());
          break;
        }
        for (size_t I = 0; I < Out->size(); ++I)
          if (relativeError((*Out)[I], Ref[T][I]) > 1e-4)
            Failures[T] = "run " + std::to_string(R) + " output " +
                          std::to_string(I) + " differs";
      }
      cudaStreamSynchronize(S);
      cudaStreamDestroy(S);
    });
  for (std::thread &T : Pool)
    T.join();
  for (int T = 0; T < Threads; ++T)
    EXPECT_EQ(Failures[T], "") << "thread " << T;
}

TEST(GpuRuntimeTest, EightThreadsTwoModelsHundredRunsEach) {
  // The reliability issue's stress: two models in one process, 8 threads
  // alternating between them, each with its own context and stream, 100
  // runs each (host copies in and out, graph replays), every output
  // checked against the reference.
  SKIP_WITHOUT_GPU();
  std::vector<ModelCase> Cases = {sharedModels()[0], sharedModels()[3]};
  std::vector<std::shared_ptr<CompiledModel>> Models;
  std::vector<std::unique_ptr<Graph>> Graphs;
  for (const ModelCase &C : Cases) {
    if (!llvm::sys::fs::exists(modelPath(C.File)))
      GTEST_SKIP() << "no " << modelPath(C.File);
    auto G = importOnnxFile(modelPath(C.File), importOptionsFor(C));
    ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
    Graphs.push_back(std::move(*G));
    auto M =
        CompiledModel::compileFile(modelPath(C.File), compileOptionsFor(C));
    ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
    Models.push_back(*M);
  }
  constexpr int Threads = 8;
  // Fewer under compute-sanitizer (tools/gpu-sanitize.sh sets it): the
  // tools check each kernel launch, not the threads' interleaving.
  const char *RunsEnv = std::getenv("SOLDER_STRESS_RUNS");
  const int Runs = RunsEnv ? std::max(1, std::atoi(RunsEnv)) : 100;
  std::vector<std::vector<Tensor>> In(Threads), Ref(Threads);
  for (int T = 0; T < Threads; ++T) {
    In[T] = randomInputs(*Graphs[T % 2], 200 + T);
    Ref[T] = referenceOutputs(Cases[T % 2], In[T]);
  }
  std::vector<std::string> Failures(Threads);
  std::vector<std::thread> Pool;
  auto Start = std::chrono::steady_clock::now();
  for (int T = 0; T < Threads; ++T)
    Pool.emplace_back([&, T] {
      auto Ctx = Models[T % 2]->createContext();
      if (!Ctx) {
        Failures[T] = llvm::toString(Ctx.takeError());
        return;
      }
      cudaStream_t S;
      cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking);
      for (int R = 0; R < Runs && Failures[T].empty(); ++R) {
        auto Out = (*Ctx)->runHost(In[T], S);
        if (!Out) {
          Failures[T] =
              "run " + std::to_string(R) + ": " +
              llvm::toString(Out.takeError()) +
              " (graph capture failure: " + (*Ctx)->cudaGraphFailure().str() +
              ")";
          break;
        }
        for (size_t I = 0; I < Out->size(); ++I)
          if (relativeError((*Out)[I], Ref[T][I]) > 1e-4)
            Failures[T] = "run " + std::to_string(R) + " output " +
                          std::to_string(I) + " differs";
      }
      if (Failures[T].empty() && !(*Ctx)->cudaGraphFailure().empty())
        Failures[T] =
            "ran without a graph: " + (*Ctx)->cudaGraphFailure().str();
      cudaStreamSynchronize(S);
      cudaStreamDestroy(S);
    });
  for (std::thread &T : Pool)
    T.join();
  double Secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - Start)
          .count();
  std::printf("[ stress   ] %d threads x %d runs over 2 models in %.2f s "
              "(%.0f checked runs/s)\n",
              Threads, Runs, Secs, Threads * Runs / Secs);
  for (int T = 0; T < Threads; ++T)
    EXPECT_EQ(Failures[T], "") << "thread " << T;
}

/// tiny_mlp with N bound, compiled for this GPU.
static std::shared_ptr<CompiledModel> tinyMlp(int64_t N = 3) {
  CompileOptions CO;
  CO.CacheDir = testCacheDir();
  CO.SymbolSizes["N"] = N;
  auto M = CompiledModel::compileFile(
      std::string(SOLDER_TEST_DATA_DIR) + "/tiny_mlp.onnx", CO);
  EXPECT_TRUE(bool(M)) << llvm::toString(M.takeError());
  return M ? *M : nullptr;
}

static size_t freeDeviceBytes() {
  size_t Free = 0, Total = 0;
  cudaDeviceSynchronize();
  cudaMemGetInfo(&Free, &Total);
  return Free;
}

TEST(GpuRuntimeTest, DeviceMemoryLimitRefusesByNameAndFreesWhatItTook) {
  // A limit below the weights fails the load, one that fits the weights
  // but no context fails createContext, each naming what did not fit and
  // leaving the device's free memory as it was; its twin: raising the
  // limit makes the same model load and run.
  SKIP_WITHOUT_GPU();
  auto M = tinyMlp();
  ASSERT_TRUE(M);
  uint64_t Weights = M->stats().WeightBytes;
  ASSERT_GT(Weights, 0u);
  size_t Before = freeDeviceBytes();
  M->setDeviceMemoryLimit(Weights - 1);
  auto Ctx = M->createContext();
  ASSERT_FALSE(bool(Ctx));
  std::string Msg = llvm::toString(Ctx.takeError());
  EXPECT_NE(Msg.find("device memory limit of " + std::to_string(Weights - 1) +
                     " bytes (--max-device-memory) exceeded: the weights"),
            std::string::npos)
      << Msg;
  EXPECT_EQ(freeDeviceBytes(), Before) << "a refused load kept memory";
  M->setDeviceMemoryLimit(Weights + 1);
  ASSERT_FALSE(bool(M->loadOnDevice())); // the weights fit now
  Before = freeDeviceBytes();
  Ctx = M->createContext();
  ASSERT_FALSE(bool(Ctx));
  Msg = llvm::toString(Ctx.takeError());
  EXPECT_NE(Msg.find("exceeded: an execution context"), std::string::npos)
      << Msg;
  EXPECT_EQ(freeDeviceBytes(), Before) << "a refused context kept memory";
  M->setDeviceMemoryLimit(0);
  Ctx = M->createContext();
  ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
  Tensor X(DType::F32, {3, 4});
  for (int64_t I = 0; I < X.numElements(); ++I)
    X.setDouble(I, 0.1 * double(I));
  auto Out = (*Ctx)->runHost({X});
  ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
}

TEST(GpuRuntimeTest, LibraryErrorAtLoadNamesTheStep) {
  // A cuBLASLt configuration the library rejects (a leading dimension of
  // 0, as a corrupt plan could hold) fails the load naming the step and
  // its ONNX nodes; its twin, the plan as built, loads.
  SKIP_WITHOUT_GPU();
  auto M = tinyMlp();
  ASSERT_TRUE(M);
  Plan P = M->plan();
  ASSERT_FALSE(P.Gemms.empty());
  std::string Label;
  for (const PlanStep &S : P.Steps)
    if (S.K == PlanStep::Kind::Gemm && S.Index == 0)
      Label = S.Label;
  ASSERT_FALSE(Label.empty());
  auto Good = CompiledModel::fromPlan(P);
  ASSERT_TRUE(bool(Good));
  ASSERT_FALSE(bool((*Good)->loadOnDevice()));
  P.Gemms[0].Lda = 0;
  P.Gemms[0].HasAlgo = false;
  auto Bad = CompiledModel::fromPlan(P);
  ASSERT_TRUE(bool(Bad));
  llvm::Error E = (*Bad)->loadOnDevice();
  ASSERT_TRUE(bool(E)) << "a zero leading dimension was accepted";
  std::string Msg = llvm::toString(std::move(E));
  EXPECT_EQ(Msg.rfind(Label + ": ", 0), 0u) << Msg;
}

TEST(GpuRuntimeTest, CudnnErrorAtLoadNamesTheStep) {
  // Convolution configurations cuDNN itself rejects, as a corrupt plan
  // could hold them (a zero stride; an algorithm number cuDNN does not
  // have): the load fails with cuDNN's status, naming the step and its
  // ONNX node; its twin, the plan as built, loads and runs.
  SKIP_WITHOUT_GPU();
  auto G = parseOrFail(R"(graph "g" opset 17 {
  input %x : f32[1,3,8,8]
  input %w : f32[4,3,3,3]
  %c = Conv(%x, %w, none) {pads = [1, 1, 1, 1]} : f32[1,4,8,8] @"the_conv"
  output %c
})");
  ASSERT_TRUE(G);
  CompileOptions CO;
  CO.CacheDir = testCacheDir();
  auto M = CompiledModel::compileGraph(*G, CO);
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  Plan P = (*M)->plan();
  ASSERT_EQ(P.Convs.size(), 1u);
  std::string Label;
  for (const PlanStep &S : P.Steps)
    if (S.K == PlanStep::Kind::Conv)
      Label = S.Label;
  ASSERT_NE(Label.find("the_conv"), std::string::npos) << Label;
  {
    auto Good = CompiledModel::fromPlan(P);
    ASSERT_TRUE(bool(Good));
    auto Ctx = (*Good)->createContext();
    ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
    std::vector<Tensor> In = randomInputs(*G, 3);
    auto Out = (*Ctx)->runHost(In);
    ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
  }
  struct Corruption {
    const char *Name;
    std::function<void(ConvConfig &)> Apply;
    const char *CudnnCall;
  };
  std::vector<Corruption> Cases = {
      {"zero stride", [](ConvConfig &C) { C.Strides[0] = 0; },
       "cudnnSetConvolutionNdDescriptor"},
      {"unknown algorithm", [](ConvConfig &C) { C.Algo = 1000; },
       "cudnnGetConvolutionForwardWorkspaceSize"},
  };
  for (const Corruption &K : Cases) {
    SCOPED_TRACE(K.Name);
    Plan Bad = P;
    K.Apply(Bad.Convs[0]);
    auto BadModel = CompiledModel::fromPlan(Bad);
    ASSERT_TRUE(bool(BadModel));
    llvm::Error E = (*BadModel)->loadOnDevice();
    ASSERT_TRUE(bool(E)) << "cuDNN accepted the corrupt configuration";
    std::string Msg = llvm::toString(std::move(E));
    EXPECT_EQ(Msg.rfind(Label + ": ", 0), 0u) << Msg;
    EXPECT_NE(Msg.find(K.CudnnCall), std::string::npos) << Msg;
    EXPECT_NE(Msg.find("CUDNN_STATUS_"), std::string::npos) << Msg;
  }
}

TEST(GpuRuntimeTest, ConvSearchOnANearlyFullDeviceStillLoads) {
  // cuDNN's algorithm search asks for the largest workspace any algorithm
  // needs (FFT ones: hundreds of MiB here). With less than that free on
  // the device, the load searches with what fits, as cuDNN's own search
  // skips what it cannot allocate for, and the model runs and matches the
  // reference; its twin, the same model on a free device, loads as well.
  SKIP_WITHOUT_GPU();
  auto G = parseOrFail(R"(graph "g" opset 17 {
  input %x : f32[4,64,64,64]
  input %w : f32[64,64,5,5]
  %c = Conv(%x, %w, none) {pads = [2, 2, 2, 2]} : f32[4,64,64,64] @"wide_conv"
  output %c
})");
  ASSERT_TRUE(G);
  std::vector<Tensor> In = randomInputs(*G, 5);
  auto Ref = runReference(*G, In);
  ASSERT_TRUE(bool(Ref)) << llvm::toString(Ref.takeError());
  CompileOptions CO;
  CO.CacheDir = testCacheDir();
  size_t Wanted = 0;
  {
    auto M = CompiledModel::compileGraph(*G, CO);
    ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
    ASSERT_FALSE(bool((*M)->loadOnDevice())); // the context, libraries
    ConvCall Call;
    ASSERT_FALSE(bool(Call.init((*M)->plan().Convs[0])));
    cudnnHandle_t H;
    ASSERT_EQ(cudaLibs().cudnnCreate(&H), CUDNN_STATUS_SUCCESS);
    Wanted = Call.searchWorkspaceBytes(H);
    cudaLibs().cudnnDestroy(H);
  }
  // Room for the operands, arena and scratch (about 20 MiB) and cuDNN's
  // handle, but for half the search's workspace at most.
  ASSERT_GE(Wanted, size_t(64) << 20) << "the test needs a convolution "
                                         "whose search wants more";
  const size_t Keep = Wanted / 2;
  for (bool Full : {true, false}) {
    SCOPED_TRACE(Full ? "nearly full device" : "free device");
    auto M = CompiledModel::compileGraph(*G, CO);
    ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
    std::vector<void *> Hog;
    for (size_t Chunk = size_t(1) << 30; Full && Chunk >= (size_t(1) << 20);) {
      void *P = nullptr;
      if (freeDeviceBytes() >= Keep + Chunk && cudaMalloc(&P, Chunk) == 0)
        Hog.push_back(P);
      else
        Chunk /= 2;
    }
    cudaGetLastError();
    size_t FreeBeforeLoad = freeDeviceBytes();
    auto Ctx = (*M)->createContext();
    auto Out = Ctx ? (*Ctx)->runHost(In)
                   : llvm::Expected<std::vector<Tensor>>(Ctx.takeError());
    for (void *P : Hog)
      cudaFree(P);
    ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
    if (Full) {
      EXPECT_LT(FreeBeforeLoad, Wanted) << "the device was not nearly full";
    }
    std::printf("%s: %zu MiB free at load, search wants %zu MiB, cuDNN "
                "algorithm %d\n",
                Full ? "nearly full" : "free", FreeBeforeLoad >> 20,
                Wanted >> 20, (*M)->plan().Convs[0].Algo);
    EXPECT_LE(relativeError((*Out)[0], (*Ref)[0]), 1e-4);
  }
}

TEST(GpuRuntimeTest, KernelFaultIsStickyNamedAndRefusedAfter) {
  // A kernel fault (a bound input pointer that is not device memory) in a
  // child process: the run's error says it is sticky, the context refuses
  // every later run, and step by step the error names the step.
  SKIP_WITHOUT_GPU();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto Child = [](bool StepByStep) {
    auto M = tinyMlp();
    auto Ctx = M ? M->createContext()
                 : llvm::Expected<std::unique_ptr<ExecutionContext>>(
                       llvm::createStringError(llvm::inconvertibleErrorCode(),
                                               "no model"));
    if (!Ctx) {
      std::fprintf(stderr, "setup: %s\n",
                   llvm::toString(Ctx.takeError()).c_str());
      std::_Exit(2);
    }
    void *Bogus = reinterpret_cast<void *>(uintptr_t(1) << 44);
    if (llvm::Error E = (*Ctx)->bindInput(0, Bogus))
      std::_Exit(3);
    std::string First;
    if (StepByStep) {
      llvm::Error E = (*Ctx)->runStepByStep(
          nullptr, [](size_t, bool) { return llvm::Error::success(); });
      First = E ? llvm::toString(std::move(E)) : "";
    } else {
      llvm::Error E = (*Ctx)->run(nullptr);
      float Y[9];
      llvm::Error C = (*Ctx)->copyOutputToHost(0, Y, sizeof(Y), nullptr);
      First = E ? llvm::toString(std::move(E))
                : (C ? llvm::toString(std::move(C)) : "");
      if (E)
        llvm::consumeError(std::move(C));
    }
    llvm::Error Again = (*Ctx)->run(nullptr);
    std::string Second = Again ? llvm::toString(std::move(Again)) : "";
    std::fprintf(stderr, "first: %s\nsecond: %s\n", First.c_str(),
                 Second.c_str());
    bool Ok = First.find("sticky error") != std::string::npos &&
              Second.find("refuses to run") != std::string::npos &&
              (!StepByStep || First.find("running step ") != std::string::npos);
    std::fflush(stderr);
    std::_Exit(Ok ? 0 : 1);
  };
  EXPECT_EXIT(Child(false), testing::ExitedWithCode(0), "sticky error");
  EXPECT_EXIT(Child(true), testing::ExitedWithCode(0),
              "running step [0-9]+ \\(");
}

TEST(GpuRuntimeTest, GraphReplayEqualsEagerSteps) {
  SKIP_WITHOUT_GPU();
  ModelCase C = sharedModels()[3]; // BERT: matmuls, reductions, masks
  if (!llvm::sys::fs::exists(modelPath(C.File)))
    C = ModelCase{nullptr, {}};
  std::shared_ptr<CompiledModel> Model;
  std::vector<Tensor> In;
  if (C.File) {
    auto G = importOnnxFile(modelPath(C.File), importOptionsFor(C));
    ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
    In = randomInputs(**G, 3);
    auto M =
        CompiledModel::compileFile(modelPath(C.File), compileOptionsFor(C));
    ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
    Model = *M;
  } else {
    auto G = parseOrFail(mixedGraphText());
    ASSERT_TRUE(G);
    In = randomInputs(*G, 3);
    CompileOptions CO;
    CO.CacheDir = testCacheDir();
    auto M = CompiledModel::compileGraph(*G, CO);
    ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
    Model = *M;
  }
  auto Ctx = Model->createContext();
  ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
  (*Ctx)->setUseCudaGraph(false);
  auto Eager = (*Ctx)->runHost(In);
  ASSERT_TRUE(bool(Eager)) << llvm::toString(Eager.takeError());
  EXPECT_EQ((*Ctx)->graphLaunches(), 0u);
  (*Ctx)->setUseCudaGraph(true);
  for (int Run = 0; Run < 3; ++Run) {
    auto Out = (*Ctx)->runHost(In);
    ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
    for (size_t I = 0; I < Out->size(); ++I)
      EXPECT_TRUE((*Out)[I].bitwiseEqual((*Eager)[I]))
          << "run " << Run << " output " << I << " rel err "
          << relativeError((*Out)[I], (*Eager)[I]);
  }
  // Run 0 went step by step and captured; runs 1 and 2 replayed.
  EXPECT_EQ((*Ctx)->cudaGraphFailure(), "");
  EXPECT_EQ((*Ctx)->graphLaunches(), 2u);
}

TEST(GpuRuntimeTest, SteadyStateAllocatesNothing) {
  SKIP_WITHOUT_GPU();
  auto G = parseOrFail(mixedGraphText());
  ASSERT_TRUE(G);
  std::vector<Tensor> In = randomInputs(*G, 5);
  CompileOptions CO;
  CO.CacheDir = testCacheDir();
  auto M = CompiledModel::compileGraph(*G, CO);
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  auto Ctx = (*M)->createContext();
  ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
  cudaStream_t S;
  ASSERT_EQ(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking), cudaSuccess);
  for (size_t I = 0; I < In.size(); ++I)
    ASSERT_FALSE(bool(
        (*Ctx)->copyInputFromHost(I, In[I].rawData(), In[I].byteSize(), S)));
  for (int R = 0; R < 3; ++R) // warm up: eager run, capture, first replay
    ASSERT_FALSE(bool((*Ctx)->run(S)));
  ASSERT_EQ(cudaStreamSynchronize(S), cudaSuccess);
  size_t FreeBefore = 0, FreeAfter = 0, Total = 0;
  ASSERT_EQ(cudaMemGetInfo(&FreeBefore, &Total), cudaSuccess);
  uint64_t LaunchesBefore = (*Ctx)->graphLaunches();
  for (int R = 0; R < 200; ++R)
    ASSERT_FALSE(bool((*Ctx)->run(S)));
  ASSERT_EQ(cudaStreamSynchronize(S), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&FreeAfter, &Total), cudaSuccess);
  EXPECT_EQ(FreeBefore, FreeAfter);
  EXPECT_EQ((*Ctx)->cudaGraphFailure(), "");
  EXPECT_EQ((*Ctx)->graphLaunches() - LaunchesBefore, 200u);
  cudaStreamDestroy(S);
}

TEST(GpuRuntimeTest, PlanForAnotherArchIsRecompiledAtLoad) {
  SKIP_WITHOUT_GPU();
  auto Arch = currentDeviceArch();
  ASSERT_TRUE(bool(Arch));
  std::string Other = *Arch == "sm_80" ? "sm_86" : "sm_80";
  auto G = parseOrFail(mixedGraphText());
  ASSERT_TRUE(G);
  std::vector<Tensor> In = randomInputs(*G, 9);
  auto Ref = runReference(*G, In);
  ASSERT_TRUE(bool(Ref));
  CompileOptions CO;
  CO.Arch = Other;
  CO.CacheDir = testCacheDir();
  auto M = CompiledModel::compileGraph(*G, CO);
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  llvm::SmallString<128> Path;
  llvm::sys::path::system_temp_directory(true, Path);
  llvm::sys::path::append(Path, "solder-gpu-test-other-arch.plan");
  ASSERT_FALSE(bool((*M)->savePlan(Path)));
  auto Loaded = CompiledModel::loadPlan(Path);
  ASSERT_TRUE(bool(Loaded)) << llvm::toString(Loaded.takeError());
  EXPECT_EQ((*Loaded)->plan().Arch, Other);
  auto Ctx = (*Loaded)->createContext();
  ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
  EXPECT_EQ((*Loaded)->plan().Arch, *Arch);
  auto Out = (*Ctx)->runHost(In);
  ASSERT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
  for (size_t I = 0; I < Out->size(); ++I)
    EXPECT_LE(relativeError((*Out)[I], (*Ref)[I]), 1e-4);
  llvm::sys::fs::remove(Path);
}

TEST(GpuRuntimeTest, BoundDevicePointersAreUsed) {
  SKIP_WITHOUT_GPU();
  auto G = parseOrFail(mixedGraphText());
  ASSERT_TRUE(G);
  std::vector<Tensor> In = randomInputs(*G, 11);
  auto Ref = runReference(*G, In);
  ASSERT_TRUE(bool(Ref));
  CompileOptions CO;
  CO.CacheDir = testCacheDir();
  auto M = CompiledModel::compileGraph(*G, CO);
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  auto Ctx = (*M)->createContext();
  ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
  std::vector<void *> DIn, DOut;
  for (const Tensor &T : In) {
    void *P;
    ASSERT_EQ(cudaMalloc(&P, T.byteSize()), cudaSuccess);
    cudaMemcpy(P, T.rawData(), T.byteSize(), cudaMemcpyHostToDevice);
    ASSERT_FALSE(bool((*Ctx)->bindInput(DIn.size(), P)));
    DIn.push_back(P);
  }
  for (const TensorInfo &T : (*M)->outputs()) {
    void *P;
    ASSERT_EQ(cudaMalloc(&P, T.bytes()), cudaSuccess);
    ASSERT_FALSE(bool((*Ctx)->bindOutput(DOut.size(), P)));
    DOut.push_back(P);
  }
  cudaStream_t S;
  cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking);
  for (int R = 0; R < 3; ++R)
    ASSERT_FALSE(bool((*Ctx)->run(S)));
  cudaStreamSynchronize(S);
  for (size_t I = 0; I < DOut.size(); ++I) {
    const TensorInfo &T = (*M)->outputs()[I];
    Tensor Out(T.Elem, T.Dims);
    cudaMemcpy(Out.mutableRawData(), DOut[I], T.bytes(),
               cudaMemcpyDeviceToHost);
    EXPECT_LE(relativeError(Out, (*Ref)[I]), 1e-4) << "output " << I;
  }
  for (void *P : DIn)
    cudaFree(P);
  for (void *P : DOut)
    cudaFree(P);
  cudaStreamDestroy(S);
}

// Generated kernels take __restrict__ pointers: an output bound over an
// input is refused at the run, naming both, and rebinding fixes it.
TEST(GpuRuntimeTest, OverlappingBoundBuffersAreRefused) {
  SKIP_WITHOUT_GPU();
  auto G = parseOrFail(mixedGraphText());
  ASSERT_TRUE(G);
  std::vector<Tensor> In = randomInputs(*G, 12);
  auto Ref = runReference(*G, In);
  ASSERT_TRUE(bool(Ref));
  CompileOptions CO;
  CO.CacheDir = testCacheDir();
  auto M = CompiledModel::compileGraph(*G, CO);
  ASSERT_TRUE(bool(M)) << llvm::toString(M.takeError());
  auto Ctx = (*M)->createContext();
  ASSERT_TRUE(bool(Ctx)) << llvm::toString(Ctx.takeError());
  cudaStream_t S;
  cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking);
  for (size_t I = 0; I < In.size(); ++I)
    ASSERT_FALSE(bool(
        (*Ctx)->copyInputFromHost(I, In[I].rawData(), In[I].byteSize(), S)));
  void *Shared = const_cast<void *>((*Ctx)->inputBuffer(0));
  ASSERT_FALSE(bool((*Ctx)->bindOutput(0, Shared)));
  llvm::Error E = (*Ctx)->run(S);
  ASSERT_TRUE(bool(E));
  EXPECT_NE(llvm::toString(std::move(E))
                .find("output #0 overlaps the one bound to input #0"),
            std::string::npos);
  ASSERT_FALSE(bool((*Ctx)->bindOutput(0, nullptr)));
  ASSERT_FALSE(bool((*Ctx)->run(S)));
  const TensorInfo &T = (*M)->outputs()[0];
  Tensor Out(T.Elem, T.Dims);
  ASSERT_FALSE(
      bool((*Ctx)->copyOutputToHost(0, Out.mutableRawData(), T.bytes(), S)));
  EXPECT_LE(relativeError(Out, (*Ref)[0]), 1e-4);
  cudaStreamDestroy(S);
}

#else
#include "gtest/gtest.h"
TEST(GpuRuntimeTest, NeedsCuda) {
  GTEST_SKIP() << "built without the CUDA toolkit: no GPU runtime";
}
#endif
