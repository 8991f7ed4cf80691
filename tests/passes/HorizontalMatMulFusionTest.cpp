//===- HorizontalMatMulFusionTest.cpp -------------------------------------===//
#include "passes/HorizontalMatMulFusion.h"
#include "PassTestUtils.h"
#include "ir/OpRegistry.h"
#include "passes/PrecisionConversion.h"
#include <cstring>
#include <map>

using namespace solder;
using namespace solder::test;

namespace {

std::pair<bool, std::string> fuse(llvm::StringRef Text,
                                  std::vector<std::string> Disabled = {}) {
  return runFusionPass<HorizontalMatMulFusion>(Text, std::move(Disabled));
}

/// Three projections of one activation, each with its bias (Q, K, V).
const char *Qkv = R"(graph "g" opset 17 {
  input %x : f32[2,3,4]
  const %wq : f32[4,2] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
  const %wk : f32[4,2] = [-0.1, 0.2, -0.3, 0.4, -0.5, 0.6, -0.7, 0.8]
  const %wv : f32[4,3] = [1, 0, 0, 0, 1, 0, 0, 0, 1, 0.5, 0.5, 0.5]
  const %bq : f32[2] = [0.01, 0.02]
  const %bk : f32[2] = [0.03, 0.04]
  const %bv : f32[3] = [0.05, 0.06, 0.07]
  %mq = MatMul(%x, %wq) : f32[2,3,2] @"q_mm"
  %q = Add(%mq, %bq) : f32[2,3,2] @"q_add"
  %mk = MatMul(%x, %wk) : f32[2,3,2] @"k_mm"
  %k = Add(%bk, %mk) : f32[2,3,2] @"k_add"
  %mv = MatMul(%x, %wv) : f32[2,3,3] @"v_mm"
  %v = Add(%mv, %bv) : f32[2,3,3] @"v_add"
  %r = Relu(%k) : f32[2,3,2] @"relu"
  output %q
  output %r
  output %v
})";

/// Text with the first From replaced by To.
std::string edit(std::string Text, const std::string &From,
                 const std::string &To) {
  size_t P = Text.find(From);
  EXPECT_NE(P, std::string::npos) << From;
  if (P != std::string::npos)
    Text.replace(P, From.size(), To);
  return Text;
}

size_t count(const std::string &S, const std::string &Sub) {
  size_t N = 0;
  for (size_t P = S.find(Sub); P != std::string::npos; P = S.find(Sub, P + 1))
    ++N;
  return N;
}

} // namespace

TEST(HorizontalMatMulFusion, PacksSiblingProjectionsWithTheirBiases) {
  auto [Changed, After] = fuse(Qkv);
  EXPECT_TRUE(Changed);
  EXPECT_EQ(count(After, "= MatMul("), 1u) << After;
  EXPECT_EQ(count(After, "= Add("), 1u) << After;
  EXPECT_EQ(count(After, "= Slice("), 3u) << After;
  EXPECT_NE(After.find("f32[2,3,7]"), std::string::npos) << After;
  EXPECT_NE(After.find("@\"q_mm+k_mm+v_mm\""), std::string::npos) << After;
  expectFusionKeepsFunction<HorizontalMatMulFusion>(Qkv, "Slice(", 1e-6);
}

TEST(HorizontalMatMulFusion, LeavesMatMulsWithDifferentInputsAlone) {
  // Negative twin: the three matmuls read different activations.
  std::string Text = edit(Qkv, "input %x : f32[2,3,4]",
                          "input %x : f32[2,3,4]\n  input %y : f32[2,3,4]");
  Text = edit(Text, "MatMul(%x, %wk)", "MatMul(%y, %wk)");
  Text = edit(Text, "MatMul(%x, %wv)", "MatMul(%y, %wv)");
  // k and v still share %y: they pack, q stays alone.
  auto [Changed, After] = fuse(Text);
  EXPECT_TRUE(Changed);
  EXPECT_EQ(count(After, "= MatMul("), 2u) << After;
  EXPECT_NE(After.find("MatMul(%x, %wq)"), std::string::npos) << After;
}

TEST(HorizontalMatMulFusion, BiasOnSomeMembersOnlySplitsTheSet) {
  // Negative twin: v has no bias, so it is not packed with q and k.
  std::string Text = edit(Qkv, "%v = Add(%mv, %bv) : f32[2,3,3] @\"v_add\"",
                          "%v = Relu(%mv) : f32[2,3,3] @\"v_relu\"");
  auto [Changed, After] = fuse(Text);
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("MatMul(%x, %wv)"), std::string::npos) << After;
  EXPECT_EQ(count(After, "= Slice("), 2u) << After;
}

TEST(HorizontalMatMulFusion, RespectsDisabledMembers) {
  // Negative twin: with k_mm disabled only q and v pack.
  auto [Changed, After] = fuse(Qkv, {"k_mm"});
  EXPECT_TRUE(Changed);
  EXPECT_NE(After.find("MatMul(%x, %wk)"), std::string::npos) << After;
  EXPECT_EQ(count(After, "= Slice("), 2u) << After;
  // And nothing at all when two of three are disabled.
  auto [Changed2, After2] = fuse(Qkv, {"k_mm", "v_mm"});
  EXPECT_FALSE(Changed2);
}

