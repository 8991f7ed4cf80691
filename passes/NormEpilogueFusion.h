//===- NormEpilogueFusion.h - A matmul absorbs the LayerNorm after it -*- C++
//-*-===//
//
// Matches: a contraction group (epilogue-fusion's) anchored at a MatMul or
// Gemm, or a bare MatMul/Gemm (Llama's projections have no bias before the
// residual), whose only result is read only by a reduction group
// (loop-fusion's) normalizing the last axis (LayerNormalization,
// RMSNormalization) of a value of the matmul's shape, in f16 or bf16: the
// transformer's
//
//   MatMul -> Add(bias)  |  Add(residual) -> LayerNorm [-> Cast]
//   (contraction group)  |  (reduction group)
//
// Produces: one contraction group holding both bodies, so a row of the
// normalization is a row of the matmul's N. The plan then runs it either
// as the library call (which now also takes the residual as cuBLASLt's C)
// plus one row kernel, as before, or as one generated tensor-core GEMM
// whose epilogue normalizes whole rows across a thread-block cluster
// (codegen/GemmEmitter.cpp); tuning times both.
// Leaves alone (with a reason): normalizations over more than the last
// axis, f32/f64 (no generated candidate there; merging would only move the
// residual into cuBLASLt's C), a matmul result with other users or that is
// a graph output, reduction groups with indexing members or per-row
// results (LayerNorm's mean/inv-std outputs).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_NORMEPILOGUEFUSION_H
#define SOLDER_PASSES_NORMEPILOGUEFUSION_H

#include "passes/FusionSupport.h"

namespace solder {

class NormEpilogueFusion : public Pass {
public:
  explicit NormEpilogueFusion(FusionState &State) : State(State) {}
  llvm::StringRef name() const override { return "norm-epilogue-fusion"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;

private:
  FusionState &State;
};

} // namespace solder

#endif
