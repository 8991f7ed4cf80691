//===- BatchNormFolding.cpp - Folds per-channel affine ops into weights ---===//
//
// Every candidate (BatchNormalization, or Mul/Add of a constant reading a
// contraction's result) goes through two steps: a legality check that
// builds a FoldPlan (the contraction and the per-channel affine map y =
// x * Scale[c] + Shift[c]) or says why not, then the rewrite. Candidates are
// visited in node order and checked when visited, so a chain such as
// Conv -> BatchNormalization -> Mul folds completely in one run.
//
//===----------------------------------------------------------------------===//
#include "passes/BatchNormFolding.h"
#include "ir/Layout.h"
#include "ir/OpRegistry.h"
#include "passes/PatternMatch.h"
#include <cmath>
#include <optional>
#include <vector>

namespace solder {

namespace {
/// y = x * Scale[c] + Shift[c] along the output channel c; an empty vector
/// stands for ones (Scale) or zeros (Shift).
struct ChannelAffine {
  std::vector<double> Scale, Shift;
};

struct FoldPlan {
  Node *Contraction = nullptr;
  ChannelAffine Affine;
};

double at(const std::vector<double> &V, int64_t I, double Default) {
  return V.empty() ? Default : V[I];
}

bool isFoldTarget(OpKind K) {
  return K == OpKind::Conv || K == OpKind::ConvTranspose || K == OpKind::Gemm ||
         K == OpKind::MatMul;
}

/// The axis of C's result that holds its output channels (Conv) or columns
/// (Gemm, MatMul).
unsigned resultChannelAxis(const Node &C) {
  bool IsConv = C.kind() == OpKind::Conv || C.kind() == OpKind::ConvTranspose;
  return IsConv ? 1 : C.result(0)->type().rank() - 1;
}

/// The per-channel values of K when K, right-aligned against a result of
/// rank OutRank, varies at most along Axis (of size Count) and adds no dims.
std::optional<std::vector<double>>
channelVector(const Tensor &K, unsigned OutRank, unsigned Axis, int64_t Count) {
  if (K.rank() > OutRank)
    return std::nullopt;
  unsigned Off = OutRank - K.rank();
  bool Varies = false;
  for (unsigned J = 0; J < K.rank(); ++J) {
    int64_t D = K.dims()[J];
    if (D == 1)
      continue;
    if (J + Off != Axis || D != Count)
      return std::nullopt;
    Varies = true;
  }
  // Every dim but the channel one is 1, so the flat index is the channel.
  std::vector<double> V(Count);
  for (int64_t C = 0; C < Count; ++C)
    V[C] = K.getDouble(Varies ? C : 0);
  return V;
}

/// Whether C's weights and bias can absorb a per-channel scale (HasScale)
/// and/or shift (HasShift).
Decision checkFoldable(const Graph &G, const Node &C, bool HasScale,
                       bool HasShift) {
  Value *Y = C.result(0);
  if (G.isOutput(Y))
    return Decision::no(C.opName().str() + " result is a graph output");
  if (Y->uses().size() != 1)
    return Decision::no(C.opName().str() + " result has a second user");
  if (!isFloat(Y->dtype()))
    return Decision::no("not a float type");
  // conv-layout runs later; an NHWC conv here came from IR text.
  if (isNhwc(C))
    return Decision::no("an NHWC convolution is not folded into");
  if (!Y->type().Dims[resultChannelAxis(C)].isStatic())
    return Decision::no("the channel dim is not static");
  Value *W = C.operand(1), *Bias = C.operand(2);
  switch (C.kind()) {
  case OpKind::Conv:
  case OpKind::ConvTranspose:
    if (!W->isConstant())
      return Decision::no("conv weights are not constant");
    if (Bias && !Bias->isConstant())
      return Decision::no("conv bias is not constant");
    return Decision::yes();
  case OpKind::Gemm:
    if (HasScale && !W->isConstant())
      return Decision::no("Gemm B operand is not constant");
    if (Bias && !Bias->isConstant())
      return Decision::no("Gemm C operand is not constant");
    return Decision::yes();
  case OpKind::MatMul:
    if (HasShift)
      return Decision::no("MatMul has no bias operand: the Add is left for "
                          "epilogue fusion");
    if (!W->isConstant() || W->type().rank() != 2)
      return Decision::no("MatMul B operand is not a constant matrix");
    return Decision::yes();
  default:
    return Decision::no("not a contraction");
  }
}

/// The name for a new bias of a contraction with weights W: "conv1.bias"
/// for "conv1.weight".
std::string biasName(const Value *W) {
  llvm::StringRef N = W->name();
  N.consume_back(".weight");
  return N.str() + ".bias";
}

/// A new constant holding F(e) for each element e of a tensor of the given
/// dtype and dims.
template <typename Fn>
Value *newConstant(Graph &G, llvm::StringRef Base, DType Elem,
                   llvm::ArrayRef<int64_t> Dims, Fn F) {
  Tensor T(Elem, Dims);
  for (int64_t E = 0; E < T.numElements(); ++E)
    T.setDouble(E, F(E));
  return G.addConstant(G.uniqueName(Base), std::move(T));
}

/// A new constant: W with each element times the scale of its channel,
/// where W's elements come in runs of Run per channel and the channels
/// repeat every Period runs (Conv weights: Run = all of one output
/// channel, Period = the channels; a [K, N] matrix: Run = 1, Period = N).
/// Rounded as newConstant rounds; f32 (the common case) is read and
/// written directly, without getDouble/setDouble's per-element type
/// dispatch (BN folding of a 94 MiB model took 0.69 s through them).
Value *scaledByChannel(Graph &G, llvm::StringRef Base, const Tensor &W,
                       llvm::ArrayRef<double> Scale, int64_t Run,
                       int64_t Period) {
  Tensor T(W.dtype(), W.dims());
  bool F32 = W.dtype() == DType::F32;
  const float *Src = F32 ? W.data<float>() : nullptr;
  float *Dst = F32 ? T.mutableData<float>() : nullptr;
  int64_t N = W.numElements();
  for (int64_t E = 0, Ch = 0; E < N;
       E += Run, Ch = Ch + 1 == Period ? 0 : Ch + 1) {
    double S = Scale[size_t(Ch)];
    int64_t End = std::min(E + Run, N);
    if (F32)
      for (int64_t I = E; I < End; ++I)
        Dst[I] = float(double(Src[I]) * S);
    else
      for (int64_t I = E; I < End; ++I)
        T.setDouble(I, W.getDouble(I) * S);
  }
  return G.addConstant(G.uniqueName(Base), std::move(T));
}

/// Conv/ConvTranspose: scales the weights per output channel, and sets the
/// bias to b * s + t.
void foldIntoConv(Graph &G, Node &C, const ChannelAffine &A, int64_t Count) {
  Value *WV = C.operand(1), *BV = C.operand(2);
  const Tensor &W = *WV->constant();
  if (!A.Scale.empty()) {
    int64_t Inner = 1;
    for (int64_t D : W.dims().drop_front(2))
      Inner *= D;
    // Conv weights are [Cout, Cin/group, k...]; ConvTranspose weights are
    // [Cin, Cout/group, k...], input channel i in group i / (Cin/group).
    bool Transposed = C.kind() == OpKind::ConvTranspose;
    int64_t D1 = W.dims()[1];
    int64_t Group = C.attrs().getInt("group", 1);
    int64_t CinPerGroup = W.dims()[0] / Group;
    if (!Transposed) {
      // Each output channel's weights are one run.
      C.setOperand(1, scaledByChannel(G, WV->name() + ".folded", W, A.Scale,
                                      D1 * Inner, W.dims()[0]));
    } else {
      auto OutChannel = [&](int64_t E) {
        int64_t I = E / (D1 * Inner), J = (E / Inner) % D1;
        return (I / CinPerGroup) * D1 + J;
      };
      C.setOperand(1, newConstant(G, WV->name() + ".folded", W.dtype(),
                                  W.dims(), [&](int64_t E) {
                                    return W.getDouble(E) *
                                           A.Scale[OutChannel(E)];
                                  }));
    }
  }
  if (A.Shift.empty() && !BV)
    return;
  const Tensor *B = BV ? BV->constant() : nullptr;
  std::string Base = BV ? BV->name() : biasName(WV);
  C.setOperand(
      2, newConstant(G, Base + ".folded", W.dtype(), {Count}, [&](int64_t O) {
        double Bo = B ? B->getDouble(O) : 0.0;
        return Bo * at(A.Scale, O, 1.0) + at(A.Shift, O, 0.0);
      }));
}

/// Gemm (Y = alpha * A' * B' + beta * C): scales B's columns and replaces C
/// by beta * C * s + t (beta becomes 1).
void foldIntoGemm(Graph &G, Node &N, const ChannelAffine &A, int64_t Count) {
  Value *BV = N.operand(1), *CV = N.operand(2);
  if (!A.Scale.empty()) {
    const Tensor &B = *BV->constant();
    // B is [K, N], or [N, K] under transB.
    bool TransB = N.attrs().getInt("transB", 0) != 0;
    int64_t K = TransB ? B.dims()[1] : B.dims()[0];
    N.setOperand(1, scaledByChannel(G, BV->name() + ".folded", B, A.Scale,
                                    TransB ? K : 1, Count));
  }
  if (A.Shift.empty() && !CV)
    return;
  // C broadcasts to [M, N]: keep its rows, widen its last dim to N.
  const Tensor *C = CV ? CV->constant() : nullptr;
  llvm::SmallVector<int64_t, 2> Dims = {Count};
  if (C && C->rank() == 2)
    Dims = {C->dims()[0], Count};
  double Beta = N.attrs().getFloat("beta", 1.0f);
  auto CAt = [&](int64_t E) -> double {
    if (!C)
      return 0.0;
    int64_t Row = E / Count, Col = E % Count;
    int64_t Last = C->rank() ? C->dims().back() : 1;
    int64_t Rows = C->rank() == 2 ? C->dims()[0] : 1;
    return C->getDouble((Rows == 1 ? 0 : Row) * Last + (Last == 1 ? 0 : Col));
  };
  std::string Base = CV ? CV->name() : biasName(BV);
  N.setOperand(2, newConstant(G, Base + ".folded", N.result(0)->dtype(), Dims,
                              [&](int64_t E) {
                                int64_t Col = E % Count;
                                return Beta * CAt(E) * at(A.Scale, Col, 1.0) +
                                       at(A.Shift, Col, 0.0);
                              }));
  N.attrs().set("beta", 1.0f);
}

/// MatMul with a constant [K, N] B: scales B's columns.
void foldIntoMatMul(Graph &G, Node &N, const ChannelAffine &A, int64_t Count) {
  Value *BV = N.operand(1);
  const Tensor &B = *BV->constant();
  N.setOperand(
      1, scaledByChannel(G, BV->name() + ".folded", B, A.Scale, 1, Count));
}

/// Applies P and lets the contraction's result replace Folded (the value
/// the affine map produced), under Folded's name.
void applyFold(Graph &G, const FoldPlan &P, Value *Folded) {
  Node &C = *P.Contraction;
  int64_t Count = C.result(0)->type().Dims[resultChannelAxis(C)].size();
  switch (C.kind()) {
  case OpKind::Conv:
  case OpKind::ConvTranspose:
    foldIntoConv(G, C, P.Affine, Count);
    break;
  case OpKind::Gemm:
    foldIntoGemm(G, C, P.Affine, Count);
    break;
  default:
    foldIntoMatMul(G, C, P.Affine, Count);
    break;
  }
  replaceKeepingName(G, Folded, C.result(0));
}

/// Legality of a Mul or Add of a constant after a contraction; nullopt when
/// N is not a candidate at all.
std::optional<Decision> matchAffineOp(const Graph &G, const Node &N,
                                      FoldPlan &P) {
  Value *Cst = nullptr;
  Node *C = nullptr;
  for (unsigned I = 0; I < 2 && !C; ++I) {
    Node *Prod = N.operand(I)->producer();
    if (Prod && isFoldTarget(Prod->kind()) && N.operand(1 - I)->isConstant()) {
      C = Prod;
      Cst = N.operand(1 - I);
    }
  }
  if (!C)
    return std::nullopt;
  bool IsMul = N.kind() == OpKind::Mul;
  Decision D = checkFoldable(G, *C, IsMul, !IsMul);
  if (!D)
    return D;
  if (N.result(0)->type() != C->result(0)->type())
    return Decision::no("the constant broadcasts the result to another shape");
  unsigned Axis = resultChannelAxis(*C);
  const TensorType &Y = C->result(0)->type();
  auto V = channelVector(*Cst->constant(), Y.rank(), Axis, Y.Dims[Axis].size());
  if (!V)
    return Decision::no(Axis == 1 && C->kind() != OpKind::Gemm
                            ? "the constant is not per-channel"
                            : "the constant is not per-column");
  P.Contraction = C;
  (IsMul ? P.Affine.Scale : P.Affine.Shift) = std::move(*V);
  return Decision::yes();
}

/// A BatchNormalization's per-channel map: s = scale / sqrt(var + eps),
/// t = B - mean * s. Null when a parameter is not constant.
std::optional<ChannelAffine> batchNormAffine(const Node &BN, std::string &Why) {
  for (unsigned I = 1; I < 5; ++I)
    if (!BN.operand(I)->isConstant()) {
      Why = "batchnorm parameters are not constant";
      return std::nullopt;
    }
  const Tensor &Scale = *BN.operand(1)->constant(),
               &Bias = *BN.operand(2)->constant(),
               &Mean = *BN.operand(3)->constant(),
               &Var = *BN.operand(4)->constant();
  int64_t Count = Scale.numElements();
  for (const Tensor *T : {&Bias, &Mean, &Var})
    if (T->numElements() != Count) {
      Why = "batchnorm parameters differ in size";
      return std::nullopt;
    }
  double Eps = BN.attrs().getFloat("epsilon", 1e-5f);
  ChannelAffine A;
  for (int64_t C = 0; C < Count; ++C) {
    double S = Scale.getDouble(C) / std::sqrt(Var.getDouble(C) + Eps);
    A.Scale.push_back(S);
    A.Shift.push_back(Bias.getDouble(C) - Mean.getDouble(C) * S);
  }
  return A;
}

/// Replaces BN by Mul(X, scale) + Add(shift) with [C, 1, ...] constants.
llvm::Error decomposeBatchNorm(Graph &G, Node &BN, const ChannelAffine &A) {
  Value *X = BN.operand(0), *Y = BN.result(0);
  llvm::SmallVector<int64_t, 4> Dims = {int64_t(A.Scale.size())};
  Dims.append(X->type().rank() - 2, 1);
  auto Pos = G.iteratorOf(&BN);
  Value *S = newConstant(G, Y->name() + ".bn_scale", X->dtype(), Dims,
                         [&](int64_t C) { return A.Scale[C]; });
  Value *T = newConstant(G, Y->name() + ".bn_shift", X->dtype(), Dims,
                         [&](int64_t C) { return A.Shift[C]; });
  Node *Mul = G.insertNode(Pos, OpKind::Mul, {X, S},
                           {G.uniqueName(Y->name() + ".scaled")}, BN.name());
  Node *Add = G.insertNode(Pos, OpKind::Add, {Mul->result(0), T},
                           {G.uniqueName(Y->name() + ".shifted")}, BN.name());
  for (Node *N : {Mul, Add})
    if (auto E = inferNodeTypes(*N))
      return E;
  replaceKeepingName(G, Y, Add->result(0));
  return llvm::Error::success();
}

/// Folds BN into the conv before it when legal, else decomposes it.
llvm::Expected<Decision> rewriteBatchNorm(Graph &G, Node &BN,
                                          DecisionLog &Log) {
  Value *X = BN.operand(0);
  std::string Why;
  if (!isFloat(X->dtype()) || X->type().rank() < 2)
    return Decision::no("input is not a float tensor of rank >= 2");
  std::optional<ChannelAffine> A = batchNormAffine(BN, Why);
  if (!A)
    return Decision::no(Why);
  Node *C = X->producer();
  Decision D = Decision::no("input is not produced by a Conv or "
                            "ConvTranspose");
  if (C && (C->kind() == OpKind::Conv || C->kind() == OpKind::ConvTranspose))
    D = checkFoldable(G, *C, true, true);
  if (D && C->result(0)->type().Dims[1].size() != int64_t(A->Scale.size()))
    D = Decision::no("batchnorm parameters do not match the channel count");
  if (D) {
    Log.note(BN, Decision{true, "folded into " + C->describe()});
    applyFold(G, FoldPlan{C, std::move(*A)}, BN.result(0));
  } else {
    Log.note(BN, Decision{true, "not folded (" + D.Reason +
                                    "): became a per-channel Mul and Add"});
    if (auto E = decomposeBatchNorm(G, BN, *A))
      return std::move(E);
  }
  G.eraseNode(&BN);
  return Decision::yes();
}
} // namespace

llvm::Expected<bool> BatchNormFolding::run(Graph &G, DecisionLog &Log) {
  std::vector<Node *> Candidates;
  for (auto &N : G.nodes())
    if (N->kind() == OpKind::BatchNormalization || N->kind() == OpKind::Mul ||
        N->kind() == OpKind::Add)
      Candidates.push_back(N.get());
  bool Changed = false;
  // Only the visited node is ever erased, so later pointers stay valid.
  for (Node *N : Candidates) {
    if (N->kind() == OpKind::BatchNormalization) {
      llvm::Expected<Decision> D = rewriteBatchNorm(G, *N, Log);
      if (!D)
        return D.takeError();
      if (!D->Applied)
        Log.note(*N, *D);
      Changed |= D->Applied;
      continue;
    }
    FoldPlan P;
    std::optional<Decision> D = matchAffineOp(G, *N, P);
    if (!D)
      continue;
    Log.note(*N, *D);
    if (!D->Applied)
      continue;
    applyFold(G, P, N->result(0));
    G.eraseNode(N);
    Changed = true;
  }
  // The replaced weights and BN parameters are dead now (unless shared).
  if (Changed)
    G.removeUnusedConstants();
  return Changed;
}

} // namespace solder
