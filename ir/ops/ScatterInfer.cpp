//===- ScatterInfer.cpp - ScatterElements and ScatterND shape inference ---===//
//
// Both give data's type; the checks are ONNX's shape rules: ScatterElements'
// indices and updates share a shape of data's rank, ScatterND's updates are
// indices.shape[:-1] + data.shape[k:] for k = indices.shape[-1] <= rank.
// `reduction` must be none, add, mul, max or min.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/InferFunctions.h"
#include "ir/ops/InferUtils.h"

namespace solder {
namespace infer {

static llvm::Error checkScatterCommon(InferContext &C) {
  const TensorType &D = C.operandType(0), &I = C.operandType(1),
                   &U = C.operandType(2);
  if (I.Elem != DType::I64 && I.Elem != DType::I32)
    return C.error("indices must be i32 or i64, got " + typeToString(I));
  if (U.Elem != D.Elem)
    return C.error("updates " + typeToString(U) + " must have data's type " +
                   typeToString(D));
  std::string R = C.attrs().getString("reduction", "none");
  if (R != "none" && R != "add" && R != "mul" && R != "max" && R != "min")
    return C.error("reduction '" + R + "' is not none, add, mul, max or min");
  if (R != "none" && D.Elem == DType::Bool)
    return C.error("reduction '" + R + "' needs a numeric type");
  C.setResultType(0, D);
  return llvm::Error::success();
}

llvm::Error scatterElements(InferContext &C) {
  const TensorType &D = C.operandType(0), &I = C.operandType(1),
                   &U = C.operandType(2);
  if (D.rank() == 0 || I.rank() != D.rank() || U.rank() != D.rank())
    return C.error("data, indices and updates must have one rank >= 1, got " +
                   typeToString(D) + ", " + typeToString(I) + ", " +
                   typeToString(U));
  for (unsigned K = 0; K < I.rank(); ++K)
    if (I.Dims[K].isStatic() && U.Dims[K].isStatic() && I.Dims[K] != U.Dims[K])
      return C.error("indices " + typeToString(I) + " and updates " +
                     typeToString(U) + " must have one shape");
  int64_t Axis = C.attrs().getInt("axis", 0);
  if (!normalizeAxis(Axis, D.rank()))
    return C.error("axis " + llvm::Twine(Axis) + " out of range for " +
                   typeToString(D));
  return checkScatterCommon(C);
}

llvm::Error scatterND(InferContext &C) {
  const TensorType &D = C.operandType(0), &I = C.operandType(1),
                   &U = C.operandType(2);
  if (I.rank() == 0 || !I.Dims.back().isStatic())
    return C.error("indices need a static last dim, got " + typeToString(I));
  int64_t K = I.Dims.back().size();
  if (K < 1 || K > int64_t(D.rank()))
    return C.error("indices' last dim " + llvm::Twine(K) +
                   " must be in [1, rank of data]");
  if (int64_t(U.rank()) != int64_t(I.rank()) - 1 + int64_t(D.rank()) - K)
    return C.error("updates " + typeToString(U) + " must have rank " +
                   llvm::Twine(I.rank() - 1 + D.rank() - K));
  return checkScatterCommon(C);
}

} // namespace infer
} // namespace solder
