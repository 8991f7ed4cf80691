//===- AttentionMaskFloor.cpp - Finite attention masks floored ------------===//
#include "passes/AttentionMaskFloor.h"
#include "ir/OpRegistry.h"
#include "llvm/ADT/DenseMap.h"
#include <cmath>
#include <vector>

namespace solder {

namespace {

/// Whether V is already the result of this pass's chain: a Where whose
/// third operand is the Max with the floor (as stored, rounded to V's type).
bool isFloored(const Value *V) {
  const Node *W = V->producer();
  if (!W || W->kind() != OpKind::Where || W->numOperands() != 3 ||
      !W->operand(2))
    return false;
  const Node *M = W->operand(2)->producer();
  if (!M || M->kind() != OpKind::Max || M->numOperands() != 2 ||
      !M->operand(1)->isConstant())
    return false;
  const Tensor *F = M->operand(1)->constant();
  return F->numElements() == 1 &&
         std::abs(F->getDouble(0) / AttentionMaskFloorValue - 1) < 1e-2;
}

Decision check(const Node &N) {
  if (N.numOperands() < 4 || !N.operand(3))
    return Decision::no("no mask");
  DType Q = N.operand(0)->dtype();
  if (Q != DType::F16 && Q != DType::BF16)
    return Decision::no("Q is " + dtypeName(Q).str() +
                        ": only cuDNN's attention, which takes f16 or bf16, "
                        "rescales the mask");
  const Value *M = N.operand(3);
  if (M->dtype() == DType::Bool)
    return Decision::no("a boolean mask");
  if (M->dtype() != DType::F32 && M->dtype() != DType::BF16)
    return Decision::no("a " + dtypeName(M->dtype()).str() +
                        " mask cannot overflow when rescaled");
  if (isFloored(M))
    return Decision::no("the mask is already floored");
  return Decision::yes();
}

/// The floored chain of mask M, inserted before User.
llvm::Expected<Value *> floorChain(Graph &G, Value *M, Node &User) {
  DType T = M->dtype();
  std::string Base = M->name() + ".floored";
  Value *Floor = G.addConstant(G.uniqueName(Base + ".floor"),
                               Tensor::scalar(T, AttentionMaskFloorValue));
  Value *NegInf = G.addConstant(G.uniqueName(Base + ".neginf"),
                                Tensor::scalar(T, -INFINITY));
  auto Pos = G.iteratorOf(&User);
  Node *Max = G.insertNode(Pos, OpKind::Max, {M, Floor},
                           {G.uniqueName(Base + ".max")}, User.name());
  Node *IsInf = G.insertNode(Pos, OpKind::Equal, {M, NegInf},
                             {G.uniqueName(Base + ".isneginf")}, User.name());
  Node *Where =
      G.insertNode(Pos, OpKind::Where, {IsInf->result(0), M, Max->result(0)},
                   {G.uniqueName(Base)}, User.name());
  for (Node *X : {Max, IsInf, Where})
    if (llvm::Error E = inferNodeTypes(*X))
      return std::move(E);
  return Where->result(0);
}

/// A copy of constant mask M with its finite values floored.
Tensor flooredConstant(const Tensor &M) {
  Tensor T = Tensor::copyOf(M.dtype(), M.dims(), M.rawData());
  for (int64_t I = 0; I < T.numElements(); ++I) {
    double X = T.getDouble(I);
    if (X != -INFINITY && X < AttentionMaskFloorValue)
      T.setDouble(I, AttentionMaskFloorValue);
  }
  return T;
}

} // namespace

llvm::Expected<bool> AttentionMaskFloor::run(Graph &G, DecisionLog &Log) {
  std::vector<Node *> Attn;
  for (auto &N : G.nodes())
    if (N->kind() == OpKind::Attention)
      Attn.push_back(N.get());
  llvm::DenseMap<Value *, Value *> Floored;
  bool Changed = false;
  for (Node *N : Attn) {
    Decision D = check(*N);
    Log.note(*N, D);
    if (!D)
      continue;
    Value *M = N->operand(3);
    Value *&F = Floored[M];
    if (!F) {
      if (M->isConstant()) {
        F = G.addConstant(G.uniqueName(M->name() + ".floored"),
                          flooredConstant(*M->constant()));
      } else {
        llvm::Expected<Value *> C = floorChain(G, M, *N);
        if (!C)
          return C.takeError();
        F = *C;
      }
    }
    N->setOperand(3, F);
    Changed = true;
  }
  if (Changed)
    G.removeUnusedConstants();
  return Changed;
}

} // namespace solder
