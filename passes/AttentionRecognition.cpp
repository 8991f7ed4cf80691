//===- AttentionRecognition.cpp - SDPA sub-graphs become Attention --------===//
//
// The walk goes backwards from the Softmax through the scores chain to the
// Q K^T MatMul, then forwards to the P V MatMul and the head merge. Q, K and
// V are tracked as views (a value and a permutation of its dims), so chains
// of Transposes compose into one permutation before the head-split check.
//
//===----------------------------------------------------------------------===//
#include "passes/AttentionRecognition.h"
#include "ir/FusedGroup.h"
#include "ir/OpRegistry.h"
#include "passes/PatternMatch.h"
#include "llvm/ADT/SetVector.h"
#include <algorithm>
#include <array>
#include <vector>

namespace solder {

namespace {
using Perm = std::array<int64_t, 4>;
constexpr Perm IdentityPerm = {0, 1, 2, 3};
constexpr Perm HeadSplitPerm = {0, 2, 1, 3};
const char *const SecondUser = "an intermediate of the attention has a "
                               "second user";

/// Transpose(Src, P): dim i of the view is dim P[i] of Src.
struct View {
  Value *Src = nullptr;
  Perm P = IdentityPerm;
};

/// The permutation of a rank-4 Transpose node (ONNX's default: reversed).
std::optional<Perm> transposePerm(const Node &T) {
  std::vector<int64_t> P = T.attrs().getInts("perm", {3, 2, 1, 0});
  if (P.size() != 4)
    return std::nullopt;
  return Perm{P[0], P[1], P[2], P[3]};
}

/// Follows the Transposes that produce V.Src, composing their permutations.
View throughTransposes(View V) {
  while (Node *T = matchOp(V.Src, OpKind::Transpose)) {
    std::optional<Perm> Inner = transposePerm(*T);
    if (!Inner)
      break;
    Perm Composed;
    for (unsigned I = 0; I < 4; ++I)
      Composed[I] = (*Inner)[V.P[I]];
    V = {T->operand(0), Composed};
  }
  return V;
}

/// For a view that is a head split Transpose(Reshape(x, [B,S,H,D]),
/// [0,2,1,3]) of a 3-D x of [B,S,H*D]: x and H. Null otherwise.
std::pair<Value *, int64_t> headSplitSource(const View &V) {
  if (V.P != HeadSplitPerm)
    return {nullptr, 0};
  Node *R = matchOp(V.Src, OpKind::Reshape);
  if (!R || R->operand(0)->type().rank() != 3)
    return {nullptr, 0};
  const Shape &Split = V.Src->type().Dims, &X = R->operand(0)->type().Dims;
  if (!Split[2].isStatic() || !Split[3].isStatic() || !X[2].isStatic() ||
      X[2].size() != Split[2].size() * Split[3].size() || X[0] != Split[0] ||
      X[1] != Split[1] || X[0].isUnknown() || X[1].isUnknown())
    return {nullptr, 0};
  return {R->operand(0), Split[2].size()};
}

struct AttentionMatch {
  /// Rank of the scores; above 4 the leading dims are collapsed into one
  /// batch dim around the Attention.
  unsigned Rank = 4;
  Node *Softmax = nullptr, *QK = nullptr, *PV = nullptr;
  View Q, K, V;
  double Scale = 1;
  std::vector<Value *> Masks;
  /// The scores' dims where each mask is added (a Reshape in the chain
  /// may give them more leading dims than the Softmax input has).
  std::vector<Shape> MaskViews;
  /// Every node the Attention replaces (erased when dead afterwards).
  std::vector<Node *> Nodes;
};

/// Q or K^T as MatMul operand X: peels a Mul by a constant scalar (the
/// dynamo exporter's sqrt(scale) on each side).
Value *peelScale(const Graph &G, Value *X, AttentionMatch &M) {
  Node *Mul = matchOp(X, OpKind::Mul);
  if (!Mul || !hasSingleUse(G, X) || X->type() != Mul->operand(0)->type())
    return X;
  std::optional<double> C = constScalar(Mul->operand(1));
  if (!C)
    return X;
  M.Scale *= *C;
  M.Nodes.push_back(Mul);
  return Mul->operand(0);
}

bool sameDim(const Dim &A, const Dim &B) { return A == B && !A.isUnknown(); }

/// The scores chain from Cur (the Softmax input) back to Q K^T.
Decision matchScores(const Graph &G, Value *Cur, AttentionMatch &M) {
  for (;;) {
    if (!hasSingleUse(G, Cur))
      return Decision::no(SecondUser);
    Node *P = Cur->producer();
    if (!P)
      return Decision::no("the scores are not a MatMul of Q and K^T");
    // The scores as this node writes them (a Reshape may view them with
    // other leading dims).
    const TensorType &ScoreType = Cur->type();
    if (P->kind() == OpKind::Mul || P->kind() == OpKind::Div) {
      bool Div = P->kind() == OpKind::Div;
      unsigned ConstAt = 2;
      if (constScalar(P->operand(1)))
        ConstAt = 1;
      else if (!Div && constScalar(P->operand(0)))
        ConstAt = 0;
      if (ConstAt == 2)
        return Decision::no("the scores are scaled by a non-constant");
      Value *Other = P->operand(1 - ConstAt);
      if (Other->type() != ScoreType)
        return Decision::no("the scale broadcasts the scores");
      double C = *constScalar(P->operand(ConstAt));
      if (Div && C == 0)
        return Decision::no("the scores are divided by zero");
      M.Scale = Div ? M.Scale / C : M.Scale * C;
      M.Nodes.push_back(P);
      Cur = Other;
      continue;
    }
    if (P->kind() == OpKind::Add) {
      // The scores continue through the operand of the scores' type whose
      // own chain reaches Q K^T; the other operand is a mask.
      Decision Inner = Decision::no("the scores are not a MatMul of Q and K^T");
      for (unsigned I = 0; I < 2; ++I) {
        Value *S = P->operand(I), *Mask = P->operand(1 - I);
        if (S->type() != ScoreType || !S->producer())
          continue;
        AttentionMatch Rest = M;
        Rest.Nodes.push_back(P);
        Rest.Masks.push_back(Mask);
        Rest.MaskViews.push_back(ScoreType.Dims);
        if (Decision D = matchScores(G, S, Rest); !D) {
          Inner = D;
          continue;
        }
        if (Mask->dtype() != ScoreType.Elem)
          return Decision::no("the mask is not of the scores' type");
        M = std::move(Rest);
        return Decision::yes();
      }
      return Inner;
    }
    if (P->kind() == OpKind::Cast && isFloat(ScoreType.Elem) &&
        isFloat(P->operand(0)->dtype())) {
      // fp16 plans widen the scores to fp32 before an Add of a mask kept
      // in fp32 (precision-conversion); the Attention adds in fp32 anyway.
      M.Nodes.push_back(P);
      Cur = P->operand(0);
      continue;
    }
    if (P->kind() == OpKind::Reshape) {
      // Swin's shifted windows add their mask to a 5-D view of the scores:
      // a Reshape may regroup the leading dims, keeping heads and rows.
      const Shape &In = P->operand(0)->type().Dims, &Out = ScoreType.Dims;
      bool KeepsRows = In.size() >= 4 && Out.size() >= 4 &&
                       P->operand(0)->type().isStatic() && ScoreType.isStatic();
      for (unsigned I = 1; KeepsRows && I <= 3; ++I)
        KeepsRows = In[In.size() - I] == Out[Out.size() - I];
      if (!KeepsRows)
        return Decision::no("the scores are reshaped across heads or rows");
      M.Nodes.push_back(P);
      Cur = P->operand(0);
      continue;
    }
    if (P->kind() != OpKind::MatMul)
      return Decision::no("the scores are not a MatMul of Q and K^T");
    if (P->result(0)->type().Dims != M.Softmax->operand(0)->type().Dims)
      return Decision::no("the scores reach the Softmax in another shape");
    M.QK = P;
    M.Nodes.push_back(P);
    Value *A = peelScale(G, P->operand(0), M);
    Value *B = peelScale(G, P->operand(1), M);
    const Shape &AD = A->type().Dims, &BD = B->type().Dims;
    if (AD.size() != M.Rank || BD.size() != M.Rank)
      return Decision::no("Q and K^T do not have the scores' rank");
    for (unsigned I = 0; I + 3 < M.Rank; ++I)
      if (!sameDim(AD[I], BD[I]))
        return Decision::no("Q and K have different batch sizes");
    M.Q = {A, IdentityPerm};
    // K = K^T with its last two dims swapped.
    M.K = {B, {0, 1, 3, 2}};
    return Decision::yes();
  }
}

/// The part after the Softmax: P V.
Decision matchValues(const Graph &G, AttentionMatch &M) {
  Value *P = M.Softmax->result(0);
  Node *PV = soleUser(G, P);
  if (!PV)
    return Decision::no(SecondUser);
  // The probabilities of an fp32 softmax narrowed back for the MatMul.
  if (PV->kind() == OpKind::Cast && isFloat(PV->result(0)->dtype())) {
    M.Nodes.push_back(PV);
    P = PV->result(0);
    PV = soleUser(G, P);
    if (!PV)
      return Decision::no(SecondUser);
  }
  if (PV->kind() != OpKind::MatMul || PV->operand(0) != P)
    return Decision::no("the probabilities do not multiply V");
  Value *V = PV->operand(1);
  const Shape &VD = V->type().Dims, &QD = M.Q.Src->type().Dims;
  if (VD.size() != M.Rank || PV->result(0)->type().rank() != M.Rank)
    return Decision::no("V does not have the scores' rank");
  for (unsigned I = 0; I + 3 < M.Rank; ++I)
    if (!sameDim(VD[I], QD[I]))
      return Decision::no("Q and V have different batch sizes");
  M.PV = PV;
  M.Nodes.push_back(M.Softmax);
  M.Nodes.push_back(PV);
  M.V = {V, IdentityPerm};
  return Decision::yes();
}

/// Head counts: the query heads must be a multiple of the key heads, K and
/// V alike (MatMul's broadcasting of a single K/V head is grouped-query
/// attention with one group).
Decision checkHeads(const AttentionMatch &M) {
  unsigned H = M.Rank - 3;
  const Dim &Hq = M.Q.Src->type().Dims[H];
  const Dim &Hk = M.K.Src->type().Dims[M.Rank == 4 ? M.K.P[1] : H];
  const Dim &Hv = M.V.Src->type().Dims[H];
  if (!Hq.isStatic() || !Hk.isStatic() || !Hv.isStatic() || Hk != Hv ||
      Hk.size() == 0 || Hq.size() % Hk.size())
    return Decision::no("the head counts of Q, K and V are not static "
                        "multiples of each other");
  return Decision::yes();
}

/// Above rank 4 every value the Attention reads is reshaped to 4-D: the
/// dims must be static, and each mask must broadcast over the collapsed
/// dims all at once or not at all.
Decision checkCollapsible(const AttentionMatch &M) {
  if (M.Rank > 4)
    for (const Value *V :
         {M.Q.Src, M.K.Src, M.V.Src, M.PV->result(0), M.Softmax->result(0)})
      if (!V->type().isStatic())
        return Decision::no("attention over more than 4 dims needs static "
                            "shapes");
  for (size_t K = 0; K < M.Masks.size(); ++K) {
    const Value *Mask = M.Masks[K];
    const Shape &Full = M.MaskViews[K];
    unsigned Rank = Full.size();
    if (Rank <= 4)
      continue; // added where the scores are 4-D: no reshape
    const Shape &D = Mask->type().Dims;
    if (!Mask->type().isStatic())
      return Decision::no("attention over more than 4 dims needs static "
                          "shapes");
    bool AllOne = true, AllFull = true;
    for (unsigned I = 0; I + 3 < Rank; ++I) {
      int64_t Pos = int64_t(I) - int64_t(Rank - D.size());
      int64_t Size = Pos < 0 ? 1 : D[Pos].size();
      AllOne &= Size == 1;
      AllFull &= Size == Full[I].size();
    }
    if (!AllOne && !AllFull)
      return Decision::no("a mask broadcasts over some of the leading dims "
                          "only");
  }
  return Decision::yes();
}

Decision matchAttention(const Graph &G, Node &Softmax, AttentionMatch &M) {
  const TensorType &T = Softmax.operand(0)->type();
  if (T.rank() < 4 || !isFloat(T.Elem))
    return Decision::no("the Softmax input is not a float tensor of rank 4 "
                        "or more");
  M.Rank = T.rank();
  int64_t Axis = Softmax.attrs().getInt("axis", -1);
  if (Axis != -1 && Axis != int64_t(M.Rank) - 1)
    return Decision::no("the Softmax is not over the last axis");
  M.Softmax = &Softmax;
  if (Decision D = matchScores(G, Softmax.operand(0), M); !D)
    return D;
  if (Decision D = matchValues(G, M); !D)
    return D;
  if (Decision D = checkHeads(M); !D)
    return D;
  // The Attention adds a mask of Q's type, f32 or bool (one type for all).
  DType QType = M.Q.Src->dtype();
  for (const Value *Mask : M.Masks)
    if ((Mask->dtype() != QType && Mask->dtype() != DType::F32 &&
         Mask->dtype() != DType::Bool) ||
        Mask->dtype() != M.Masks.front()->dtype())
      return Decision::no("the masks are not all of Q's type, f32 or bool");
  if (M.Q.Src->dtype() != M.K.Src->dtype() ||
      M.Q.Src->dtype() != M.V.Src->dtype())
    return Decision::no("Q, K and V are not of one type");
  return checkCollapsible(M);
}

/// Reshape(V, To) inserted before Pos: its result named V.<Suffix>, its
/// shape constant V.<Suffix>.shape.
Value *reshapeBefore(Graph &G, Node *Pos, Value *V, llvm::ArrayRef<int64_t> To,
                     llvm::StringRef Suffix) {
  Tensor Dims(DType::I64, {int64_t(To.size())});
  for (size_t I = 0; I < To.size(); ++I)
    Dims.mutableData<int64_t>()[I] = To[I];
  Value *S = G.addConstant(
      G.uniqueName(V->name() + "." + Suffix.str() + ".shape"), Dims);
  Node *R = G.insertNode(G.iteratorOf(Pos), OpKind::Reshape, {V, S},
                         {G.uniqueName(V->name() + "." + Suffix.str())});
  if (llvm::Error E = inferNodeTypes(*R))
    llvm::consumeError(std::move(E)); // a static reshape of the same count
  return R->result(0);
}

/// V reshaped before Pos to 4-D: its leading dims (all but the last three)
/// collapsed into one, or 1 when it has none (a mask of rank < 4).
Value *collapseTo4D(Graph &G, Node *Pos, Value *V) {
  const Shape &D = V->type().Dims;
  int64_t Lead = 1;
  for (unsigned I = 0; I + 3 < D.size(); ++I)
    Lead *= D[I].size();
  std::vector<int64_t> To = {Lead};
  for (unsigned I = D.size() < 3 ? 0 : D.size() - 3; I < D.size(); ++I)
    To.push_back(D[I].size());
  while (To.size() < 4)
    To.insert(To.begin() + 1, 1);
  return reshapeBefore(G, Pos, V, To, "4d");
}

/// Materializes a view as a value: Src itself or a new Transpose before
/// Pos.
Value *materialize(Graph &G, Node *Pos, const View &V) {
  if (V.P == IdentityPerm)
    return V.Src;
  Node *T = G.insertNode(G.iteratorOf(Pos), OpKind::Transpose, {V.Src},
                         {G.uniqueName(V.Src->name() + ".t")});
  T->attrs().set("perm", std::vector<int64_t>(V.P.begin(), V.P.end()));
  if (llvm::Error E = inferNodeTypes(*T))
    llvm::consumeError(std::move(E)); // a permutation of a rank-4 value
  return T->result(0);
}

/// Whether V broadcasts along the query rows (dim -2 of a 4-D mask).
bool rowInvariant(const Value *V) {
  const Shape &D = V->type().Dims;
  return D.size() < 2 ||
         (D[D.size() - 2].isStatic() && D[D.size() - 2].size() == 1);
}

/// A constant of rank 2 or more whose values do not change along dim -2:
/// its first row, as a new constant (else null).
Value *firstRowIfUniform(Graph &G, Value *V) {
  const Tensor &C = *V->constant();
  llvm::ArrayRef<int64_t> D = C.dims();
  unsigned R = D.size();
  if (R < 2 || D[R - 2] == 0)
    return nullptr;
  int64_t Rows = D[R - 2], Inner = D[R - 1],
          Outer = C.numElements() / std::max<int64_t>(Rows * Inner, 1);
  for (int64_t O = 0; O < Outer; ++O)
    for (int64_t I = 1; I < Rows; ++I)
      for (int64_t J = 0; J < Inner; ++J)
        if (C.getDouble((O * Rows + I) * Inner + J) !=
            C.getDouble(O * Rows * Inner + J))
          return nullptr;
  std::vector<int64_t> Dims(D.begin(), D.end());
  Dims[R - 2] = 1;
  Tensor T(C.dtype(), Dims);
  for (int64_t O = 0; O < Outer; ++O)
    for (int64_t J = 0; J < Inner; ++J)
      T.setDouble(O * Inner + J, C.getDouble(O * Rows * Inner + J));
  return G.addConstant(G.uniqueName(V->name() + ".rows"), std::move(T));
}

/// V computed without its variation along the query rows, where it has
/// none: padding masks that exporters expand to [B, 1, Sq, Sk]
/// (transformers 5: Where(Expand(And(all-true [1, 1, Sq, 1], pad
/// [B, 1, 1, Sk])), 0, min)) are rebuilt over the unexpanded tensors,
/// which the Attention broadcasts along the rows; the kernel then stages
/// one mask value per key instead of reading one per score. Expands are
/// dropped, constants uniform along the rows cut to one row, elementwise
/// nodes cloned (right after the original, so their operands exist) over
/// the narrowed operands. Null where V does vary (or is out of reach).
/// Memo shares the rebuilt mask between every layer's Attention; Narrowed
/// collects the originals, which die with the last layer, and the clones,
/// which die when a later operand of theirs could not be narrowed.
Value *withoutRows(Graph &G, Value *V, llvm::DenseMap<Value *, Value *> &Memo,
                   std::vector<Node *> &Narrowed, unsigned Depth = 0) {
  if (!V || rowInvariant(V))
    return V;
  if (V->type().rank() > 4 || !V->type().isStatic() || Depth > 6)
    return nullptr;
  if (auto It = Memo.find(V); It != Memo.end())
    return It->second;
  Value *Result = nullptr;
  Node *P = V->producer();
  if (V->isConstant()) {
    Result = firstRowIfUniform(G, V);
  } else if (P && P->kind() == OpKind::Expand) {
    Result = withoutRows(G, P->operand(0), Memo, Narrowed, Depth + 1);
  } else if (P && P->numResults() == 1 && !P->body() &&
             (getOpInfo(P->kind()).Fusion == FusionKind::Elementwise ||
              getOpInfo(P->kind()).Fusion == FusionKind::Broadcast)) {
    std::vector<Value *> Ops;
    bool Ok = true;
    for (Value *Op : P->operands()) {
      Value *N = withoutRows(G, Op, Memo, Narrowed, Depth + 1);
      Ok &= !Op || N;
      Ops.push_back(N);
    }
    if (Ok) {
      // Named as the ONNX node it computes (which then dies) for the
      // fusion report's members.
      Node *C = G.insertNode(std::next(G.iteratorOf(P)), P->kind(), Ops,
                             {G.uniqueName(V->name() + ".rows")}, P->name());
      C->attrs() = P->attrs();
      if (llvm::Error E = inferNodeTypes(*C)) {
        llvm::consumeError(std::move(E));
        G.eraseNode(C);
      } else {
        Result = C->result(0);
        // Erased with the originals should a later operand fail.
        Narrowed.push_back(C);
      }
    }
  }
  if (Result && P)
    Narrowed.push_back(P);
  Memo[V] = Result;
  return Result;
}

/// Mask itself, or its rebuilt row-invariant form (see withoutRows).
Value *rowInvariantMask(Graph &G, Value *Mask,
                        llvm::DenseMap<Value *, Value *> &Memo,
                        std::vector<Node *> &Narrowed) {
  if (Mask->type().rank() != 4)
    return Mask;
  Value *N = withoutRows(G, Mask, Memo, Narrowed);
  return N ? N : Mask;
}

llvm::Error rewrite(Graph &G, AttentionMatch &M, int64_t Id,
                    llvm::DenseMap<Value *, Value *> &MaskMemo,
                    std::vector<Node *> &Narrowed) {
  if (M.Rank > 4) {
    M.Q = {collapseTo4D(G, M.PV, M.Q.Src), IdentityPerm};
    M.K = {collapseTo4D(G, M.PV, M.K.Src), {0, 1, 3, 2}};
    M.V = {collapseTo4D(G, M.PV, M.V.Src), IdentityPerm};
  }
  // A mask added to a view of more than 4 dims, viewed as 4-D too.
  for (size_t K = 0; K < M.Masks.size(); ++K)
    if (M.MaskViews[K].size() > 4)
      M.Masks[K] = collapseTo4D(G, M.PV, M.Masks[K]);
  View Q = throughTransposes(M.Q), K = throughTransposes(M.K),
       V = throughTransposes(M.V);
  auto [Q3, QHeads] = headSplitSource(Q);
  auto [K3, KHeads] = headSplitSource(K);
  auto [V3, VHeads] = headSplitSource(V);
  // The head merge: o -> Transpose [0,2,1,3] -> Reshape.
  Node *Merge = soleUser(G, M.PV->result(0));
  Node *Flat = nullptr;
  if (Merge && Merge->kind() == OpKind::Transpose &&
      transposePerm(*Merge) == std::optional<Perm>(HeadSplitPerm))
    Flat = soleUser(G, Merge->result(0));
  bool ThreeD = M.Rank == 4 && Q3 && K3 && V3 && KHeads == VHeads && Flat &&
                Flat->kind() == OpKind::Reshape;

  std::vector<Value *> Operands;
  Node *Pos = M.PV;
  if (ThreeD) {
    Operands = {Q3, K3, V3};
  } else {
    // Q and V as they were (the MatMuls read them); K as K^T's source.
    Operands = {M.Q.Src, materialize(G, Pos, K), M.V.Src};
  }
  for (size_t K = 0; K < M.Masks.size(); ++K)
    if (M.MaskViews[K].size() <= 4)
      M.Masks[K] = rowInvariantMask(G, M.Masks[K], MaskMemo, Narrowed);
  if (!M.Masks.empty()) {
    // Innermost (first added) mask first, as the graph adds them.
    Value *Mask = M.Masks.back();
    for (size_t I = M.Masks.size() - 1; I-- > 0;) {
      Node *Sum =
          G.insertNode(G.iteratorOf(Pos), OpKind::Add, {Mask, M.Masks[I]},
                       {G.uniqueName(Mask->name() + ".sum")});
      if (llvm::Error E = inferNodeTypes(*Sum))
        return E;
      Mask = Sum->result(0);
    }
    Operands.push_back(Mask);
  }
  std::string Name =
      M.Softmax->name().empty() ? "attention" : M.Softmax->name() + ".sdpa";
  Value *Final = ThreeD ? Flat->result(0) : M.PV->result(0);
  Node *A = G.insertNode(G.iteratorOf(Pos), OpKind::Attention, Operands,
                         {G.uniqueName(Final->name() + ".attention")},
                         G.uniqueName(Name));
  A->attrs().set("id", Id);
  A->attrs().set("scale", float(M.Scale));
  if (ThreeD) {
    A->attrs().set("q_num_heads", QHeads);
    A->attrs().set("kv_num_heads", KHeads);
  }
  if (llvm::Error E = inferNodeTypes(*A))
    return E;
  std::vector<Node *> Replaced = M.Nodes;
  // The Transposes composed into the views (dead unless read elsewhere).
  const View Orig[3] = {M.Q, M.K, M.V}, Composed[3] = {Q, K, V};
  for (unsigned I = 0; I < 3; ++I) {
    for (Value *Cur = Orig[I].Src; Cur != Composed[I].Src;) {
      Node *T = Cur->producer();
      Replaced.push_back(T);
      Cur = T->operand(0);
    }
    if (ThreeD)
      Replaced.push_back(Composed[I].Src->producer()); // the head split
  }
  if (ThreeD) {
    // The Reshape reads the merged heads: the same elements in the same
    // order as the 3-D result, so it now reads that.
    Flat->setOperand(0, A->result(0));
    Replaced.push_back(Merge);
  } else if (M.Rank > 4) {
    // Back to the scores' leading dims.
    Value *Back = reshapeBefore(G, M.PV, A->result(0),
                                M.PV->result(0)->type().staticDims(), "nd");
    replaceKeepingName(G, M.PV->result(0), Back);
  } else {
    replaceKeepingName(G, M.PV->result(0), A->result(0));
  }
  // Members: the replaced ONNX nodes that end up dead, in graph order
  // (names taken before they are erased).
  llvm::DenseSet<const Node *> Candidates(Replaced.begin(), Replaced.end());
  std::vector<Node *> Ordered;
  std::vector<std::string> Names;
  for (auto &N : G.nodes())
    if (Candidates.count(N.get())) {
      Ordered.push_back(N.get());
      Names.push_back(memberName(*N));
    }
  eraseIfDead(G, Ordered);
  llvm::DenseSet<const Node *> Alive;
  for (auto &N : G.nodes())
    Alive.insert(N.get());
  std::vector<std::string> Members;
  for (size_t I = 0; I < Ordered.size(); ++I)
    if (!Alive.count(Ordered[I]))
      Members.push_back(Names[I]);
  A->attrs().set("members", Members);
  return llvm::Error::success();
}
} // namespace

llvm::Expected<bool> AttentionRecognition::run(Graph &G, DecisionLog &Log) {
  std::vector<Node *> Candidates;
  for (auto &N : G.nodes())
    if (N->kind() == OpKind::Softmax)
      Candidates.push_back(N.get());
  bool Changed = false;
  llvm::DenseMap<Value *, Value *> MaskMemo;
  std::vector<Node *> Narrowed;
  // A match holds exactly one Softmax, its own candidate, so a rewrite
  // never erases a later candidate.
  for (Node *N : Candidates) {
    AttentionMatch M;
    Decision D = matchAttention(G, *N, M);
    if (D && MaxHeadDim > 0) {
      const Dim &Dq = M.Q.Src->type().Dims.back();
      const Dim &Dv = M.V.Src->type().Dims.back();
      if (!Dq.isStatic() || !Dv.isStatic() || Dq.size() > MaxHeadDim ||
          Dv.size() > MaxHeadDim)
        D = Decision::no("head dims above " + std::to_string(MaxHeadDim) +
                         " (the GPU attention kernels' limit)");
    }
    if (D && MinBlocks > 0) {
      const Shape &S = N->result(0)->type().Dims;
      int64_t Blocks = -1, Keys = -1;
      if (S[0].isStatic() && S[1].isStatic() && S[2].isStatic())
        Blocks = S[0].size() * S[1].size() * ((S[2].size() + 63) / 64);
      if (S[3].isStatic())
        Keys = S[3].size();
      bool Short = ShortKeys > 0 && Keys >= 0 && Keys <= ShortKeys;
      if (Blocks < MinBlocks && !Short)
        D = Decision::no(
            "automatic attention fusion: " +
            (Blocks < 0 ? std::string("scores without static B, H, Sq")
                        : "B*H*ceil(Sq/64) = " + std::to_string(Blocks)) +
            " blocks, below " + std::to_string(MinBlocks) +
            (ShortKeys > 0
                 ? ", with " +
                       (Keys < 0 ? std::string("a dynamic")
                                 : std::to_string(Keys)) +
                       " keys (above " + std::to_string(ShortKeys) + ")"
                 : std::string()) +
            " (too few to fill the GPU; --fuse-attention forces it)");
    }
    int64_t Id = -1;
    if (D) {
      Id = State.takeId();
      if (std::optional<std::string> Why = State.disabledReason(Id, M.Nodes))
        D = Decision::no(*Why);
    }
    Log.note(*N, D);
    if (!D)
      continue;
    if (llvm::Error E = rewrite(G, M, Id, MaskMemo, Narrowed))
      return std::move(E);
    Changed = true;
  }
  // The expanded masks, once no Attention reads them.
  llvm::SetVector<Node *> Dead(Narrowed.begin(), Narrowed.end());
  eraseIfDead(G, Dead.getArrayRef());
  if (Changed || !Narrowed.empty())
    G.removeUnusedConstants();
  return Changed;
}

} // namespace solder
