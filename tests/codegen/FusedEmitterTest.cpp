//===- FusedEmitterTest.cpp - Kernels of fused groups ---------------------===//
//
// Each test writes an unfused graph, outlines members into a FusedGroup
// (ir/FusedGroup.h), emits the group's kernel and checks its key facts:
// parameter order (outer results, then outer operands; a contraction's
// library result as the body value), baked constants, deterministic names
// and bytes, and that NVRTC compiles it for sm_90 (no GPU needed). Numbers
// are checked on a GPU against the reference executor (tests/runtime).
// Negative twins: what a row kernel or a loop kernel must refuse, with an
// error naming the group.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelEmitter.h"
#include "codegen/NvrtcCompiler.h"
#include "frontend/OnnxImporter.h"
#include "ir/FusedGroup.h"
#include "ir/OpRegistry.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "passes/Pipeline.h"
#include "tests/codegen/TestNvrtc.h"
#include "llvm/Support/FileSystem.h"
#include <gtest/gtest.h>

using namespace solder;

namespace {

std::unique_ptr<Graph> parse(llvm::StringRef Body) {
  std::string Text = "graph \"g\" opset 21 {\n" + Body.str() + "\n}\n";
  auto G = parseGraph(Text);
  EXPECT_TRUE(bool(G)) << llvm::toString(G.takeError()) << "\n" << Text;
  return G ? std::move(*G) : nullptr;
}

Node *nodeNamed(Graph &G, llvm::StringRef Name) {
  for (const auto &N : G.nodes())
    if (N->name() == Name)
      return N.get();
  ADD_FAILURE() << "no node " << Name.str();
  return nullptr;
}

/// Parses Body and outlines the named nodes into group Id of Kind.
std::unique_ptr<Graph> grouped(llvm::StringRef Body,
                               std::vector<std::string> Members, GroupKind Kind,
                               int64_t Id) {
  auto G = parse(Body);
  if (!G)
    return nullptr;
  std::vector<Node *> Ns;
  for (const std::string &M : Members)
    Ns.push_back(nodeNamed(*G, M));
  auto Group = outlineFusedGroup(*G, Ns, Kind, Id);
  EXPECT_TRUE(bool(Group)) << llvm::toString(Group.takeError());
  if (!Group)
    return nullptr;
  return G;
}

const Node *groupNode(const Graph &G) {
  for (const auto &N : G.nodes())
    if (isFusedGroup(*N))
      return N.get();
  return nullptr;
}

std::vector<GeneratedKernel> kernels(const Graph &G,
                                     const CodegenOptions &O = {}) {
  auto K = emitGraphKernels(G, O);
  EXPECT_TRUE(bool(K)) << llvm::toString(K.takeError()) << "\n"
                       << graphToString(G);
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

/// Compiles with NVRTC for sm_90 into a throwaway cache.
void expectCompiles(const std::vector<GeneratedKernel> &K) {
  llvm::SmallString<128> Dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("solder-fused", Dir));
  NvrtcOptions O;
  O.Arch = "sm_90";
  O.CacheDir = std::string(Dir.str());
  O.Progress = [](unsigned, unsigned) {};
  auto Cubins = compileKernels(K, O);
  llvm::sys::fs::remove_directories(Dir);
  ASSERT_TRUE(bool(Cubins)) << llvm::toString(Cubins.takeError()) << "\n"
                            << (K.empty() ? "" : K[0].Source);
  ASSERT_EQ(Cubins->size(), K.size());
}

/// The kernels of fused groups among G's kernels.
std::vector<GeneratedKernel> groupKernels(const Graph &G,
                                          const CodegenOptions &O) {
  std::vector<GeneratedKernel> Out;
  for (GeneratedKernel &K : kernels(G, O))
    if (K.GroupId >= 0)
      Out.push_back(std::move(K));
  return Out;
}

/// Emits G's kernels twice (same bytes), expects exactly one of a fused
/// group (or exactly one kernel when G has no group), compiles it.
GeneratedKernel theKernel(const Graph &G, const CodegenOptions &O = {}) {
  bool Grouped = groupNode(G) != nullptr;
  auto K = Grouped ? groupKernels(G, O) : kernels(G, O);
  auto Again = Grouped ? groupKernels(G, O) : kernels(G, O);
  EXPECT_EQ(K.size(), 1u);
  if (K.size() != 1)
    return {};
  EXPECT_EQ(Again.size(), 1u);
  if (Again.size() == 1) {
    EXPECT_EQ(K[0].Source, Again[0].Source);
    EXPECT_EQ(K[0].Name, Again[0].Name);
  }
  expectCompiles(K);
  return K[0];
}

//===----------------------------------------------------------------------===//
// Loop groups
//===----------------------------------------------------------------------===//

TEST(FusedLoop, ElementwiseChainIsOneVectorizedKernel) {
  auto G = grouped(R"(  input %x : f32[4,256]
  input %y : f32[4,256]
  const %half : f32[] = [0.5]
  %m = Mul(%x, %half) : f32[4,256] @"mul"
  %r = Relu(%m) : f32[4,256] @"relu"
  %a = Add(%r, %y) : f32[4,256] @"add"
  output %a)",
                   {"mul", "relu", "add"}, GroupKind::Loop, 4);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  EXPECT_EQ(K.Name, "solder_0_g4_loop");
  EXPECT_EQ(K.GroupId, 4);
  EXPECT_EQ(K.NodeNames, (std::vector<std::string>{"mul", "relu", "add"}));
  EXPECT_EQ(K.Summary,
            "group 4 (loop): Mul, Relu, Add f32[4,256], f32[4,256] -> "
            "f32[4,256]");
  EXPECT_TRUE(has(K.Source, "solder_0_g4_loop(float *__restrict__ out0, const "
                            "float *__restrict__ in0, const float "
                            "*__restrict__ in1, const long long cnt0)"))
      << K.Source;
  ASSERT_EQ(K.Outputs.size(), 1u);
  ASSERT_EQ(K.Inputs.size(), 2u);
  EXPECT_EQ(K.Outputs[0]->name(), "a");
  EXPECT_EQ(K.Inputs[0]->name(), "x");
  EXPECT_EQ(K.Inputs[1]->name(), "y");
  // Outer values, not body values.
  EXPECT_EQ(K.Inputs[0]->graph(), G.get());
  // The scalar is baked in, the loop moves 16 bytes per access.
  EXPECT_TRUE(has(K.Source, "(0x1p-1f)")) << K.Source;
  EXPECT_TRUE(has(K.Source, "reinterpret_cast<const uint4 *>(in1)[v]"));
  // 256 vectors of 4: a count taken by value, not baked in.
  EXPECT_TRUE(has(K.Source, "v < (idx_t)cnt0;")) << K.Source;
  EXPECT_EQ(K.Counts, std::vector<int64_t>{256});
  EXPECT_FALSE(has(K.Source, "perturbed"));
}

