//===- ConvPads.h - Effective pads of Conv and ConvTranspose ----*- C++ -*-===//
//
// ONNX spells a convolution's padding three ways (explicit pads, auto_pad,
// ConvTranspose's output_shape). This resolves them, for static shapes, to
// the pad at the start and end of each spatial dim, by the rules the
// reference executor follows, so the GPU legalization and the plan builder
// agree with it.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_CONVPADS_H
#define SOLDER_IR_CONVPADS_H

#include "ir/Graph.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

namespace solder {

struct ConvPads {
  llvm::SmallVector<int64_t, 3> Begin, End;
  /// Every dim padded equally at both ends, and not negatively.
  bool symmetric() const;
};

/// Pads of a Conv or ConvTranspose node over spatial input sizes In, kernel
/// sizes Kernel and (for ConvTranspose) output sizes Out. For ConvTranspose,
/// Begin/End are ONNX's pads: Out = S*(In-1) + output_padding + KEff -
/// Begin - End.
ConvPads effectiveConvPads(const Node &N, llvm::ArrayRef<int64_t> In,
                           llvm::ArrayRef<int64_t> Kernel,
                           llvm::ArrayRef<int64_t> Out);

} // namespace solder

#endif
