//===- Verifier.cpp - Structural checks of solder's IR
//---------------------===//
//
// Walks the graph once in list order, tracking which values are defined so
// far; that single walk gives SSA order and the absence of cycles. Type
// checks re-run each node's shape inference in place and restore the old
// result types afterwards, so verifying never changes the graph.
//
//===----------------------------------------------------------------------===//
#include "ir/Verifier.h"
#include "ir/FusedGroup.h"
#include "ir/OpRegistry.h"
#include "ir/Printer.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>

namespace solder {
namespace {

class Verifier {
public:
  explicit Verifier(std::vector<std::string> &Errors, std::string Prefix)
      : Errors(Errors), Prefix(std::move(Prefix)) {}

  void run(const Graph &G);

private:
  void fail(const llvm::Twine &Msg) { Errors.push_back(Prefix + Msg.str()); }
  static std::string ref(const Value *V) {
    std::string S;
    llvm::raw_string_ostream OS(S);
    printValueName(OS, V->name());
    return OS.str();
  }

  /// Checks name uniqueness, ownership and the element type of a value
  /// defined in G; What says how it is defined ("input", "result 1 of ...").
  void checkDefinition(const Graph &G, const Value *V, const llvm::Twine &What);
  /// Checks the use list of V against the operands of G's nodes.
  void checkUses(const Value *V);
  void checkNode(const Graph &G, const Node &N);
  void checkInferredTypes(const Node &N);
  void checkFusedGroup(const Node &N, const std::string &D);