TEST(FusedLoop, FromTextualIR) {
  auto G = parse(R"(  input %a : f32[2,3]
  %r = FusedGroup(%a) {id = 4, kind = "loop", members = ["mul", "relu"]} : f32[2,3] body graph "g4" opset 17 {
    input %a : f32[2,3]
    const %half : f32[] = [0.5]
    %m = Mul(%a, %half) : f32[2,3] @"mul"
    %r = Relu(%m) : f32[2,3] @"relu"
    output %r
  }
  output %r)");
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  EXPECT_EQ(K.Name, "solder_0_g4_loop");
  EXPECT_EQ(K.NodeNames, (std::vector<std::string>{"mul", "relu"}));
  // 6 floats: no 16-byte vectors.
  EXPECT_TRUE(has(K.Source, "const float x = in0[i];")) << K.Source;
  EXPECT_TRUE(has(K.Source, "out0[i] = t1;")) << K.Source;
}

TEST(FusedLoop, PerturbationOnlyForTheChosenGroup) {
  const char *Text = R"(  input %x : f32[8]
  %n = Neg(%x) : f32[8] @"neg"
  %r = Relu(%n) : f32[8] @"relu"
  output %r)";
  auto G = grouped(Text, {"neg", "relu"}, GroupKind::Loop, 2);
  ASSERT_TRUE(G);
  CodegenOptions O;
  O.PerturbGroupId = 2;
  GeneratedKernel K = theKernel(*G, O);
  EXPECT_TRUE(has(K.Source, "perturbed")) << K.Source;
  O.PerturbGroupId = 3;
  GeneratedKernel Other = theKernel(*G, O);
  EXPECT_FALSE(has(Other.Source, "perturbed")) << Other.Source;
}

TEST(FusedLoop, BroadcastBiasIsReadAtItsChannel) {
  auto G = grouped(R"(  input %x : f32[1,64,8,8]
  input %b : f32[64,1,1]
  %s = Add(%x, %b) : f32[1,64,8,8] @"add"
  %r = Relu(%s) : f32[1,64,8,8] @"relu"
  output %r)",
                   {"add", "relu"}, GroupKind::Loop, 0);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  EXPECT_TRUE(has(K.Source, "in0[i]")) << K.Source;
  EXPECT_TRUE(has(K.Source, "in1[(i / 64)]")) << K.Source;
  EXPECT_FALSE(has(K.Source, "uint4")) << K.Source;
}

TEST(FusedLoop, TransposeThenReshape) {
  auto G = grouped(R"(  input %x : f32[2,3,4]
  %t = Transpose(%x) {perm = [0, 2, 1]} : f32[2,4,3] @"tr"
  const %shape : i64[2] = [2, 12]
  %v = Reshape(%t, %shape) : f32[2,12] @"reshape"
  %r = Relu(%v) : f32[2,12] @"relu"
  output %r)",
                   {"tr", "reshape", "relu"}, GroupKind::Loop, 1);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  // The shape operand is baked, not passed.
  ASSERT_EQ(K.Inputs.size(), 1u);
  EXPECT_EQ(K.Inputs[0]->name(), "x");
  // out[b, 3*j + c] = relu(x[b, c, j]): read at b*12 + c*4 + j.
  EXPECT_TRUE(has(K.Source, "lin = (i / 12) * 12 + (i % 3) * 4 + (i / 3 % 4);"))
      << K.Source;
}

