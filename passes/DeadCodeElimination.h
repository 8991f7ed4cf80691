//===- DeadCodeElimination.h - Removes unused nodes and constants -*- C++
//-*-===//
//
// Matches: nodes none of whose results is used or is a graph output, and
// constants nobody reads.
// Produces: the graph without them (repeated until nothing more dies).
// Leaves alone: graph inputs, even unused ones (they are the model's
// interface).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_DEADCODEELIMINATION_H
#define SOLDER_PASSES_DEADCODEELIMINATION_H

#include "passes/Pass.h"

namespace solder {

class DeadCodeElimination : public Pass {
public:
  llvm::StringRef name() const override { return "dead-code-elimination"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;
};

} // namespace solder

#endif
