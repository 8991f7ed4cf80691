//===- LoopFusion.h - Elementwise chains and row reductions ------*- C++
//-*-===//
//
// Matches: maximal connected sets of loop-fusible nodes (elementwise,
// broadcast, and injective ops whose indexing composes: the op registry's
// ComposableIndexing), and row reductions (Reduce* over innermost axes,
// Softmax/LogSoftmax on the last axis, LayerNormalization,
// RMSNormalization) with the loop-fusible producers of their data operand
// and the elementwise consumers of their result.
// Produces: FusedGroup nodes of kind "reduction" and "loop" (algorithm note
// in LoopFusion.cpp).
// Leaves alone: contractions and their groups (epilogue-fusion runs first),
// opaque ops, groups that would hold only views, and every candidate whose
// fusion would create a cycle, duplicate work, or mix output shapes; each
// refusal is a decision with its reason.
// Preconditions: static shapes.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_LOOPFUSION_H
#define SOLDER_PASSES_LOOPFUSION_H

#include "passes/FusionSupport.h"

namespace solder {

class LoopFusion : public Pass {
public:
  explicit LoopFusion(FusionState &State) : State(State) {}
  llvm::StringRef name() const override { return "loop-fusion"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;

private:
  FusionState &State;
};

} // namespace solder

#endif