TEST(FusedLoop, ConcatSelectsTheOperand) {
  auto G = grouped(R"(  input %a : f32[2,3]
  input %b : f32[2,5]
  %c = Concat(%a, %b) {axis = 1} : f32[2,8] @"cat"
  %r = Sigmoid(%c) : f32[2,8] @"sig"
  output %r)",
                   {"cat", "sig"}, GroupKind::Loop, 1);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  EXPECT_TRUE(has(K.Source, "if ((i % 8) < 3) {")) << K.Source;
  EXPECT_TRUE(has(K.Source, "else {")) << K.Source;
  EXPECT_TRUE(has(K.Source, "((i % 8) - 3)")) << K.Source;
}

TEST(FusedLoop, SliceWithStep) {
  auto G = grouped(R"(  input %x : f32[4,10]
  const %st : i64[1] = [1]
  const %en : i64[1] = [9]
  const %ax : i64[1] = [1]
  const %sp : i64[1] = [2]
  %s = Slice(%x, %st, %en, %ax, %sp) : f32[4,4] @"slice"
  %r = Neg(%s) : f32[4,4] @"neg"
  output %r)",
                   {"slice", "neg"}, GroupKind::Loop, 1);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  ASSERT_EQ(K.Inputs.size(), 1u);
  EXPECT_TRUE(has(K.Source, "(1 + (i % 4) * 2)")) << K.Source;
}

TEST(FusedLoop, SliceBoundsMustBeConstant) {
  auto G = grouped(R"(  input %x : f32[4,10]
  input %st : i64[1]
  const %en : i64[1] = [9]
  %s = Slice(%x, %st, %en) : f32[?,?] @"slice"
  %r = Neg(%s) : f32[?,?] @"neg"
  output %r)",
                   {"slice", "neg"}, GroupKind::Loop, 6);
  ASSERT_TRUE(G);
  std::string E = errorOf(*G);
  EXPECT_TRUE(has(E, "fused group 6")) << E;
}

TEST(FusedLoop, GatherLoadsTheIndex) {
  auto G = grouped(R"(  input %table : f32[10,16]
  input %idx : i64[3]
  %g = Gather(%table, %idx) {axis = 0} : f32[3,16] @"gather"
  %r = Relu(%g) : f32[3,16] @"relu"
  output %r)",
                   {"gather", "relu"}, GroupKind::Loop, 1);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  ASSERT_EQ(K.Inputs.size(), 2u);
  EXPECT_EQ(K.Inputs[0]->name(), "table");
  EXPECT_EQ(K.Inputs[1]->name(), "idx");
  EXPECT_TRUE(has(K.Source, "const long long x = in1[(i / 16)];")) << K.Source;
  EXPECT_TRUE(has(K.Source, "if (g < 0) g += 10LL;")) << K.Source;
  EXPECT_TRUE(has(K.Source, "lin = ((idx_t)g) * 16 + (i % 16);")) << K.Source;
  EXPECT_TRUE(has(K.Source, "if (g >= 0 && g < 10LL) {")) << K.Source;
  // In a dynamic model's variant the table's 10 rows come as a count,
  // after the 48 elements.
  CodegenOptions O;
  O.ShapeParams = true;
  auto Variant = emitGraphKernels(*G, O);
  ASSERT_TRUE(bool(Variant)) << llvm::toString(Variant.takeError());
  ASSERT_EQ(Variant->size(), 1u);
  EXPECT_EQ((*Variant)[0].Counts, (std::vector<int64_t>{48, 10}));
  EXPECT_TRUE(has((*Variant)[0].Source, "if (g >= 0 && g < (idx_t)cnt1) {"))
      << (*Variant)[0].Source;
}

TEST(FusedLoop, SeveralResultsOfOneShape) {
  auto G = grouped(R"(  input %x : f32[3,5]
  input %y : f32[3,5]
  %a = Add(%x, %y) : f32[3,5] @"add"
  %r = Relu(%a) : f32[3,5] @"relu"
  %u = Neg(%a) : f32[3,5] @"user"
  output %r
  output %u)",
                   {"add", "relu"}, GroupKind::Loop, 3);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  ASSERT_EQ(K.Outputs.size(), 2u);
  // Body output order: %a (read outside) and %r.
  const Node *Group = groupNode(*G);
  ASSERT_TRUE(Group);
  EXPECT_EQ(K.Outputs[0], Group->result(0));
  EXPECT_EQ(K.Outputs[1], Group->result(1));
  EXPECT_TRUE(has(K.Source, "out0[i] = ")) << K.Source;
  EXPECT_TRUE(has(K.Source, "out1[i] = ")) << K.Source;
  // The sum is computed once and used by both results.
  size_t Sum = K.Source.find("(x + x1)");
  EXPECT_NE(Sum, std::string::npos) << K.Source;
  EXPECT_EQ(Sum, K.Source.rfind("(x + x1)")) << K.Source;
}

