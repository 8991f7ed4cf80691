//===- EmitterTestUtils.h - Helpers of the per-op emitter tests -*- C++ -*-===//
//
// Parsing a graph body, taking its one kernel or its error, and compiling
// a batch of kernels with NVRTC (sm_90, no GPU needed): what every test of
// one op family's generated kernels does.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TESTS_CODEGEN_EMITTERTESTUTILS_H
#define SOLDER_TESTS_CODEGEN_EMITTERTESTUTILS_H

#include "codegen/KernelEmitter.h"
#include "ir/FusedGroup.h"
#include "ir/Parser.h"
#include "tests/codegen/TestNvrtc.h"
#include <gtest/gtest.h>

namespace solder {
namespace testing {

/// Parses Body as the inside of an opset-21 graph.
inline std::unique_ptr<Graph> parseBody(const std::string &Body) {
  std::string Text = "graph \"g\" opset 21 {\n" + Body + "\n}\n";
  auto G = parseGraph(Text);
  EXPECT_TRUE(bool(G)) << llvm::toString(G.takeError()) << "\n" << Text;
  return G ? std::move(*G) : nullptr;
}

/// Outlines every node of G into one fused group of kind K (null, with a
/// test failure, when that is refused).
inline Node *outlineAll(Graph &G, GroupKind K, int64_t Id) {
  std::vector<Node *> Members;
  for (auto &N : G.nodes())
    Members.push_back(N.get());
  auto Group = outlineFusedGroup(G, Members, K, Id);
  EXPECT_TRUE(bool(Group)) << (Group ? "" : llvm::toString(Group.takeError()));
  return Group ? *Group : nullptr;
}

/// The one kernel of a graph (an empty kernel on failure).
inline GeneratedKernel onlyKernel(const Graph &G,
                                  const CodegenOptions &O = {}) {
  auto K = emitGraphKernels(G, O);
  EXPECT_TRUE(bool(K)) << (K ? "" : llvm::toString(K.takeError()));
  if (!K || K->size() != 1) {
    ADD_FAILURE() << "expected one kernel";
    return GeneratedKernel();
  }
  return std::move(K->front());
}

/// The error emitting G's kernels gives, or "<no error>".
inline std::string emitErrorOf(const Graph &G) {
  auto K = emitGraphKernels(G);
  return K ? "<no error>" : llvm::toString(K.takeError());
}

/// Parses each body, emits its one kernel and compiles them all.
inline void expectEachCompiles(const std::vector<std::string> &Bodies) {
  std::vector<GeneratedKernel> All;
  std::vector<std::unique_ptr<Graph>> Graphs; // the kernels point into them
  for (const std::string &Body : Bodies) {
    auto G = parseBody(Body);
    ASSERT_TRUE(G);
    All.push_back(onlyKernel(*G));
    Graphs.push_back(std::move(G));
  }
  auto Cubins = compileKernels(All, testNvrtcOptions());
  ASSERT_TRUE(bool(Cubins)) << llvm::toString(Cubins.takeError());
  EXPECT_EQ(Cubins->size(), Bodies.size());
}

inline bool contains(const std::string &S, llvm::StringRef Piece) {
  return S.find(Piece.str()) != std::string::npos;
}

} // namespace testing
} // namespace solder

#endif
