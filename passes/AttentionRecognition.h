//===- AttentionRecognition.h - SDPA sub-graphs become Attention -*- C++ -*-=//
//
// Matches, anchored at each Softmax over the last axis of a 4-D tensor, the
// scaled dot-product attention torch's exporters write out op by op:
//   s = MatMul(q, kt)           q [B,H,Sq,D], kt [B,H,D,Sk]; q and kt may
//                               each be Mul(x, c) (dynamo: the scale split
//                               between Q and K)
//   s = Mul(s, c) | Div(s, c)   any number, c one-element constants
//   s = Add(s, m)               any number: additive masks (padding masks,
//                               causal masks, T5's position bias) of the
//                               scores' float type
//   p = Softmax(s, axis = -1)
//   o = MatMul(p, v)            v [B,H,Sk,Dv]
// where every intermediate feeds only the next node.
// Produces: Attention(q, k, v, mask) {id, scale, members} in place of o,
// with k the [B,H,Sk,D] tensor kt transposes (kt's Transpose composed away,
// or a new Transpose) and the masks summed into one by new Add nodes. When q,
// k and v are each a head split Transpose(Reshape(x, [B,S,H,D]),
// [0,2,1,3]) of a 3-D x (through any chain of Transposes), and o feeds only
// the head merge Transpose(o, [0,2,1,3]) and a Reshape, the 3-D form
// Attention(xq, xk, xv) {q_num_heads, kv_num_heads} replaces the split and
// merge too (they stay where something else reads them).
// Leaves alone, with a reason: a Softmax not over the last axis of a 4-D
// tensor, scores that are not a MatMul through scalings and mask additions,
// a scaling by a non-constant, an intermediate with another user, a mask
// that is not of the scores' type, a candidate the user disabled, and (for
// the GPU) head dims above what the generated kernels take.
// Preconditions: shapes inferred, constants folded (scales are constants);
// after precision-conversion (the Attention keeps the converted types).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_ATTENTIONRECOGNITION_H
#define SOLDER_PASSES_ATTENTIONRECOGNITION_H

#include "passes/FusionSupport.h"
#include "passes/Pass.h"

namespace solder {

class AttentionRecognition : public Pass {
public:
  /// MaxHeadDim > 0: attention with a larger head dim (Q/K or V) is left
  /// unfused (the GPU kernels take up to 128). MinBlocks > 0 (the automatic
  /// mode): attention whose scores [B,H,Sq,Sk] give fewer than MinBlocks
  /// blocks of 64 query rows, B*H*ceil(Sq/64), is left unfused (too few to
  /// fill the GPU: the unfused matmuls were measured faster there) unless
  /// it has at most ShortKeys keys (small grids split short key ranges
  /// over a block's warps and win; long ones still lose).
  explicit AttentionRecognition(FusionState &State, int64_t MaxHeadDim = 0,
                                int64_t MinBlocks = 0, int64_t ShortKeys = 0)
      : State(State), MaxHeadDim(MaxHeadDim), MinBlocks(MinBlocks),
        ShortKeys(ShortKeys) {}
  llvm::StringRef name() const override { return "attention-recognition"; }
  llvm::Expected<bool> run(Graph &G, DecisionLog &Log) override;

private:
  FusionState &State;
  int64_t MaxHeadDim;
  int64_t MinBlocks;
  int64_t ShortKeys;
};

/// The automatic mode's thresholds (PipelineOptions::AutoAttention): about
/// one block per SM of an H100 (132), or keys few enough for a small grid
/// (H100, BERT-base fp16: fused 1x128, 2x256 and 4x128 ran 0.61-0.89x of
/// unfused, 1x512 1.45x; bench/RESULTS.md).
constexpr int64_t AutoAttentionMinBlocks = 128;
constexpr int64_t AutoAttentionShortKeys = 256;

} // namespace solder

#endif