TEST(FusedLoop, ResultsOfDifferentShapesAreRefused) {
  auto G = grouped(R"(  input %x : f32[4,8]
  input %b : f32[8]
  %n = Neg(%b) : f32[8] @"neg"
  %a = Add(%x, %n) : f32[4,8] @"add"
  %u = Relu(%n) : f32[8] @"user"
  output %a
  output %u)",
                   {"neg", "add"}, GroupKind::Loop, 5);
  ASSERT_TRUE(G);
  std::string E = errorOf(*G);
  EXPECT_TRUE(has(E, "fused group 5 (loop)")) << E;
  EXPECT_TRUE(has(E, "different shapes")) << E;
}

TEST(FusedLoop, HalfComputesInFloat) {
  auto G = grouped(R"(  input %x : f16[2,64]
  input %y : f16[2,64]
  %m = Mul(%x, %y) : f16[2,64] @"mul"
  %r = Tanh(%m) : f16[2,64] @"tanh"
  output %r)",
                   {"mul", "tanh"}, GroupKind::Loop, 0);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  EXPECT_TRUE(has(K.Source, "#include <cuda_fp16.h>"));
  EXPECT_TRUE(has(K.Source, "__half2float(p0[k])")) << K.Source;
  EXPECT_TRUE(has(K.Source, "__float2half_rn(")) << K.Source;
}

TEST(FusedLoop, ExpandCastWhereAndBatchNorm) {
  auto G = grouped(R"(  input %x : f32[2,4,3,3]
  input %c : bool[3]
  input %s : f32[4]
  input %b : f32[4]
  input %m : f32[4]
  input %v : f32[4]
  %bn = BatchNormalization(%x, %s, %b, %m, %v) {epsilon = 0.001} : f32[2,4,3,3] @"bn"
  const %shape : i64[4] = [2, 4, 3, 3]
  %e = Expand(%c, %shape) : bool[2,4,3,3] @"expand"
  const %zero : f32[] = [0.0]
  %w = Where(%e, %bn, %zero) : f32[2,4,3,3] @"where"
  %h = Cast(%w) {to = 10} : f16[2,4,3,3] @"cast"
  output %h)",
                   {"bn", "expand", "where", "cast"}, GroupKind::Loop, 0);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  ASSERT_EQ(K.Inputs.size(), 6u);
  EXPECT_TRUE(has(K.Source, "in2[(i / 9 % 4)]")) << K.Source;
  EXPECT_TRUE(has(K.Source, "in5[(i % 3)]")) << K.Source;
  EXPECT_TRUE(has(K.Source, "in0[i]")) << K.Source;
}

//===----------------------------------------------------------------------===//
// Contraction epilogues
//===----------------------------------------------------------------------===//

TEST(FusedContraction, RestKernelReadsTheLibraryResult) {
  auto G = grouped(R"(  input %x : f32[1,3,8,8]
  input %w : f32[8,3,3,3]
  input %b : f32[1,8,1,1]
  %c = Conv(%x, %w, none) {dilations = [1, 1], group = 1, pads = [1, 1, 1, 1], strides = [1, 1]} : f32[1,8,8,8] @"conv"
  %s = Sigmoid(%c) : f32[1,8,8,8] @"sig"
  %r = Add(%s, %b) : f32[1,8,8,8] @"add"
  output %r)",
                   {"conv", "sig", "add"}, GroupKind::Contraction, 7);
  ASSERT_TRUE(G);
  const Node *Group = groupNode(*G);
  ASSERT_TRUE(Group);
  // emitKernel itself gives nothing for a contraction group.
  KernelNamer Names(*G);
  auto None = emitKernel(*Group, {}, Names);
  ASSERT_TRUE(bool(None)) << llvm::toString(None.takeError());
  EXPECT_FALSE(bool(*None));
  GeneratedKernel K = theKernel(*G);
  EXPECT_EQ(K.Name, "solder_0_g7_epilogue");
  EXPECT_EQ(K.GroupId, 7);
  // A Sigmoid straight after the Conv: cuDNN absorbs nothing of this chain.
  EXPECT_EQ(K.NodeNames, (std::vector<std::string>{"sig", "add"}));
  ASSERT_EQ(K.Outputs.size(), 1u);
  EXPECT_EQ(K.Outputs[0], Group->result(0));
  ASSERT_EQ(K.Inputs.size(), 2u);
  // The outer bias operand, and the Conv's result as a body value.
  EXPECT_EQ(K.Inputs[0]->name(), "b");
  EXPECT_EQ(K.Inputs[0]->graph(), G.get());
  EXPECT_EQ(K.Inputs[1]->graph(), Group->body());
  EXPECT_EQ(K.Inputs[1]->producer()->kind(), OpKind::Conv);
  EXPECT_TRUE(has(K.Summary, "group 7 (contraction epilogue): Sigmoid, Add"))
      << K.Summary;
  EXPECT_TRUE(has(K.Source, "in1[i]")) << K.Source;
  EXPECT_TRUE(has(K.Source, "in0[(i / 64)]")) << K.Source;
  EXPECT_FALSE(has(K.Source, "perturbed"));
  CodegenOptions O;
  O.PerturbGroupId = 7;
  EXPECT_TRUE(has(theKernel(*G, O).Source, "out0[i] = perturbed;"));
}

