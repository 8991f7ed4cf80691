//===- ShapeFolding.h - Folds Shape of static tensors -----------*- C++ -*-===//
//
// Matches: Shape nodes whose operand has a static shape (after the model's
// symbols are bound, that is every Shape of a shape sub-graph). Before
// looking, it re-runs shape inference so types reflect constants produced
// by earlier folding.
// Produces: an i64 constant holding the dims (honouring start/end).
// Leaves alone: Shape of a tensor with symbolic or unknown dims; the
// sub-graph then stays and is computed at run time.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_SHAPEFOLDING_H
#define SOLDER_PASSES_SHAPEFOLDING_H

#include "passes/Pass.h"

namespace solder {

class ShapeFolding : public Pass {
public:
  llvm::StringRef name() const override { return "shape-folding"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;
};

} // namespace solder

#endif
