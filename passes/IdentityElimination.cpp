//===- IdentityElimination.cpp - Removes Identity and Dropout
//--------------===//
#include "passes/IdentityElimination.h"
#include <cstring>
#include <vector>

namespace solder {

static Decision tryEliminate(Graph &G, Node &N) {
  Value *In = N.operand(0), *Out = N.result(0);
  Value *Mask = N.result(1);
  bool MaskUsed = Mask && (Mask->hasUses() || G.isOutput(Mask));
  if (MaskUsed && !Mask->type().isStatic())
    return Decision::no("the mask is used and its shape is not static");
  // The output keeps its name: the input value takes it over, which is only
  // possible for a plain intermediate.
  if (G.isOutput(Out) && (!In->producer() || G.isOutput(In)))
    return Decision::no("result is a graph output and the input is a graph "
                        "input, constant or output");
  if (MaskUsed) {
    Tensor Ones(DType::Bool, Mask->type().staticDims());
    std::memset(Ones.mutableRawData(), 1, Ones.byteSize());
    G.replaceWithConstant(Mask, std::move(Ones));
  }
  if (G.isOutput(Out)) {
    std::string Name = Out->name();
    G.renameValue(Out, G.uniqueName(Name + ".dead"));
    G.renameValue(In, Name);
  }
  G.replaceAllUsesWith(Out, In);
  return Decision::yes();
}

/// Ops that pass their one input through unchanged: Identity, Dropout, a
/// Cast to the type it already has (legacy exports cast softmax results
/// to f32 in f32 models) and a Concat of one operand (GPT-2's key/value
/// cache concatenation without a cache).
static bool isIdentity(const Node &N) {
  switch (N.kind()) {
  case OpKind::Identity:
  case OpKind::Dropout:
    return true;
  case OpKind::Cast:
    return N.operand(0) && N.result(0) &&
           N.operand(0)->type() == N.result(0)->type();
  case OpKind::Concat:
    return N.numOperands() == 1 && N.operand(0) && N.result(0) &&
           N.operand(0)->type() == N.result(0)->type();
  default:
    return false;
  }
}

llvm::Expected<bool> IdentityElimination::run(Graph &G, DecisionLog &Log) {
  std::vector<Node *> Candidates;
  for (auto &N : G.nodes())
    if (isIdentity(*N))
      Candidates.push_back(N.get());
  bool Changed = false;
  for (Node *N : Candidates) {
    Decision D = tryEliminate(G, *N);
    Log.note(*N, D);
    if (!D)
      continue;
    // The node is now dead unless a kept mask still reads it.
    bool Used = false;
    for (Value *R : N->results())
      Used |= R && (R->hasUses() || G.isOutput(R));
    if (!Used)
      G.eraseNode(N);
    Changed = true;
  }
  return Changed;
}

} // namespace solder