TEST(FusedContraction, RestKernelOfASiluDiamondReadsTheResultOnce) {
  // x * sigmoid(x) after the conv's own bias: the rest kernel loads the
  // library's result once and uses it twice.
  auto G = grouped(R"(  input %x : f32[1,3,8,8]
  input %w : f32[8,3,3,3]
  input %b : f32[8]
  %c = Conv(%x, %w, %b) {dilations = [1, 1], group = 1, pads = [1, 1, 1, 1], strides = [1, 1]} : f32[1,8,8,8] @"conv"
  %s = Sigmoid(%c) : f32[1,8,8,8] @"sig"
  %r = Mul(%c, %s) : f32[1,8,8,8] @"mul"
  output %r)",
                   {"conv", "sig", "mul"}, GroupKind::Contraction, 3);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  EXPECT_EQ(K.NodeNames, (std::vector<std::string>{"sig", "mul"}));
  ASSERT_EQ(K.Inputs.size(), 1u);
  EXPECT_EQ(K.Inputs[0]->producer()->kind(), OpKind::Conv);
  // One load of in0 (vectorized: a uint4 of four floats) after the
  // signature, however many nodes read it.
  std::string Body = K.Source.substr(K.Source.find("{"));
  size_t Loads = 0;
  for (size_t P = Body.find("in0"); P != std::string::npos;
       P = Body.find("in0", P + 1))
    ++Loads;
  EXPECT_EQ(Loads, 1u) << K.Source;
  auto Cubins = compileKernels({K}, solder::testing::testNvrtcOptions());
  ASSERT_TRUE(bool(Cubins)) << llvm::toString(Cubins.takeError());
}

TEST(FusedContraction, NothingLeftGivesNoKernel) {
  auto G = grouped(R"(  input %x : f32[4,8]
  input %w : f32[8,16]
  %c = MatMul(%x, %w) : f32[4,16] @"mm"
  output %c)",
                   {"mm"}, GroupKind::Contraction, 1);
  ASSERT_TRUE(G);
  EXPECT_TRUE(kernels(*G).empty());
}

//===----------------------------------------------------------------------===//
// Reduction groups
//===----------------------------------------------------------------------===//

TEST(FusedReduction, ResidualAddLayerNormStoresTheSum) {
  auto G = grouped(R"(  input %x : f32[2,16,64]
  input %y : f32[2,16,64]
  input %s : f32[64]
  input %b : f32[64]
  %h = Add(%x, %y) : f32[2,16,64] @"add"
  %n = LayerNormalization(%h, %s, %b) {axis = -1, epsilon = 1e-05} : f32[2,16,64] @"ln"
  %u = Neg(%h) : f32[2,16,64] @"user"
  output %n
  output %u)",
                   {"add", "ln"}, GroupKind::Reduction, 9);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  EXPECT_EQ(K.Name, "solder_0_g9_reduction");
  EXPECT_EQ(K.NodeNames, (std::vector<std::string>{"add", "ln"}));
  const Node *Group = groupNode(*G);
  ASSERT_EQ(K.Outputs.size(), 2u);
  EXPECT_EQ(K.Outputs[0], Group->result(0));
  EXPECT_EQ(K.Outputs[1], Group->result(1));
  ASSERT_EQ(K.Inputs.size(), 4u);
  EXPECT_EQ(K.Inputs[0]->name(), "x");
  EXPECT_EQ(K.Inputs[3]->name(), "b");
  // One warp per row, two elements per lane kept in registers.
  EXPECT_TRUE(has(K.Source, "float xv[2];")) << K.Source;
  EXPECT_TRUE(has(K.Source, "solder_warp_reduce(sum, SolderSum())"));
  EXPECT_TRUE(has(K.Source, "solder_warp_reduce(sq, SolderSum())"));
  EXPECT_EQ(K.Grid[0], 4u); // 32 rows, 8 per block
  // Each input element is loaded once, two floats at a time (64 per row:
  // a lane's two 8-byte vectors).
  size_t Loads = 0;
  for (size_t P = K.Source.find("(in0 + "); P != std::string::npos;
       P = K.Source.find("(in0 + ", P + 1))
    ++Loads;
  EXPECT_EQ(Loads, 1u) << K.Source;
  EXPECT_TRUE(has(K.Source, "reinterpret_cast<const uint2 *>(in0 + row * 64 + "
                            "jv * 2)[0]"))
      << K.Source;
  // The perturbation goes to the first result only.
  CodegenOptions O;
  O.PerturbGroupId = 9;
  GeneratedKernel P = theKernel(*G, O);
  EXPECT_TRUE(has(P.Source, "st0[e] = perturbed;")) << P.Source;
  EXPECT_FALSE(has(P.Source, "st1[e] = perturbed")) << P.Source;
}

