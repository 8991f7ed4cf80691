//===- AttentionSpec.h - The geometry of one Attention node -----*- C++ -*-===//
//
// Attention's sizes resolved from static operand dims, in one place for
// the reference kernel, the generated kernel and the FLOP count, so they
// index Q, K, V and the mask the same way. Element (b, h, i, d) of Q is at
//   4-D: ((b * Hq + h) * Sq + i) * D + d
//   3-D: (b * Sq + i) * (Hq * D) + h * D + d
// and K, V alike with Hkv and Sk; query head h reads key/value head
// h / (Hq / Hkv). The mask's dims are right-aligned to [B, Hq, Sq, Sk],
// broadcast dims getting stride 0.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_ATTENTIONSPEC_H
#define SOLDER_IR_ATTENTIONSPEC_H

#include "ir/Graph.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"
#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace solder {

/// The largest head dim (of Q/K and of V) the generated GPU attention
/// kernels take (their shared-memory tiles); attention-recognition leaves
/// larger ones unfused when compiling for the GPU.
constexpr int64_t MaxAttentionHeadDim = 128;

struct AttentionSpec {
  bool ThreeD = false;
  int64_t Batch = 0, QHeads = 0, KvHeads = 0, QLen = 0, KvLen = 0;
  int64_t HeadDim = 0, VHeadDim = 0;
  double Scale = 1;
  bool Causal = false;
  /// Mask: none, additive (Q's float type) or boolean (true = attend).
  enum class MaskKind { None, Additive, Bool } Mask = MaskKind::None;
  /// Element strides of the mask over [B, Hq, Sq, Sk] (0 = broadcast).
  std::array<int64_t, 4> MaskStrides = {0, 0, 0, 0};

  /// Strides (in elements) of Q (Heads = QHeads, Dim = HeadDim), K
  /// (KvHeads, HeadDim) or V (KvHeads, VHeadDim) over [b, h, s, d].
  std::array<int64_t, 4> strides(int64_t Heads, int64_t Len,
                                 int64_t Dim) const;
  /// The result's element strides over [b, h, i, d] (Hq, Sq, Dv).
  std::array<int64_t, 4> outStrides() const {
    return strides(QHeads, QLen, VHeadDim);
  }
  /// Multiply-adds of Q K^T and P V together, times two.
  double flops() const;
};

/// The fusion group an Attention node stands for: the id and the ONNX
/// member names attention-recognition gave it, or -1 and the node's own
/// name for one imported from ONNX. (The report, the plan's groups, the
/// kernel header and compare all name it this way.)
struct AttentionGroup {
  int64_t Id = -1;
  std::vector<std::string> Members;
};
AttentionGroup attentionGroup(const Node &N);

/// The dims of Attention's operands (Mask empty and HasMask false when
/// there is none).
struct AttentionOperandDims {
  llvm::SmallVector<int64_t, 4> Q, K, V, Mask;
  bool HasMask = false, BoolMask = false;
};

/// The spec of Attention node N for operands of these dims, checked
/// completely (the reference kernel calls it on whatever tensors it gets);
/// errors name the node.
llvm::Expected<AttentionSpec> resolveAttention(const Node &N,
                                               const AttentionOperandDims &D);
/// The same from N's operand types, which must be static.
llvm::Expected<AttentionSpec> resolveAttention(const Node &N);

} // namespace solder

#endif
