//===- NormEpilogueFusion.cpp - A matmul absorbs the LayerNorm after it ---===//
//
// Runs after loop-fusion: both groups exist by then. Each reduction group is
// checked once; the merge inlines both groups and outlines their nodes
// again as one contraction group under a fresh id (so --disable-fusion of
// that id keeps the two groups as they were).
//
//===----------------------------------------------------------------------===//
#include "passes/NormEpilogueFusion.h"
#include "ir/OpRegistry.h"
#include <algorithm>
#include <iterator>

namespace solder {

namespace {

/// The normalization member of reduction group R, or an explanation.
const Node *normMember(const Node &R, std::string &Why) {
  const Node *Norm = nullptr;
  for (const auto &M : R.body()->nodes()) {
    FusionKind F = getOpInfo(M->kind()).Fusion;
    if (F == FusionKind::Reduction) {
      if (M->kind() != OpKind::LayerNormalization &&
          M->kind() != OpKind::RMSNormalization) {
        Why = "its reduction is " + M->opName().str() +
              ", not a LayerNorm or RMS norm";
        return nullptr;
      }
      Norm = M.get();
    } else if (F != FusionKind::Elementwise && F != FusionKind::Broadcast) {
      Why = "member " + memberName(*M) + " is not elementwise";
      return nullptr;
    }
  }
  if (!Norm) {
    Why = "no normalization member";
    return nullptr;
  }
  std::optional<std::vector<bool>> Axes = rowReductionAxes(*Norm);
  if (!Axes || Axes->empty() || !Axes->back() ||
      std::count(Axes->begin(), Axes->end(), true) != 1) {
    Why = "the normalization is not over the last axis only";
    return nullptr;
  }
  return Norm;
}

/// The anchor of contraction group C when it is a MatMul or Gemm (C itself
/// for a bare MatMul or Gemm: one without an epilogue of its own, as Llama's
/// output projections have none before the residual).
const Node *matmulAnchor(const Node &C) {
  if (!C.body())
    return C.kind() == OpKind::MatMul || C.kind() == OpKind::Gemm ? &C
                                                                  : nullptr;
  for (const auto &M : C.body()->nodes())
    if (getOpInfo(M->kind()).Fusion == FusionKind::Contraction)
      return M->kind() == OpKind::MatMul || M->kind() == OpKind::Gemm ? M.get()
                                                                      : nullptr;
  return nullptr;
}

/// Why contraction group C (producing V, read by R) cannot join R, or "".
std::string whyNot(const Graph &G, const Node &C, const Node &R, const Value *V,
                   const Value *X) {
  if (!matmulAnchor(C))
    return "its contraction is not a MatMul or Gemm";
  if (C.numResults() != 1 || G.isOutput(V))
    return "the matmul's result is a graph output or one of several results";
  for (const Use &U : V->uses())
    if (U.User != &R)
      return "the matmul's result has a user outside the reduction group";
  if (!V->type().isStatic() || !(V->type() == X->type()))
    return "the matmul's result " + typeToString(V->type()) +
           " is not the normalized value's type " + typeToString(X->type());
  return "";
}

} // namespace

llvm::Expected<bool> NormEpilogueFusion::run(Graph &G, DecisionLog &Log) {
  std::vector<Node *> Reductions;
  for (const auto &N : G.nodes())
    if (isFusedGroup(*N) && groupInfo(*N).Kind == GroupKind::Reduction)
      Reductions.push_back(N.get());
  bool Changed = false;
  for (Node *R : Reductions) {
    std::string Why;
    const Node *Norm = normMember(*R, Why);
    if (!Norm) {
      Log.note(*R, Decision::no("no matmul epilogue: " + Why));
      continue;
    }
    const Value *X = Norm->operand(0);
    if (X->dtype() != DType::F16 && X->dtype() != DType::BF16) {
      Log.note(*R, Decision::no(
                       "no matmul epilogue: " + dtypeName(X->dtype()).str() +
                       " (only f16/bf16 have a generated GEMM to "
                       "run it)"));
      continue;
    }
    bool ElementResults = true;
    for (const Value *Res : R->results())
      ElementResults &= Res && Res->type().Dims == X->type().Dims;
    if (!ElementResults) {
      Log.note(*R, Decision::no("no matmul epilogue: a result is not of the "
                                "normalized value's shape"));
      continue;
    }
    Node *C = nullptr;
    for (const Value *V : R->operands()) {
      Node *P = V ? V->producer() : nullptr;
      if (!P || (isFusedGroup(*P) ? groupInfo(*P).Kind != GroupKind::Contraction
                                  : (P->body() || !matmulAnchor(*P))))
        continue;
      std::string Reason = whyNot(G, *P, *R, V, X);
      if (Reason.empty()) {
        C = P;
        break;
      }
      Why = Reason;
    }
    if (!C) {
      Log.note(*R, Decision::no("no matmul epilogue: " +
                                (Why.empty() ? std::string("no operand comes "
                                                           "from a contraction "
                                                           "group")
                                             : Why)));
      continue;
    }
    int64_t Id = State.takeId();
    Node *Pair[2] = {C, R};
    if (auto Disabled = State.disabledReason(Id, Pair)) {
      Log.note(*R, Decision::no(*Disabled));
      continue;
    }
    GroupInfo RI = groupInfo(*R);
    Decision D = Decision::yes();
    D.Reason = "group " + std::to_string(Id) + " (contraction): " +
               (isFusedGroup(*C) ? "group " + std::to_string(groupInfo(*C).Id)
                                 : memberName(*C)) +
               " and its " + Norm->opName().str() + " group " +
               std::to_string(RI.Id);
    Log.note(*R, D);
    // inlineFusedGroup puts the body's copies where the group was: between
    // its neighbours, which stay.
    std::vector<Node *> Members;
    for (Node *Grp : Pair) {
      if (!isFusedGroup(*Grp)) {
        Members.push_back(Grp);
        continue;
      }
      auto It = G.iteratorOf(Grp);
      Node *Prev = It == G.nodes().begin() ? nullptr : std::prev(It)->get();
      auto NextIt = std::next(It);
      Node *Next = NextIt == G.nodes().end() ? nullptr : NextIt->get();
      if (auto E = inlineFusedGroup(G, Grp))
        return std::move(E);
      for (auto I = Prev ? std::next(G.iteratorOf(Prev)) : G.nodes().begin();
           I != G.nodes().end() && I->get() != Next; ++I)
        Members.push_back(I->get());
    }
    auto Group = outlineFusedGroup(G, Members, GroupKind::Contraction, Id);
    if (!Group)
      return Group.takeError();
    Changed = true;
  }
  return Changed;
}

} // namespace solder
