//===- RuntimeTestUtils.h - Helpers of the GPU runtime tests ----*- C++ -*-===//
#ifndef SOLDER_TESTS_RUNTIME_RUNTIMETESTUTILS_H
#define SOLDER_TESTS_RUNTIME_RUNTIMETESTUTILS_H

#include "ir/FusedGroup.h"
#include "ir/Parser.h"
#include "runtime/cuda/PlanBuilder.h"
#include "tests/AttentionGraph.h"
#include "gtest/gtest.h"
#include <cstdlib>
#include <string>

namespace solder {
namespace test {

/// A small graph exercising every kind of step: a MatMul (cuBLASLt), views
/// (Reshape, Flatten) that must alias, elementwise kernels, a Gemm with a
/// bias epilogue, and a 2-D convolution with bias (cuDNN + helper kernel).
inline const char *mixedGraphText() {
  return R"(graph "mixed" opset 17 {
  input %x : f32[2,8]
  input %img : f32[1,2,5,5]
  const %w : f32[8,4] = [0.1, -0.2, 0.3, 0.4, 0.5, -0.6, 0.7, 0.8, -0.9, 1.0, 0.1, 0.2, 0.3, 0.4, -0.5, 0.6, 0.7, 0.8, 0.9, -1.0, 0.1, 0.2, -0.3, 0.4, 0.5, 0.6, 0.7, -0.8, 0.9, 1.0, 0.1, -0.2]
  const %shape : i64[2] = [4, 2]
  const %gw : f32[2,3] = [1.0, 2.0, 3.0, -1.0, 0.5, 0.25]
  const %gb : f32[3] = [0.5, -0.5, 1.5]
  const %cw : f32[3,2,3,3] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, -0.1, -0.2, -0.3, -0.4, -0.5, -0.6, -0.7, -0.8, -0.9, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1]
  const %cb : f32[3] = [0.01, 0.02, 0.03]
  %m = MatMul(%x, %w) : f32[2,4] @"mm"
  %r = Relu(%m) : f32[2,4] @"relu"
  %v = Reshape(%r, %shape) : f32[4,2] @"view"
  %e = Exp(%v) : f32[4,2] @"exp"
  %g = Gemm(%e, %gw, %gb) : f32[4,3] @"gemm"
  %c = Conv(%img, %cw, %cb) {pads = [1, 1, 1, 1]} : f32[1,3,5,5] @"conv"
  %f = Flatten(%c) : f32[1,75] @"flat"
  %t = Tanh(%f) : f32[1,75] @"tanh"
  output %g
  output %t
})";
}

inline std::unique_ptr<Graph> parseOrFail(llvm::StringRef Text) {
  auto G = parseGraph(Text);
  if (!G) {
    ADD_FAILURE() << "parse error: " << llvm::toString(G.takeError());
    return nullptr;
  }
  return std::move(*G);
}

/// Outlines the nodes of G with the given ONNX names into one fused group
/// (the fusion passes' job, done by hand for tests); null on failure.
inline Node *outlineByName(Graph &G, std::vector<std::string> Names,
                           GroupKind Kind, int64_t Id) {
  std::vector<Node *> Members;
  for (const std::string &Name : Names)
    for (auto &N : G.nodes())
      if (N->name() == Name)
        Members.push_back(N.get());
  if (Members.size() != Names.size()) {
    ADD_FAILURE() << "not every member was found";
    return nullptr;
  }
  auto Group = outlineFusedGroup(G, Members, Kind, Id);
  if (!Group) {
    ADD_FAILURE() << llvm::toString(Group.takeError());
    return nullptr;
  }
  return *Group;
}

/// A fresh cache folder under the test's temporary directory.
inline std::string testCacheDir() {
  const char *Tmp = std::getenv("TMPDIR");
  return std::string(Tmp ? Tmp : "/tmp") + "/solder-runtime-test-cache";
}

/// The shared folder (models, ONNX suites): $SOLDER_SHARED_DIR, else the
/// one CMake saw.
inline std::string sharedDir() {
  const char *Env = std::getenv("SOLDER_SHARED_DIR");
  return Env ? Env : SOLDER_SHARED_DIR;
}

} // namespace test
} // namespace solder

#endif
