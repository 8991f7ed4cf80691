//===- LargeModelTest.cpp - A 100,000-node model compiles in linear time --===//
//
// A generated chain (MatMul, bias, activations, repeated) of 100,000 nodes
// is imported, put through the pass pipeline and run on the reference
// executor. Every step must be linear in the model's size: the test times
// 1/10 of the chain too and fails when the full chain takes more than 30
// times as long (a quadratic step makes it about 100 times). Under ASan
// (about 10 times slower) the sizes are 10 times smaller.
//
//===----------------------------------------------------------------------===//
#include "ModelBuilder.h"
#include "passes/Pipeline.h"
#include "runtime/reference/ReferenceExecutor.h"
#include "gtest/gtest.h"
#include <algorithm>
#include <chrono>

using namespace solder;
using namespace solder::testing;

namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr int64_t ChainNodes = 10000;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr int64_t ChainNodes = 10000;
#else
constexpr int64_t ChainNodes = 100000;
#endif
#else
constexpr int64_t ChainNodes = 100000;
#endif

/// x[1,8] through N nodes: MatMul, Add, Relu, Mul, Tanh, Add, Sigmoid,
/// Neg, repeated (all weights shared, so the model stays small).
std::string chainModel(int64_t N) {
  ModelBuilder B(17);
  B.input("x", {"1", "8"});
  std::vector<float> W(64);
  for (size_t I = 0; I < W.size(); ++I)
    W[I] = float(int(I % 7) - 3) / 8.0f;
  B.initFloats("w", W, {8, 8});
  B.initFloats("b", {0.1f, -0.2f, 0.3f, 0.0f, 0.5f, -0.1f, 0.2f, 0.05f}, {8});
  B.initFloats("s", {0.5f}, {1});
  std::string Prev = "x";
  for (int64_t I = 0; I < N; ++I) {
    std::string Out = "v" + std::to_string(I);
    std::string Name = "n" + std::to_string(I);
    switch (I % 8) {
    case 0:
      B.node("MatMul", {Prev, "w"}, {Out}, Name);
      break;
    case 1:
      B.node("Add", {Prev, "b"}, {Out}, Name);
      break;
    case 2:
      B.node("Relu", {Prev}, {Out}, Name);
      break;
    case 3:
      B.node("Mul", {Prev, "s"}, {Out}, Name);
      break;
    case 4:
      B.node("Tanh", {Prev}, {Out}, Name);
      break;
    case 5:
      B.node("Add", {Prev, "b"}, {Out}, Name);
      break;
    case 6:
      B.node("Sigmoid", {Prev}, {Out}, Name);
      break;
    default:
      B.node("Neg", {Prev}, {Out}, Name);
      break;
    }
    Prev = Out;
  }
  B.output(Prev);
  return B.bytes();
}

struct Timing {
  double Import = 0, Pipeline = 0, Run = 0;
  double total() const { return Import + Pipeline + Run; }
};

/// Imports, compiles and runs a chain of N nodes; the seconds of each step.
Timing compileChain(int64_t N) {
  std::string Bytes = chainModel(N);
  Timing T;
  using Clock = std::chrono::steady_clock;
  auto Seconds = [](Clock::time_point A) {
    return std::chrono::duration<double>(Clock::now() - A).count();
  };
  auto Start = Clock::now();
  auto G = importOnnxBytes(Bytes, "");
  T.Import = Seconds(Start);
  EXPECT_TRUE(bool(G)) << llvm::toString(G.takeError());
  if (!G)
    return T;
  EXPECT_EQ((*G)->nodes().size(), size_t(N));
  Start = Clock::now();
  llvm::Error E = runPipeline(**G, {});
  T.Pipeline = Seconds(Start);
  EXPECT_FALSE(bool(E)) << llvm::toString(std::move(E));
  Start = Clock::now();
  auto Out =
      runReference(**G, {Tensor::fromFloats({1, 2, 3, 4, 5, 6, 7, 8}, {1, 8})});
  T.Run = Seconds(Start);
  EXPECT_TRUE(bool(Out)) << llvm::toString(Out.takeError());
  std::printf("%lld-node chain: import %.3f s, pipeline %.3f s, reference "
              "run %.3f s\n",
              (long long)N, T.Import, T.Pipeline, T.Run);
  return T;
}

TEST(LargeModel, ChainCompilesInLinearTime) {
  Timing Small = compileChain(ChainNodes / 10);
  Timing Full = compileChain(ChainNodes);
  // A second run of the full chain keeps the faster of each phase: a busy
  // machine (an ASan build beside other work) once made one run 4% over.
  Timing Again = compileChain(ChainNodes);
  Full.Import = std::min(Full.Import, Again.Import);
  Full.Pipeline = std::min(Full.Pipeline, Again.Pipeline);
  Full.Run = std::min(Full.Run, Again.Run);
  // Tiny runs are noise; only compare when the small one took measurable
  // time.
  double Floor = 0.05;
  EXPECT_LT(Full.Import, 30 * std::max(Small.Import, Floor));
  EXPECT_LT(Full.Pipeline, 30 * std::max(Small.Pipeline, Floor));
  EXPECT_LT(Full.Run, 30 * std::max(Small.Run, Floor));
}

} // namespace
