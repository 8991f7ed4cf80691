//===- LoweredOps.h - ONNX ops imported as other IR ops ---------*- C++ -*-===//
//
// Some ONNX ops have no IR op of their own: the frontend rewrites each into
// existing IR ops where that is exact (frontend/OpLowering.cpp). This
// header is apart so that the model summary, which reads models without
// protobuf, can list them as supported.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_FRONTEND_LOWEREDOPS_H
#define SOLDER_FRONTEND_LOWEREDOPS_H

#include "llvm/ADT/StringRef.h"

namespace solder {
namespace onnximport {

/// Whether OpType is a default-domain op the frontend lowers into other IR
/// ops (DepthToSpace, SpaceToDepth, InstanceNormalization,
/// GroupNormalization, Einsum; Upsample becomes Resize, Scatter
/// ScatterElements).
bool isLoweredOp(llvm::StringRef OpType);

} // namespace onnximport
} // namespace solder

#endif
