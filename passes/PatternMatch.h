//===- PatternMatch.h - Helpers for pattern-rewriting passes ----*- C++ -*-===//
//
// Matchers shared by the passes that recognise decomposed ops or fold
// constants into contractions (batchnorm-folding, norm-recognition,
// gelu-recognition): "is V produced by an Add", "is V the constant 0.5",
// "does V feed only this node", and the one way a rewrite hands its final
// value's name to the replacement.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_PATTERNMATCH_H
#define SOLDER_PASSES_PATTERNMATCH_H

#include "ir/Graph.h"
#include <optional>

namespace solder {

/// The node producing V when it is of kind K, else null (V may be null).
Node *matchOp(const Value *V, OpKind K);

/// V is a one-element constant within relative tolerance Tol of Expected.
bool isConstScalar(const Value *V, double Expected, double Tol = 1e-4);

/// V is read by exactly one operand and is not a graph output: a rewrite may
/// delete its producer once that one user is replaced.
bool hasSingleUse(const Graph &G, const Value *V);
/// The node reading V when hasSingleUse(G, V), else null.
Node *soleUser(const Graph &G, const Value *V);

/// For a binary node N with a one-element constant operand within Tol of K,
/// the other operand; null otherwise (also when N is null).
Value *operandBesideConst(const Node *N, double K, double Tol = 1e-4);

/// For a binary node N with V as one operand, the other operand; null when V
/// is not an operand of N.
Value *otherOperand(const Node &N, const Value *V);

/// Points every use of Old (operands and graph outputs) at New, which takes
/// over Old's name so ONNX output and value names survive the rewrite.
void replaceKeepingName(Graph &G, Value *Old, Value *New);

/// Erases the nodes of a replaced pattern (any order) whose results end up
/// unused; nodes still used stay.
void eraseIfDead(Graph &G, llvm::ArrayRef<Node *> Nodes);

} // namespace solder

#endif