namespace {
/// The packed weight of Qkv after the pass, with the weights and biases
/// replaced by the tensors of Shared (one per name, as a dynamic model's
/// variants share their converted weights) and Cache given.
const Tensor *
packedWeight(Graph &G,
             std::map<std::string, std::shared_ptr<const Tensor>> &Shared,
             ReducedWeightCache *Cache) {
  for (const char *Name : {"wq", "wk", "wv", "bq", "bk", "bv"}) {
    Value *Old = G.lookup(Name);
    auto &T = Shared[Name];
    if (!T)
      T = std::make_shared<const Tensor>(*Old->constant());
    G.replaceAllUsesWith(Old, G.addConstant(std::string(Name) + ".s", T));
  }
  G.removeUnusedConstants();
  FusionState State({});
  HorizontalMatMulFusion Pass(State, Cache);
  DecisionLog Log;
  llvm::Expected<bool> Changed = Pass.run(G, Log);
  EXPECT_TRUE(Changed && *Changed)
      << (Changed ? "" : llvm::toString(Changed.takeError()));
  for (const auto &N : G.nodes())
    if (N->kind() == OpKind::MatMul)
      return N->operand(1)->constant();
  return nullptr;
}
} // namespace

TEST(HorizontalMatMulFusion, VariantsShareTheirPackedWeights) {
  // Two compiles of one model with a weight cache (a dynamic model's
  // variants): the second packs nothing, it takes the first one's bytes.
  auto File = std::make_shared<std::string>(16, '\0');
  ReducedWeightCache Cache(*File, File);
  std::map<std::string, std::shared_ptr<const Tensor>> Shared;
  auto G1 = parseOrDie(Qkv), G2 = parseOrDie(Qkv);
  ASSERT_TRUE(G1 && G2);
  const Tensor *W1 = packedWeight(*G1, Shared, &Cache);
  const Tensor *W2 = packedWeight(*G2, Shared, &Cache);
  ASSERT_TRUE(W1 && W2);
  EXPECT_EQ(W1->bytes().data(), W2->bytes().data());
  EXPECT_EQ(W1->dims(), llvm::ArrayRef<int64_t>({4, 7}));
  EXPECT_EQ(Cache.size(), 2u) << "the packed weight and the packed bias";
}

TEST(HorizontalMatMulFusion, WithoutACacheEachCompilePacks) {
  // Negative twin: no cache, two packed weights of equal values.
  std::map<std::string, std::shared_ptr<const Tensor>> Shared;
  auto G1 = parseOrDie(Qkv), G2 = parseOrDie(Qkv);
  ASSERT_TRUE(G1 && G2);
  const Tensor *W1 = packedWeight(*G1, Shared, nullptr);
  const Tensor *W2 = packedWeight(*G2, Shared, nullptr);
  ASSERT_TRUE(W1 && W2);
  EXPECT_NE(W1->bytes().data(), W2->bytes().data());
  EXPECT_TRUE(W1->bitwiseEqual(*W2));
}

TEST(HorizontalMatMulFusion, PacksLargeMisalignedWeightsAsTheyLie) {
  // Weights of megabytes, each a misaligned view of a mapped file's bytes
  // (exporters put raw_data at any offset): the packed weight (6 MiB, so
  // several threads copy its rows) holds every value in its column.
  const int64_t K = 1024, N[3] = {512, 256, 768};
  size_t Bytes = 1;
  for (int64_t W : N)
    Bytes += size_t(K * W) * 4;
  auto File = std::make_shared<std::string>(Bytes, '\0');
  auto Value = [](int P, int64_t R, int64_t C) {
    return float(P * 2000000 + R * 1000 + C); // exact in f32
  };
  Graph G;
  ::solder::Value *X =
      G.addInput("x", TensorType(DType::F32, llvm::ArrayRef<int64_t>({2, K})));
  size_t Off = 1; // misaligned for f32
  for (int P = 0; P < 3; ++P) {
    for (int64_t R = 0; R < K; ++R)
      for (int64_t C = 0; C < N[P]; ++C) {
        float V = Value(P, R, C);
        std::memcpy(&(*File)[Off + size_t(R * N[P] + C) * 4], &V, 4);
      }
    std::string Name = "w" + std::to_string(P);
    ::solder::Value *W = G.addConstant(
        Name, Tensor::view(DType::F32, {K, N[P]}, File->data() + Off, File));
    Node *MM = G.addNode(OpKind::MatMul, {X, W}, {Name + ".out"}, Name);
    ASSERT_FALSE(bool(inferNodeTypes(*MM)));
    G.addOutput(MM->result(0));
    Off += size_t(K * N[P]) * 4;
  }
  FusionState State({});
  HorizontalMatMulFusion Pass(State);
  DecisionLog Log;
  llvm::Expected<bool> Changed = Pass.run(G, Log);
  ASSERT_TRUE(Changed && *Changed)
      << (Changed ? "" : llvm::toString(Changed.takeError()));
  const Tensor *Packed = nullptr;
  for (const auto &Nd : G.nodes())
    if (Nd->kind() == OpKind::MatMul)
      Packed = Nd->operand(1)->constant();
  ASSERT_TRUE(Packed);
  const int64_t Total = N[0] + N[1] + N[2];
  ASSERT_EQ(Packed->dims(), llvm::ArrayRef<int64_t>({K, Total}));
  const float *D = Packed->data<float>();
  int64_t Wrong = 0;
  for (int64_t R = 0; R < K; ++R)
    for (int64_t C = 0, P = 0, Base = 0; C < Total; ++C) {
      if (C - Base == N[P])
        Base += N[P++];
      Wrong += D[R * Total + C] != Value(int(P), R, C - Base);
    }
  EXPECT_EQ(Wrong, 0);
}
