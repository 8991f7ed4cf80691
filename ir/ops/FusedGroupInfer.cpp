//===- FusedGroupInfer.cpp - Result types of a fused group ----------------===//
//
// A group's results have the types of its body's outputs; its operands
// must have the types of the body's inputs (the verifier relies on this
// to check that a body stands for its node).
//
//===----------------------------------------------------------------------===//
#include "ir/ops/InferFunctions.h"

namespace solder {
namespace infer {

llvm::Error fusedGroup(InferContext &C) {
  const Graph *Body = C.node().body();
  if (!Body)
    return C.error("has no body");
  if (Body->inputs().size() != C.numOperands())
    return C.error("body has " + llvm::Twine(Body->inputs().size()) +
                   " inputs for " + llvm::Twine(C.numOperands()) + " operands");
  for (unsigned I = 0; I < C.numOperands(); ++I) {
    if (!C.hasOperand(I))
      return C.error("operand " + llvm::Twine(I) + " is absent");
    if (C.operandType(I) != Body->inputs()[I]->type())
      return C.error("operand " + llvm::Twine(I) + " has type " +
                     typeToString(C.operandType(I)) + ", body input '" +
                     Body->inputs()[I]->name() + "' has " +
                     typeToString(Body->inputs()[I]->type()));
  }
  if (Body->outputs().size() != C.numResults())
    return C.error("body has " + llvm::Twine(Body->outputs().size()) +
                   " outputs for " + llvm::Twine(C.numResults()) + " results");
  for (unsigned I = 0; I < C.numResults(); ++I)
    C.setResultType(I, Body->outputs()[I]->type());
  return llvm::Error::success();
}

} // namespace infer
} // namespace solder