/// Residual add + LayerNorm over 128 f16 rows of Cols, as reduction group 3.
static std::unique_ptr<Graph> addLayerNormRows(int64_t Cols) {
  std::string Text = R"(  input %x : f16[128,C]
  input %r : f16[128,C]
  input %s : f16[C]
  input %b : f16[C]
  %h = Add(%x, %r) : f16[128,C] @"add"
  %n = LayerNormalization(%h, %s, %b) {axis = -1, epsilon = 1e-05} : f16[128,C] @"ln"
  output %n)";
  std::string N = std::to_string(Cols);
  for (size_t P = Text.find("C]"); P != std::string::npos;
       P = Text.find("C]", P))
    Text.replace(P, 1, N);
  return grouped(Text, {"add", "ln"}, GroupKind::Reduction, 3);
}

// f16 rows of 768: each lane moves 16 bytes (8 halves) per access of X,
// gamma, beta and the result; the statistics are unchanged.
/// x [2, S, 64] plus a position table [1, S, 64], LayerNorm'd: BERT's
/// embeddings.
static std::unique_ptr<Graph> positionLayerNorm(int64_t S) {
  std::string X = "f32[2," + std::to_string(S) + ",64]";
  return grouped("  input %x : " + X + "\n  input %p : f32[1," +
                     std::to_string(S) +
                     ",64]\n  input %s : f32[64]\n  input %b : f32[64]\n"
                     "  %h = Add(%x, %p) : " +
                     X +
                     " @\"add\"\n  %n = LayerNormalization(%h, %s, %b) "
                     "{axis = -1, epsilon = 1e-05} : " +
                     X + " @\"ln\"\n  output %n",
                 {"add", "ln"}, GroupKind::Reduction, 1);
}

/// K's text as the kernel cache sees it.
static std::string withoutSummary(const GeneratedKernel &K) {
  EXPECT_NE(withoutSummaryComment(K.Source, K.Summary), K.Source);
  return withoutSummaryComment(K.Source, K.Summary);
}

TEST(FusedReduction, VariantRowsTakeTheirSequenceLengthAsACount) {
  // In a dynamic model's variants the table's row is the row index modulo
  // S, and S a parameter: at another sequence length the kernel is the
  // same text. A static plan bakes S.
  CodegenOptions O;
  O.ShapeParams = true;
  auto G16 = positionLayerNorm(16), G40 = positionLayerNorm(40);
  ASSERT_TRUE(G16 && G40);
  GeneratedKernel K16 = theKernel(*G16, O), K40 = theKernel(*G40, O);
  EXPECT_EQ(K16.Counts, (std::vector<int64_t>{32, 16}));
  EXPECT_EQ(K40.Counts, (std::vector<int64_t>{80, 40}));
  EXPECT_TRUE(has(K16.Source, "(row % (idx_t)cnt1) * 64")) << K16.Source;
  EXPECT_EQ(withoutSummary(K16), withoutSummary(K40));
  EXPECT_TRUE(has(theKernel(*G16).Source, "(row % 16) * 64"));
}

TEST(FusedReduction, RowLengthStaysBakedIn) {
  // Negative twin: the row's length sizes each thread's registers, so in
  // variants too rows of another hidden size are another kernel.
  CodegenOptions O;
  O.ShapeParams = true;
  auto Narrow = addLayerNormRows(64), Wide = addLayerNormRows(128);
  ASSERT_TRUE(Narrow && Wide);
  EXPECT_NE(withoutSummary(theKernel(*Narrow, O)),
            withoutSummary(theKernel(*Wide, O)));
}

TEST(FusedReduction, LayerNormRowsMoveSixteenByteVectors) {
  auto G = addLayerNormRows(768);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  EXPECT_TRUE(has(K.Source, "float xv[24];")) << K.Source;
  EXPECT_TRUE(has(K.Source, "for (int kv = 0; kv < 3; ++kv)")) << K.Source;
  EXPECT_TRUE(has(K.Source, "reinterpret_cast<const uint4 *>(in0 + row * 768 "
                            "+ jv * 8)[0]"))
      << K.Source;
  EXPECT_TRUE(has(K.Source, "reinterpret_cast<const uint4 *>(in2 + jv * 8)[0]"))
      << K.Source;
  EXPECT_TRUE(has(K.Source, "reinterpret_cast<uint4 *>(out0 + row * 768 + jv "
                            "* 8)[0] = st0_raw[0];"))
      << K.Source;
  EXPECT_FALSE(has(K.Source, "out0[(row")) << K.Source;
}

// Negative twin: rows of 100 halves split into no whole vectors per lane
// (100 is no multiple of 32 lanes x 2, 4 or 8): element accesses.
TEST(FusedReduction, RowsThatSplitUnevenlyStayElementAccesses) {
  auto G = addLayerNormRows(100);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  EXPECT_FALSE(has(K.Source, "uint")) << K.Source;
  EXPECT_TRUE(has(K.Source, "out0[(row * 100 + j)] = ")) << K.Source;
}

TEST(FusedReduction, ScaledMaskedSoftmax) {
  auto G = grouped(R"(  input %q : f32[2,4,8,8]
  input %mask : f32[2,1,1,8]
  const %scale : f32[] = [2.0]
  %d = Div(%q, %scale) : f32[2,4,8,8] @"div"
  %a = Add(%d, %mask) : f32[2,4,8,8] @"add"
  %p = Softmax(%a) {axis = -1} : f32[2,4,8,8] @"softmax"
  output %p)",
                   {"div", "add", "softmax"}, GroupKind::Reduction, 2);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  ASSERT_EQ(K.Inputs.size(), 2u);
  // Eight elements per row: one thread per row, no shuffles.
  EXPECT_FALSE(has(K.Source, "solder_warp_reduce(mx")) << K.Source;
  EXPECT_TRUE(has(K.Source, "expf(")) << K.Source;
  EXPECT_TRUE(has(K.Source, "(0x1p+1f)")) << K.Source;
}

