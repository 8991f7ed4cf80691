//===- ConstantFolding.h - Evaluates nodes on constant operands -*- C++ -*-===//
//
// Matches: nodes all of whose present operands are constants (and that have
// at least one), in graph order, so chains fold in one sweep.
// Produces: constants holding the results, computed with the CPU reference
// kernels (the same code that is the correctness oracle). Result types are
// re-inferred as operands become constant, so a Reshape fed by a folded
// shape gets its static type.
// Leaves alone: nodes whose results would exceed
// PipelineOptions::MaxFoldedConstantBytes (a folded Expand or Tile would
// bloat the weights); nodes whose kernel reports an error (the error then
// surfaces at run time, with the node named).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_CONSTANTFOLDING_H
#define SOLDER_PASSES_CONSTANTFOLDING_H

#include "passes/Pass.h"
#include <cstddef>

namespace solder {

class ConstantFolding : public Pass {
public:
  explicit ConstantFolding(size_t MaxResultBytes)
      : MaxResultBytes(MaxResultBytes) {}
  llvm::StringRef name() const override { return "constant-folding"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;

private:
  size_t MaxResultBytes;
};

} // namespace solder

#endif
