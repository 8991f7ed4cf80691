//===- GeluRecognition.cpp - Decomposed GELU becomes one Gelu op ----------===//
//
// Each Erf or Tanh node anchors one match. The inner part (what feeds the
// Erf/Tanh) fixes x; the outer part is the same for both forms:
//
//        x ──────────────┬───────────────┐
//        │ (inner part)  │               │
//   Erf/Tanh ─> Add(., 1) ─> Mul ─> Mul ─┘  three factors x, 0.5 and
//                                           (1 + act), associated any way
//
//===----------------------------------------------------------------------===//
#include "passes/GeluRecognition.h"
#include "ir/OpRegistry.h"
#include "passes/PatternMatch.h"
#include <vector>

namespace solder {

namespace {
constexpr double Sqrt2 = 1.4142135623730951;
constexpr double SqrtHalf = 0.7071067811865476;
constexpr double SqrtTwoOverPi = 0.7978845608028654;
constexpr double CubeCoefficient = 0.044715;

struct GeluMatch {
  Value *X = nullptr;
  Value *Final = nullptr;
  bool Tanh = false;
  /// Every matched node, the final Mul included.
  std::vector<Node *> Nodes;
  /// Matched values other than x and the final one: each must feed only
  /// the pattern.
  std::vector<Value *> Intermediates;
};

/// Notes node N (producing an intermediate) as part of the match.
void take(GeluMatch &M, Node *N) {
  M.Nodes.push_back(N);
  M.Intermediates.push_back(N->result(0));
}

/// x / sqrt(2) or x * sqrt(0.5): x, else null.
Value *matchErfInput(Value *In) {
  if (Node *D = matchOp(In, OpKind::Div))
    return isConstScalar(D->operand(1), Sqrt2) ? D->operand(0) : nullptr;
  return operandBesideConst(matchOp(In, OpKind::Mul), SqrtHalf);
}

/// V is x^3: Pow(x, 3), x * (x * x) or (x * x) * x.
bool matchCube(Value *V, Value *X, GeluMatch &M) {
  if (Node *P = matchOp(V, OpKind::Pow)) {
    if (P->operand(0) != X || !isConstScalar(P->operand(1), 3.0))
      return false;
    take(M, P);
    return true;
  }
  Node *Outer = matchOp(V, OpKind::Mul);
  if (!Outer)
    return false;
  for (unsigned I = 0; I < 2; ++I) {
    Node *Sq = matchOp(Outer->operand(1 - I), OpKind::Mul);
    if (Outer->operand(I) == X && Sq && Sq->operand(0) == X &&
        Sq->operand(1) == X) {
      take(M, Outer);
      take(M, Sq);
      return true;
    }
  }
  return false;
}

/// sqrt(2/pi) * (x + 0.044715 * x^3): x, else null.
Value *matchTanhInput(Value *In, GeluMatch &M) {
  Node *Outer = matchOp(In, OpKind::Mul);
  Node *Sum = matchOp(operandBesideConst(Outer, SqrtTwoOverPi), OpKind::Add);
  if (!Sum)
    return nullptr;
  for (unsigned I = 0; I < 2; ++I) {
    Value *X = Sum->operand(I);
    Node *Scaled = matchOp(Sum->operand(1 - I), OpKind::Mul);
    Value *Cube = operandBesideConst(Scaled, CubeCoefficient);
    GeluMatch Inner;
    if (Cube && matchCube(Cube, X, Inner)) {
      take(M, Outer);
      take(M, Sum);
      take(M, Scaled);
      M.Nodes.insert(M.Nodes.end(), Inner.Nodes.begin(), Inner.Nodes.end());
      M.Intermediates.insert(M.Intermediates.end(), Inner.Intermediates.begin(),
                             Inner.Intermediates.end());
      return X;
    }
  }
  return nullptr;
}

/// From Act = Erf(..) or Tanh(..): the product 0.5 * x * (1 + Act).
Decision matchProduct(const Graph &G, Value *Act, GeluMatch &M) {
  const char *NotProduct = "the activation is not multiplied out as "
                           "0.5 * x * (1 + act)";
  Node *Plus = soleUser(G, Act);
  if (!Plus)
    return Decision::no("intermediate has a second user");
  if (Plus->kind() != OpKind::Add ||
      !isConstScalar(otherOperand(*Plus, Act), 1.0))
    return Decision::no("the activation is not followed by + 1");
  take(M, Plus);
  Value *K = Plus->result(0);
  Node *U1 = soleUser(G, K);
  if (!U1)
    return Decision::no("intermediate has a second user");
  if (U1->kind() != OpKind::Mul)
    return Decision::no(NotProduct);
  M.Nodes.push_back(U1);
  Value *O1 = otherOperand(*U1, K);
  // (x * 0.5) * (1 + act): the other factor is a product itself.
  Node *Half = matchOp(O1, OpKind::Mul);
  if (Half && operandBesideConst(Half, 0.5) == M.X) {
    take(M, Half);
    M.Final = U1->result(0);
    return Decision::yes();
  }
  // (k * x) * 0.5 or (k * 0.5) * x.
  bool TimesX = O1 == M.X;
  if (!TimesX && !isConstScalar(O1, 0.5))
    return Decision::no(NotProduct);
  M.Intermediates.push_back(U1->result(0));
  Node *U2 = soleUser(G, U1->result(0));
  if (!U2)
    return Decision::no("intermediate has a second user");
  Value *O2 =
      U2->kind() == OpKind::Mul ? otherOperand(*U2, U1->result(0)) : nullptr;
  if (!O2 || (TimesX ? !isConstScalar(O2, 0.5) : O2 != M.X))
    return Decision::no(NotProduct);
  M.Nodes.push_back(U2);
  M.Final = U2->result(0);
  return Decision::yes();
}

/// Legality: the whole GELU around the Erf or Tanh node Act.
Decision matchGelu(const Graph &G, Node &Act, GeluMatch &M) {
  M.Tanh = Act.kind() == OpKind::Tanh;
  Value *In = Act.operand(0);
  M.X = M.Tanh ? matchTanhInput(In, M) : matchErfInput(In);
  if (!M.X)
    return Decision::no(M.Tanh ? "Tanh input is not sqrt(2/pi) * (x + "
                                 "0.044715 * x^3)"
                               : "Erf input is not x / sqrt(2)");
  if (!M.Tanh)
    take(M, In->producer());
  take(M, &Act);
  Decision D = matchProduct(G, Act.result(0), M);
  if (!D)
    return D;
  for (Value *V : M.Intermediates)
    if (!hasSingleUse(G, V))
      return Decision::no("intermediate has a second user");
  if (M.X->type() != M.Final->type())
    return Decision::no("the constants broadcast x to another shape");
  return Decision::yes();
}

llvm::Error rewriteGelu(Graph &G, const GeluMatch &M) {
  Node *Last = M.Final->producer();
  Node *Gelu =
      G.insertNode(G.iteratorOf(Last), OpKind::Gelu, {M.X},
                   {G.uniqueName(M.Final->name() + ".gelu")}, Last->name());
  if (M.Tanh)
    Gelu->attrs().set("approximate", "tanh");
  if (auto E = inferNodeTypes(*Gelu))
    return E;
  replaceKeepingName(G, M.Final, Gelu->result(0));
  eraseIfDead(G, M.Nodes);
  return llvm::Error::success();
}
} // namespace

llvm::Expected<bool> GeluRecognition::run(Graph &G, DecisionLog &Log) {
  std::vector<Node *> Candidates;
  for (auto &N : G.nodes())
    if (N->kind() == OpKind::Erf || N->kind() == OpKind::Tanh)
      Candidates.push_back(N.get());
  bool Changed = false;
  // A match holds exactly one Erf or Tanh, its own candidate, so erasing it
  // never frees a later candidate.
  for (Node *N : Candidates) {
    GeluMatch M;
    Decision D = matchGelu(G, *N, M);
    Log.note(*N, D);
    if (!D)
      continue;
    if (auto E = rewriteGelu(G, M))
      return std::move(E);
    Changed = true;
  }
  if (Changed)
    G.removeUnusedConstants();
  return Changed;
}

} // namespace solder
