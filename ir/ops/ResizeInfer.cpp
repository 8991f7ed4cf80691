//===- ResizeInfer.cpp - Resize shape inference ---------------------------===//
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

} // namespace infer
} // namespace solder
