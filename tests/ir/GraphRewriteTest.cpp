//===- GraphRewriteTest.cpp - Use lists under rewriting -------------------===//
//
// replaceAllUsesWith and eraseNode keep every use list exact, and moving
// all uses of a value read by many nodes, or erasing its readers first to
// last, is linear in their number: the tests time 20,000 and 200,000 users
// and fail when the larger takes more than 30 times as long (quadratic
// removal made it about 100 times).
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

/// A graph where input x is read by N Relu nodes, each then erased first
/// to last after a new reader of x is appended (as outlining a fused group
/// does to a shared constant); the seconds it takes.
double eraseFirstSeconds(int N) {
  Graph G;
  Value *X = G.addInput("x", f32({4}));
  std::vector<Node *> Readers;
  for (int I = 0; I < N; ++I)
    Readers.push_back(G.addNode(OpKind::Relu, {X}, {"r" + std::to_string(I)}));
  auto Start = std::chrono::steady_clock::now();
  for (int I = 0; I < N; ++I) {
    G.addNode(OpKind::Neg, {X}, {"n" + std::to_string(I)});
    G.eraseNode(Readers[I]);
  }
  double S =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - Start)
          .count();
  // Only the appended readers are left, in the order they came.
  EXPECT_EQ(X->uses().size(), size_t(N));
  for (int I = 0; I < N && I < 3; ++I)
    EXPECT_EQ(X->uses()[I].User->result(0)->name(), "n" + std::to_string(I));
  return S;
}

TEST(GraphRewrite, ErasingTheFirstUsersIsLinear) {
  double Small = eraseFirstSeconds(20000);
  double Large = eraseFirstSeconds(200000);
  std::printf("20,000 first users erased in %.4f s, 200,000 in %.4f s\n", Small,
              Large);
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
  // Removing the first use leaves the others in order (a gap at the
  // front, then compacted), and the list still takes new uses.
  Node *C = G.addNode(OpKind::Neg, {Y}, {"c"});
  Node *D = G.addNode(OpKind::Neg, {Y}, {"d"});
  G.eraseNode(C);
  ASSERT_EQ(Y->uses().size(), 3u);
  EXPECT_EQ(Y->uses()[0].User, B);
  EXPECT_EQ(Y->uses()[2].User, D);
  B->setOperand(0, X);
  B->setOperand(1, X);
  ASSERT_EQ(Y->uses().size(), 1u);
  EXPECT_EQ(Y->uses()[0].User, D);
  ASSERT_EQ(X->uses().size(), 2u);
}

} // namespace
