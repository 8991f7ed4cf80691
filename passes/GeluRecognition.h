//===- GeluRecognition.h - Decomposed GELU becomes Gelu ---------*- C++ -*-===//
//
// Matches the GELU formulas exporters write out op by op:
//   erf form:  0.5 * x * (1 + Erf(x / sqrt(2)))     (or x * sqrt(0.5))
//   tanh form: 0.5 * x * (1 + Tanh(sqrt(2/pi) * (x + 0.044715 * x^3)))
//              with x^3 as Pow(x, 3), x * (x * x) or (x * x) * x
// in every operand order and with the three factors of the product
// associated either way ((x * k) * 0.5, (k * 0.5) * x, (x * 0.5) * k).
// Constants are one-element constants compared with a relative tolerance
// of 1e-4.
// Produces: Gelu(x) (approximate = "tanh" for the tanh form) under the
// name of the final Mul's result; the matched nodes are erased.
// Preconditions: shapes inferred; constants folded (a 1/sqrt(2) that is
// still a Div of two constants is not recognised).
// Leaves alone: a pattern whose intermediates have users outside it; every
// Erf or Tanh node gets a Decision saying why it was not part of a GELU.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_GELURECOGNITION_H
#define SOLDER_PASSES_GELURECOGNITION_H

#include "passes/Pass.h"

namespace solder {

class GeluRecognition : public Pass {
public:
  llvm::StringRef name() const override { return "gelu-recognition"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;
};

} // namespace solder

#endif
