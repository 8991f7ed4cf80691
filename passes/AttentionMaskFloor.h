//===- AttentionMaskFloor.h - Finite attention masks floored ---*- C++ -*-===//
//
// Matches: Attention nodes (attention-recognition's, or ONNX Attention-23)
// with an additive mask of type f32 or bf16, the types whose lowest value
// (transformers' finfo.min, -3.4e38) overflows to -inf once a kernel
// rescales scores to base 2, as cuDNN's fused attention does. It then gives
// a row whose every key is masked zeros, where the unfused softmax of equal
// -3.4e38 scores attends uniformly.
// Produces: the mask read through Where(mask == -inf, mask, Max(mask,
// -1e30)): finite values floored at -1e30, far below any real score (a
// masked key's probability still underflows to 0, and a row of equal
// -1e30 scores stays uniform), -inf kept (such a row gives zeros in every
// path). One chain per mask value, shared by every Attention reading it;
// loop-fusion merges it into the mask's producer. A constant mask is
// floored in place.
// Leaves alone: attention over f32 Q (cuDNN's takes f16/bf16 only), f16
// masks (-65504 does not overflow), boolean masks, attention without a
// mask, and masks already floored.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_ATTENTIONMASKFLOOR_H
#define SOLDER_PASSES_ATTENTIONMASKFLOOR_H

#include "passes/Pass.h"

namespace solder {

/// The floor finite mask values get.
constexpr double AttentionMaskFloorValue = -1e30;

class AttentionMaskFloor : public Pass {
public:
  llvm::StringRef name() const override { return "attention-mask-floor"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;
};

} // namespace solder

#endif
