//===- EpilogueFusion.cpp - Contractions absorb their epilogue ------------===//
#include "passes/EpilogueFusion.h"
#include "ir/OpRegistry.h"
#include "passes/PatternMatch.h"

namespace solder {

namespace {

/// Whether following single-use elementwise links from V leads into a row
/// reduction (which would rather take them as its prologue).
bool flowsIntoReduction(const Graph &G, const Value *V) {
  for (unsigned Steps = 0; Steps < 64; ++Steps) {
    Node *U = soleUser(G, V);
    if (!U)
      return false;
    if (auto Mask = rowReductionAxes(*U))
      return U->operand(0) == V && reducesInnermostDims(*Mask);
    FusionKind K = getOpInfo(U->kind()).Fusion;
    if ((K != FusionKind::Elementwise && K != FusionKind::Broadcast) ||
        U->numResults() != 1)
      return false;
    V = U->result(0);
  }
  return false;
}

/// Why U cannot extend the chain ending in V, or nullopt.
std::optional<std::string> cannotExtend(const FusionState &State, const Node &U,
                                        const Value *V) {
  if (State.isExcluded(U))
    return "disabled by the user";
  FusionKind K = getOpInfo(U.kind()).Fusion;
  if (K != FusionKind::Elementwise && K != FusionKind::Broadcast)
    return U.opName().str() + " is " + fusionKindName(K).str() +
           ", not elementwise";
  if (U.numResults() != 1 || !U.result(0))
    return U.opName().str() + " has several results";
  const Value *R = U.result(0);
  if (R->type() != V->type())
    return U.opName().str() + " changes the shape or dtype (" +
           typeToString(V->type()) + " -> " + typeToString(R->type()) + ")";
  for (const Value *O : U.operands())
    if (O && O != V && !O->type().isStatic())
      return U.opName().str() + " reads an operand of dynamic shape";
  return std::nullopt;
}

bool readsNonConstant(const Node &U, const Value *V) {
  return llvm::any_of(U.operands(), [&](const Value *O) {
    return O && O != V && !O->isConstant();
  });
}

} // namespace

llvm::Expected<bool> EpilogueFusion::run(Graph &G, DecisionLog &Log) {
  std::vector<Node *> Anchors;
  for (auto &N : G.nodes())
    if (getOpInfo(N->kind()).Fusion == FusionKind::Contraction &&
        N->result(0) && N->result(0)->type().isStatic())
      Anchors.push_back(N.get());
  bool Changed = false;
  for (Node *A : Anchors) {
    if (State.isExcluded(*A)) {
      Log.note(*A, Decision::no("disabled by the user"));
      continue;
    }
    std::vector<Node *> Chain = {A};
    const Value *V = A->result(0);
    std::string Stop;
    while (true) {
      Node *U = soleUser(G, V);
      if (!U) {
        Stop = V->hasUses() ? "'" + V->name() + "' has a second user"
                            : "'" + V->name() + "' is a graph output";
        break;
      }
      if (auto Why = cannotExtend(State, *U, V)) {
        Stop = *Why;
        break;
      }
      if (readsNonConstant(*U, V) && flowsIntoReduction(G, V)) {
        Stop = U->describe() + " is left to the row reduction it flows into";
        break;
      }
      Chain.push_back(U);
      V = U->result(0);
    }
    if (Chain.size() == 1) {
      Log.note(*A, Decision::no("no epilogue to fuse: " + Stop));
      continue;
    }
    int64_t Id = State.takeId();
    if (auto Why = State.disabledReason(Id, Chain)) {
      Log.note(*A, Decision::no(*Why));
      continue;
    }
    std::string Members;
    for (Node *M : Chain)
      Members += (Members.empty() ? "" : ", ") + memberName(*M);
    Decision D = Decision::yes();
    D.Reason = "group " + std::to_string(Id) + " (contraction): " + Members +
               " (chain ends: " + Stop + ")";
    Log.note(*A, D);
    auto Group = outlineFusedGroup(G, Chain, GroupKind::Contraction, Id);
    if (!Group)
      return Group.takeError();
    Changed = true;
  }
  return Changed;
}

} // namespace solder
