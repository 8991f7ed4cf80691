//===- ElementwiseInfer.cpp - Shapes of elementwise and broadcast ops
//------===//
#include "ir/ops/InferFunctions.h"
#include "ir/ops/InferUtils.h"
#include "llvm/ADT/STLExtras.h"

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

llvm::Error floatPredicate(InferContext &C) {
  const TensorType &X = C.operandType(0);
  if (!isFloat(X.Elem))
    return C.error("expects a float operand, got " + dtypeName(X.Elem));
  C.setResultType(0, TensorType(DType::Bool, X.Dims));
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

llvm::Error mod(InferContext &C) {
  // ONNX leaves fmod = 0 (the divisor's sign) undefined for floats.
  DType T = C.operandType(0).Elem;
  if (isFloat(T) && C.attrs().getInt("fmod", 0) != 1)
    return C.error("fmod must be 1 for " + dtypeName(T) + " operands");
  return broadcastArith(C);
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

llvm::Error applyRowStats(InferContext &C) {
  const TensorType &Y = C.operandType(0);
  if (!isFloat(Y.Elem))
    return C.error("expects a float Y, got " + dtypeName(Y.Elem));
  for (unsigned I = 1; I < C.numOperands(); ++I) {
    if (!C.hasOperand(I))
      continue;
    const TensorType &T = C.operandType(I);
    // Statistics and per-column vectors may be f32 under a reduced Y; the
    // addend Z has Y's type.
    bool MayBeF32 = I >= 1 && I <= 5;
    if (T.Elem != Y.Elem && !(MayBeF32 && T.Elem == DType::F32))
      return C.error("operand " + llvm::Twine(I) + " is " + dtypeName(T.Elem) +
                     " but Y is " + dtypeName(Y.Elem) +
                     (MayBeF32 ? " (it may also be f32)" : ""));
    Shape Out;
    std::string Err;
    if (!broadcastShapes(Y.Dims, T.Dims, Out, Err))
      return C.error("operand " + llvm::Twine(I) +
                     " does not broadcast to Y: " + Err);
    if (!(Out == Y.Dims))
      return C.error("operand " + llvm::Twine(I) +
                     " broadcasts Y to another shape");
  }
  C.setResultType(0, TensorType(Y.Elem, Y.Dims));
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

/// Checks that operand I, when present, is an integer scalar (rank 0, or
/// one element) of one of the dtypes in Allowed.
static llvm::Error checkIntScalar(InferContext &C, unsigned I, const char *What,
                                  std::initializer_list<DType> Allowed) {
  if (!C.hasOperand(I))
    return llvm::Error::success();
  const TensorType &T = C.operandType(I);
  bool TypeOk = llvm::is_contained(Allowed, T.Elem);
  bool ShapeOk = T.rank() == 0 || (T.rank() == 1 && T.Dims[0] == Dim(1));
  if (!TypeOk || !ShapeOk)
    return C.error(llvm::Twine(What) + " must be an integer scalar, got " +
                   typeToString(T));
  return llvm::Error::success();
}

llvm::Error cumSum(InferContext &C) {
  const TensorType &X = C.operandType(0);
  if (X.rank() == 0)
    return C.error("input must have rank >= 1");
  if (auto E = checkIntScalar(C, 1, "axis", {DType::I32, DType::I64}))
    return E;
  if (auto Axis = constInts(C, 1))
    if (!normalizeAxis((*Axis)[0], X.rank()))
      return C.error("axis " + llvm::Twine((*Axis)[0]) +
                     " is out of range for rank " + llvm::Twine(X.rank()));
  C.setResultType(0, X);
  return llvm::Error::success();
}

llvm::Error trilu(InferContext &C) {
  const TensorType &X = C.operandType(0);
  if (X.rank() < 2)
    return C.error("input must have rank >= 2, got " + typeToString(X));
  if (auto E = checkIntScalar(C, 1, "k", {DType::I64}))
    return E;
  C.setResultType(0, X);
  return llvm::Error::success();
}

} // namespace infer
} // namespace solder
