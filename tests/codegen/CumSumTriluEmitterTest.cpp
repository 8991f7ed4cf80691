//===- CumSumTriluEmitterTest.cpp - CumSum and Trilu kernels --------------===//
//
// The generated CumSum kernel (one thread per line, its base and step, the
// order of store and add for exclusive, the walk for reverse, wrapping
// integer accumulators) and Trilu kernel (the baked, clamped k and the
// comparison per mode); both compiled with NVRTC for every dtype they
// accept, and refused clearly for operands they cannot bake.
//
//===----------------------------------------------------------------------===//
#include "tests/codegen/EmitterTestUtils.h"

using namespace solder;
using solder::testing::expectEachCompiles;
using solder::testing::onlyKernel;

namespace {

std::unique_ptr<Graph> parse(const std::string &Body) {
  return solder::testing::parseBody(Body);
}

std::string errorOf(const Graph &G) { return solder::testing::emitErrorOf(G); }

bool has(const std::string &S, llvm::StringRef Piece) {
  return solder::testing::contains(S, Piece);
}

std::string cumSumGraph(const std::string &T, const std::string &Dims,
                        int64_t Axis, const std::string &Attrs = "") {
  return "  input %x : " + T + "[" + Dims + "]\n  const %a : i64[] = [" +
         std::to_string(Axis) + "]\n  %y = CumSum(%x, %a)" +
         (Attrs.empty() ? "" : " {" + Attrs + "}") + "\n  output %y";
}

TEST(CumSumEmitter, OneThreadPerLineAlongAMiddleAxis) {
  auto G = parse(cumSumGraph("f32", "2,5,3", 1));
  ASSERT_TRUE(G);
  GeneratedKernel K = onlyKernel(*G);
  const std::string &S = K.Source;
  // 6 lines of 5 elements, 3 apart.
  EXPECT_TRUE(has(S, "l < (idx_t)cnt0;")) << S;
  EXPECT_EQ(K.Counts, std::vector<int64_t>{6});
  EXPECT_TRUE(has(S, "(l / 3) * 15 + l % 3")) << S;
  EXPECT_TRUE(has(S, "for (idx_t j = 0; j < 5; ++j)")) << S;
  EXPECT_TRUE(has(S, " + j * 3;")) << S;
  EXPECT_TRUE(has(S, "float acc = 0;")) << S;
  // Inclusive: add, then store.
  EXPECT_LT(S.find("acc += "), S.find("] = (float)acc;")) << S;
  EXPECT_EQ(K.Inputs.size(), 1u); // the axis is baked in
}

TEST(CumSumEmitter, ExclusiveReverseAndWrappingIntegers) {
  auto G = parse(cumSumGraph("i32", "4,6", -1, "exclusive = 1, reverse = 1"));
  ASSERT_TRUE(G);
  const std::string S = onlyKernel(*G).Source;
  EXPECT_TRUE(has(S, "l * 6;")) << S;
  EXPECT_TRUE(has(S, "(5 - j)")) << S;
  EXPECT_TRUE(has(S, "unsigned int acc = 0;")) << S;
  EXPECT_TRUE(has(S, "= (int)acc;")) << S;
  // Exclusive: store the sum so far, then add.
  EXPECT_LT(S.find("] = (int)acc;"), S.find("acc += ")) << S;
}

TEST(CumSumEmitter, CompilesForEveryDType) {
  std::vector<std::string> Bodies;
  for (const char *T :
       {"f32", "f16", "bf16", "f64", "i32", "u32", "i64", "u64"})
    for (const char *Attrs : {"", "exclusive = 1, reverse = 1"})
      Bodies.push_back(cumSumGraph(T, "3,4,5", 1, Attrs));
  expectEachCompiles(Bodies);
}

TEST(CumSumEmitter, RefusesRuntimeAxesAndOtherDTypes) {
  auto G = parse("  input %x : f32[4]\n  input %a : i64[]\n"
                 "  %y = CumSum(%x, %a) @\"cs\"\n  output %y");
  ASSERT_TRUE(G);
  std::string E = errorOf(*G);
  EXPECT_TRUE(has(E, "CumSum node 'cs'")) << E;
  EXPECT_TRUE(has(E, "axis must be a constant for code generation")) << E;
  auto H = parse(cumSumGraph("i8", "4", 0));
  ASSERT_TRUE(H);
  E = errorOf(*H);
  EXPECT_TRUE(has(E, "does not support CumSum on i8")) << E;
}

std::string triluGraph(const std::string &T, const std::string &Dims,
                       const std::string &K, const std::string &Attrs = "") {
  std::string S = "  input %x : " + T + "[" + Dims + "]\n";
  if (!K.empty())
    S += "  const %k : i64[] = [" + K + "]\n";
  return S + "  %y = Trilu(%x" + (K.empty() ? "" : ", %k") + ")" +
         (Attrs.empty() ? "" : " {" + Attrs + "}") + "\n  output %y";
}

TEST(TriluEmitter, ComparesColumnMinusRowWithK) {
  auto G = parse(triluGraph("f32", "2,3,4", "1"));
  ASSERT_TRUE(G);
  GeneratedKernel K = onlyKernel(*G);
  EXPECT_TRUE(has(K.Source, "i % 4")) << K.Source;
  EXPECT_TRUE(has(K.Source, "(i / 4) % 3")) << K.Source;
  EXPECT_TRUE(has(K.Source, " >= 1 ? in0[i] : (0x0p+0f);")) << K.Source;
  EXPECT_EQ(K.Inputs.size(), 1u);
  auto L = parse(triluGraph("bool", "3,3", "", "upper = 0"));
  ASSERT_TRUE(L);
  EXPECT_TRUE(has(onlyKernel(*L).Source, " <= 0 ? in0[i] : false;"));
  // k far outside the matrix is clamped to [-rows, cols].
  auto F = parse(triluGraph("i64", "3,5", "-1000000000000"));
  ASSERT_TRUE(F);
  EXPECT_TRUE(has(onlyKernel(*F).Source, " >= (-3) ? in0[i]"));
}

TEST(TriluEmitter, CompilesForEveryDType) {
  std::vector<std::string> Bodies;
  for (const char *T : {"f32", "f16", "bf16", "f64", "i8", "u8", "i16", "u16",
                        "i32", "u32", "i64", "u64", "bool"})
    Bodies.push_back(triluGraph(T, "2,5,7", "-2", "upper = 0"));
  expectEachCompiles(Bodies);
}

TEST(TriluEmitter, RefusesARuntimeK) {
  auto G = parse("  input %x : f32[3,3]\n  input %k : i64[]\n"
                 "  %y = Trilu(%x, %k) @\"t\"\n  output %y");
  ASSERT_TRUE(G);
  std::string E = errorOf(*G);
  EXPECT_TRUE(has(E, "Trilu node 't'")) << E;
  EXPECT_TRUE(has(E, "k must be a constant for code generation")) << E;
}

} // namespace
