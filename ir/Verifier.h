//===- Verifier.h - Structural checks of solder's IR ------------*- C++ -*-===//
//
// verifyGraph checks the invariants every pass may rely on: SSA order (each
// operand defined earlier in the same graph), use lists matching operands,
// operand/result counts and attributes as declared in the op registry,
// defined element types, unique value names, result types equal to what
// shape inference computes, and outputs defined. Body graphs of fused nodes
// are verified the same way. All problems found are reported in one error,
// one per line, each naming the node (Node::describe()) or value.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_VERIFIER_H
#define SOLDER_IR_VERIFIER_H

#include "ir/Graph.h"
#include "llvm/Support/Error.h"

namespace solder {

llvm::Error verifyGraph(const Graph &G);

} // namespace solder

#endif
