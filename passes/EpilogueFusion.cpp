//===- EpilogueFusion.cpp - Contractions absorb their epilogue ------------===//
#include "passes/EpilogueFusion.h"
#include "ir/OpRegistry.h"
#include "ir/StridedView.h"
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

/// When V has several users that meet again in one node, as in SiLU
/// exported as x * sigmoid(x):
///
///      V -------------+
///      |              |
///   Sigmoid(V) --> Mul(V, s)        (the join)
///
/// the nodes from V's users up to and including that join, producers
/// first; empty when they do not meet within a few single-use links, or a
/// node on the way cannot extend the chain (Why says which). Every use of
/// V and of the values on the way is then inside the group, so outlining
/// it cannot create a cycle.
std::vector<Node *> reconvergingUsers(const Graph &G, const FusionState &State,
                                      const Value *V, std::string &Why) {
  constexpr unsigned MaxLinks = 8;
  if (G.isOutput(V))
    return {};
  std::vector<Node *> Users;
  for (const Use &U : V->uses())
    if (!llvm::is_contained(Users, U.User))
      Users.push_back(U.User);
  if (Users.size() < 2 || Users.size() > 4)
    return {};
  // Each user's walk along single-use links.
  std::vector<std::vector<Node *>> Walks;
  for (Node *U : Users) {
    std::vector<Node *> Walk = {U};
    while (Walk.size() < MaxLinks && Walk.back()->numResults() == 1)
      if (Node *Next = soleUser(G, Walk.back()->result(0)))
        Walk.push_back(Next);
      else
        break;
    Walks.push_back(std::move(Walk));
  }
  // The join: the first node of the first walk that every walk reaches.
  Node *Join = nullptr;
  for (Node *N : Walks.front())
    if (llvm::all_of(Walks, [&](const std::vector<Node *> &W) {
          return llvm::is_contained(W, N);
        })) {
      Join = N;
      break;
    }
  if (!Join)
    return {};
  std::vector<Node *> Members;
  for (const std::vector<Node *> &W : Walks)
    for (Node *N : W) {
      if (N == Join)
        break;
      if (!llvm::is_contained(Members, N))
        Members.push_back(N);
    }
  Members.push_back(Join);
  for (Node *N : Members)
    if (auto Reason = cannotExtend(State, *N, V)) {
      Why = *Reason;
      return {};
    }
  return Members;
}

/// The layout ops a matmul operand X is read through: the longest chain
/// of single-use strided-view ops ending in X that forms a view of its
/// source (outermost first).
std::vector<Node *> operandLayoutChain(const Graph &G, const FusionState &State,
                                       const Value *X) {
  std::vector<Node *> Chain;
  for (const Value *V = X; Chain.size() < 8;) {
    Node *P = V->producer();
    if (!P || !isStridedViewOp(*P) || State.isExcluded(*P) ||
        !hasSingleUse(G, V))
      break;
    Chain.insert(Chain.begin(), P);
    V = P->operand(0);
  }
  // Drop outer ops until the rest composes into one view.
  for (size_t Start = 0; Start < Chain.size(); ++Start) {
    llvm::ArrayRef<Node *> Rest = llvm::makeArrayRef(Chain).drop_front(Start);
    if (viewReadThrough(Rest.front()->operand(0)->type().staticDims(), Rest))
      return Rest.vec();
  }
  return {};
}

/// The layout ops after V that a matmul can write through (a Transpose
/// and Reshape merging attention heads), each the single user of the last.
std::vector<Node *> resultLayoutChain(const Graph &G, const FusionState &State,
                                      const Value *V) {
  std::vector<Node *> Chain;
  while (Chain.size() < 8) {
    Node *U = soleUser(G, V);
    if (!U || !isStridedViewOp(*U) || U->kind() == OpKind::Slice ||
        State.isExcluded(*U) || U->operand(0) != V)
      break;
    Chain.push_back(U);
    V = U->result(0);
  }
  return Chain;
}

/// The view of a matmul operand read through Chain (or directly).
std::optional<StridedView> readView(const Value *X,
                                    llvm::ArrayRef<Node *> Chain) {
  const Value *Src = Chain.empty() ? X : Chain.front()->operand(0);
  return viewReadThrough(Src->type().staticDims(), Chain);
}

/// Whether the matmul Anchor can read its operands through Pro[0], Pro[1]
/// and write through Res: cuBLASLt takes the views, and needs pointer
/// arrays only when the epilogue is a plain scale (all it supports then).
bool layoutsExpressible(const Node &Anchor, const Value *Result,
                        llvm::ArrayRef<Node *> Pro0,
                        llvm::ArrayRef<Node *> Pro1, llvm::ArrayRef<Node *> Res,
                        bool ScaleOnly) {
  auto A = readView(Anchor.operand(0), Pro0);
  auto B = readView(Anchor.operand(1), Pro1);
  const Value *Last = Res.empty() ? Result : Res.back()->result(0);
  auto D = viewWrittenThrough(Last->type().staticDims(), Res);
  if (!A || !B || !D)
    return false;
  auto Geo = matmulGeometry(*A, *B, *D);
  return Geo && (!Geo->pointerArrays() || ScaleOnly);
}