TEST(FusedReduction, LogSoftmaxOverLongRowsUsesTheBlock) {
  auto G = grouped(R"(  input %x : f16[4,20000]
  %n = Neg(%x) : f16[4,20000] @"neg"
  %p = LogSoftmax(%n) {axis = 1} : f16[4,20000] @"lsm"
  output %p)",
                   {"neg", "lsm"}, GroupKind::Reduction, 2);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  // Too long to keep in registers: each pass reads again.
  EXPECT_FALSE(has(K.Source, "xv[")) << K.Source;
  EXPECT_TRUE(has(K.Source, "solder_block_reduce(mx, SolderMax())"));
  EXPECT_TRUE(has(K.Source, "j += 256")) << K.Source;
}

TEST(FusedReduction, ReduceMeanWithEpilogueRunsPerRow) {
  auto G = grouped(R"(  input %x : f32[2,32,7,7]
  const %axes : i64[2] = [2, 3]
  %m = ReduceMean(%x, %axes) {keepdims = 1} : f32[2,32,1,1] @"mean"
  const %k : f32[] = [3.0]
  %s = Mul(%m, %k) : f32[2,32,1,1] @"mul"
  const %shape : i64[2] = [2, 32]
  %f = Reshape(%s, %shape) : f32[2,32] @"flat"
  output %f)",
                   {"mean", "mul", "flat"}, GroupKind::Reduction, 4);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  // The axes (an outer constant) are baked in.
  ASSERT_EQ(K.Inputs.size(), 1u);
  EXPECT_EQ(K.Inputs[0]->name(), "x");
  EXPECT_TRUE(has(K.Source, "if (lane == 0) {")) << K.Source;
  EXPECT_TRUE(has(K.Source, "out0[row] = ")) << K.Source;
  EXPECT_TRUE(has(K.Source, "in0[(row * 49 + j)]")) << K.Source;
}

TEST(FusedReduction, RMSNormWithScale) {
  auto G = grouped(R"(  input %x : bf16[4,2048]
  input %s : bf16[2048]
  %r = RMSNormalization(%x, %s) {axis = -1, epsilon = 1e-06} : bf16[4,2048] @"rms"
  %o = Mul(%r, %x) : bf16[4,2048] @"gate"
  output %o)",
                   {"rms", "gate"}, GroupKind::Reduction, 1);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  EXPECT_TRUE(has(K.Source, "#include <cuda_bf16.h>"));
  EXPECT_TRUE(has(K.Source, "float xv[8];")) << K.Source;
  EXPECT_TRUE(has(K.Source, "solder_block_reduce(sq, SolderSum())"));
  EXPECT_TRUE(has(K.Source, "* inv * ")) << K.Source;
}

TEST(FusedReduction, LayerNormStatisticsAreRowResults) {
  auto G = grouped(R"(  input %x : f32[3,40]
  input %s : f32[40]
  %n, %mean, %inv = LayerNormalization(%x, %s, none) {axis = 1} : f32[3,40], f32[3,1], f32[3,1] @"ln"
  %r = Relu(%n) : f32[3,40] @"relu"
  output %r
  output %mean
  output %inv)",
                   {"ln", "relu"}, GroupKind::Reduction, 1);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  ASSERT_EQ(K.Outputs.size(), 3u);
  EXPECT_TRUE(has(K.Source, "= mean;")) << K.Source;
  EXPECT_TRUE(has(K.Source, "= inv;")) << K.Source;
}

TEST(FusedReduction, NonInnermostAxisIsRefused) {
  auto G = grouped(R"(  input %x : f32[2,8,4]
  %e = Exp(%x) : f32[2,8,4] @"exp"
  const %axes : i64[1] = [1]
  %s = ReduceSum(%e, %axes) {keepdims = 1} : f32[2,1,4] @"sum"
  output %s)",
                   {"exp", "sum"}, GroupKind::Reduction, 3);
  ASSERT_TRUE(G);
  std::string E = errorOf(*G);
  EXPECT_TRUE(has(E, "fused group 3 (reduction)")) << E;
  EXPECT_TRUE(has(E, "not innermost")) << E;
}

TEST(FusedReduction, InnermostTwinIsAccepted) {
  auto G = grouped(R"(  input %x : f32[2,8,4]
  %e = Exp(%x) : f32[2,8,4] @"exp"
  const %axes : i64[1] = [2]
  %s = ReduceSum(%e, %axes) {keepdims = 1} : f32[2,8,1] @"sum"
  output %s)",
                   {"exp", "sum"}, GroupKind::Reduction, 3);
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  EXPECT_TRUE(has(K.Source, "expf(")) << K.Source;
}

