//===- IdentityElimination.h - Drops pass-through ops -----------*- C++ -*-===//
//
// Matches: Identity nodes, Dropout nodes (solder's IR is inference-only,
// where Dropout passes its input through), a Cast to the type its input
// already has, and a Concat of a single operand.
// Produces: uses of the result read the input directly. A Dropout mask that
// is used becomes an all-true constant when its shape is static.
// Leaves alone: a node whose result is a graph output while its input is a
// graph input, a constant or another output (the output needs its own
// name); a used Dropout mask of non-static shape.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_IDENTITYELIMINATION_H
#define SOLDER_PASSES_IDENTITYELIMINATION_H

#include "passes/Pass.h"

namespace solder {

class IdentityElimination : public Pass {
public:
  llvm::StringRef name() const override { return "identity-elimination"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;
};

} // namespace solder

#endif
