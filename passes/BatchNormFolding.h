//===- BatchNormFolding.h - Affine ops folded into weights ------*- C++ -*-===//
//
// Matches, in node order:
//  - an inference BatchNormalization (X, scale, B, mean, var) whose X is the
//    result of a Conv or ConvTranspose (any group) used by nothing else, with
//    constant BN parameters and constant conv weights and bias;
//  - a Mul or Add of a constant after a Conv/ConvTranspose (the constant
//    varies only along the channel dim: [1,C,1,1], [C,1,1], a scalar), after
//    a Gemm (varies only along the columns: [N], [1,N]) or a Mul after a
//    MatMul whose B is a constant 2-D matrix (per-column vector), the
//    contraction's result used by nothing else.
// Produces: new constant weights and bias for the contraction, computed in
// double and stored in the weights' dtype (s = scale / sqrt(var + eps),
// W'[o] = W[o] * s[o], b' = (b - mean) * s + B for BatchNormalization; Mul
// scales weights and bias, Add adds to the bias, creating it if absent).
// The contraction's result takes over the folded node's value name, so ONNX
// output names survive. A BatchNormalization that cannot fold becomes a
// per-channel Mul + Add with constant [C,1,...] scale and shift.
// Preconditions: shapes inferred; float dtypes.
// Leaves alone: a BatchNormalization with non-constant parameters, an Add
// after a MatMul (MatMul has no bias operand: epilogue fusion takes it), and
// a contraction whose result has a second user or is a graph output. Every
// candidate gets a Decision saying why it did or did not fold.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_BATCHNORMFOLDING_H
#define SOLDER_PASSES_BATCHNORMFOLDING_H

#include "passes/Pass.h"

namespace solder {

class BatchNormFolding : public Pass {
public:
  llvm::StringRef name() const override { return "batchnorm-folding"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;
};

} // namespace solder

#endif
