//===- SizeLimits.h - Refusing tensors too large to be meant ----*- C++ -*-===//
//
// A hostile or broken model can ask for tensors of any size through static
// shapes (a ConstantOfShape, Expand, Tile or Range to 2^40 elements, a
// Resize with a huge scale, an input declared huge). Shape inference only
// computes such sizes; nothing allocates them until a backend runs the
// graph. checkTensorSizes refuses them first, with the node named, so the
// user gets an error instead of an out-of-memory kill.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_SIZELIMITS_H
#define SOLDER_IR_SIZELIMITS_H

#include "ir/Type.h"
#include "llvm/Support/Error.h"
#include <cstddef>
#include <cstdint>

namespace solder {

class Graph;

/// The default of PipelineOptions::MaxFoldedConstantBytes /
/// --max-constant-bytes: constant folding leaves a node unfolded when a
/// result would be larger (a folded Expand or Tile would bloat the weights).
constexpr size_t DefaultMaxConstantBytes = size_t(64) << 20;

/// The default of PipelineOptions::MaxTensorBytes / --max-tensor-bytes:
/// 16 GiB, above any single tensor of the models solder targets and far
/// below what the shape limits of ir/Type.h allow (2^34 elements).
constexpr uint64_t DefaultMaxTensorBytes = uint64_t(16) << 30;

/// Bytes of a static type (saturating at UINT64_MAX); 0 for a dynamic one.
uint64_t staticTypeBytes(const TensorType &T);

/// Checks every graph input and every node result (in bodies too) whose
/// shape is static against MaxBytes; the first one above it gives an error
/// naming the node (or input), the type and both sizes.
llvm::Error checkTensorSizes(const Graph &G, uint64_t MaxBytes);

} // namespace solder

#endif
