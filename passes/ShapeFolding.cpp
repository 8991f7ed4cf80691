//===- ShapeFolding.cpp - Folds Shape of static tensors
//--------------------===//
#include "passes/ShapeFolding.h"
#include "ir/OpRegistry.h"
#include <algorithm>
#include <vector>

namespace solder {

static Decision tryFold(Graph &G, Node &N) {
  const TensorType &T = N.operand(0)->type();
  if (!T.isStatic())
    return Decision::no("operand shape " + typeToString(T) + " is not static");
  int64_t R = T.rank();
  int64_t S = N.attrs().getInt("start", 0), E = N.attrs().getInt("end", R);
  S = std::clamp<int64_t>(S < 0 ? S + R : S, 0, R);
  E = std::clamp<int64_t>(E < 0 ? E + R : E, 0, R);
  std::vector<int64_t> Dims;
  for (int64_t I = S; I < E; ++I)
    Dims.push_back(T.Dims[I].size());
  G.replaceWithConstant(N.result(0), Tensor::fromInt64s(Dims));
  return Decision::yes();
}

llvm::Expected<bool> ShapeFolding::run(Graph &G, DecisionLog &Log) {
  bool Changed = false;
  std::vector<Node *> Order;
  for (auto &N : G.nodes())
    Order.push_back(N.get());
  for (Node *N : Order) {
    if (auto E = inferNodeTypes(*N))
      return std::move(E);
    if (N->kind() != OpKind::Shape)
      continue;
    Decision D = tryFold(G, *N);
    Log.note(*N, D);
    if (D) {
      G.eraseNode(N);
      Changed = true;
    }
  }
  return Changed;
}

} // namespace solder
