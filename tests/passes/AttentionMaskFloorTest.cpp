//===- AttentionMaskFloorTest.cpp -----------------------------------------===//
#include "passes/AttentionMaskFloor.h"
#include "PassTestUtils.h"

using namespace solder;
using namespace solder::test;

namespace {

/// Two attention nodes over f16 Q/K/V reading one mask of type MaskType,
/// computed from %pad as transformers do (-3.4e38 where padded).
std::string twoLayers(const std::string &MaskType) {
  return R"(
graph "g" opset 23 {
  input %q : f16[1,2,4,8]
  input %k : f16[1,2,4,8]
  input %v : f16[1,2,4,8]
  input %pad : )" +
         MaskType + R"([1,1,1,4]
  const %min : )" +
         MaskType + R"([] = [-3.4e38]
  %m = Mul(%pad, %min) : )" +
         MaskType + R"([1,1,1,4]
  %a = Attention(%q, %k, %v, %m) {scale = 0.35} : f16[1,2,4,8] @"attn0"
  %b = Attention(%a, %k, %v, %m) {scale = 0.35} : f16[1,2,4,8] @"attn1"
  output %b
}
)";
}

} // namespace

TEST(AttentionMaskFloor, FinitePaddingFlooredOnceForEveryLayer) {
  AttentionMaskFloor P;
  auto [Changed, After] = runPassOn(P, twoLayers("f32"));
  EXPECT_TRUE(Changed);
  // One chain, read by both attention nodes.
  EXPECT_NE(After.find("= Max(%m, %m.floored.floor)"), std::string::npos)
      << After;
  EXPECT_NE(After.find("= Equal(%m, %m.floored.neginf)"), std::string::npos);
  EXPECT_NE(After.find("Attention(%q, %k, %v, %m.floored)"), std::string::npos);
  EXPECT_NE(After.find("Attention(%a, %k, %v, %m.floored)"), std::string::npos);
  EXPECT_EQ(After.find("= Max(", After.find("= Max(") + 1), std::string::npos);
  // The outputs do not change: -1e30 and -3.4e38 both swamp the scores.
  AttentionMaskFloor Again;
  expectRewriteKeepsFunction(Again, twoLayers("f32"), "Where(", 1e-3);
  // Idempotent: a second run finds the mask floored.
  auto [Twice, Same] = runPassOn(P, After);
  EXPECT_FALSE(Twice);
  EXPECT_EQ(Same, canonical(After));
}

TEST(AttentionMaskFloor, Bf16MaskFlooredConstantFlooredInPlace) {
  AttentionMaskFloor P;
  auto [Changed, After] = runPassOn(P, R"(
graph "g" opset 23 {
  input %q : bf16[1,1,2,8]
  input %k : bf16[1,1,2,8]
  input %v : bf16[1,1,2,8]
  input %m : bf16[1,1,1,2]
  %y = Attention(%q, %k, %v, %m) : bf16[1,1,2,8] @"attn"
  output %y
}
)");
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("Where("), std::string::npos) << After;
  auto [CChanged, CAfter] = runPassOn(P, R"(
graph "g" opset 23 {
  input %q : f16[1,1,2,8]
  input %k : f16[1,1,2,8]
  input %v : f16[1,1,2,8]
  const %m : f32[1,1,2,2] = [0, -3.4e38, -inf, 0]
  %y = Attention(%q, %k, %v, %m) : f16[1,1,2,8] @"attn"
  output %y
}
)");
  EXPECT_TRUE(CChanged);
  EXPECT_NE(CAfter.find("[0.0, -1e+30, -inf, 0.0]"), std::string::npos)
      << CAfter;
  EXPECT_EQ(CAfter.find("Where("), std::string::npos);
}

// Negative twins: masks that cannot overflow, or attention cuDNN does not
// take, are left as they are.
TEST(AttentionMaskFloor, LeavesF16MasksF32AttentionAndBoolMasks) {
  /// One attention node over Q/K/V of type T and a mask of type M.
  auto One = [](const std::string &T, const std::string &M) {
    return R"(
graph "g" opset 23 {
  input %q : )" +
           T + R"([1,1,2,8]
  input %k : )" +
           T + R"([1,1,2,8]
  input %v : )" +
           T + R"([1,1,2,8]
  input %m : )" +
           M + R"([1,1,2,2]
  %y = Attention(%q, %k, %v, %m) : )" +
           T + R"([1,1,2,8] @"attn"
  output %y
}
)";
  };
  for (const std::string &Text :
       {twoLayers("f16"), One("f32", "f32"), One("f16", "bool")}) {
    AttentionMaskFloor P;
    auto [Changed, After] = runPassOn(P, Text);
    EXPECT_FALSE(Changed) << Text;
    EXPECT_EQ(After, canonical(Text));
  }
}
