//===- HorizontalMatMulFusion.h - Sibling matmuls become one ----*- C++ -*-===//
//
// Matches: two or more MatMuls that read the same activation X as their
// first operand and a constant 2-D weight [K, N_i] each (a transformer's
// Q, K and V projections), every one either followed by a single-use Add of
// a constant bias vector [N_i] or none of them.
// Produces: one MatMul of X with the weights concatenated along N, one Add
// of the concatenated biases, and one Slice per original result along the
// last axis:
//
//   q = X Wq + bq          qkv = X [Wq|Wk|Wv] + [bq|bk|bv]
//   k = X Wk + bk    =>    q = qkv[..., 0:N]   k = qkv[..., N:2N]
//   v = X Wv + bv          v = qkv[..., 2N:3N]
//
// One GEMM with N = 3*768 keeps the tensor cores (or FMA units) busier than
// three with N = 768 and launches once; the Slices are free where their
// consumers absorb them (epilogue-fusion takes them into a batched matmul's
// strided operand, loop-fusion into a kernel's indexing).
// Leaves alone: weights of another dtype or K, a bias on some members only,
// a member the user disabled (--disable-fusion NAME), dynamic shapes.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_HORIZONTALMATMULFUSION_H
#define SOLDER_PASSES_HORIZONTALMATMULFUSION_H

#include "passes/FusionSupport.h"

namespace solder {

class ReducedWeightCache;

class HorizontalMatMulFusion : public Pass {
public:
  /// Weights, when set, keeps the packed weights for later compiles of the
  /// same model (a dynamic model's variants pack the same bytes).
  explicit HorizontalMatMulFusion(FusionState &State,
                                  ReducedWeightCache *Weights = nullptr)
      : State(State), Weights(Weights) {}
  llvm::StringRef name() const override { return "horizontal-matmul-fusion"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;

private:
  FusionState &State;
  ReducedWeightCache *Weights;
};

} // namespace solder

#endif
