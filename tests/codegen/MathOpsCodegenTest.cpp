//===- MathOpsCodegenTest.cpp - Trigonometric, rounding and Mod kernels ---===//
//
// Emits the kernels of the trigonometric and hyperbolic ops, Round, Sign,
// Mish, IsNaN/IsInf and Mod for every dtype each accepts and compiles them
// all with NVRTC (sm_90, no GPU needed), and checks the clear refusals for
// the dtypes they do not accept. The expressions themselves are checked in
// ExprTableTest.cpp.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelEmitter.h"
#include "ir/Parser.h"
#include "tests/codegen/TestNvrtc.h"
#include <gtest/gtest.h>

using namespace solder;
using solder::testing::testNvrtcOptions;

namespace {

const char *const FloatUnaryOps[] = {
    "Sin",   "Cos",   "Tan",   "Asin",  "Acos", "Atan", "Sinh",  "Cosh",
    "Asinh", "Acosh", "Atanh", "Round", "Sign", "Mish", "IsNaN", "IsInf"};
const char *const FloatTypes[] = {"f32", "f16", "bf16", "f64"};
const char *const IntTypes[] = {"i8",  "u8",  "i16", "u16",
                                "i32", "u32", "i64", "u64"};

std::unique_ptr<Graph> parse(const std::string &Body) {
  std::string Text = "graph \"g\" opset 21 {\n" + Body + "\n}\n";
  auto G = parseGraph(Text);
  EXPECT_TRUE(bool(G)) << llvm::toString(G.takeError()) << "\n" << Text;
  return G ? std::move(*G) : nullptr;
}

/// Emits G's kernels into All (failing the test on an error).
void emitInto(const Graph &G, std::vector<GeneratedKernel> &All) {
  auto K = emitGraphKernels(G);
  ASSERT_TRUE(bool(K)) << llvm::toString(K.takeError());
  for (GeneratedKernel &Kernel : *K)
    All.push_back(std::move(Kernel));
}

void expectCompiles(const std::vector<GeneratedKernel> &All) {
  auto Cubins = compileKernels(All, testNvrtcOptions());
  ASSERT_TRUE(bool(Cubins)) << llvm::toString(Cubins.takeError());
  ASSERT_EQ(Cubins->size(), All.size());
}

std::string errorOf(const std::string &Body) {
  auto G = parse(Body);
  if (!G)
    return "<parse error>";
  auto K = emitGraphKernels(*G);
  return K ? "<no error>" : llvm::toString(K.takeError());
}

TEST(MathOpsCodegen, FloatOpsCompileOnEveryFloatType) {
  std::vector<GeneratedKernel> All;
  std::vector<std::unique_ptr<Graph>> Graphs; // the kernels point into them
  for (const char *T : FloatTypes) {
    std::string Body = std::string("  input %x : ") + T + "[3,5]\n";
    for (const char *Op : FloatUnaryOps)
      Body +=
          std::string("  %") + Op + " = " + Op + "(%x)\n  output %" + Op + "\n";
    Body += "  %pos = IsInf(%x) {detect_negative = 0}\n  output %pos\n";
    Body += "  %neg = IsInf(%x) {detect_positive = 0}\n  output %neg\n";
    Body += "  input %d : " + std::string(T) + "[5]\n";
    Body += "  %m = Mod(%x, %d) {fmod = 1}\n  output %m";
    auto G = parse(Body);
    ASSERT_TRUE(G);
    emitInto(*G, All);
    Graphs.push_back(std::move(G));
  }
  // 16 unary ops, two more IsInf modes and Mod, per type.
  EXPECT_EQ(All.size(), 4u * 19u);
  expectCompiles(All);
}

TEST(MathOpsCodegen, SignAndModCompileOnEveryIntegerType) {
  std::vector<GeneratedKernel> All;
  std::vector<std::unique_ptr<Graph>> Graphs;
  for (const char *T : IntTypes) {
    std::string Ty = T;
    auto G = parse("  input %x : " + Ty + "[2,8]\n  input %d : " + Ty +
                   "[8]\n  const %three : " + Ty + "[] = [3]\n" +
                   "  %s = Sign(%x)\n  output %s\n" +
                   "  %p = Mod(%x, %d)\n  output %p\n" +
                   "  %c = Mod(%x, %d) {fmod = 1}\n  output %c\n" +
                   "  %k = Mod(%x, %three)\n  output %k");
    ASSERT_TRUE(G);
    emitInto(*G, All);
    Graphs.push_back(std::move(G));
  }
  ASSERT_EQ(All.size(), 8u * 4u);
  // The scalar divisor is baked in: one input.
  EXPECT_EQ(All[3].Inputs.size(), 1u);
  EXPECT_NE(All[3].Source.find("(3)"), std::string::npos) << All[3].Source;
  expectCompiles(All);
}

TEST(MathOpsCodegen, UnsupportedDTypesAreRefusedNamingTheNode) {
  std::string E = errorOf("  input %x : i32[4]\n  %y = Sin(%x) @\"s\"\n"
                          "  output %y");
  EXPECT_NE(E.find("Sin node 's'"), std::string::npos) << E;
  EXPECT_NE(E.find("does not support Sin on i32"), std::string::npos) << E;
  E = errorOf("  input %x : u16[4]\n  %y = Round(%x)\n  output %y");
  EXPECT_NE(E.find("does not support Round on u16"), std::string::npos) << E;
  E = errorOf("  input %x : bool[4]\n  %y = Sign(%x)\n  output %y");
  EXPECT_NE(E.find("does not support Sign on bool"), std::string::npos) << E;
  E = errorOf("  input %x : i64[4]\n  %y = Mish(%x)\n  output %y");
  EXPECT_NE(E.find("does not support Mish on i64"), std::string::npos) << E;
}

TEST(MathOpsCodegen, ShapeInferenceRefusesWhatONNXLeavesUndefined) {
  // Float Mod needs fmod = 1; IsNaN/IsInf take floats only.
  auto G = parseGraph("graph \"g\" opset 21 {\n  input %x : f32[4]\n"
                      "  %y = Mod(%x, %x)\n  output %y\n}\n");
  ASSERT_FALSE(bool(G));
  std::string E = llvm::toString(G.takeError());
  EXPECT_NE(E.find("fmod must be 1 for f32 operands"), std::string::npos) << E;
  auto H = parseGraph("graph \"g\" opset 21 {\n  input %x : i32[4]\n"
                      "  %y = IsNaN(%x)\n  output %y\n}\n");
  ASSERT_FALSE(bool(H));
  E = llvm::toString(H.takeError());
  EXPECT_NE(E.find("expects a float operand, got i32"), std::string::npos) << E;
}

} // namespace
