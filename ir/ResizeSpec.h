//===- ResizeSpec.h - What a Resize node computes, per axis -----*- C++ -*-===//
//
// Resize is separable: each output element is a weighted sum over a few
// source positions along each resized axis, the weights of the axes
// multiplied. For static input dims and constant roi/scales/sizes this
// resolves a Resize node (opset-19 attributes) into the output dims and,
// per axis, a table of taps: for each output position the source indices
// (clamped, as ONNX's edge padding) and weights, or "extrapolated" for
// tf_crop_and_resize positions outside the input. The reference kernel and
// the generated kernel both read these tables, so they agree by
// construction; the formulas follow onnx/reference/ops/op_resize.py.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_RESIZESPEC_H
#define SOLDER_IR_RESIZESPEC_H

#include "ir/Graph.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <vector>

namespace solder {

/// The taps of one axis: TapsPerOut source indices and weights for each of
/// OutSize positions (position o's taps at o * TapsPerOut).
struct ResizeAxisTaps {
  int64_t OutSize = 0;
  unsigned TapsPerOut = 1;
  std::vector<int64_t> Index;
  std::vector<double> Weight;
  /// Per position: the source coordinate is outside the input
  /// (tf_crop_and_resize), so the result is extrapolation_value.
  std::vector<bool> Extrapolated;
  /// Output position o reads source o with weight 1.
  bool isIdentity() const;
};

struct ResizeSpec {
  std::vector<int64_t> OutDims;
  std::vector<ResizeAxisTaps> Axes; // one per input dim
  double ExtrapolationValue = 0;
  /// mode "nearest": every weight is 0 or 1, so any dtype is copied.
  bool Nearest = false;
};

/// Output dims only (for shape inference): from constant Scales or Sizes
/// over the static input dims In.
llvm::Expected<std::vector<int64_t>>
resizeOutputDims(const Node &N, llvm::ArrayRef<int64_t> In,
                 const Tensor *Scales, const Tensor *Sizes);

/// Everything, for static In and the given operand values (Roi may be
/// null or empty; exactly one of Scales and Sizes non-empty). Errors name
/// the node.
llvm::Expected<ResizeSpec>
resolveResize(const Node &N, llvm::ArrayRef<int64_t> In, const Tensor *Roi,
              const Tensor *Scales, const Tensor *Sizes);

} // namespace solder

#endif
