//===- ConvLayout.cpp - Convolution regions in NHWC -----------------------===//
#include "passes/ConvLayout.h"
#include "ir/Layout.h"
#include "ir/OpRegistry.h"
#include "passes/PatternMatch.h"
#include "llvm/ADT/SmallPtrSet.h"
#include <algorithm>

namespace solder {

namespace {

using Perm = llvm::SmallVector<int64_t, 6>;

/// The perm of Transpose node T.
Perm permOf(const Node &T) {
  return transposePerm(T, T.operand(0)->type().rank());
}

/// The Transpose producing V, or null.
Node *transposeOf(const Value *V) {
  return V ? matchOp(V, OpKind::Transpose) : nullptr;
}

/// Whether Conv N is taken, or why not.
Decision convCandidate(const Node &N, ConvLayout Mode, bool TargetGpu) {
  if (isNhwc(N))
    return Decision::no("already NHWC");
  const Value *X = N.operand(0), *W = N.operand(1), *Y = N.result(0);
  if (X->type().rank() != 4 || !W->isConstant() || W->type().rank() != 4)
    return Decision::no("only 2-D convolutions with constant weights run "
                        "in NHWC");
  if (!X->type().isStatic() || !Y || !Y->type().isStatic())
    return Decision::no("shapes are not static");
  if (Mode == ConvLayout::Auto) {
    if (!TargetGpu)
      return Decision::no("layout auto converts only for the GPU");
    if (X->dtype() != DType::F16 && X->dtype() != DType::BF16)
      return Decision::no("layout auto keeps " + dtypeName(X->dtype()).str() +
                          " convolutions in NCHW (use --layout nhwc)");
  }
  return Decision::yes();
}

class Rewriter {
public:
  explicit Rewriter(Graph &G) : G(G) {}

  /// Transpose(X, P) before Pos.
  llvm::Expected<Value *> transpose(Graph::NodeList::iterator Pos, Value *X,
                                    llvm::ArrayRef<int64_t> P,
                                    llvm::StringRef Suffix) {
    Node *T = G.insertNode(Pos, OpKind::Transpose, {X},
                           {G.uniqueName(X->name() + Suffix.str())});
    T->attrs().set("perm", std::vector<int64_t>(P.begin(), P.end()));
    if (auto E = inferNodeTypes(*T))
      return std::move(E);
    return T->result(0);
  }

  /// Conv N in NHWC between transposes.
  llvm::Error convertConv(Node &N) {
    auto Pos = G.iteratorOf(&N);
    Value *X = N.operand(0), *W = N.operand(1);
    llvm::Expected<Value *> XT = transpose(Pos, X, ToNhwcPerm, ".nhwc");
    if (!XT)
      return XT.takeError();
    Value *WT = G.addConstant(G.uniqueName(W->name() + ".nhwc"),
                              W->constant()->transposed(ToNhwcPerm, &Arena));
    std::vector<Value *> Ops = {*XT, WT};
    if (N.numOperands() > 2 && N.operand(2))
      Ops.push_back(N.operand(2));
    Node *C =
        G.insertNode(Pos, OpKind::Conv, Ops,
                     {G.uniqueName(N.result(0)->name() + ".nhwc")}, N.name());
    C->attrs() = N.attrs();
    C->attrs().set(LayoutAttrName, NhwcLayout);
    if (auto E = inferNodeTypes(*C))
      return E;
    llvm::Expected<Value *> Back =
        transpose(Pos, C->result(0), ToNchwPerm, ".nchw");
    if (!Back)
      return Back.takeError();
    replaceKeepingName(G, N.result(0), *Back);
    G.eraseNode(&N);
    return llvm::Error::success();
  }

  /// Sinks Transposes in one walk; returns whether anything changed.
  llvm::Expected<bool> sink() {
    bool Changed = false;
    for (auto It = G.nodes().begin(); It != G.nodes().end();) {
      Node *N = It->get();
      ++It;
      llvm::Expected<bool> C = visit(*N);
      if (!C)
        return C.takeError();
      Changed |= *C;
    }
    return Changed;
  }

