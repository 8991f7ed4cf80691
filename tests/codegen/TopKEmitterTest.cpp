//===- TopKEmitterTest.cpp - TopK kernels ---------------------------------===//
//
// The generated TopK kernel (each element's rank within its line, written
// at that rank when below K; largest or smallest baked), compiled with
// NVRTC for every numeric type, and refused clearly for a runtime K.
//
//===----------------------------------------------------------------------===//
#include "tests/codegen/EmitterTestUtils.h"

using namespace solder;
using namespace solder::testing;

namespace {

std::string topKGraph(const std::string &T, const std::string &Attrs) {
  return "  input %x : " + T +
         "[3,10,4]\n  const %k : i64[1] = [2]\n  %v, %i = TopK(%x, %k) {" +
         Attrs + "}\n  output %v\n  output %i";
}

TEST(TopKEmitter, RanksEachElementWithinItsLine) {
  auto G = parseBody(topKGraph("f32", "axis = 1, largest = 0"));
  ASSERT_TRUE(G);
  std::string S = onlyKernel(*G).Source;
  EXPECT_TRUE(contains(S, "j < 10; ++j)")) << S;
  EXPECT_TRUE(contains(S, "rank += solder_topk_before<false>(")) << S;
  EXPECT_TRUE(contains(S, "if (rank < 2)")) << S;
  // Line l's slot r is at (l / 4) * 8 + r * 4 + l % 4.
  EXPECT_TRUE(contains(S, "(i / 40) * 8 + rank * 4 + inner")) << S;
}

TEST(TopKEmitter, CompilesForEveryNumericType) {
  std::vector<std::string> Bodies;
  for (const char *T :
       {"f32", "f16", "bf16", "f64", "i8", "u8", "i32", "u32", "i64", "u64"})
    Bodies.push_back(topKGraph(T, "axis = -1"));
  expectEachCompiles(Bodies);
}

TEST(TopKEmitter, RefusesARuntimeK) {
  auto G = parseBody("  input %x : f32[4,5]\n  input %k : i64[1]\n"
                     "  %v, %i = TopK(%x, %k) @\"tk\"\n  output %v");
  ASSERT_TRUE(G);
  std::string E = emitErrorOf(*G);
  EXPECT_TRUE(contains(E, "TopK node 'tk'")) << E;
}

} // namespace
