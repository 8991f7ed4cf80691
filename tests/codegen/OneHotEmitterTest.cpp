//===- OneHotEmitterTest.cpp - OneHot kernels -----------------------------===//
//
// The generated OneHot kernel (the baked depth and split around the axis,
// the wrap of negative indices, values copied in their storage type),
// compiled with NVRTC for every index and value type, and refused clearly
// for a depth it cannot bake.
//
//===----------------------------------------------------------------------===//
#include "tests/codegen/EmitterTestUtils.h"

using namespace solder;
using namespace solder::testing;

namespace {

std::string oneHotGraph(const std::string &IT, const std::string &VT,
                        const std::string &Dims, int64_t Axis) {
  return "  input %i : " + IT + "[" + Dims +
         "]\n  const %d : i64[] = [4]\n  input %v : " + VT +
         "[2]\n  %y = OneHot(%i, %d, %v) {axis = " + std::to_string(Axis) +
         "}\n  output %y";
}

TEST(OneHotEmitter, SplitsAroundTheAxisAndWrapsNegativeIndices) {
  auto G = parseBody(oneHotGraph("i64", "f32", "3,5", 1));
  ASSERT_TRUE(G);
  std::string S = onlyKernel(*G).Source;
  // Result [3, 4, 5]: inner 5, depth 4.
  EXPECT_TRUE(contains(S, "i % 5;")) << S;
  EXPECT_TRUE(contains(S, "(i / 5) % 4;")) << S;
  EXPECT_TRUE(contains(S, "(i / 20) * 5 + inner")) << S;
  EXPECT_TRUE(contains(S, "if (hot < 0) hot += 4;")) << S;
  EXPECT_TRUE(contains(S, "== hot ? in1[1] : in1[0];")) << S;
  // Unsigned indices cannot be negative: no wrap.
  auto U = parseBody(oneHotGraph("u8", "f32", "3", -1));
  ASSERT_TRUE(U);
  EXPECT_FALSE(contains(onlyKernel(*U).Source, "hot += "));
}

TEST(OneHotEmitter, CompilesForEveryIndexAndValueType) {
  std::vector<std::string> Bodies;
  for (const char *IT :
       {"i64", "i32", "i8", "u8", "u64", "f32", "f16", "bf16", "f64"})
    Bodies.push_back(oneHotGraph(IT, "f32", "2,3", 0));
  for (const char *VT : {"f16", "bf16", "f64", "i64", "i32", "u8", "bool"})
    Bodies.push_back(oneHotGraph("i64", VT, "2,3", -1));
  expectEachCompiles(Bodies);
}

TEST(OneHotEmitter, RefusesARuntimeDepth) {
  auto G = parseBody("  input %i : i64[3]\n  input %d : i64[]\n"
                     "  input %v : f32[2]\n"
                     "  %y = OneHot(%i, %d, %v) @\"oh\"\n  output %y");
  ASSERT_TRUE(G);
  std::string E = emitErrorOf(*G);
  EXPECT_TRUE(contains(E, "OneHot node 'oh'")) << E;
  // A runtime depth leaves the result's shape unknown.
  EXPECT_TRUE(contains(E, "needs static shapes")) << E;
}

} // namespace