  std::vector<std::string> &Errors;
  std::string Prefix;
  llvm::DenseSet<const Value *> Defined;
  llvm::DenseSet<const Node *> Nodes;
  llvm::StringMap<const Value *> Names;
};

void Verifier::checkDefinition(const Graph &G, const Value *V,
                               const llvm::Twine &What) {
  if (V->graph() != &G)
    fail(What + " " + ref(V) + " belongs to another graph");
  if (!Names.try_emplace(V->name(), V).second)
    fail("duplicate value name " + ref(V) + " (" + What + ")");
  else if (G.lookup(V->name()) != V)
    fail(What + " " + ref(V) + " is not registered under its name");
  if (V->dtype() == DType::Undefined)
    fail(What + " " + ref(V) + " has no element type");
  Defined.insert(V);
}

void Verifier::checkUses(const Value *V) {
  llvm::ArrayRef<Use> Uses = V->uses();
  // Seen uses in a set: a constant shared by many nodes (a model's bias
  // in every layer) made the pairwise check quadratic.
  llvm::DenseSet<std::pair<const Node *, unsigned>> Seen;
  for (size_t I = 0; I < Uses.size(); ++I) {
    const Use &U = Uses[I];
    if (!U.User || !Nodes.count(U.User)) {
      fail("value " + ref(V) + " has a use by a node outside this graph");
      continue;
    }
    if (U.User->operand(U.OperandIndex) != V)
      fail("value " + ref(V) + " lists a use as operand " +
           llvm::Twine(U.OperandIndex) + " of " + U.User->describe() +
           ", which is not that value");
    if (!Seen.insert({U.User, U.OperandIndex}).second)
      fail("value " + ref(V) + " lists operand " + llvm::Twine(U.OperandIndex) +
           " of " + U.User->describe() + " twice in its uses");
  }
}

void Verifier::checkNode(const Graph &G, const Node &N) {
  std::string D = N.describe();
  bool Structural = true; // operands and results usable by inference
  if (N.graph() != &G) {
    fail(D + " belongs to another graph");
    Structural = false;
  }
  const OpInfo &Info = getOpInfo(N.kind());

  // Operands.
  unsigned NumOps = N.numOperands();
  if (NumOps < Info.MinOperands ||
      (Info.MaxOperands != VariadicCount && NumOps > Info.MaxOperands)) {
    std::string Range = Info.MaxOperands == VariadicCount
                            ? "at least " + std::to_string(Info.MinOperands)
                        : Info.MinOperands == Info.MaxOperands
                            ? std::to_string(Info.MinOperands)
                            : std::to_string(Info.MinOperands) + " to " +
                                  std::to_string(Info.MaxOperands);
    fail(D + ": has " + llvm::Twine(NumOps) + " operands, " + Info.Name +
         " takes " + Range);
    Structural = false;
  }
  for (unsigned I = 0; I < NumOps; ++I) {
    const Value *V = N.operand(I);
    if (!V) {
      if (I < Info.MinOperands) {
        fail(D + ": required operand " + llvm::Twine(I) + " is missing");
        Structural = false;
      }
      continue;
    }
    if (V->graph() != &G) {
      fail(D + ": operand " + llvm::Twine(I) + " (" + ref(V) +
           ") belongs to another graph");
      Structural = false;
      continue;
    }
    if (!Defined.count(V)) {
      fail(D + ": operand " + llvm::Twine(I) + " uses " + ref(V) +
           " before its definition");
      Structural = false;
    }
    if (V->dtype() == DType::Undefined)
      Structural = false; // reported at its definition
    unsigned Matching = std::count(V->uses().begin(), V->uses().end(),
                                   Use{const_cast<Node *>(&N), I});
    if (Matching != 1)
      fail(D + ": operand " + llvm::Twine(I) + " (" + ref(V) + ") has " +
           llvm::Twine(Matching) + " matching entries in its use list");
  }

  // Attributes.
  for (const auto &E : N.attrs()) {
    const AttrSpec *Spec = findAttrSpec(Info, E.first);
    if (!Spec)
      fail(D + ": unknown attribute '" + E.first + "' for " + Info.Name);
    else if (Spec->Kind != E.second.kind())
      fail(D + ": attribute '" + E.first + "' is " +
           attrKindName(E.second.kind()) + " but " + Info.Name + " expects " +
           attrKindName(Spec->Kind));
  }

  // Results.
  unsigned NumRes = N.numResults();
  if (NumRes < Info.MinResults ||
      (Info.MaxResults != VariadicCount && NumRes > Info.MaxResults)) {
    fail(D + ": has " + llvm::Twine(NumRes) + " results, " + Info.Name +
         " produces " + llvm::Twine(Info.MinResults) +
         (Info.MaxResults == VariadicCount
              ? std::string(" or more")
              : " to " + std::to_string(Info.MaxResults)));
    Structural = false;
  }
  for (unsigned I = 0; I < NumRes; ++I) {
    const Value *R = N.result(I);
    if (!R) {
      if (I < Info.MinResults) {
        fail(D + ": required result " + llvm::Twine(I) + " is absent");
        Structural = false;
      }
      continue;
    }
    if (R->producer() != &N || R->resultIndex() != I)
      fail(D + ": result " + llvm::Twine(I) + " (" + ref(R) +
           ") does not point back to its producer");
    if (R->isGraphInput() || R->isConstant())
      fail(D + ": result " + llvm::Twine(I) + " (" + ref(R) +
           ") is also an input or a constant");
    if (R->dtype() == DType::Undefined)
      Structural = false;
    checkDefinition(G, R, "result " + llvm::Twine(I) + " of " + D);
  }

  if (Structural)
    checkInferredTypes(N);

  if (N.kind() == OpKind::FusedGroup)
    checkFusedGroup(N, D);
  else if (N.body())
    fail(D + ": only FusedGroup nodes have a body");
  if (const Graph *Body = N.body()) {
    Verifier Sub(Errors, Prefix + "in the body of " + D + ": ");
    Sub.run(*Body);
  }
}

void Verifier::checkFusedGroup(const Node &N, const std::string &D) {
  const Graph *Body = N.body();
  if (!Body) {
    fail(D + ": has no body");
    return;
  }
  // Operand/result counts and types against the body are checked by shape
  // inference (checkInferredTypes); here the rest of the contract.
  if (!parseGroupKind(N.attrs().getString("kind", "")))
    fail(D + ": kind must be contraction, loop or reduction");
  if (N.attrs().getInt("id", -1) < 0)
    fail(D + ": has no id");
  for (const auto &M : Body->nodes())
    if (M->kind() == OpKind::FusedGroup || M->body())
      fail(D + ": body holds " + M->describe() + " (groups do not nest)");
  for (const Value *V : Body->outputs())
    if (V->isGraphInput())
      fail(D + ": body output '" + V->name() + "' is a body input");
}

void Verifier::checkInferredTypes(const Node &N) {
  // Inference writes result types in place; verifying must not change the
  // graph, so the old types are put back whatever inference did.
  Node &M = const_cast<Node &>(N);
  llvm::SmallVector<TensorType, 2> Saved;
  for (const Value *R : N.results())
    Saved.push_back(R ? R->type() : TensorType());
  llvm::Error E = inferNodeTypes(M);
  llvm::SmallVector<TensorType, 2> Inferred;
  for (unsigned I = 0; I < N.numResults(); ++I) {
    Value *R = N.result(I);
    Inferred.push_back(R ? R->type() : TensorType());
    if (R)
      R->setType(Saved[I]);
  }
  if (E) {
    fail("shape inference fails: " + llvm::toString(std::move(E)));
    return;
  }
  for (unsigned I = 0; I < N.numResults(); ++I) {
    if (!N.result(I) || Saved[I] == Inferred[I])
      continue;
    fail(N.describe() + ": result " + llvm::Twine(I) + " has type " +
         typeToString(Saved[I]) + " but inference gives " +
         typeToString(Inferred[I]));
  }
}

void Verifier::run(const Graph &G) {
  for (const auto &N : G.nodes())
    Nodes.insert(N.get());

  for (const Value *V : G.inputs()) {
    if (!V->isGraphInput() || V->producer() || V->isConstant())
      fail("input " + ref(V) + " is not marked as a plain graph input");
    checkDefinition(G, V, "input");
  }
  for (const Value *V : G.constants()) {
    const Tensor *T = V->constant();
    if (!T || T->isNull()) {
      fail("constant " + ref(V) + " has no data");
    } else if (T->type() != V->type()) {
      fail("constant " + ref(V) + " has type " + typeToString(V->type()) +
           " but its data is " + typeToString(T->type()));
    }
    if (V->producer() || V->isGraphInput())
      fail("constant " + ref(V) + " is also an input or a node result");
    checkDefinition(G, V, "constant");
  }
  for (const auto &N : G.nodes())
    checkNode(G, *N);

  for (const Value *V : G.inputs())
    checkUses(V);
  for (const Value *V : G.constants())
    checkUses(V);
  for (const auto &N : G.nodes())
    for (const Value *R : N->results())
      if (R)
        checkUses(R);

  for (size_t I = 0; I < G.outputs().size(); ++I) {
    const Value *V = G.outputs()[I];
    if (!V)
      fail("output " + llvm::Twine(I) + " is null");
    else if (V->graph() != &G || !Defined.count(V))
      fail("output " + llvm::Twine(I) + " (" + ref(V) +
           ") is not defined in this graph");
  }
}

} // namespace

llvm::Error verifyGraph(const Graph &G) {
  std::vector<std::string> Errors;
  Verifier(Errors, "").run(G);
  if (Errors.empty())
    return llvm::Error::success();
  std::string Msg = "invalid graph \"" + G.name() + "\":";
  for (const std::string &E : Errors)
    Msg += "\n  " + E;
  return llvm::createStringError(llvm::inconvertibleErrorCode(), Msg);
}

} // namespace solder
