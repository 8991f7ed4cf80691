//===- LoopFusion.cpp - Elementwise chains and row reductions -------------===//
//
// Algorithm. Two greedy phases over the graph in topological order, after
// epilogue-fusion has taken the contractions' chains:
//
//   1. Row reductions. Each reduction R whose reduced axes are the innermost
//      dims of its data operand X anchors a candidate. The prologue grows
//      backwards from X's producer through loop-fusible nodes; the epilogue
//      grows forwards from R's result through single-user elementwise nodes
//      of R's result shape.
//
//          q ─┐                                 ┌────── group (reduction)
//          ─────┐
//             Add ─ Div ─ Softmax ─ Mul ─►  ==  │ Add ─ Div ─ Softmax ─ Mul │─►
//      mask ──┘     prologue  R     epilogue └──────────────────────────────┘
//
//   2. Loop groups. Every loop-fusible node not yet in a group, visited
//      from the last to the first (sinks first), starts a group whose loop
//      domain is its result's shape, and pulls in its producers while they
//      are loop-fusible.
//
// A producer P joins a group only if
//   - every result of P is read only by members, or has the shape the
//     group's outputs must have (the loop domain; for a reduction, X's
//     shape): then it becomes an additional output of the group, so a
//     value is never computed twice (no duplication);
//   - the group with P creates no cycle: no path leaves the group and
//     comes back (checked by a forward walk from the members);
//   - P is not the member of a group the user disabled.
// Groups are formed only with at least two members one of which is not a
// view (views cost nothing alone). Every refused edge is a decision with
// its reason; ids come from the pipeline's FusionState.
//
//===----------------------------------------------------------------------===//
#include "passes/LoopFusion.h"
#include "ir/OpRegistry.h"
#include "llvm/ADT/DenseSet.h"

namespace solder {

namespace {

using NodeSet = llvm::DenseSet<const Node *>;

class Grower {
public:
  Grower(Graph &G, DecisionLog &Log, FusionState &State, NodeSet &Erased)
      : G(G), Log(Log), State(State), Erased(Erased) {}

  /// Pulls the loop-fusible producers of Start's operands (transitively)
  /// into Members. OutShape: the shape a member's result must have to be
  /// used outside the group.
  void growBackward(const Node &Start, const Shape &OutShape,
                    std::vector<Node *> &Order, NodeSet &Members,
                    bool DataOnly = false) {
    std::vector<const Node *> Work = {&Start};
    while (!Work.empty()) {
      const Node *C = Work.back();
      Work.pop_back();
      llvm::ArrayRef<Value *> Ops = C->operands();
      if (DataOnly && C == &Start)
        Ops = Ops.take_front(1);
      for (const Value *O : Ops) {
        Node *P = O ? O->producer() : nullptr;
        if (!P || Members.count(P) || Erased.count(P))
          continue;
        if (auto Why = refuseProducer(*P, OutShape, Members)) {
          Log.note(*P, Decision::no("not fused into " + C->describe() + ": " +
                                    *Why));
          continue;
        }
        Members.insert(P);
        if (wouldCreateCycle(Members)) {
          Members.erase(P);
          Log.note(*P, Decision::no("not fused into " + C->describe() +
                                    ": would create a cycle"));
          continue;
        }
        Order.push_back(P);
        Work.push_back(P);
      }
    }
  }

  /// Forms the group if it is worth it; returns whether it did.
  llvm::Expected<bool> form(std::vector<Node *> &Order, GroupKind Kind,
                            const Node &Anchor) {
    bool AllViews = llvm::all_of(
        Order, [](const Node *N) { return getOpInfo(N->kind()).IsView; });
    if (Order.size() < 2 || AllViews)
      return false;
    int64_t Id = State.takeId();
    if (auto Why = State.disabledReason(Id, Order)) {
      Log.note(Anchor, Decision::no(*Why));
      return false;
    }
    std::string Names;
    for (Node *M : Order)
      Names += (Names.empty() ? "" : ", ") + memberName(*M);
    Decision D = Decision::yes();
    D.Reason = "group " + std::to_string(Id) + " (" +
               groupKindName(Kind).str() + "): " + Names;
    Log.note(Anchor, D);
    for (Node *M : Order)
      Erased.insert(M);
    auto Group = outlineFusedGroup(G, Order, Kind, Id);
    if (!Group)
      return Group.takeError();
    return true;
  }

private:
  std::optional<std::string> refuseProducer(const Node &P, const Shape &Out,
                                            const NodeSet &Members) const {
    if (State.isExcluded(P))
      return std::string("disabled by the user");
    if (!isLoopFusible(P)) {
      FusionKind K = getOpInfo(P.kind()).Fusion;
      if (isFusedGroup(P))
        return std::string("it is already a fused group");
      return P.opName().str() + " (" + fusionKindName(K).str() +
             ") has no fused indexing";
    }
    for (const Value *R : P.results()) {
      if (!R)
        continue;
      bool Outside = G.isOutput(R) || llvm::any_of(R->uses(), [&](Use U) {
                       return !Members.count(U.User);
                     });
      if (Outside && R->shape() != Out)
        return "'" + R->name() + "' has a user outside the group and shape " +
               typeToString(R->type()) + " differs from the group's";
    }
    return std::nullopt;
  }

