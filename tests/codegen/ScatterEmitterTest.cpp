//===- ScatterEmitterTest.cpp - ScatterElements and ScatterND kernels -----===//
//
// The generated scatter kernels (each output element walks its candidate
// updates in order; the reduction's combine line), compiled with NVRTC
// for every reduction and several data and index types; a reduction on
// bool or an unknown one is refused by shape inference, naming the node.
//
//===----------------------------------------------------------------------===//
#include "tests/codegen/EmitterTestUtils.h"

using namespace solder;
using namespace solder::testing;

namespace {

std::string elementsGraph(const std::string &T, const std::string &IT,
                          const std::string &Red) {
  return "  input %d : " + T + "[4,5]\n  input %i : " + IT +
         "[2,5]\n  input %u : " + T +
         "[2,5]\n  %y = ScatterElements(%d, %i, %u) {axis = 0, reduction = "
         "\"" +
         Red + "\"} @\"se\"\n  output %y";
}

std::string ndGraph(const std::string &T, const std::string &Red) {
  return "  input %d : " + T +
         "[4,5,2]\n  input %i : i64[3,2]\n  input %u : " + T +
         "[3,2]\n  %y = ScatterND(%d, %i, %u) {reduction = \"" + Red +
         "\"}\n  output %y";
}

TEST(ScatterEmitter, WalksCandidatesInUpdateOrder) {
  auto G = parseBody(elementsGraph("f32", "i64", "add"));
  ASSERT_TRUE(G);
  std::string S = onlyKernel(*G).Source;
  // Output (r, c) sees the updates of column c, rows 0 and 1.
  EXPECT_TRUE(contains(S, "j < 2; ++j)")) << S;
  EXPECT_TRUE(contains(S, "if (at < 0) at += 4;")) << S;
  EXPECT_TRUE(contains(S, "acc = acc + x;")) << S;
  auto H = parseBody(ndGraph("f32", "none"));
  ASSERT_TRUE(H);
  std::string N = onlyKernel(*H).Source;
  EXPECT_TRUE(contains(N, "t < 3; ++t)")) << N;
  EXPECT_TRUE(contains(N, "acc = x;")) << N;
}

TEST(ScatterEmitter, CompilesForEveryReduction) {
  std::vector<std::string> Bodies;
  for (const char *R : {"none", "add", "mul", "max", "min"})
    for (const char *T : {"f32", "f16", "i64"}) {
      Bodies.push_back(elementsGraph(T, "i32", R));
      Bodies.push_back(ndGraph(T, R));
    }
  Bodies.push_back(elementsGraph("bool", "i64", "none"));
  Bodies.push_back(elementsGraph("bf16", "i64", "max"));
  expectEachCompiles(Bodies);
}

TEST(ScatterEmitter, ShapeInferenceRefusesBadReductions) {
  // The IR never holds these, so the emitter never sees them.
  for (auto [T, R] : {std::pair{"bool", "add"}, std::pair{"f32", "median"}}) {
    auto G = parseGraph("graph \"g\" opset 21 {\n" +
                        elementsGraph(T, "i64", R) + "\n}\n");
    ASSERT_FALSE(bool(G));
    std::string E = llvm::toString(G.takeError());
    EXPECT_TRUE(contains(E, "ScatterElements node 'se'")) << E;
    EXPECT_TRUE(contains(E, std::string("reduction '") + R + "'")) << E;
  }
}

} // namespace
