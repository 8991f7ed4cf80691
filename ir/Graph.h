//===- Graph.h - solder's IR: values, nodes, graphs -------------*- C++ -*-===//
//
// A Graph is a list of Nodes in topological (SSA) order over Values. A Value
// is produced by exactly one of: a node result, a graph input, or a constant
// (an initializer: weights, folded shapes). The Graph owns all its Values and
// Nodes; everything else holds plain pointers into it.
//
// A Node may own a Body graph: a fused group (contraction anchor plus an
// epilogue of elementwise ops, or an elementwise chain) is one node whose body
// is the unfused sub-graph, so every op can run either fused or alone.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_GRAPH_H
#define SOLDER_IR_GRAPH_H

#include "ir/Attribute.h"
#include "ir/OpKind.h"
#include "ir/Tensor.h"
#include "ir/Type.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace solder {

class Graph;
class Node;

struct Use {
  Node *User;
  unsigned OperandIndex;
  bool operator==(const Use &O) const {
    return User == O.User && OperandIndex == O.OperandIndex;
  }
};

class Value {
public:
  const std::string &name() const { return Name; }
  const TensorType &type() const { return Type; }
  DType dtype() const { return Type.Elem; }
  const Shape &shape() const { return Type.Dims; }
  void setType(TensorType T) { Type = std::move(T); }

  /// The node producing this value, or null for inputs and constants.
  Node *producer() const { return Producer; }
  unsigned resultIndex() const { return ResultIndex; }
  bool isGraphInput() const { return IsInput; }
  bool isConstant() const { return Constant != nullptr; }
  /// The data of a constant; null otherwise.
  const Tensor *constant() const { return Constant.get(); }

  llvm::ArrayRef<Use> uses() const {
    return llvm::ArrayRef<Use>(Uses).drop_front(UsesFrom);
  }
  bool hasUses() const { return Uses.size() > UsesFrom; }
  Graph *graph() const { return Parent; }

private:
  friend class Graph;
  friend class Node;
  Value(Graph *Parent, std::string Name, TensorType Type)
      : Parent(Parent), Name(std::move(Name)), Type(std::move(Type)) {}

  Graph *Parent;
  /// Index in the graph's Values, so destroying a value is O(1).
  size_t Slot = 0;
  std::string Name;
  TensorType Type;
  Node *Producer = nullptr;
  unsigned ResultIndex = 0;
  bool IsInput = false;
  std::shared_ptr<const Tensor> Constant;
  /// The uses in order are Uses[UsesFrom..]: removing the first one only
  /// moves UsesFrom (the list is compacted once half of it is gap), so a
  /// pass moving a widely shared constant's users one by one, first to
  /// last, stays linear.
  llvm::SmallVector<Use, 2> Uses;
  unsigned UsesFrom = 0;
};

/// The value of a constant holding exactly one element (any rank), as
/// double; nullopt for anything else (V may be null).
std::optional<double> constScalar(const Value *V);

class Node {
public:
  OpKind kind() const { return Kind; }
  llvm::StringRef opName() const;
  /// The ONNX node name (may be empty); used in messages.
  const std::string &name() const { return Name; }
  void setName(std::string N) { Name = std::move(N); }

  unsigned numOperands() const { return Operands.size(); }
  /// Operand I, or null when that optional operand is absent.
  Value *operand(unsigned I) const {
    return I < Operands.size() ? Operands[I] : nullptr;
  }
  llvm::ArrayRef<Value *> operands() const { return Operands; }
  void setOperand(unsigned I, Value *V);

  unsigned numResults() const { return Results.size(); }
  /// Result I, or null where that optional result is not produced.
  Value *result(unsigned I = 0) const {
    return I < Results.size() ? Results[I] : nullptr;
  }
  llvm::ArrayRef<Value *> results() const { return Results; }

  AttrMap &attrs() { return Attrs; }
  const AttrMap &attrs() const { return Attrs; }

  Graph *graph() const { return Parent; }
  Graph *body() const { return Body.get(); }
  void setBody(std::unique_ptr<Graph> G);

  /// "Conv node 'conv1'" for messages.
  std::string describe() const;

private:
  friend class Graph;
  Node(Graph *Parent, OpKind Kind, std::string Name)
      : Parent(Parent), Kind(Kind), Name(std::move(Name)) {}

