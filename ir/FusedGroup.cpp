//===- FusedGroup.cpp - Outlining and inlining fused groups ---------------===//
#include "ir/FusedGroup.h"
#include "ir/OpRegistry.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include <algorithm>
#include <cassert>

namespace solder {

/// Integer constants up to this many elements are cloned into bodies.
constexpr int64_t MaxClonedIndexConstant = 64;

llvm::StringRef groupKindName(GroupKind K) {
  switch (K) {
  case GroupKind::Contraction:
    return "contraction";
  case GroupKind::Loop:
    return "loop";
  case GroupKind::Reduction:
    return "reduction";
  }
  return "?";
}

std::optional<GroupKind> parseGroupKind(llvm::StringRef S) {
  for (GroupKind K :
       {GroupKind::Contraction, GroupKind::Loop, GroupKind::Reduction})
    if (S == groupKindName(K))
      return K;
  return std::nullopt;
}

bool isFusedGroup(const Node &N) { return N.kind() == OpKind::FusedGroup; }

GroupInfo groupInfo(const Node &N) {
  GroupInfo I;
  I.Id = N.attrs().getInt("id", -1);
  I.Kind = parseGroupKind(N.attrs().getString("kind", "loop"))
               .value_or(GroupKind::Loop);
  if (const Attribute *A = N.attrs().find("members"))
    if (A->kind() == AttrKind::Strings)
      I.Members = A->getStrings();
  return I;
}

std::string memberName(const Node &N) {
  return N.name().empty() ? N.describe() : N.name();
}

/// Constants copied into a body rather than passed: scalars (baked into
/// generated code) and small integer tensors (shapes, axes, slice bounds:
/// shape inference and code generation need their values).
static bool isClonedConstant(const Value &V) {
  const Tensor *T = V.constant();
  if (!T)
    return false;
  return T->numElements() <= 1 ||
         (isInteger(T->dtype()) && T->numElements() <= MaxClonedIndexConstant);
}

/// Copies N into G with its operands mapped through Map; its results get
/// their old names and types and are added to Map.
static Node *cloneInto(Graph &G, const Node &N,
                       llvm::DenseMap<const Value *, Value *> &Map) {
  llvm::SmallVector<Value *, 4> Ops;
  for (Value *O : N.operands())
    Ops.push_back(O ? Map.lookup(O) : nullptr);
  std::vector<std::string> Names;
  for (Value *R : N.results())
    Names.push_back(R ? R->name() : "");
  Node *C = G.addNode(N.kind(), Ops, Names, N.name());
  C->attrs() = N.attrs();
  for (unsigned I = 0; I < N.numResults(); ++I) {
    Value *R = N.result(I);
    if (!R)
      continue;
    C->result(I)->setType(R->type());
    Map[R] = C->result(I);
  }
  return C;
}

static llvm::Error sortNodeRange(Graph &G, Graph::NodeList::iterator Begin,
                                 Graph::NodeList::iterator End);

llvm::Expected<Node *> outlineFusedGroup(Graph &G,
                                         llvm::ArrayRef<Node *> MemberList,
                                         GroupKind Kind, int64_t Id) {
  llvm::DenseSet<const Node *> InGroup(MemberList.begin(), MemberList.end());
  if (InGroup.empty())
    return makeError("fused group " + llvm::Twine(Id) + " has no members");
  for (const Node *M : MemberList)
    if (M->graph() != &G)
      return makeError("fused group " + llvm::Twine(Id) +
                       ": a member is not a node of the graph");
  // Members in graph order. Only the span from the first member to the
  // last is walked (outward from one member), never the whole graph: a
  // model has as many groups as it has nodes, give or take.
  Graph::NodeList &Nodes = G.nodes();
  auto First = G.iteratorOf(MemberList.front()), Last = First;
  for (size_t Seen = 1; Seen < InGroup.size();) {
    bool Moved = false;
    if (First != Nodes.begin()) {
      Seen += InGroup.count((--First)->get());
      Moved = true;
    }
    if (Seen < InGroup.size() && std::next(Last) != Nodes.end()) {
      Seen += InGroup.count((++Last)->get());
      Moved = true;
    }
    assert(Moved && "members are nodes of G");
    (void)Moved;
  }
  while (!InGroup.count(First->get()))
    ++First;
  while (!InGroup.count(Last->get()))
    --Last;
  std::vector<Node *> Members;
  for (auto It = First;; ++It) {
    if (InGroup.count(It->get()))
      Members.push_back(It->get());
    if (It == Last)
      break;
  }
  // The node before the first member stays; the nodes from it to the
  // group are all that re-sorting can move.
  auto Before = First == Nodes.begin() ? Nodes.end() : std::prev(First);
  for (Node *M : Members)
    if (M->body())
      return makeError(M->describe() + ": a fused group cannot nest");

  // Operands (first use order) and results (member order).
  llvm::SetVector<Value *> Operands;
  std::vector<Value *> ScalarConstants, Results;
  for (Node *M : Members)
    for (Value *O : M->operands()) {
      if (!O || (O->producer() && InGroup.count(O->producer())))
        continue;
      if (isClonedConstant(*O)) {
        if (!llvm::is_contained(ScalarConstants, O))
          ScalarConstants.push_back(O);
        continue;
      }
      Operands.insert(O);
    }
  for (Node *M : Members)
    for (Value *R : M->results()) {
      if (!R)
        continue;
      bool Outside = G.isOutput(R) || llvm::any_of(R->uses(), [&](Use U) {
                       return !InGroup.count(U.User);
                     });
      if (Outside)
        Results.push_back(R);
    }
  if (Results.empty())
    return makeError("fused group " + llvm::Twine(Id) +
                     ": no member result is used outside the group");

  // The body.
  auto Body = std::make_unique<Graph>("g" + std::to_string(Id));
  Body->setOpsetVersion(G.opsetVersion());
  llvm::DenseMap<const Value *, Value *> Map;
  for (Value *O : Operands)
    Map[O] = Body->addInput(O->name(), O->type());
  for (Value *C : ScalarConstants)
    Map[C] = Body->addConstant(C->name(), *C->constant());
  std::vector<std::string> MemberNames;
  for (Node *M : Members) {
    cloneInto(*Body, *M, Map);
    MemberNames.push_back(memberName(*M));
  }
  for (Value *R : Results)
    Body->addOutput(Map.lookup(R));

  // The group node, after the last member; results renamed into place once
  // the members are gone.
  std::vector<std::string> Fresh;
  for (Value *R : Results)
    Fresh.push_back(G.uniqueName(R->name() + ".fused"));
  auto Pos = std::next(G.iteratorOf(Members.back()));
  Node *Group = G.insertNode(
      Pos, OpKind::FusedGroup,
      llvm::SmallVector<Value *, 8>(Operands.begin(), Operands.end()), Fresh,
      "");
  Group->attrs().set("id", Id);
  Group->attrs().set("kind", groupKindName(Kind).str());
  Group->attrs().set("members", MemberNames);
  std::vector<std::string> OldNames;
  for (unsigned I = 0; I < Results.size(); ++I) {
    Group->result(I)->setType(Results[I]->type());
    OldNames.push_back(Results[I]->name());
    G.replaceAllUsesWith(Results[I], Group->result(I));
  }
  Group->setBody(std::move(Body));
  for (auto It = Members.rbegin(); It != Members.rend(); ++It)
    G.eraseNode(*It);
  for (unsigned I = 0; I < Results.size(); ++I)
    G.renameValue(Group->result(I), OldNames[I]);
  // Non-members between the first and the last member that use a group
  // result must now come after the group; nothing outside that span moves
  // (the graph was sorted), so sorting the span is sorting the graph.
  auto SpanBegin = Before == Nodes.end() ? Nodes.begin() : std::next(Before);
  if (llvm::Error E =
          sortNodeRange(G, SpanBegin, std::next(G.iteratorOf(Group))))
    return std::move(E);
  return Group;
}

llvm::Error inlineFusedGroup(Graph &G, Node *Group) {
  Graph *Body = Group->body();
  if (!isFusedGroup(*Group) || !Body)
    return makeError(Group->describe() + ": not a fused group");
  llvm::DenseMap<const Value *, Value *> Map;
  for (unsigned I = 0; I < Body->inputs().size(); ++I)
    Map[Body->inputs()[I]] = Group->operand(I);
  for (Value *C : Body->constants())
    Map[C] = G.addConstant(G.uniqueName(C->name()), *C->constant());
  // Clone body nodes in front of the group under fresh names; the group's
  // results then take their names back.
  auto Pos = G.iteratorOf(Group);
  for (auto &N : Body->nodes()) {
    llvm::SmallVector<Value *, 4> Ops;
    for (Value *O : N->operands())
      Ops.push_back(O ? Map.lookup(O) : nullptr);
    std::vector<std::string> Names;
    for (Value *R : N->results())
      Names.push_back(R ? G.uniqueName(R->name() + ".inl") : "");
    Node *C = G.insertNode(Pos, N->kind(), Ops, Names, N->name());
    C->attrs() = N->attrs();
    for (unsigned I = 0; I < N->numResults(); ++I)
      if (Value *R = N->result(I)) {
        C->result(I)->setType(R->type());
        Map[R] = C->result(I);
      }
  }
  std::vector<std::pair<Value *, std::string>> Renames;
  for (unsigned I = 0; I < Group->numResults(); ++I) {
    Value *R = Group->result(I);
    Value *New = Map.lookup(Body->outputs()[I]);
    Renames.push_back({New, R->name()});
    G.replaceAllUsesWith(R, New);
  }
  // Intermediates take their body names back where those are free.
  for (auto &N : Body->nodes())
    for (Value *R : N->results())
      if (R)
        Renames.push_back({Map.lookup(R), R->name()});
  G.eraseNode(Group);
  for (auto &[V, Name] : Renames)
    if (V->name() != Name && !G.lookup(Name))
      G.renameValue(V, Name);
  return llvm::Error::success();
}

/// Sorts [Begin, End) of G's nodes topologically, keeping the current order
/// where it already is one. Producers outside the range count as placed:
/// the caller knows they come before it.
static llvm::Error sortNodeRange(Graph &G, Graph::NodeList::iterator Begin,
                                 Graph::NodeList::iterator End) {
  // 0 = not visited, 1 = on the stack, 2 = placed; only range nodes are
  // keys, all inserted first (so references into the map stay valid).
  llvm::DenseMap<const Node *, int> State;
  std::vector<Node *> Range;
  for (auto It = Begin; It != End; ++It) {
    Range.push_back(It->get());
    State[It->get()] = 0;
  }
  std::vector<Node *> Order;
  Order.reserve(Range.size());
  std::vector<std::pair<Node *, unsigned>> Stack;
  for (Node *Start : Range) {
    if (State[Start])
      continue;
    Stack.push_back({Start, 0});
    State[Start] = 1;
    while (!Stack.empty()) {
      auto &[N, Next] = Stack.back();
      if (Next < N->numOperands()) {
        Value *O = N->operand(Next++);
        Node *P = O ? O->producer() : nullptr;
        auto It = P ? State.find(P) : State.end();
        if (It == State.end())
          continue;
        if (It->second == 1)
          return makeError("cycle through " + P->describe());
        if (It->second == 0) {
          It->second = 1;
          Stack.push_back({P, 0});
        }
        continue;
      }
      State[N] = 2;
      Order.push_back(N);
      Stack.pop_back();
    }
  }
  G.reorderNodes(Begin, End, Order);
  return llvm::Error::success();
}

llvm::Error sortTopologically(Graph &G) {
  return sortNodeRange(G, G.nodes().begin(), G.nodes().end());
}

} // namespace solder
