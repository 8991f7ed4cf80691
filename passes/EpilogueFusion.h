//===- EpilogueFusion.h - Contractions absorb their epilogue -----*- C++
//-*-===//
//
// Matches: a contraction (Conv, ConvTranspose, MatMul, Gemm: fusion kind
// `contraction` in the op registry) followed by a chain of elementwise or
// broadcast nodes, each the single user of the previous value, whose result
// keeps the contraction's shape and dtype (bias adds, residual adds,
// activations, scaling).
// Produces: one FusedGroup of kind "contraction" per anchor; the runtime
// runs it as one library call with the library's fused epilogue where the
// library can (cuBLASLt BIAS/RELU_BIAS/GELU_BIAS and the C matrix, cuDNN's
// conv+bias+residual+ReLU), and one generated kernel for the rest
// (codegen/LibraryEpilogue.h decides the split).
// Leaves alone: a value with a second user (the chain stops before it), a
// broadcast that enlarges the value, and (to leave it to a reduction's
// prologue, which loop-fusion builds) the tail of a chain that flows into a
// row reduction, from its first op reading a non-constant operand: e.g.
// MatMul -> Div(scale) stays a group but Add(mask) -> Softmax does not join.
// Preconditions: static shapes; run after legalization (the anchors'
// operands are final).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_EPILOGUEFUSION_H
#define SOLDER_PASSES_EPILOGUEFUSION_H

#include "passes/FusionSupport.h"

namespace solder {

class EpilogueFusion : public Pass {
public:
  explicit EpilogueFusion(FusionState &State) : State(State) {}
  llvm::StringRef name() const override { return "epilogue-fusion"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;

private:
  FusionState &State;
};

} // namespace solder

#endif
