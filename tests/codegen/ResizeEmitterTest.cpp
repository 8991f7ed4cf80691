//===- ResizeEmitterTest.cpp - Resize kernels -----------------------------===//
//
// The generated Resize kernel (tap tables baked per resized axis, kept
// axes folded into the base offset, the extrapolation flag of
// tf_crop_and_resize), compiled with NVRTC for every float type and mode,
// and refused clearly for integer tensors and runtime scales.
//
//===----------------------------------------------------------------------===//
#include "tests/codegen/EmitterTestUtils.h"

using namespace solder;
using namespace solder::testing;

namespace {

std::string resizeGraph(const std::string &T, const std::string &Attrs,
                        const std::string &Scales = "1, 1, 2, 2") {
  return "  input %x : " + T + "[1,3,4,5]\n  const %s : f32[4] = [" + Scales +
         "]\n  %y = Resize(%x, none, %s) {" + Attrs + "} @\"rs\"\n  output %y";
}

TEST(ResizeEmitter, BakesTablesForResizedAxesOnly) {
  auto G = parseBody(resizeGraph("f32", "mode = \"linear\""));
  ASSERT_TRUE(G);
  std::string S = onlyKernel(*G).Source;
  // Height 4 -> 8 and width 5 -> 10 with 2 taps each: two index and two
  // weight tables; batch and channel stay in the base offset.
  EXPECT_TRUE(contains(S, "__device__ const long long resize_idx[] = {")) << S;
  EXPECT_TRUE(contains(S, "__device__ const float resize_w1[] = {")) << S;
  EXPECT_FALSE(contains(S, "resize_idx2")) << S;
  EXPECT_TRUE(contains(S, "t < 2; ++t)")) << S;
  EXPECT_TRUE(contains(S, " * 20 + ")) << S; // the channel stride
  EXPECT_FALSE(contains(S, "resize_ext")) << S;
}

TEST(ResizeEmitter, CompilesForEveryFloatTypeAndMode) {
  std::vector<std::string> Bodies;
  for (const char *T : {"f32", "f16", "bf16", "f64"})
    for (const char *A :
         {"mode = \"nearest\"",
          "mode = \"linear\", coordinate_transformation_mode = "
          "\"align_corners\"",
          "mode = \"cubic\", cubic_coeff_a = -0.5, exclude_outside = 1",
          "mode = \"nearest\", coordinate_transformation_mode = "
          "\"asymmetric\", nearest_mode = \"floor\""})
      Bodies.push_back(resizeGraph(T, A));
  // Extrapolated positions: a crop and resize.
  Bodies.push_back(
      "  input %x : f32[1,1,4,4]\n  const %r : f32[8] = [0, 0, 0.4, 0.6, "
      "1, 1, 1.2, 1.7]\n  const %z : i64[4] = [1, 1, 3, 3]\n"
      "  %y = Resize(%x, %r, none, %z) {mode = \"linear\", "
      "coordinate_transformation_mode = \"tf_crop_and_resize\", "
      "extrapolation_value = 10.0}\n  output %y");
  expectEachCompiles(Bodies);
  auto G = parseBody(Bodies.back());
  ASSERT_TRUE(G);
  EXPECT_TRUE(contains(onlyKernel(*G).Source, "continue; }"));
}

TEST(ResizeEmitter, RefusesIntegersAndRuntimeScales) {
  auto G = parseBody(resizeGraph("i32", "mode = \"nearest\""));
  ASSERT_TRUE(G);
  std::string E = emitErrorOf(*G);
  EXPECT_TRUE(contains(E, "Resize node 'rs'")) << E;
  EXPECT_TRUE(contains(E, "does not support Resize on i32")) << E;
  auto H = parseBody("  input %x : f32[1,1,2,2]\n  input %s : f32[4]\n"
                     "  %y = Resize(%x, none, %s) @\"rs\"\n  output %y");
  ASSERT_TRUE(H);
  E = emitErrorOf(*H);
  EXPECT_TRUE(contains(E, "Resize node 'rs'")) << E;
  EXPECT_TRUE(contains(E, "must be a constant")) << E;
}

} // namespace
