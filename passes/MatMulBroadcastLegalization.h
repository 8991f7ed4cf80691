//===- MatMulBroadcastLegalization.h - Strided-batch MatMuls ----*- C++ -*-===//
//
// Matches: MatMul nodes with static shapes where an operand's batch dims
// broadcast only partly against the result's (A [2,1,M,K] x B [1,3,K,N],
// or A [4,M,K] x B [2,4,K,N]). cuBLASLt's strided batch gives each operand
// one stride: fully batched or not batched at all (stride 0).
// Produces: Expand(operand, result batch dims ++ its matrix dims) ->
// MatMul, so every operand is fully batched or unbatched. The broadcast
// copy costs memory traffic; it only appears where a library call could
// not run otherwise.
// Leaves alone: operands already fully batched or unbatched (1-D operands
// included), symbolic shapes. Runs only in the GPU pipeline: the reference
// executor broadcasts any batch dims.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_MATMULBROADCASTLEGALIZATION_H
#define SOLDER_PASSES_MATMULBROADCASTLEGALIZATION_H

#include "passes/Pass.h"

namespace solder {

class MatMulBroadcastLegalization : public Pass {
public:
  llvm::StringRef name() const override {
    return "matmul-broadcast-legalization";
  }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;
};

} // namespace solder

#endif
