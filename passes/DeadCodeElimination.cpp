//===- DeadCodeElimination.cpp - Removes unused nodes and constants
//--------===//
#include "passes/DeadCodeElimination.h"
#include <vector>

namespace solder {

static bool isDead(const Graph &G, const Node &N) {
  for (Value *R : N.results())
    if (R && (R->hasUses() || G.isOutput(R)))
      return false;
  return true;
}

llvm::Expected<bool> DeadCodeElimination::run(Graph &G, DecisionLog &Log) {
  bool Changed = false;
  // Walking backwards frees a whole dead chain in one sweep: a node's users
  // come after it, so they are gone by the time it is visited.
  std::vector<Node *> Order;
  for (auto &N : G.nodes())
    Order.push_back(N.get());
  for (auto It = Order.rbegin(); It != Order.rend(); ++It) {
    if (!isDead(G, **It))
      continue;
    G.eraseNode(*It);
    Changed = true;
  }
  size_t Before = G.constants().size();
  G.removeUnusedConstants();
  return Changed || G.constants().size() != Before;
}

} // namespace solder
