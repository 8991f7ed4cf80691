//===- PatternMatch.cpp - Small helpers for pattern-rewriting passes ------===//
#include "passes/PatternMatch.h"
#include <cmath>
#include <vector>

namespace solder {

Node *matchOp(const Value *V, OpKind K) {
  if (!V || !V->producer() || V->producer()->kind() != K)
    return nullptr;
  return V->producer();
}

bool isConstScalar(const Value *V, double Expected, double Tol) {
  std::optional<double> C = constScalar(V);
  return C && std::fabs(*C - Expected) <= Tol * std::fabs(Expected);
}

bool hasSingleUse(const Graph &G, const Value *V) {
  return V->uses().size() == 1 && !G.isOutput(V);
}

Node *soleUser(const Graph &G, const Value *V) {
  return hasSingleUse(G, V) ? V->uses().front().User : nullptr;
}

Value *operandBesideConst(const Node *N, double K, double Tol) {
  if (!N || N->numOperands() != 2)
    return nullptr;
  for (unsigned I = 0; I < 2; ++I)
    if (isConstScalar(N->operand(I), K, Tol))
      return N->operand(1 - I);
  return nullptr;
}

Value *otherOperand(const Node &N, const Value *V) {
  if (N.numOperands() != 2)
    return nullptr;
  if (N.operand(0) == V)
    return N.operand(1);
  if (N.operand(1) == V)
    return N.operand(0);
  return nullptr;
}

void replaceKeepingName(Graph &G, Value *Old, Value *New) {
  std::string Name = Old->name();
  G.renameValue(Old, G.uniqueName(Name + ".dead"));
  G.renameValue(New, Name);
  G.replaceAllUsesWith(Old, New);
}

void eraseIfDead(Graph &G, llvm::ArrayRef<Node *> Nodes) {
  // Sweep until nothing more dies, so the list need not be in graph order.
  std::vector<Node *> Left(Nodes.begin(), Nodes.end());
  for (bool Progress = true; Progress;) {
    Progress = false;
    for (Node *&N : Left) {
      if (!N)
        continue;
      bool Used = false;
      for (Value *R : N->results())
        Used |= R && (R->hasUses() || G.isOutput(R));
      if (Used)
        continue;
      G.eraseNode(N);
      N = nullptr;
      Progress = true;
    }
  }
}

} // namespace solder