bool isScale(const Node &N) {
  if (N.kind() != OpKind::Mul && N.kind() != OpKind::Div)
    return false;
  return constScalar(N.operand(1)).has_value() ||
         (N.kind() == OpKind::Mul && constScalar(N.operand(0)).has_value());
}

/// Whether a node of Nodes (V's users and what they feed) reads a value
/// that is neither V, a constant, nor computed by Nodes: a residual, which
/// a row reduction downstream would rather take as its prologue.
bool readsOutside(llvm::ArrayRef<Node *> Nodes, const Value *V) {
  return llvm::any_of(Nodes, [&](const Node *N) {
    return llvm::any_of(N->operands(), [&](const Value *O) {
      return O && O != V && !O->isConstant() &&
             !llvm::is_contained(Nodes, O->producer());
    });
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
      if (!U && V->uses().size() > 1) {
        std::string Why;
        std::vector<Node *> Diamond = reconvergingUsers(G, State, V, Why);
        if (Diamond.empty()) {
          Stop = "'" + V->name() + "' has a second user" +
                 (Why.empty() ? std::string(" outside the chain") : ": " + Why);
          break;
        }
        const Value *Joined = Diamond.back()->result(0);
        if (readsOutside(Diamond, V) && flowsIntoReduction(G, Joined)) {
          Stop = Diamond.back()->describe() +
                 " is left to the row reduction it flows into";
          break;
        }
        Chain.insert(Chain.end(), Diamond.begin(), Diamond.end());
        V = Joined;
        continue;
      }
      if (!U) {
        Stop = V->hasUses() ? "'" + V->name() + "' has a second user"
                            : "'" + V->name() + "' is a graph output";
        break;
      }
      if (auto Why = cannotExtend(State, *U, V)) {
        Stop = *Why;
        break;
      }
      if (readsOutside(U, V) && flowsIntoReduction(G, V)) {
        Stop = U->describe() + " is left to the row reduction it flows into";
        break;
      }
      Chain.push_back(U);
      V = U->result(0);
    }
    // A matmul reads operands and writes its result through layout ops
    // where cuBLASLt can take the strided views (attention's head split
    // and merge), so those never become copies.
    std::vector<Node *> Pro0, Pro1, Res;
    std::string Layouts;
    if (A->kind() == OpKind::MatMul && A->operand(0)->type().rank() >= 2 &&
        A->operand(1)->type().rank() >= 2) {
      bool ScaleOnly = std::all_of(Chain.begin() + 1, Chain.end(),
                                   [](Node *N) { return isScale(*N); });
      Pro0 = operandLayoutChain(G, State, A->operand(0));
      Pro1 = A->operand(1) == A->operand(0)
                 ? std::vector<Node *>()
                 : operandLayoutChain(G, State, A->operand(1));
      if (ScaleOnly)
        Res = resultLayoutChain(G, State, V);
      const Value *R = Chain.back()->result(0);
      // Fall back from all layouts to operands only, result only, none.
      if (!layoutsExpressible(*A, R, Pro0, Pro1, Res, ScaleOnly)) {
        if (layoutsExpressible(*A, R, Pro0, Pro1, {}, ScaleOnly)) {
          Res.clear();
        } else if (layoutsExpressible(*A, R, {}, {}, Res, ScaleOnly)) {
          Pro0.clear();
          Pro1.clear();
        } else {
          Pro0.clear();
          Pro1.clear();
          Res.clear();
        }
      }
      for (auto *L : {&Pro0, &Pro1, &Res})
        for (Node *N : *L)
          Layouts += (Layouts.empty() ? "" : ", ") + memberName(*N);
    }
    if (Chain.size() == 1 && Pro0.empty() && Pro1.empty() && Res.empty()) {
      Log.note(*A, Decision::no("no epilogue to fuse: " + Stop));
      continue;
    }
    Chain.insert(Chain.begin(), Pro1.begin(), Pro1.end());
    Chain.insert(Chain.begin(), Pro0.begin(), Pro0.end());
    Chain.insert(Chain.end(), Res.begin(), Res.end());
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
    if (!Layouts.empty())
      D.Reason +=
          "; the matmul reads/writes through " + Layouts + " as strided views";
    Log.note(*A, D);
    auto Group = outlineFusedGroup(G, Chain, GroupKind::Contraction, Id);
    if (!Group)
      return Group.takeError();
    Changed = true;
  }
  return Changed;
}

} // namespace solder