  /// Transposes left that move only unit dims become Reshapes.
  llvm::Expected<bool> unitTransposesToReshapes() {
    bool Changed = false;
    std::vector<Node *> Ts;
    for (auto &N : G.nodes())
      if (N->kind() == OpKind::Transpose)
        Ts.push_back(N.get());
    for (Node *T : Ts) {
      const Value *X = T->operand(0);
      if (!X->type().isStatic())
        continue;
      auto D = X->type().staticDims();
      Perm P = permOf(*T), Kept;
      for (int64_t A : P)
        if (D[A] != 1)
          Kept.push_back(A);
      if (!std::is_sorted(Kept.begin(), Kept.end()))
        continue;
      auto OutDims = T->result(0)->type().staticDims();
      Value *Shape =
          G.addConstant(G.uniqueName(T->result(0)->name() + ".shape"),
                        Tensor::fromInt64s(std::vector<int64_t>(
                            OutDims.begin(), OutDims.end())));
      Node *R =
          G.insertNode(G.iteratorOf(T), OpKind::Reshape, {T->operand(0), Shape},
                       {G.uniqueName(T->result(0)->name() + ".r")}, T->name());
      if (auto E = inferNodeTypes(*R))
        return std::move(E);
      replaceKeepingName(G, T->result(0), R->result(0));
      G.eraseNode(T);
      Changed = true;
    }
    return Changed;
  }

private:
  llvm::Expected<bool> visit(Node &N) {
    if (N.numResults() != 1 || !N.result(0))
      return false;
    switch (getOpInfo(N.kind()).Fusion) {
    case FusionKind::Elementwise:
    case FusionKind::Broadcast:
      return sinkThroughElementwise(N);
    default:
      break;
    }
    switch (N.kind()) {
    case OpKind::Transpose:
      return composeTransposes(N);
    case OpKind::Concat:
      return sinkThroughConcat(N);
    case OpKind::MaxPool:
    case OpKind::AveragePool:
      return poolToNhwc(N);
    case OpKind::GlobalAveragePool:
    case OpKind::GlobalMaxPool:
      return globalPoolToReduce(N);
    case OpKind::ReduceMean:
    case OpKind::ReduceSum:
    case OpKind::ReduceMax:
      return sinkThroughReduce(N);
    default:
      return false;
    }
  }

  /// Reduce(T(x), axes) == Q(Reduce(x, P[axes])): with keepdims Q is P;
  /// without, the kept dims keep T's order, which is often x's already
  /// (the spatial mean of an NCHW-ward transpose).
  llvm::Expected<bool> sinkThroughReduce(Node &N) {
    Node *T = transposeOf(N.operand(0));
    if (!T || N.numOperands() < 2 || !N.operand(1) ||
        !N.operand(1)->isConstant())
      return false;
    Perm P = permOf(*T);
    int64_t Rank = P.size();
    llvm::SmallVector<bool, 6> Reduced(Rank, false);
    for (int64_t A : N.operand(1)->constant()->toInt64Vector()) {
      if (A < 0)
        A += Rank;
      if (A < 0 || A >= Rank)
        return false;
      Reduced[A] = true;
    }
    std::vector<int64_t> Axes;
    for (int64_t A = 0; A < Rank; ++A)
      if (Reduced[A])
        Axes.push_back(P[A]);
    if (Axes.empty())
      return false; // no axes: all or nothing, by noop_with_empty_axes
    std::sort(Axes.begin(), Axes.end());
    Perm Q;
    if (N.attrs().getInt("keepdims", 1)) {
      Q = P;
    } else {
      // Kept dims of T(x) in order, as x dims; Q ranks them among x's.
      Perm Kept;
      for (int64_t A = 0; A < Rank; ++A)
        if (!Reduced[A])
          Kept.push_back(P[A]);
      Perm Sorted = Kept;
      std::sort(Sorted.begin(), Sorted.end());
      for (int64_t K : Kept)
        Q.push_back(std::find(Sorted.begin(), Sorted.end(), K) -
                    Sorted.begin());
    }
    Value *NewAxes = G.addConstant(G.uniqueName(N.operand(1)->name() + ".nhwc"),
                                   Tensor::fromInt64s(Axes));
    std::vector<Value *> Ops(N.operands().begin(), N.operands().end());
    Ops[0] = T->operand(0);
    Ops[1] = NewAxes;
    llvm::Expected<Node *> C = cloneOn(N, Ops);
    if (!C)
      return C.takeError();
    return finishThrough(N, (*C)->result(0), Q, ".t");
  }

  /// Replaces N (one result) by Replacement and erases N and the
  /// Transposes it read if now dead. A new Replacement (inserted before N)
  /// takes N's result name; an existing value keeps its own.
  void finish(Node &N, Value *Replacement, bool IsNew = true) {
    std::vector<Node *> Inputs;
    for (Value *O : N.operands())
      if (Node *T = transposeOf(O))
        Inputs.push_back(T);
    if (IsNew)
      replaceKeepingName(G, N.result(0), Replacement);
    else
      G.replaceAllUsesWith(N.result(0), Replacement);
    G.eraseNode(&N);
    eraseIfDead(G, Inputs);
  }

