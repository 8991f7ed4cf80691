//===- Graph.cpp - solder's IR: values, nodes, graphs
//----------------------===//
#include "ir/Graph.h"
#include "ir/OpRegistry.h"
#include <algorithm>
#include <cassert>

namespace solder {

llvm::StringRef Node::opName() const { return solder::opName(Kind); }

void Node::setOperand(unsigned I, Value *V) {
  if (I >= Operands.size())
    Operands.resize(I + 1, nullptr);
  if (Value *Old = Operands[I]) {
    // From both ends at once, keeping the list's order: replaceAllUsesWith
    // moves the last use each time, and a pass that moves a widely shared
    // constant's users into groups one by one removes the first (behind
    // every group's new use at the back); either is found in O(1), where a
    // search from one end made the other quadratic (LargeModel's chain).
    auto &U = Old->Uses;
    const Use Mine{this, I};
    size_t Lo = Old->UsesFrom, Hi = U.size(), At = Hi;
    while (Lo < Hi) {
      if (U[Hi - 1] == Mine) {
        At = Hi - 1;
        break;
      }
      if (U[Lo] == Mine) {
        At = Lo;
        break;
      }
      --Hi;
      ++Lo;
    }
    assert(At < U.size() && "operand missing from its value's use list");
    if (At == Old->UsesFrom) {
      // The first use: leave a gap, compacted once it is half the list
      // (all of it, when that was the last use).
      ++Old->UsesFrom;
      if (2 * size_t(Old->UsesFrom) >= U.size()) {
        U.erase(U.begin(), U.begin() + Old->UsesFrom);
        Old->UsesFrom = 0;
      }
    } else {
      U.erase(U.begin() + At);
    }
  }
  Operands[I] = V;
  if (V)
    V->Uses.push_back(Use{this, I});
}

void Node::setBody(std::unique_ptr<Graph> G) { Body = std::move(G); }

std::string Node::describe() const {
  std::string S = opName().str() + " node";
  if (!Name.empty())
    S += " '" + Name + "'";
  else if (!Results.empty() && Results[0])
    S += " producing '" + Results[0]->name() + "'";
  return S;
}

Graph::~Graph() = default;

Value *Graph::createValue(llvm::StringRef N, TensorType Type) {
  std::string Unique = N.empty() ? uniqueName("v") : N.str();
  assert(!ByName.count(Unique) && "duplicate value name");
  Values.push_back(std::unique_ptr<Value>(new Value(this, Unique, Type)));
  Value *V = Values.back().get();
  V->Slot = Values.size() - 1;
  ByName[Unique] = V;
  return V;
}

void Graph::destroyValue(Value *V) {
  assert(!V->hasUses() && "destroying a value that is still used");
  ByName.erase(V->name());
  // Values is unordered ownership: the last one takes V's slot.
  assert(V->Slot < Values.size() && Values[V->Slot].get() == V);
  size_t Slot = V->Slot;
  if (Slot + 1 != Values.size()) {
    Values[Slot] = std::move(Values.back());
    Values[Slot]->Slot = Slot;
  }
  Values.pop_back();
}

Value *Graph::addInput(llvm::StringRef N, TensorType Type) {
  Value *V = createValue(N, std::move(Type));
  V->IsInput = true;
  Inputs.push_back(V);
  return V;
}

Value *Graph::addConstant(llvm::StringRef N, Tensor T) {
  return addConstant(N, std::make_shared<const Tensor>(std::move(T)));
}

Value *Graph::addConstant(llvm::StringRef N, std::shared_ptr<const Tensor> T) {
  Value *V = createValue(N, T->type());
  V->Constant = std::move(T);
  Constants.push_back(V);
  return V;
}

Node *Graph::addNode(OpKind Kind, llvm::ArrayRef<Value *> Operands,
                     llvm::ArrayRef<std::string> ResultNames,
                     llvm::StringRef NodeName) {
  return insertNode(Nodes.end(), Kind, Operands, ResultNames, NodeName);
}

Node *Graph::insertNode(NodeList::iterator Pos, OpKind Kind,
                        llvm::ArrayRef<Value *> Operands,
                        llvm::ArrayRef<std::string> ResultNames,
                        llvm::StringRef NodeName) {
  auto It = Nodes.insert(
      Pos, std::unique_ptr<Node>(new Node(this, Kind, NodeName.str())));
  Node *N = It->get();
  N->Self = It;
  for (unsigned I = 0; I < Operands.size(); ++I)
    N->setOperand(I, Operands[I]);
  for (unsigned I = 0; I < ResultNames.size(); ++I) {
    Value *R = createValue(ResultNames[I], TensorType());
    R->Producer = N;
    R->ResultIndex = I;
    N->Results.push_back(R);
  }
  return N;
}

Value *Graph::lookup(llvm::StringRef N) const {
  auto It = ByName.find(N);
  return It == ByName.end() ? nullptr : It->second;
}

Graph::NodeList::iterator Graph::iteratorOf(Node *N) {
  assert(N->Parent == this && "node of another graph");
  return N->Self;
}

void Graph::reorderNodes(NodeList::iterator Begin, NodeList::iterator End,
                         llvm::ArrayRef<Node *> Order) {
  assert(size_t(std::distance(Begin, End)) == Order.size() &&
         "Order is not a permutation of the range");
  (void)Begin;
  // Splicing each node, in order, in front of End leaves exactly Order
  // between the range's predecessor and End.
  for (Node *N : Order) {
    assert(N->Parent == this && "node of another graph");
    Nodes.splice(End, Nodes, N->Self);
  }
}

bool Graph::isOutput(const Value *V) const {
  return std::find(Outputs.begin(), Outputs.end(), V) != Outputs.end();
}

void Graph::replaceAllUsesWith(Value *From, Value *To) {
  assert(From != To);
  while (From->hasUses()) {
    Use U = From->Uses.back();
    U.User->setOperand(U.OperandIndex, To);
  }
  for (Value *&O : Outputs)
    if (O == From)
      O = To;
}

void Graph::eraseNode(Node *N) {
  auto It = iteratorOf(N);
  assert(It != Nodes.end() && "node not in this graph");
  for (unsigned I = 0; I < N->numOperands(); ++I)
    N->setOperand(I, nullptr);
  for (Value *R : N->Results) {
    if (!R)
      continue;
    assert(!R->hasUses() && !isOutput(R) && "erasing a node still in use");
    destroyValue(R);
  }
  Nodes.erase(It);
}

Value *Graph::replaceWithConstant(Value *V, Tensor T) {
  std::string Name = V->name();
  // Rename the old value so the constant can take the user-visible name.
  renameValue(V, uniqueName(Name + ".dead"));
  Value *C = addConstant(Name, std::move(T));
  replaceAllUsesWith(V, C);
  return C;
}

void Graph::removeUnusedConstants() {
  std::vector<Value *> Keep;
  for (Value *C : Constants) {
    if (C->hasUses() || isOutput(C))
      Keep.push_back(C);
    else
      destroyValue(C);
  }
  Constants = std::move(Keep);
}

void Graph::renameValue(Value *V, llvm::StringRef NewName) {
  assert(!ByName.count(NewName) && "renaming onto a used name");
  ByName.erase(V->Name);
  V->Name = NewName.str();
  ByName[V->Name] = V;
}

std::string Graph::uniqueName(llvm::StringRef Base) {
  std::string B = Base.empty() ? "v" : Base.str();
  if (!ByName.count(B))
    return B;
  while (true) {
    std::string Cand = B + "." + std::to_string(++NameCounter);
    if (!ByName.count(Cand))
      return Cand;
  }
}

std::optional<double> constScalar(const Value *V) {
  if (!V || !V->isConstant() || V->constant()->numElements() != 1)
    return std::nullopt;
  return V->constant()->getDouble(0);
}

} // namespace solder