  Graph *Parent;
  OpKind Kind;
  std::string Name;
  llvm::SmallVector<Value *, 4> Operands;
  llvm::SmallVector<Value *, 1> Results;
  AttrMap Attrs;
  std::unique_ptr<Graph> Body;
  /// Where the node sits in its graph's list, so finding, erasing and
  /// inserting next to a node are O(1) (std::list keeps it valid while the
  /// node is in the list, splices included).
  std::list<std::unique_ptr<Node>>::iterator Self;
};

class Graph {
public:
  using NodeList = std::list<std::unique_ptr<Node>>;

  explicit Graph(std::string Name = "main") : Name(std::move(Name)) {}
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;
  ~Graph();

  const std::string &name() const { return Name; }
  void setName(std::string N) { Name = std::move(N); }
  /// The ONNX opset the model was imported from (informational).
  int64_t opsetVersion() const { return Opset; }
  void setOpsetVersion(int64_t V) { Opset = V; }

  // --- Building ------------------------------------------------------------
  /// Appends a graph input.
  Value *addInput(llvm::StringRef Name, TensorType Type);
  /// Adds a constant (initializer). The tensor is shared, not copied.
  Value *addConstant(llvm::StringRef Name, Tensor T);
  Value *addConstant(llvm::StringRef Name, std::shared_ptr<const Tensor> T);
  /// Appends a node at the end; results are created with the given names
  /// (an empty name gets a fresh one; a null ResultTypes entry is fine,
  /// shape inference fills types in).
  Node *addNode(OpKind Kind, llvm::ArrayRef<Value *> Operands,
                llvm::ArrayRef<std::string> ResultNames,
                llvm::StringRef NodeName = "");
  /// Same, inserting before Pos.
  Node *insertNode(NodeList::iterator Pos, OpKind Kind,
                   llvm::ArrayRef<Value *> Operands,
                   llvm::ArrayRef<std::string> ResultNames,
                   llvm::StringRef NodeName = "");
  void addOutput(Value *V) { Outputs.push_back(V); }
  void setOutput(unsigned I, Value *V) { Outputs[I] = V; }

  // --- Access --------------------------------------------------------------
  llvm::ArrayRef<Value *> inputs() const { return Inputs; }
  llvm::ArrayRef<Value *> outputs() const { return Outputs; }
  /// Constants in the order they were added.
  llvm::ArrayRef<Value *> constants() const { return Constants; }
  NodeList &nodes() { return Nodes; }
  const NodeList &nodes() const { return Nodes; }
  Value *lookup(llvm::StringRef Name) const;
  /// Where N is in nodes() (O(1)); N must be a node of this graph.
  NodeList::iterator iteratorOf(Node *N);
  bool isOutput(const Value *V) const;

  // --- Rewriting -----------------------------------------------------------
  /// Points every use of From (operands and graph outputs) at To.
  void replaceAllUsesWith(Value *From, Value *To);
  /// Removes a node; its results must be unused (and not graph outputs).
  void eraseNode(Node *N);
  /// Moves the nodes of [Begin, End) into the order of Order, a permutation
  /// of them, keeping every iterator valid (Begin then points wherever its
  /// node went). O(size of the range).
  void reorderNodes(NodeList::iterator Begin, NodeList::iterator End,
                    llvm::ArrayRef<Node *> Order);
  /// Turns V (a node result) into a constant holding T: the producer keeps
  /// its other results; a node left with none is erased by DCE.
  Value *replaceWithConstant(Value *V, Tensor T);
  /// Deletes constants with no uses that are not outputs.
  void removeUnusedConstants();
  /// Renames V; NewName must not be in use.
  void renameValue(Value *V, llvm::StringRef NewName);
  /// A name not yet used in this graph, derived from Base.
  std::string uniqueName(llvm::StringRef Base);

private:
  friend class Node;
  Value *createValue(llvm::StringRef Name, TensorType Type);
  void destroyValue(Value *V);

  std::string Name;
  int64_t Opset = 0;
  std::vector<std::unique_ptr<Value>> Values;
  NodeList Nodes;
  std::vector<Value *> Inputs, Outputs, Constants;
  llvm::StringMap<Value *> ByName;
  unsigned NameCounter = 0;
};

} // namespace solder

#endif
