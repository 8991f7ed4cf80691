//===- NormDeferral.cpp - A LayerNorm's consumers take its input ----------===//
#include "passes/NormDeferral.h"
#include "ir/OpRegistry.h"
#include "passes/FusionSupport.h"
#include <vector>

namespace solder {

namespace {

/// The user nodes of V (each once).
std::vector<Node *> usersOf(const Value *V) {
  std::vector<Node *> Out;
  for (const Use &U : V->uses())
    if (!llvm::is_contained(Out, U.User))
      Out.push_back(U.User);
  return Out;
}

bool isMatMulUser(const Node &U, const Value *H) {
  const Value *W = U.operand(1);
  return U.kind() == OpKind::MatMul && U.operand(0) == H && W != H &&
         W->isConstant() && W->type().Dims.size() == 2 &&
         W->dtype() == H->dtype();
}

bool isAddUser(const Node &U, const Value *H) {
  if (U.kind() != OpKind::Add || U.numOperands() != 2)
    return false;
  const Value *R = U.operand(0) == H ? U.operand(1) : U.operand(0);
  return R != H && R->type() == H->type() && U.result(0)->type() == H->type();
}

Decision check(const Graph &G, const Node &L) {
  const Value *X = L.operand(0);
  if (X->dtype() != DType::F16 && X->dtype() != DType::BF16)
    return Decision::no(dtypeName(X->dtype()).str() +
                        ": only f16/bf16 plans have generated GEMMs to take "
                        "the statistics");
  if (!X->type().isStatic())
    return Decision::no("dynamic shape");
  std::optional<std::vector<bool>> Axes = rowReductionAxes(L);
  if (!Axes || Axes->empty() || !Axes->back() ||
      std::count(Axes->begin(), Axes->end(), true) != 1)
    return Decision::no("not over the last axis only");
  int64_t N = X->type().Dims.back().size();
  for (unsigned I = 1; I < L.numOperands(); ++I) {
    const Value *P = L.operand(I);
    if (!P)
      continue;
    if (!P->isConstant() || P->constant()->numElements() != N)
      return Decision::no("its scale or bias is not a constant vector of the "
                          "row's length");
  }
  for (unsigned I = 1; I < L.numResults(); ++I)
    if (L.result(I) && (L.result(I)->hasUses() || G.isOutput(L.result(I))))
      return Decision::no("its mean or inverse deviation is used");
  const Value *H = L.result(0);
  if (G.isOutput(H))
    return Decision::no("its result is a graph output");
  bool AnyMatMul = false;
  for (const Node *U : usersOf(H)) {
    if (isMatMulUser(*U, H)) {
      AnyMatMul = true;
      continue;
    }
    if (!isAddUser(*U, H))
      return Decision::no("user " + U->describe() +
                          " is neither a matmul of constant weights reading "
                          "it as A nor an add of a value of its shape");
  }
  if (!AnyMatMul)
    return Decision::no("no matmul reads it: deferring saves no kernel");
  return Decision::yes();
}

/// The vector operand of L (scale 1 or bias 2) as N doubles (0 if absent).
std::vector<double> vectorOf(const Node &L, unsigned I, int64_t N) {
  std::vector<double> Out(size_t(N), 0.0);
  if (const Value *P = L.operand(I))
    for (int64_t J = 0; J < N; ++J)
      Out[size_t(J)] = P->constant()->getDouble(J);
  return Out;
}

llvm::Error rewrite(Graph &G, Node &L) {
  Value *X = L.operand(0), *H = L.result(0);
  const int64_t N = X->type().Dims.back().size();
  const DType T = X->dtype();
  const std::vector<double> Gamma = vectorOf(L, 1, N), Beta = vectorOf(L, 2, N);
  const std::string Base = H->name() + ".deferred";
  auto Pos = G.iteratorOf(&L);
  // The statistics: the same normalization, its result left unused.
  Node *Stats =
      G.insertNode(Pos, OpKind::LayerNormalization, L.operands(),
                   {G.uniqueName(Base + ".unused"),
                    G.uniqueName(Base + ".mean"), G.uniqueName(Base + ".rstd")},
                   L.name());
  Stats->attrs() = L.attrs();
  Stats->attrs().set("stash_type", Attribute(int64_t(1)));
  if (llvm::Error E = inferNodeTypes(*Stats))
    return E;
  Value *Mean = Stats->result(1), *Rstd = Stats->result(2);
  auto F32Vector = [&](const std::string &Name, llvm::ArrayRef<double> V) {
    Tensor C(DType::F32, {int64_t(V.size())});
    for (size_t I = 0; I < V.size(); ++I)
      C.setDouble(int64_t(I), V[I]);
    return G.addConstant(G.uniqueName(Name), std::move(C));
  };
  for (Node *U : usersOf(H)) {
    auto UPos = G.iteratorOf(U);
    Node *Apply = nullptr, *BiasAdd = nullptr;
    if (isMatMulUser(*U, H)) {
      const Tensor &W = *U->operand(1)->constant();
      const int64_t K = W.dims()[0], Cols = W.dims()[1];
      Tensor Scaled(T, {K, Cols});
      std::vector<double> C(size_t(Cols), 0.0), D(size_t(Cols), 0.0);
      for (int64_t Kk = 0; Kk < K; ++Kk)
        for (int64_t J = 0; J < Cols; ++J) {
          double Wv = W.getDouble(Kk * Cols + J);
          Scaled.setDouble(Kk * Cols + J, Gamma[size_t(Kk)] * Wv);
          // c from the rounded weights the GEMM multiplies by.
          C[size_t(J)] += Scaled.getDouble(Kk * Cols + J);
          D[size_t(J)] += Beta[size_t(Kk)] * Wv;
        }
      // A bias added right after the product folds into d (one vector
      // fewer for the epilogue to read).
      if (U->result(0)->uses().size() == 1 && !G.isOutput(U->result(0))) {
        Node *A = U->result(0)->uses().front().User;
        const Value *Bv =
            A->kind() == OpKind::Add && A->numOperands() == 2
                ? A->operand(A->operand(0) == U->result(0) ? 1 : 0)
                : nullptr;
        if (Bv && Bv != U->result(0) && Bv->isConstant() &&
            Bv->type().Dims.size() == 1 &&
            Bv->constant()->numElements() == Cols &&
            A->result(0)->type() == U->result(0)->type()) {
          BiasAdd = A;
          for (int64_t J = 0; J < Cols; ++J)
            D[size_t(J)] += Bv->constant()->getDouble(J);
        }
      }
      std::string UBase = U->result(0)->name() + ".deferred";
      Value *WS = G.addConstant(G.uniqueName(U->operand(1)->name() + ".scaled"),
                                std::move(Scaled));
      Node *Mm = G.insertNode(UPos, OpKind::MatMul, {X, WS},
                              {G.uniqueName(UBase + ".product")}, U->name());
      if (llvm::Error E = inferNodeTypes(*Mm))
        return E;
      Apply = G.insertNode(UPos, OpKind::ApplyRowStats,
                           {Mm->result(0), Mean, Rstd,
                            F32Vector(UBase + ".colsum", C), nullptr,
                            F32Vector(UBase + ".bias", D)},
                           {G.uniqueName(UBase)}, U->name());
    } else {
      // (x - mean) rstd gamma + beta + r: no C, the norm's own vectors.
      Value *R = U->operand(0) == H ? U->operand(1) : U->operand(0);
      Apply = G.insertNode(UPos, OpKind::ApplyRowStats,
                           {X, Mean, Rstd, nullptr, L.operand(1),
                            L.numOperands() > 2 ? L.operand(2) : nullptr, R},
                           {G.uniqueName(U->result(0)->name() + ".deferred")},
                           U->name());
    }
    if (llvm::Error E = inferNodeTypes(*Apply))
      return E;
    if (BiasAdd) {
      // The add's users read the correction; the product's one use (the
      // add) goes with it.
      G.replaceAllUsesWith(BiasAdd->result(0), Apply->result(0));
      G.eraseNode(BiasAdd);
    }
    G.replaceAllUsesWith(U->result(0), Apply->result(0));
    G.eraseNode(U);
  }
  G.eraseNode(&L);
  return llvm::Error::success();
}

} // namespace

llvm::Expected<bool> NormDeferral::run(Graph &G, DecisionLog &Log) {
  std::vector<Node *> Norms;
  for (const auto &N : G.nodes())
    if (N->kind() == OpKind::LayerNormalization)
      Norms.push_back(N.get());
  bool Changed = false;
  for (Node *L : Norms) {
    Decision D = check(G, *L);
    Log.note(*L, D);
    if (!D)
      continue;
    if (llvm::Error E = rewrite(G, *L))
      return std::move(E);
    Changed = true;
  }
  if (Changed)
    G.removeUnusedConstants();
  return Changed;
}

} // namespace solder
