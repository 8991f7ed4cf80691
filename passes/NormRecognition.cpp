//===- NormRecognition.cpp - Decomposed norms become one op ---------------===//
//
// Each Sqrt(Add(ReduceMean(..), eps)) anchors one match, walked outwards:
//
//   x ─> ReduceMean ─> Sub(x, m) = d          (LayerNorm only; RMS: d = x)
//   d ─> Pow(d, 2) ─> ReduceMean ─> Add(eps) ─> Sqrt = s
//   d, s ─> Div(d, s) = n ─> Mul(n, gamma) ─> Add(., beta)   (both optional)
//
//===----------------------------------------------------------------------===//
#include "passes/NormRecognition.h"
#include "ir/OpRegistry.h"
#include "passes/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"
#include <algorithm>
#include <optional>
#include <vector>

namespace solder {

namespace {
struct NormMatch {
  bool Layer = false; ///< LayerNormalization, else RMSNormalization
  Value *X = nullptr;
  int64_t Axis = 0; ///< first normalized dim
  double Epsilon = 0;
  Value *Scale = nullptr, *Bias = nullptr;
  Value *Final = nullptr;
  /// Every matched node, the final one included.
  std::vector<Node *> Nodes;
  /// Matched values other than x, d and the final one: each must feed only
  /// the pattern.
  std::vector<Value *> Intermediates;
};

void take(NormMatch &M, Node *N) {
  M.Nodes.push_back(N);
  M.Intermediates.push_back(N->result(0));
}

/// The first reduced dim of a keepdims ReduceMean over trailing dims.
std::optional<int64_t> trailingAxis(const Node &Mean) {
  const Value *In = Mean.operand(0), *Axes = Mean.operand(1);
  if (!Axes || !Axes->isConstant() || Mean.attrs().getInt("keepdims", 1) != 1)
    return std::nullopt;
  int64_t Rank = In->type().rank();
  llvm::SmallVector<int64_t, 4> A = Axes->constant()->toInt64Vector();
  if (A.empty())
    return std::nullopt;
  for (int64_t &D : A)
    D = D < 0 ? D + Rank : D;
  llvm::sort(A);
  for (size_t I = 0; I < A.size(); ++I)
    if (A[I] != Rank - int64_t(A.size()) + int64_t(I))
      return std::nullopt;
  return A.front();
}

/// d when V is Pow(d, 2) or Mul(d, d).
Value *matchSquare(Value *V) {
  if (Node *P = matchOp(V, OpKind::Pow))
    return isConstScalar(P->operand(1), 2.0) ? P->operand(0) : nullptr;
  if (Node *M = matchOp(V, OpKind::Mul))
    return M->operand(0) == M->operand(1) ? M->operand(0) : nullptr;
  return nullptr;
}

/// V as a scale or bias operand of the normalized shape (x's dims from
/// Axis on): V itself when its type is that shape, a reshaped copy of a
/// constant that broadcasts the same way, else null.
Value *asNormalizedShape(Graph &G, Value *V, const NormMatch &M, bool Create) {
  const TensorType &XT = M.X->type();
  Shape Norm(XT.Dims.begin() + M.Axis, XT.Dims.end());
  if (V->dtype() != XT.Elem)
    return nullptr;
  if (V->shape() == Norm)
    return V;
  if (!V->isConstant())
    return nullptr;
  // Right-aligned, V's dims must equal the normalized ones and be 1 outside.
  llvm::ArrayRef<int64_t> VD = V->constant()->dims();
  for (size_t I = 0; I < std::max(VD.size(), Norm.size()); ++I) {
    int64_t Have = I < VD.size() ? VD[VD.size() - 1 - I] : 1;
    if (I >= Norm.size()) {
      if (Have != 1)
        return nullptr;
      continue;
    }
    const Dim &Want = Norm[Norm.size() - 1 - I];
    if (!Want.isStatic() || Want.size() != Have)
      return nullptr;
  }
  if (!Create)
    return V;
  llvm::SmallVector<int64_t, 4> Dims;
  for (const Dim &D : Norm)
    Dims.push_back(D.size());
  return G.addConstant(G.uniqueName(V->name() + ".normalized"),
                       V->constant()->reshaped(Dims));
}

/// Extends the match by Mul(n, gamma) and (LayerNorm) Add(., beta) where
/// the next node is one and its other operand has the normalized shape.
void matchAffineTail(Graph &G, NormMatch &M) {
  auto Next = [&](OpKind K) -> std::pair<Node *, Value *> {
    Node *U = soleUser(G, M.Final);
    if (!U || U->kind() != K || U->result(0)->type() != M.Final->type())
      return {nullptr, nullptr};
    Value *O = otherOperand(*U, M.Final);
    if (!O || O == M.Final || !asNormalizedShape(G, O, M, false))
      return {nullptr, nullptr};
    return {U, O};
  };
  auto Extend = [&](Node *U) {
    M.Intermediates.push_back(M.Final);
    M.Nodes.push_back(U);
    M.Final = U->result(0);
  };
  if (auto [U, Gamma] = Next(OpKind::Mul); U) {
    M.Scale = Gamma;
    Extend(U);
  }
  if (!M.Layer)
    return;
  if (auto [U, Beta] = Next(OpKind::Add); U) {
    M.Bias = Beta;
    Extend(U);
  }
}

/// Legality of the pattern around Sqrt node S, whose operand is
/// Add(ReduceMean, eps).
Decision matchNorm(Graph &G, Node &S, NormMatch &M) {
  Node *AddEps = S.operand(0)->producer();
  Node *VarMean = nullptr;
  for (unsigned I = 0; I < 2 && !VarMean; ++I) {
    std::optional<double> Eps = constScalar(AddEps->operand(1 - I));
    if (Eps && (VarMean = matchOp(AddEps->operand(I), OpKind::ReduceMean)))
      M.Epsilon = *Eps;
  }
  std::optional<int64_t> Axis = trailingAxis(*VarMean);
  if (!Axis)
    return Decision::no("the mean is not over the trailing dims with "
                        "keepdims = 1");
  Value *D = matchSquare(VarMean->operand(0));
  if (!D)
    return Decision::no("the mean is not of a square");
  M.Axis = *Axis;
  M.X = D;
  Node *Sub = matchOp(D, OpKind::Sub);
  Node *Mean = Sub ? matchOp(Sub->operand(1), OpKind::ReduceMean) : nullptr;
  if (Mean && Mean->operand(0) == Sub->operand(0) &&
      trailingAxis(*Mean) == Axis) {
    M.Layer = true;
    M.X = Sub->operand(0);
    take(M, Mean);
    M.Nodes.push_back(Sub);
  }
  if (!isFloat(M.X->dtype()))
    return Decision::no("not a float type");
  take(M, VarMean->operand(0)->producer());
  take(M, VarMean);
  take(M, AddEps);
  take(M, &S);
  // n = d / s, or d * (1 / s) with 1 / s as Reciprocal or Div (torch's
  // rsqrt).
  Node *U = soleUser(G, S.result(0));
  bool OneOver = U && U->kind() == OpKind::Div &&
                 isConstScalar(U->operand(0), 1.0) &&
                 U->operand(1) == S.result(0);
  if (U && (U->kind() == OpKind::Reciprocal || OneOver)) {
    take(M, U);
    U = soleUser(G, U->result(0));
    if (U && (U->kind() != OpKind::Mul ||
              otherOperand(*U, M.Intermediates.back()) != D))
      U = nullptr;
  } else if (U && (U->kind() != OpKind::Div || U->operand(0) != D ||
                   U->operand(1) != S.result(0))) {
    U = nullptr;
  }
  if (!U)
    return Decision::no(hasSingleUse(G, M.Intermediates.back())
                            ? "the normalization is not d / sqrt(var + eps)"
                            : "intermediate has a second user");
  M.Nodes.push_back(U);
  M.Final = U->result(0);
  for (Value *V : M.Intermediates)
    if (!hasSingleUse(G, V))
      return Decision::no("intermediate has a second user");
  // d = x - mean feeds the square and the division, nothing else.
  if (M.Layer) {
    size_t SquareUses = matchOp(VarMean->operand(0), OpKind::Mul) ? 2 : 1;
    if (G.isOutput(D) || D->uses().size() != SquareUses + 1)
      return Decision::no("intermediate has a second user");
  }
  if (M.Final->type() != M.X->type())
    return Decision::no("the constants broadcast x to another shape");
  matchAffineTail(G, M);
  return Decision::yes();
}

llvm::Error rewriteNorm(Graph &G, const NormMatch &M) {
  Node *Last = M.Final->producer();
  Value *Scale = M.Scale ? asNormalizedShape(G, M.Scale, M, true) : nullptr;
  if (!Scale) {
    const TensorType &XT = M.X->type();
    llvm::SmallVector<int64_t, 4> Dims;
    for (const Dim &D : llvm::ArrayRef<Dim>(XT.Dims).drop_front(M.Axis))
      Dims.push_back(D.size());
    Tensor Ones(XT.Elem, Dims);
    for (int64_t I = 0; I < Ones.numElements(); ++I)
      Ones.setDouble(I, 1.0);
    Scale =
        G.addConstant(G.uniqueName(M.Final->name() + ".ones"), std::move(Ones));
  }
  std::vector<Value *> Operands = {M.X, Scale};
  if (M.Bias)
    Operands.push_back(asNormalizedShape(G, M.Bias, M, true));
  Node *N = G.insertNode(
      G.iteratorOf(Last),
      M.Layer ? OpKind::LayerNormalization : OpKind::RMSNormalization, Operands,
      {G.uniqueName(M.Final->name() + ".norm")}, Last->name());
  N->attrs().set("axis", M.Axis);
  N->attrs().set("epsilon", float(M.Epsilon));
  if (auto E = inferNodeTypes(*N))
    return E;
  replaceKeepingName(G, M.Final, N->result(0));
  eraseIfDead(G, M.Nodes);
  return llvm::Error::success();
}

/// Sqrt(Add(ReduceMean(..), one-element constant)): the anchors.
bool isCandidate(const Node &N) {
  if (N.kind() != OpKind::Sqrt)
    return false;
  Node *A = matchOp(N.operand(0), OpKind::Add);
  if (!A)
    return false;
  for (unsigned I = 0; I < 2; ++I)
    if (matchOp(A->operand(I), OpKind::ReduceMean) &&
        constScalar(A->operand(1 - I)))
      return true;
  return false;
}

/// Whether a scale can be made when the pattern has none: ones of the
/// normalized shape need static dims.
bool normalizedDimsStatic(const NormMatch &M) {
  for (const Dim &D : llvm::ArrayRef<Dim>(M.X->type().Dims).drop_front(M.Axis))
    if (!D.isStatic())
      return false;
  return true;
}
} // namespace

llvm::Expected<bool> NormRecognition::run(Graph &G, DecisionLog &Log) {
  std::vector<Node *> Candidates;
  for (auto &N : G.nodes())
    if (isCandidate(*N))
      Candidates.push_back(N.get());
  bool Changed = false;
  // A match holds exactly one anchor Sqrt, its own candidate, so erasing it
  // never frees a later candidate.
  for (Node *N : Candidates) {
    NormMatch M;
    Decision D = matchNorm(G, *N, M);
    if (D && !M.Scale && !normalizedDimsStatic(M))
      D = Decision::no("no scale, and the normalized dims are not static");
    Log.note(*N, D);
    if (!D)
      continue;
    if (auto E = rewriteNorm(G, M))
      return std::move(E);
    Changed = true;
  }
  if (Changed)
    G.removeUnusedConstants();
  return Changed;
}

} // namespace solder
