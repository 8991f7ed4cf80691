//===- Compare.h - Tolerance comparison of tensors --------------*- C++ -*-===//
//
// Compares a computed tensor against an expected one the way the ONNX
// backend test runner does: same dtype and shape; floats within
// |a - b| <= atol + rtol * |b| with NaN equal to NaN and infinities equal
// only to themselves; integers and bools exactly.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TOOLS_COMPARE_H
#define SOLDER_TOOLS_COMPARE_H

#include "ir/Tensor.h"
#include "tools/Tolerances.h"
#include <cmath>
#include <string>

namespace solder {

struct CompareResult {
  bool Match = true;
  /// Why not: "shape f32[2,3] != expected f32[3,2]" or "3 of 6 elements
  /// differ; max abs error 0.5 at [1,2] (got 1.5, expected 1); max rel
  /// error ...".
  std::string Reason;
};

CompareResult compareTensors(const Tensor &Actual, const Tensor &Expected,
                             const Tolerance &Tol);

/// The largest errors of Actual against Expected (same type), whatever the
/// tolerance: MaxAbs = max |a - b|, MaxRel = max |a - b| / |b| (infinite
/// where b is 0 and a is not). A NaN or infinity on one side only counts
/// as an infinite error.
struct ErrorStats {
  double MaxAbs = 0, MaxRel = 0;
  /// max |b| over the finite elements of Expected: the tensor's scale.
  double MaxRef = 0;
  /// max |a - b| / max |b|: the error relative to the tensor's scale (the
  /// figure model checks use; element-wise relative errors of values near
  /// zero are dominated by summation order).
  double scaled() const {
    return MaxAbs == 0 ? 0 : MaxRef > 0 ? MaxAbs / MaxRef : INFINITY;
  }
  /// Within tolerance against the tensor's scale: MaxAbs <= ATol + RTol *
  /// MaxRef.
  bool withinScaled(double RTol, double ATol) const {
    return MaxAbs <= ATol + RTol * MaxRef;
  }
};
ErrorStats measureErrors(const Tensor &Actual, const Tensor &Expected);

} // namespace solder

#endif
