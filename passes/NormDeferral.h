//===- NormDeferral.h - A LayerNorm's consumers take its input ---*- C++
//-*-===//
//
// Matches: a LayerNormalization over the last axis of an f16/bf16 value x
// with constant scale gamma and bias beta (or none), whose result h is not a
// graph output and whose every user is either a MatMul reading h as A with
// a constant 2-D weight W [K, N], or an Add of h and another value of h's
// shape (a transformer's residual); at least one MatMul.
// Produces: the statistics alone, LayerNormalization(x) -> (_, mean, rstd)
// (f32, its normalized result unused), and each user rewritten to read x:
//
//   h W (+ b)  =>  ApplyRowStats(x W', mean, rstd, c, _, d)
//                  W' = diag(gamma) W, c = 1^T W', d = beta^T W (+ b)
//   h + r      =>  ApplyRowStats(x, mean, rstd, _, gamma, beta, r)
//
// since LN(x) W = rstd (x W' - mean c) + beta^T W row by row. The constants
// are folded here (W' rounded to W's type, c summed from the rounded W',
// both vectors f32; a constant bias added right after the matmul joins d). Both
// consumers then fuse the correction into their epilogues (epilogue-fusion),
// and a generated GEMM reading x as A computes the statistics itself from the
// tiles it multiplies (GemmEmitter.cpp), so no LayerNorm kernel runs: in a
// post-LN transformer every LayerNorm but the last one. Leaves alone:
// normalizations over other axes, RMS norm, f32 graphs (no generated GEMM),
// other users (a Gelu reading h), shared outputs. Off by default
// (CompileOptions::DeferNorms, `--defer-norms`): with the library GEMMs the
// statistics and the correction cost a kernel each; with generated GEMMs no
// LayerNorm kernel runs, but on an H100 (BERT-base fp16) the corrections'
// per-element loads in the epilogues cost more than the kernels saved
// (bench/RESULTS.md: summing A's rows costs those GEMMs 3-4 us each at
// BERT-base b1), so compile --tune does not try it yet.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_NORMDEFERRAL_H
#define SOLDER_PASSES_NORMDEFERRAL_H

#include "passes/Pass.h"

namespace solder {

class NormDeferral : public Pass {
public:
  llvm::StringRef name() const override { return "norm-deferral"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;
};

} // namespace solder

#endif
