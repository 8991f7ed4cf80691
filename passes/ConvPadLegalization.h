//===- ConvPadLegalization.h - Explicit, symmetric conv pads ----*- C++ -*-===//
//
// Matches: Conv and ConvTranspose nodes with static shapes whose effective
// padding (after auto_pad and output_shape are resolved) differs between
// the start and the end of a spatial dim, or is negative. cuDNN takes one
// pad per dim, so these cannot be library calls as they stand.
// Produces:
//   Conv:          Pad(X, extra) -> Conv(pads = min(begin, end))
//   ConvTranspose: ConvTranspose(pads = 0, no output_shape/output_padding,
//                  no bias) -> Pad(crop or extend to the output) -> Add(bias)
// Both keep the result value, so users and outputs are untouched.
// Leaves alone: symmetric pads (only auto_pad is made explicit there),
// nodes with symbolic dims. Runs only in the GPU pipeline
// (PipelineOptions::TargetGpu): the reference executor handles any pads.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_CONVPADLEGALIZATION_H
#define SOLDER_PASSES_CONVPADLEGALIZATION_H

#include "passes/Pass.h"

namespace solder {

class ConvPadLegalization : public Pass {
public:
  llvm::StringRef name() const override { return "conv-pad-legalization"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;
};

} // namespace solder

#endif