  /// Replaces N by Transpose(Out, P), or by Out alone when P is the
  /// identity; Out's producer was inserted before N.
  llvm::Expected<bool> finishThrough(Node &N, Value *Out,
                                     llvm::ArrayRef<int64_t> P,
                                     llvm::StringRef Suffix) {
    if (!isIdentityPerm(P)) {
      llvm::Expected<Value *> T = transpose(G.iteratorOf(&N), Out, P, Suffix);
      if (!T)
        return T.takeError();
      Out = *T;
    }
    finish(N, Out);
    return true;
  }

  /// A copy of N (same kind, name and attributes) on Ops, before N.
  llvm::Expected<Node *> cloneOn(Node &N, llvm::ArrayRef<Value *> Ops) {
    Node *C =
        G.insertNode(G.iteratorOf(&N), N.kind(), Ops,
                     {G.uniqueName(N.result(0)->name() + ".sunk")}, N.name());
    C->attrs() = N.attrs();
    if (auto E = inferNodeTypes(*C))
      return std::move(E);
    return C;
  }

  llvm::Expected<bool> composeTransposes(Node &N) {
    Node *Inner = transposeOf(N.operand(0));
    if (!Inner)
      return false;
    Perm P = composePerms(permOf(*Inner), permOf(N));
    Value *Src = Inner->operand(0);
    Value *Out = Src;
    if (!isIdentityPerm(P)) {
      llvm::Expected<Value *> T = transpose(G.iteratorOf(&N), Src, P, ".t");
      if (!T)
        return T.takeError();
      Out = *T;
    }
    // A model input reached through two inverse transposes is still
    // needed under N's name only when N's result is a model output.
    if (Out == Src && G.isOutput(N.result(0)))
      return false;
    finish(N, Out, /*IsNew=*/Out != Src);
    return true;
  }

  /// A Transpose of V by Q that runs before N, or null. An elementwise op
  /// between T(a) and V reads it in V's place at no cost: a block's input,
  /// transposed for its convolution, read again as the residual.
  Value *earlierTranspose(const Value *V, llvm::ArrayRef<int64_t> Q,
                          const Node &N) {
    llvm::SmallPtrSet<const Node *, 4> Candidates;
    for (const Use &U : V->uses())
      if (U.User->kind() == OpKind::Transpose && U.User->operand(0) == V &&
          permOf(*U.User) == Perm(Q.begin(), Q.end()))
        Candidates.insert(U.User);
    if (Candidates.empty())
      return nullptr;
    for (const auto &M : G.nodes()) {
      if (M.get() == &N)
        return nullptr;
      if (Candidates.count(M.get()))
        return M->result(0);
    }
    return nullptr;
  }

  /// The perm shared by the Transposes among N's operands (each the
  /// result's rank), when every other operand is a constant, absent, or has
  /// a transpose by the perm's inverse before N.
  std::optional<Perm> sharedPerm(const Node &N) {
    std::optional<Perm> P;
    unsigned Rank = N.result(0)->type().rank();
    bool Others = false;
    for (const Value *O : N.operands()) {
      if (!O)
        continue;
      if (Node *T = transposeOf(O)) {
        Perm Q = permOf(*T);
        if (Q.size() != Rank || (P && *P != Q))
          return std::nullopt;
        P = Q;
      } else if (!O->isConstant()) {
        Others = true;
      }
    }
    if (P && Others)
      for (const Value *O : N.operands())
        if (O && !transposeOf(O) && !O->isConstant() &&
            !earlierTranspose(O, invertPerm(*P), N))
          return std::nullopt;
    return P;
  }

  llvm::Expected<bool> sinkThroughElementwise(Node &N) {
    std::optional<Perm> P = sharedPerm(N);
    if (!P)
      return false;
    unsigned Rank = P->size();
    Perm Inv = invertPerm(*P);
    std::vector<Value *> Ops;
    for (Value *O : N.operands()) {
      if (!O) {
        Ops.push_back(nullptr);
      } else if (Node *T = transposeOf(O)) {
        Ops.push_back(T->operand(0));
      } else if (O->type().rank() == 0) {
        Ops.push_back(O); // scalars broadcast either way
      } else if (!O->isConstant()) {
        Ops.push_back(earlierTranspose(O, Inv, N)); // sharedPerm found it
      } else {
        // op(T(x), c) == T(op(x, c')) with c' = T^-1(c at full rank).
        const Tensor &C = *O->constant();
        if (C.rank() > Rank)
          return false;
        llvm::SmallVector<int64_t, 6> Full(Rank - C.rank(), 1);
        Full.append(C.dims().begin(), C.dims().end());
        Ops.push_back(G.addConstant(G.uniqueName(O->name() + ".nhwc"),
                                    C.reshaped(Full).transposed(Inv, &Arena)));
      }
    }
    llvm::Expected<Node *> C = cloneOn(N, Ops);
    if (!C)
      return C.takeError();
    return finishThrough(N, (*C)->result(0), *P, ".t");
  }

