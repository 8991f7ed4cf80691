//===- NodeRunner.h - Run one reference kernel in a test --------*- C++ -*-===//
//
// Builds a one-node graph (operands as graph inputs, absent optional ones
// null), sets attributes and runs the node's reference kernel, so kernel
// tests read as "op, attributes, inputs -> expected outputs".
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TESTS_REFERENCE_NODERUNNER_H
#define SOLDER_TESTS_REFERENCE_NODERUNNER_H

#include "ir/Graph.h"
#include "runtime/reference/Kernels.h"
#include "gtest/gtest.h"
#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

namespace solder {
namespace testing {

class NodeRunner {
public:
  explicit NodeRunner(OpKind Kind, unsigned NumResults = 1)
      : Kind(Kind), NumResults(NumResults) {}

  NodeRunner &attr(llvm::StringRef Name, Attribute A) {
    Attrs.set(Name, std::move(A));
    return *this;
  }

  /// Runs the kernel on Ins (null entries are absent optional operands).
  llvm::Expected<std::vector<Tensor>>
  run(llvm::ArrayRef<const Tensor *> Ins) const {
    Graph G;
    llvm::SmallVector<Value *, 4> Ops;
    for (unsigned I = 0; I < Ins.size(); ++I)
      Ops.push_back(Ins[I]
                        ? G.addInput("in" + std::to_string(I), Ins[I]->type())
                        : nullptr);
    std::vector<std::string> Names;
    for (unsigned I = 0; I < NumResults; ++I)
      Names.push_back("out" + std::to_string(I));
    Node *N = G.addNode(Kind, Ops, Names, "n");
    for (const auto &[Name, A] : Attrs)
      N->attrs().set(Name, A);
    llvm::SmallVector<Tensor, 2> Results;
    if (auto E = ref::evaluateNode(*N, Ins, Results))
      return std::move(E);
    return std::vector<Tensor>(Results.begin(), Results.end());
  }

  /// Runs and expects success; returns result 0 (a null tensor on failure).
  Tensor runOk(llvm::ArrayRef<const Tensor *> Ins) const {
    auto R = run(Ins);
    if (!R) {
      ADD_FAILURE() << llvm::toString(R.takeError());
      return Tensor();
    }
    return (*R)[0];
  }

  /// Runs and expects an error whose message contains Needle.
  void expectError(llvm::ArrayRef<const Tensor *> Ins,
                   llvm::StringRef Needle) const {
    auto R = run(Ins);
    if (R) {
      ADD_FAILURE() << "expected an error containing '" << Needle.str() << "'";
      return;
    }
    std::string Msg = llvm::toString(R.takeError());
    EXPECT_NE(Msg.find(Needle.str()), std::string::npos) << Msg;
  }

private:
  OpKind Kind;
  unsigned NumResults;
  AttrMap Attrs;
};

inline Tensor floats(llvm::ArrayRef<int64_t> Dims,
                     llvm::ArrayRef<float> Values) {
  return Tensor::fromFloats(Values, Dims);
}

inline Tensor randomFloats(llvm::ArrayRef<int64_t> Dims, unsigned Seed) {
  std::mt19937 Gen(Seed);
  std::uniform_real_distribution<float> D(-1.0f, 1.0f);
  Tensor T(DType::F32, Dims);
  for (int64_t I = 0; I < T.numElements(); ++I)
    T.mutableData<float>()[I] = D(Gen);
  return T;
}

inline std::vector<float> toFloats(const Tensor &T) {
  std::vector<float> V;
  for (int64_t I = 0; I < T.numElements(); ++I)
    V.push_back(float(T.getDouble(I)));
  return V;
}

inline std::vector<int64_t> toInts(const Tensor &T) {
  std::vector<int64_t> V;
  for (int64_t I = 0; I < T.numElements(); ++I)
    V.push_back(T.getInt64(I));
  return V;
}

inline std::vector<int64_t> dimsOf(const Tensor &T) {
  return std::vector<int64_t>(T.dims().begin(), T.dims().end());
}

/// Element-wise |A - B| <= Tol, with the first mismatch reported.
inline void expectNear(const Tensor &A, const Tensor &B, double Tol) {
  ASSERT_EQ(dimsOf(A), dimsOf(B));
  for (int64_t I = 0; I < A.numElements(); ++I)
    if (std::abs(A.getDouble(I) - B.getDouble(I)) > Tol) {
      ADD_FAILURE() << "element " << I << ": " << A.getDouble(I) << " vs "
                    << B.getDouble(I);
      return;
    }
}

/// A tensor of type T and shape Dims holding Values (converted).
inline Tensor make(DType T, llvm::ArrayRef<int64_t> Dims,
                   const std::vector<double> &Values) {
  Tensor X(T, Dims);
  EXPECT_EQ(int64_t(Values.size()), X.numElements());
  for (int64_t I = 0; I < X.numElements(); ++I)
    X.setDouble(I, Values[I]);
  return X;
}

/// Each element of T near Expected (relative Tol above 1; NaN and
/// infinities must match exactly).
inline void expectValues(const Tensor &T, const std::vector<double> &Expected,
                         double Tol = 1e-6) {
  ASSERT_EQ(T.numElements(), int64_t(Expected.size()));
  for (size_t I = 0; I < Expected.size(); ++I) {
    double G = T.getDouble(I), E = Expected[I];
    if (std::isnan(E))
      EXPECT_TRUE(std::isnan(G)) << "element " << I << ": " << G;
    else if (std::isinf(E))
      EXPECT_EQ(G, E) << "element " << I;
    else
      EXPECT_NEAR(G, E, Tol * std::max(1.0, std::abs(E))) << "element " << I;
  }
}

} // namespace testing
} // namespace solder

#endif
