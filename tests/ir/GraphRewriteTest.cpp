//===- GraphRewriteTest.cpp - Use lists under rewriting -------------------===//
//
// replaceAllUsesWith and eraseNode keep every use list exact, and moving
// all uses of a value read by many nodes is linear in their number: the
// test times 20,000 and 200,000 users and fails when the larger takes more
// than 30 times as long (quadratic removal made it about 100 times).
//
//===----------------------------------------------------------------------===//
#include "ir/Graph.h"
#include "gtest/gtest.h"
#include <algorithm>
#include <chrono>

using namespace solder;

namespace {

TensorType f32(std::vector<int64_t> Dims) {
  return TensorType(DType::F32, llvm::ArrayRef<int64_t>(Dims));
}

/// A graph where input x is read by N Relu nodes; the time of moving all
/// their uses to input y.
double replaceSeconds(int N) {
  Graph G;
  Value *X = G.addInput("x", f32({4}));
  Value *Y = G.addInput("y", f32({4}));
  for (int I = 0; I < N; ++I)
    G.addNode(OpKind::Relu, {X}, {"r" + std::to_string(I)});
  auto Start = std::chrono::steady_clock::now();
  G.replaceAllUsesWith(X, Y);
  double S =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - Start)
          .count();
  EXPECT_FALSE(X->hasUses());
  EXPECT_EQ(Y->uses().size(), size_t(N));
  return S;
}

TEST(GraphRewrite, ReplacingAWidelyUsedValueIsLinear) {
  double Small = replaceSeconds(20000);
  double Large = replaceSeconds(200000);
  std::printf("20,000 uses moved in %.4f s, 200,000 in %.4f s\n", Small, Large);
  // Tiny runs are noise: compare against at least a millisecond.
  EXPECT_LT(Large, 30 * std::max(Small, 0.001));
}

TEST(GraphRewrite, UseListsStayExact) {
  Graph G;
  Value *X = G.addInput("x", f32({4}));
  Value *Y = G.addInput("y", f32({4}));
  Node *A = G.addNode(OpKind::Add, {X, X}, {"a"});
  Node *B = G.addNode(OpKind::Mul, {X, Y}, {"b"});
  ASSERT_EQ(X->uses().size(), 3u);
  // Erasing a node drops exactly its uses, wherever they sit in the list.
  G.addOutput(B->result(0));
  G.eraseNode(A);
  ASSERT_EQ(X->uses().size(), 1u);
  EXPECT_EQ(X->uses()[0].User, B);
  EXPECT_EQ(X->uses()[0].OperandIndex, 0u);
  G.replaceAllUsesWith(X, Y);
  EXPECT_FALSE(X->hasUses());
  ASSERT_EQ(Y->uses().size(), 2u);
  EXPECT_EQ(B->operand(0), Y);
  EXPECT_EQ(B->operand(1), Y);
}

} // namespace
