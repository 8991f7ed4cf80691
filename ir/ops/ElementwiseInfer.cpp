//===- ElementwiseInfer.cpp - Shapes of elementwise and broadcast ops
//------===//
#include "ir/ops/InferFunctions.h"
#include "ir/ops/InferUtils.h"

namespace solder {
namespace infer {

llvm::Error sameAsFirst(InferContext &C) {
  C.setResultType(0, C.operandType(0));
  return llvm::Error::success();
}

llvm::Error cast(InferContext &C) {
  const Attribute *To = C.attrs().find("to");
  if (!To || To->kind() != AttrKind::Int)
    return C.error("missing integer attribute 'to'");
  std::optional<DType> T = dtypeFromOnnx(To->getInt());
  if (!T)
    return C.error("cast to unsupported ONNX data type " +
                   llvm::Twine(To->getInt()));
  C.setResultType(0, TensorType(*T, C.operandType(0).Dims));
  return llvm::Error::success();
}

llvm::Error dropout(InferContext &C) {
  C.setResultType(0, C.operandType(0));
  C.setResultType(1, TensorType(DType::Bool, C.operandType(0).Dims));
  return llvm::Error::success();
}

llvm::Error logicalNot(InferContext &C) {
  if (C.operandType(0).Elem != DType::Bool)
    return C.error("expects a bool operand");
  C.setResultType(0, C.operandType(0));
  return llvm::Error::success();
}

/// Broadcasts every present operand from First on; all must share a dtype
/// with operand TypeFrom.
static llvm::Error broadcastAll(InferContext &C, unsigned First,
                                unsigned TypeFrom, Shape &Out) {
  DType Elem = C.operandType(TypeFrom).Elem;
  bool Started = false;
  for (unsigned I = First; I < C.numOperands(); ++I) {
    if (!C.hasOperand(I))
      continue;
    const TensorType &T = C.operandType(I);
    if (T.Elem != Elem)
      return C.error("operand " + llvm::Twine(I) + " is " + dtypeName(T.Elem) +
                     " but operand " + llvm::Twine(TypeFrom) + " is " +
                     dtypeName(Elem));
    if (!Started) {
      Out = T.Dims;
      Started = true;
      continue;
    }
    Shape Next;
    std::string Err;
    if (!broadcastShapes(Out, T.Dims, Next, Err))
      return C.error("operands do not broadcast: " + Err);
    Out = std::move(Next);
  }
  return llvm::Error::success();
}

llvm::Error broadcastArith(InferContext &C) {
  Shape Out;
  // Pow allows a different exponent type; its result has the base's type.
  bool IsPow = C.node().kind() == OpKind::Pow;
  if (IsPow) {
    std::string Err;
    if (!broadcastShapes(C.operandType(0).Dims, C.operandType(1).Dims, Out,
                         Err))
      return C.error("operands do not broadcast: " + Err);
  } else if (auto E = broadcastAll(C, 0, 0, Out)) {
    return E;
  }
  C.setResultType(0, TensorType(C.operandType(0).Elem, Out));
  return llvm::Error::success();
}

llvm::Error broadcastCompare(InferContext &C) {
  Shape Out;
  if (auto E = broadcastAll(C, 0, 0, Out))
    return E;
  C.setResultType(0, TensorType(DType::Bool, Out));
  return llvm::Error::success();
}

llvm::Error broadcastLogical(InferContext &C) {
  if (C.operandType(0).Elem != DType::Bool)
    return C.error("expects bool operands");
  return broadcastCompare(C);
}

llvm::Error where(InferContext &C) {
  if (C.operandType(0).Elem != DType::Bool)
    return C.error("condition must be bool, got " +
                   dtypeName(C.operandType(0).Elem));
  Shape XY;
  if (auto E = broadcastAll(C, 1, 1, XY))
    return E;
  Shape Out;
  std::string Err;
  if (!broadcastShapes(C.operandType(0).Dims, XY, Out, Err))
    return C.error("condition does not broadcast: " + Err);
  C.setResultType(0, TensorType(C.operandType(1).Elem, Out));
  return llvm::Error::success();
}

llvm::Error clipLike(InferContext &C) {
  // Clip's bounds, PRelu's slope and BatchNormalization's statistics are
  // broadcast into operand 0, whose type the result keeps.
  const TensorType &X = C.operandType(0);
  for (unsigned I = 1; I < C.numOperands(); ++I)
    if (C.hasOperand(I) && C.operandType(I).Elem != X.Elem)
      return C.error("operand " + llvm::Twine(I) + " is " +
                     dtypeName(C.operandType(I).Elem) + ", expected " +
                     dtypeName(X.Elem));
  if (C.node().kind() == OpKind::PRelu) {
    // The slope broadcasts into X (unidirectionally).
    Shape Out;
    std::string Err;
    if (!broadcastShapes(X.Dims, C.operandType(1).Dims, Out, Err) ||
        Out != X.Dims)
      return C.error("slope " + typeToString(C.operandType(1)) +
                     " does not broadcast to " + typeToString(X));
  }
  if (C.node().kind() == OpKind::BatchNormalization && X.rank() < 2)
    return C.error("input must have rank >= 2, got " + typeToString(X));
  C.setResultType(0, X);
  return llvm::Error::success();
}

} // namespace infer
} // namespace solder
