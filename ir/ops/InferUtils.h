//===- InferUtils.h - Helpers shared by shape-inference files ---*- C++ -*-===//
#ifndef SOLDER_IR_OPS_INFERUTILS_H
#define SOLDER_IR_OPS_INFERUTILS_H

#include "ir/OpRegistry.h"
#include <optional>

namespace solder {
namespace infer {

/// Maps a possibly negative axis into [0, Rank); nullopt when out of range.
inline std::optional<int64_t> normalizeAxis(int64_t Axis, int64_t Rank) {
  if (Axis < -Rank || Axis >= Rank)
    return std::nullopt;
  return Axis < 0 ? Axis + Rank : Axis;
}

/// The int64 values of constant operand I, or nullopt when it is absent or
/// not a constant.
inline std::optional<llvm::SmallVector<int64_t, 8>>
constInts(const InferContext &C, unsigned I) {
  if (const Tensor *T = C.constantOperand(I))
    return T->toInt64Vector();
  return std::nullopt;
}

/// A shape of Rank unknown dims.
inline Shape unknownShape(int64_t Rank) { return Shape(Rank, Dim::unknown()); }

/// Static length of a 1-D operand (e.g. a shape tensor), or nullopt.
inline std::optional<int64_t> staticLength1D(const TensorType &T) {
  if (T.rank() != 1 || !T.Dims[0].isStatic())
    return std::nullopt;
  return T.Dims[0].size();
}

} // namespace infer
} // namespace solder

#endif
