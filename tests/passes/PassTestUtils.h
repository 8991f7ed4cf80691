//===- PassTestUtils.h - Running one pass on IR text in tests ---*- C++ -*-===//
#ifndef SOLDER_TESTS_PASSES_PASSTESTUTILS_H
#define SOLDER_TESTS_PASSES_PASSTESTUTILS_H

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/FusionSupport.h"
#include "passes/Pass.h"
#include "runtime/reference/ReferenceExecutor.h"
#include "gtest/gtest.h"
#include <random>

namespace solder {
namespace test {

/// Parses Text, failing the test on a parse error.
inline std::unique_ptr<Graph> parseOrDie(llvm::StringRef Text) {
  auto G = parseGraph(Text);
  if (!G) {
    ADD_FAILURE() << "parse error: " << llvm::toString(G.takeError());
    return nullptr;
  }
  return std::move(*G);
}

/// Canonical printed form of an IR text (parse + print).
inline std::string canonical(llvm::StringRef Text) {
  auto G = parseOrDie(Text);
  return G ? graphToString(*G) : "";
}

/// Runs P on the graph in Before; returns the "changed" flag and the IR
/// after, which must verify.
inline std::pair<bool, std::string> runPassOn(Pass &P, llvm::StringRef Before) {
  auto G = parseOrDie(Before);
  if (!G)
    return {false, ""};
  DecisionLog Log;
  llvm::Expected<bool> Changed = P.run(*G, Log);
  if (!Changed) {
    ADD_FAILURE() << "pass failed: " << llvm::toString(Changed.takeError());
    return {false, ""};
  }
  if (auto E = verifyGraph(*G))
    ADD_FAILURE() << "IR invalid after pass: " << llvm::toString(std::move(E));
  return {*Changed, graphToString(*G)};
}

/// Runs the reference executor on G with seeded random inputs in [-1, 1)
/// (each input in its own float type).
inline std::vector<Tensor> runRandom(const Graph &G, unsigned Seed) {
  std::mt19937 Rng(Seed);
  std::uniform_real_distribution<float> Dist(-1, 1);
  std::vector<Tensor> In;
  for (Value *V : G.inputs()) {
    Tensor T(V->dtype(), V->type().staticDims());
    for (int64_t I = 0; I < T.numElements(); ++I)
      T.setDouble(I, Dist(Rng));
    In.push_back(T);
  }
  auto Out = runReference(G, In);
  if (!Out) {
    ADD_FAILURE() << llvm::toString(Out.takeError());
    return {};
  }
  return *Out;
}

/// P must change the graph in Text, leave IR containing MustContain, and
/// keep the graph's function (reference outputs within Tol).
inline void expectRewriteKeepsFunction(Pass &P, llvm::StringRef Text,
                                       llvm::StringRef MustContain,
                                       double Tol) {
  auto Before = parseOrDie(Text);
  auto After = parseOrDie(Text);
  ASSERT_TRUE(Before && After);
  DecisionLog Log;
  llvm::Expected<bool> Changed = P.run(*After, Log);
  ASSERT_TRUE(bool(Changed)) << llvm::toString(Changed.takeError());
  EXPECT_TRUE(*Changed);
  ASSERT_FALSE(bool(verifyGraph(*After)));
  std::string AfterText = graphToString(*After);
  EXPECT_NE(AfterText.find(MustContain.str()), std::string::npos) << AfterText;
  auto A = runRandom(*Before, 7), B = runRandom(*After, 7);
  ASSERT_EQ(A.size(), B.size());
  for (size_t I = 0; I < A.size(); ++I) {
    ASSERT_EQ(A[I].dims(), B[I].dims());
    for (int64_t J = 0; J < A[I].numElements(); ++J)
      EXPECT_NEAR(A[I].getDouble(J), B[I].getDouble(J), Tol) << J;
  }
}

/// Runs a fusion pass (built on a FusionState with Disabled) on Text.
template <typename PassT>
std::pair<bool, std::string>
runFusionPass(llvm::StringRef Text, std::vector<std::string> Disabled = {}) {
  FusionState State(Disabled);
  PassT P(State);
  return runPassOn(P, Text);
}

/// A fusion pass rewrites Text keeping its function (see
/// expectRewriteKeepsFunction).
template <typename PassT>
void expectFusionKeepsFunction(llvm::StringRef Text,
                               llvm::StringRef MustContain, double Tol) {
  FusionState State({});
  PassT P(State);
  expectRewriteKeepsFunction(P, Text, MustContain, Tol);
}

/// The reasons a fresh PassT noted on the graph in Text, in order.
template <typename PassT>
std::vector<std::string> noteReasons(llvm::StringRef Text) {
  auto G = parseOrDie(Text);
  if (!G)
    return {};
  PassT P;
  DecisionLog Log;
  llvm::Expected<bool> Changed = P.run(*G, Log);
  if (!Changed) {
    ADD_FAILURE() << "pass failed: " << llvm::toString(Changed.takeError());
    return {};
  }
  std::vector<std::string> R;
  for (const DecisionRecord &D : Log.records())
    R.push_back(D.Reason);
  return R;
}

/// PassT leaves Text as it is and notes exactly Reason.
template <typename PassT>
void expectUnchangedWithReason(llvm::StringRef Text, llvm::StringRef Reason) {
  PassT P;
  auto [Changed, After] = runPassOn(P, Text);
  EXPECT_FALSE(Changed);
  EXPECT_EQ(After, canonical(Text));
  EXPECT_EQ(noteReasons<PassT>(Text), std::vector<std::string>{Reason.str()});
}

} // namespace test
} // namespace solder

#endif
