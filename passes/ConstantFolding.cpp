//===- ConstantFolding.cpp - Evaluates nodes on constant operands
//----------===//
#include "passes/ConstantFolding.h"
#include "ir/OpRegistry.h"
#include "runtime/reference/Kernels.h"
#include <vector>

namespace solder {

static bool allOperandsConstant(const Node &N) {
  bool Any = false;
  for (Value *O : N.operands()) {
    if (!O)
      continue;
    if (!O->isConstant())
      return false;
    Any = true;
  }
  return Any;
}

static Decision tryFold(Graph &G, Node &N, size_t MaxBytes) {
  if (!allOperandsConstant(N))
    return Decision::no("not all operands are constant");
  for (Value *R : N.results()) {
    if (!R)
      continue;
    if (!R->type().isStatic())
      return Decision::no("result shape is not static");
    if (size_t(R->type().numElements()) * dtypeSize(R->dtype()) > MaxBytes)
      return Decision::no("result is larger than the folding limit");
  }
  std::vector<const Tensor *> Ops;
  for (Value *O : N.operands())
    Ops.push_back(O ? O->constant() : nullptr);
  llvm::SmallVector<Tensor, 2> Results;
  if (auto E = ref::evaluateNode(N, Ops, Results))
    return Decision::no("evaluation failed: " + llvm::toString(std::move(E)));
  for (unsigned I = 0; I < N.numResults(); ++I)
    if (Value *R = N.result(I); R && (R->hasUses() || G.isOutput(R)))
      G.replaceWithConstant(R, std::move(Results[I]));
  return Decision::yes();
}

llvm::Expected<bool> ConstantFolding::run(Graph &G, DecisionLog &Log) {
  bool Changed = false;
  std::vector<Node *> Order;
  for (auto &N : G.nodes())
    Order.push_back(N.get());
  for (Node *N : Order) {
    if (auto E = inferNodeTypes(*N))
      return std::move(E);
    if (!allOperandsConstant(*N))
      continue;
    Decision D = tryFold(G, *N, MaxResultBytes);
    Log.note(*N, D);
    if (D) {
      G.eraseNode(N);
      Changed = true;
    }
  }
  return Changed;
}

} // namespace solder
