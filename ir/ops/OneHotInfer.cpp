//===- OneHotInfer.cpp - OneHot shape inference ---------------------------===//
//
// OneHot (indices, depth, values): the indices' shape with a dim of size
// depth inserted at `axis`, in the values' type. The dim is static only
// when depth is a constant.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/InferFunctions.h"
#include "ir/ops/InferUtils.h"

namespace solder {
namespace infer {

llvm::Error oneHot(InferContext &C) {
  const TensorType &I = C.operandType(0), &D = C.operandType(1),
                   &V = C.operandType(2);
  for (const TensorType *T : {&I, &D})
    if (T->Elem == DType::Bool)
      return C.error("indices and depth must be numeric, got " +
                     typeToString(*T));
  if (D.rank() > 1 || (D.rank() == 1 && D.Dims[0] != Dim(1)))
    return C.error("depth must be a scalar or have one element, got " +
                   typeToString(D));
  if (V.rank() != 1 || V.Dims[0] != Dim(2))
    return C.error("values must be [off_value, on_value], got " +
                   typeToString(V));
  int64_t Rank = I.rank() + 1;
  int64_t AxisAttr = C.attrs().getInt("axis", -1);
  auto Axis = normalizeAxis(AxisAttr, Rank);
  if (!Axis)
    return C.error("axis " + llvm::Twine(AxisAttr) + " out of range for " +
                   "a result of rank " + llvm::Twine(Rank));
  Dim Depth;
  if (auto DV = constInts(C, 1)) {
    if ((*DV)[0] < 1)
      return C.error("depth must be positive, got " + llvm::Twine((*DV)[0]));
    Depth = Dim((*DV)[0]);
  }
  Shape Out = I.Dims;
  Out.insert(Out.begin() + *Axis, Depth);
  C.setResultType(0, TensorType(V.Elem, Out));
  return llvm::Error::success();
}

} // namespace infer
} // namespace solder
