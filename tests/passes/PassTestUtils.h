//===- PassTestUtils.h - Running one pass on IR text in tests ---*- C++ -*-===//
#ifndef SOLDER_TESTS_PASSES_PASSTESTUTILS_H
#define SOLDER_TESTS_PASSES_PASSTESTUTILS_H

#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "passes/Pass.h"
#include "gtest/gtest.h"

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

} // namespace test
} // namespace solder

#endif
