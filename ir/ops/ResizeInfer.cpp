//===- ResizeInfer.cpp - Resize and TopK shape inference ------------------===//
//
// Resize (X, roi?, scales?, sizes?): X's type with the resized dims from
// constant scales (floor(dim * scale)) or sizes (keep_aspect_ratio_policy
// applied); a dim stays unknown when the operand deciding it is not a
// constant, so only the reference executor can run such a node.
//
//===----------------------------------------------------------------------===//
#include "ir/ResizeSpec.h"
#include "ir/ops/InferFunctions.h"
#include "ir/ops/InferUtils.h"

namespace solder {
namespace infer {

llvm::Error resize(InferContext &C) {
  const TensorType &X = C.operandType(0);
  int64_t R = X.rank();
  // Empty scales or sizes (opset 11's placeholders) count as absent.
  auto Given = [&](unsigned I) {
    return C.hasOperand(I) &&
           !(C.constantOperand(I) && C.constantOperand(I)->numElements() == 0);
  };
  bool HaveScales = Given(2), HaveSizes = Given(3);
  if (HaveScales == HaveSizes)
    return C.error("needs exactly one of scales and sizes");
  const Tensor *Scales = HaveScales ? C.constantOperand(2) : nullptr;
  const Tensor *Sizes = HaveSizes ? C.constantOperand(3) : nullptr;
  if (X.isStatic() && (Scales || Sizes)) {
    llvm::SmallVector<int64_t, 6> In;
    for (const Dim &D : X.Dims)
      In.push_back(D.size());
    auto Out = resizeOutputDims(C.node(), In, Scales, Sizes);
    if (!Out)
      return Out.takeError();
    C.setResultType(0, TensorType(X.Elem, Shape(Out->begin(), Out->end())));
    return llvm::Error::success();
  }
  Shape Out = X.Dims;
  bool Stretch =
      C.attrs().getString("keep_aspect_ratio_policy", "stretch") == "stretch";
  std::vector<int64_t> Axes = C.attrs().getInts("axes");
  if (!C.attrs().has("axes"))
    for (int64_t D = 0; D < R; ++D)
      Axes.push_back(D);
  for (size_t I = 0; I < Axes.size(); ++I) {
    auto D = normalizeAxis(Axes[I], R);
    if (!D)
      return C.error("axis " + llvm::Twine(Axes[I]) + " out of range");
    // Sizes name the dims outright (unless an aspect policy rescales).
    if (Sizes && Stretch && int64_t(I) < Sizes->numElements())
      Out[*D] = Dim(Sizes->getInt64(I));
    else
      Out[*D] = Dim::unknown();
  }
  C.setResultType(0, TensorType(X.Elem, Out));
  return llvm::Error::success();
}

/// TopK (X, K): X's shape with K along the axis (unknown when K is not a
/// constant); values in X's type, indices i64.
llvm::Error topK(InferContext &C) {
  const TensorType &X = C.operandType(0);
  if (X.rank() == 0)
    return C.error("input must have rank >= 1");
  int64_t AxisAttr = C.attrs().getInt("axis", -1);
  auto Axis = normalizeAxis(AxisAttr, X.rank());
  if (!Axis)
    return C.error("axis " + llvm::Twine(AxisAttr) + " out of range for " +
                   typeToString(X));
  if (X.Elem == DType::Bool)
    return C.error("input must be numeric, got bool");
  Shape Out = X.Dims;
  Out[*Axis] = Dim::unknown();
  if (auto K = constInts(C, 1)) {
    if (K->size() != 1 || (*K)[0] < 0)
      return C.error("k must be one non-negative value");
    const Dim &Len = X.Dims[*Axis];
    if (Len.isStatic() && (*K)[0] > Len.size())
      return C.error("k = " + llvm::Twine((*K)[0]) + " exceeds the axis (" +
                     llvm::Twine(Len.size()) + ")");
    Out[*Axis] = Dim((*K)[0]);
  }
  C.setResultType(0, TensorType(X.Elem, Out));
  C.setResultType(1, TensorType(DType::I64, Out));
  return llvm::Error::success();
}

} // namespace infer
} // namespace solder
