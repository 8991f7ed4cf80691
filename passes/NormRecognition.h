//===- NormRecognition.h - Decomposed norms become one op -------*- C++ -*-===//
//
// Matches the layer and RMS normalizations exporters write out op by op
// (torch's legacy exporter up to opset 17, TF converters, HF RMSNorm):
//   LayerNorm: m = ReduceMean(x, axes); d = Sub(x, m);
//              v = ReduceMean(Pow(d, 2) | Mul(d, d), axes);
//              n = Div(d, Sqrt(Add(v, eps))) | Mul(d, Reciprocal(Sqrt(..)))
//                  | Mul(d, Div(1, Sqrt(..)));
//              then optionally Mul(n, gamma), then optionally Add(., beta)
//   RMSNorm:   n = the same with x in place of d (no mean subtracted), then
//              optionally Mul(n, weight)
// where axes are the trailing dims of x, keepdims is 1, eps is a
// one-element constant and gamma/beta/weight have the normalized shape.
// Produces: LayerNormalization(x, gamma or ones, beta or none) or
// RMSNormalization(x, weight or ones) {axis, epsilon}, its result named as
// the matched final value; the matched nodes are erased.
// Preconditions: shapes inferred; constants folded.
// Leaves alone: a pattern whose intermediates have users outside it
// ("intermediate has a second user"), means over non-trailing axes, and
// a Cast around the computation (HF's f16 RMSNorm): only the plain form is
// matched. Every Sqrt of Add(ReduceMean, constant) gets a Decision.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_NORMRECOGNITION_H
#define SOLDER_PASSES_NORMRECOGNITION_H

#include "passes/Pass.h"

namespace solder {

class NormRecognition : public Pass {
public:
  llvm::StringRef name() const override { return "norm-recognition"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;
};

} // namespace solder

#endif