//===----------------------------------------------------------------------===//
// RMSNormalization alone
//===----------------------------------------------------------------------===//

TEST(StandaloneKernels, RMSNormalization) {
  auto G = parse(R"(  input %x : f32[6,96]
  input %s : f32[96]
  %r = RMSNormalization(%x, %s) {epsilon = 1e-05} : f32[6,96] @"rms"
  output %r)");
  ASSERT_TRUE(G);
  GeneratedKernel K = theKernel(*G);
  EXPECT_EQ(K.Name, "solder_0_rmsnormalization");
  EXPECT_EQ(K.GroupId, -1);
  ASSERT_EQ(K.Inputs.size(), 2u);
  EXPECT_TRUE(has(K.Source, "sq += d * d;")) << K.Source;
  EXPECT_FALSE(has(K.Source, "sum +=")) << K.Source;
}

//===----------------------------------------------------------------------===//
// Every op of the shared models, each as its own group
//===----------------------------------------------------------------------===//

// Each fusable node of a real model outlined alone (a loop group for the
// indexing ops, a reduction group for the row reductions) must give a kernel
// NVRTC compiles: the fused emitters cover every op and dtype the models use.
TEST(FusedModels, EveryNodeAsItsOwnGroupCompiles) {
  std::string Dir = std::string(SOLDER_SHARED_DIR) + "/models";
  if (!llvm::sys::fs::exists(Dir))
    GTEST_SKIP() << "shared models not found at " << Dir;
  struct Case {
    const char *File;
    std::map<std::string, std::vector<int64_t>> Shapes;
  };
  const Case Cases[] = {
      {"mobilenetv2_050_opset17.onnx", {{"input", {2, 3, 96, 96}}}},
      {"resnet10_dynamo.onnx", {}},
      {"bert_mini_opset14.onnx",
       {{"input_ids", {2, 16}}, {"attention_mask", {2, 16}}}},
      {"bert_mini_dynamo.onnx", {}},
  };
  for (const Case &C : Cases) {
    std::string Path = Dir + "/" + C.File;
    if (!llvm::sys::fs::exists(Path))
      continue;
    ImportOptions IO;
    for (auto &S : C.Shapes)
      IO.InputShapes[S.first] = S.second;
    auto G = importOnnxFile(Path, IO);
    if (!G)
      continue; // the frontend's tests cover import
    PipelineOptions PO;
    PO.NoFusion = true; // this test makes its own one-node groups
    ASSERT_FALSE(bool(runPipeline(**G, PO))) << C.File;
    std::vector<std::pair<Node *, GroupKind>> Picks;
    for (const auto &N : (*G)->nodes()) {
      const OpInfo &Info = getOpInfo(N->kind());
      bool Static = true;
      for (const Value *V : N->results())
        Static &= !V || V->type().isStatic();
      if (!Static || N->body())
        continue;
      if (Info.ComposableIndexing && !Info.IsView)
        Picks.push_back({N.get(), GroupKind::Loop});
      else if (Info.Fusion == FusionKind::Reduction)
        Picks.push_back({N.get(), GroupKind::Reduction});
    }
    int64_t Id = 0;
    unsigned Groups = 0;
    for (auto &[N, Kind] : Picks) {
      auto Group = outlineFusedGroup(**G, {N}, Kind, Id++);
      ASSERT_TRUE(bool(Group)) << llvm::toString(Group.takeError());
      ++Groups;
    }
    auto K = emitGraphKernels(**G);
    ASSERT_TRUE(bool(K)) << C.File << ": " << llvm::toString(K.takeError());
    unsigned Fused = 0;
    for (const GeneratedKernel &Kn : *K)
      Fused += Kn.GroupId >= 0;
    EXPECT_EQ(Fused, Groups) << C.File;
    EXPECT_GT(Groups, 0u) << C.File;
    std::printf("  %-32s %3u groups, %3zu kernels\n", C.File, Groups,
                K->size());
    expectCompiles(*K);
  }
}

} // namespace

TEST(FusedLoop, ConstantTablesAreNotVectorized) {
  // Found on the GPU: a body constant read as data was indexed by the
  // vector lane instead of the element.
  auto G = solder::parseGraph(R"(graph "g" opset 17 {
  input %x : i64[2,2]
  %y = FusedGroup(%x) {id = 0, kind = "loop", members = ["a", "m"]} : i64[2,2] body graph "g0" opset 17 {
    input %x : i64[2,2]
    const %c : i64[2,2] = [1, 2, 3, 4]
    %a = Add(%x, %c) : i64[2,2] @"a"
    %y = Mul(%x, %a) : i64[2,2] @"m"
    output %y
  }
  output %y
})");
  ASSERT_TRUE(bool(G)) << llvm::toString(G.takeError());
  auto K = solder::emitGraphKernels(**G);
  ASSERT_TRUE(bool(K)) << llvm::toString(K.takeError());
  ASSERT_EQ(K->size(), 1u);
  EXPECT_EQ((*K)[0].Source.find("uint4"), std::string::npos) << (*K)[0].Source;
  EXPECT_NE((*K)[0].Source.find("ctab_0[i]"), std::string::npos)
      << (*K)[0].Source;
}