  llvm::Expected<bool> sinkThroughConcat(Node &N) {
    std::optional<Perm> P = sharedPerm(N);
    if (!P)
      return false;
    std::vector<Value *> Ops;
    for (Value *O : N.operands()) {
      Node *T = transposeOf(O);
      if (!T)
        return false; // a constant piece would need permuting: rare
      Ops.push_back(T->operand(0));
    }
    int64_t Rank = P->size(), Axis = N.attrs().getInt("axis", 0);
    if (Axis < 0)
      Axis += Rank;
    if (Axis < 0 || Axis >= Rank)
      return false;
    llvm::Expected<Node *> C = cloneOn(N, Ops);
    if (!C)
      return C.takeError();
    (*C)->attrs().set("axis", (*P)[Axis]);
    if (auto E = inferNodeTypes(**C))
      return std::move(E);
    return finishThrough(N, (*C)->result(0), *P, ".t");
  }

  /// The input of N as NHWC: the source of a Transpose to NCHW.
  Value *nhwcSource(const Node &N) {
    Node *T = transposeOf(N.operand(0));
    if (!T || N.operand(0)->type().rank() != 4 ||
        permOf(*T) != Perm(std::begin(ToNchwPerm), std::end(ToNchwPerm)))
      return nullptr;
    return T->operand(0);
  }

  llvm::Expected<bool> poolToNhwc(Node &N) {
    Value *X = nhwcSource(N);
    if (!X || isNhwc(N))
      return false;
    llvm::Expected<Node *> C = cloneOn(N, {X});
    if (!C)
      return C.takeError();
    (*C)->attrs().set(LayoutAttrName, NhwcLayout);
    if (auto E = inferNodeTypes(**C))
      return std::move(E);
    return finishThrough(N, (*C)->result(0), ToNchwPerm, ".nchw");
  }

  llvm::Expected<bool> globalPoolToReduce(Node &N) {
    Value *X = nhwcSource(N);
    if (!X)
      return false;
    Value *Axes = G.addConstant(G.uniqueName(N.result(0)->name() + ".axes"),
                                Tensor::fromInt64s({1, 2}));
    OpKind K = N.kind() == OpKind::GlobalAveragePool ? OpKind::ReduceMean
                                                     : OpKind::ReduceMax;
    Node *R =
        G.insertNode(G.iteratorOf(&N), K, {X, Axes},
                     {G.uniqueName(N.result(0)->name() + ".nhwc")}, N.name());
    R->attrs().set("keepdims", int64_t(1));
    if (auto E = inferNodeTypes(*R))
      return std::move(E);
    return finishThrough(N, R->result(0), ToNchwPerm, ".nchw");
  }

  Graph &G;
  /// Storage of the transposed weights (a model's worth, in huge pages).
  TensorArena Arena;
};

} // namespace

llvm::Expected<bool> ConvLayoutPass::run(Graph &G, DecisionLog &Log) {
  if (Mode == ConvLayout::Nchw)
    return false;
  Rewriter R(G);
  std::vector<Node *> Convs;
  for (auto &N : G.nodes())
    if (N->kind() == OpKind::Conv) {
      Decision D = convCandidate(*N, Mode, TargetGpu);
      Log.note(*N, D);
      if (D)
        Convs.push_back(N.get());
    }
  if (Convs.empty())
    return false;
  for (Node *N : Convs)
    if (auto E = R.convertConv(*N))
      return std::move(E);
  llvm::Expected<bool> Sunk = R.sink();
  if (!Sunk)
    return Sunk.takeError();
  llvm::Expected<bool> Reshaped = R.unitTransposesToReshapes();
  if (!Reshaped)
    return Reshaped.takeError();
  // Say where the region still meets NCHW, for the fusion report.
  for (auto &N : G.nodes())
    if (N->kind() == OpKind::Transpose) {
      std::string Why = "layout boundary: feeds ";
      bool First = true;
      for (const Use &U : N->result(0)->uses()) {
        Why += (First ? "" : ", ") + U.User->describe();
        First = false;
      }
      if (G.isOutput(N->result(0)))
        Why += First ? "a model output" : ", a model output";
      Log.note(*N, Decision::no(Why));
    }
  return true;
}

} // namespace solder