  Graph &G;
  DecisionLog &Log;
  FusionState &State;
  NodeSet &Erased;
};

} // namespace

llvm::Expected<bool> LoopFusion::run(Graph &G, DecisionLog &Log) {
  bool Changed = false;
  NodeSet Erased;
  Grower Grow(G, Log, State, Erased);

  // 1. Row reductions with prologue and epilogue.
  std::vector<Node *> Reductions;
  for (auto &N : G.nodes())
    if (getOpInfo(N->kind()).Fusion == FusionKind::Reduction)
      Reductions.push_back(N.get());
  for (Node *R : Reductions) {
    if (Erased.count(R))
      continue;
    auto Mask = rowReductionAxes(*R);
    if (!Mask) {
      Log.note(*R, Decision::no(
                       hasFusedRowKernel(R->kind())
                           ? R->opName().str() +
                                 ": axes not constant, or its input's shape "
                                 "not static"
                           : R->opName().str() +
                                 " has no fused row kernel: it runs as its "
                                 "own kernel"));
      continue;
    }
    if (!reducesInnermostDims(*Mask)) {
      Log.note(*R, Decision::no("reduction axis not innermost"));
      continue;
    }
    if (State.isExcluded(*R)) {
      Log.note(*R, Decision::no("disabled by the user"));
      continue;
    }
    const Value *X = R->operand(0);
    std::vector<Node *> Order = {R};
    NodeSet Members = {R};
    // Prologue: producers of the data operand only (scale and bias operands
    // are read as they are).
    Grow.growBackward(*R, X->shape(), Order, Members, /*DataOnly=*/true);
    // Epilogue: single-user elementwise consumers of R's result(0).
    const Value *V = R->result(0);
    while (V && V->uses().size() == 1 && !G.isOutput(V)) {
      Node *U = V->uses()[0].User;
      FusionKind K = getOpInfo(U->kind()).Fusion;
      std::string Why;
      if (State.isExcluded(*U))
        Why = "disabled by the user";
      else if (K != FusionKind::Elementwise && K != FusionKind::Broadcast)
        Why = U->opName().str() + " is not elementwise";
      else if (U->numResults() != 1 || !isLoopFusible(*U))
        Why = U->opName().str() + " cannot be computed in the row kernel";
      else if (U->result(0)->shape() != V->shape())
        Why = "it broadcasts the reduction's result to a larger shape";
      if (Why.empty()) {
        Members.insert(U);
        if (wouldCreateCycle(Members)) {
          Members.erase(U);
          Why = "would create a cycle";
        }
      }
      if (!Why.empty()) {
        Log.note(*U,
                 Decision::no("not fused after " + R->describe() + ": " + Why));
        break;
      }
      Order.push_back(U);
      V = U->result(0);
    }
    auto Formed = Grow.form(Order, GroupKind::Reduction, *R);
    if (!Formed)
      return Formed.takeError();
    Changed |= *Formed;
  }

  // 2. Loop groups, sinks first.
  std::vector<Node *> Sinks;
  for (auto &N : G.nodes())
    Sinks.push_back(N.get());
  for (auto It = Sinks.rbegin(); It != Sinks.rend(); ++It) {
    Node *N = *It;
    if (Erased.count(N) || !isLoopFusible(*N) || State.isExcluded(*N))
      continue;
    const Value *Y = N->result(0);
    if (!Y || llvm::any_of(N->results(), [&](const Value *R) {
          return R && R->shape() != Y->shape();
        }))
      continue;
    std::vector<Node *> Order = {N};
    NodeSet Members = {N};
    Grow.growBackward(*N, Y->shape(), Order, Members);
    auto Formed = Grow.form(Order, GroupKind::Loop, *N);
    if (!Formed)
      return Formed.takeError();
    Changed |= *Formed;
  }
  return Changed;
}

} // namespace solder
