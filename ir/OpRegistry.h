//===- OpRegistry.h - One table describing every op -------------*- C++ -*-===//
//
// For each OpKind: its name, operand/result counts, the attributes it
// accepts, its fusion kind, whether it is a view (no data movement at run
// time), and its shape-inference function. Passes, the verifier, the printer
// and parser, and code generation all read this table; nobody keeps a private
// list of op names.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_OPREGISTRY_H
#define SOLDER_IR_OPREGISTRY_H

#include "ir/Graph.h"
#include "ir/OpKind.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

namespace solder {

struct AttrSpec {
  const char *Name;
  AttrKind Kind;
};

class InferContext;
using InferFn = llvm::Error (*)(InferContext &);

struct OpInfo {
  OpKind Kind;
  llvm::StringRef Name;
  FusionKind Fusion;
  unsigned MinOperands, MaxOperands; // MaxOperands == VariadicCount: any
  unsigned MinResults, MaxResults;
  llvm::ArrayRef<AttrSpec> Attrs;
  InferFn Infer;
  /// Reshape-like: the output is the input's bytes under another shape.
  bool IsView;
  /// A loop-fused kernel can compute an element of the result from
  /// elements of the operands at composed coordinates (elementwise and
  /// broadcast ops, views, Transpose, Expand, Slice, Concat, Gather). Ops
  /// without it (Pad, Tile, Split, GatherElements/ND, Trilu) run alone.
  bool ComposableIndexing;
};

constexpr unsigned VariadicCount = 0xffff;

const OpInfo &getOpInfo(OpKind K);
/// The Reduce* ops: (X, axes?) with keepdims and noop_with_empty_axes.
bool isReduceOp(OpKind K);
const AttrSpec *findAttrSpec(const OpInfo &Info, llvm::StringRef Name);

/// What a shape-inference function sees: the node, its operand types and
/// constant operand data, and where to put result types.
class InferContext {
public:
  explicit InferContext(Node &N) : N(N) {}
  Node &node() { return N; }
  const AttrMap &attrs() const { return N.attrs(); }
  unsigned numOperands() const { return N.numOperands(); }
  bool hasOperand(unsigned I) const { return N.operand(I) != nullptr; }
  const TensorType &operandType(unsigned I) const {
    return N.operand(I)->type();
  }
  /// Data of operand I when it is a constant, else null.
  const Tensor *constantOperand(unsigned I) const {
    Value *V = N.operand(I);
    return V ? V->constant() : nullptr;
  }
  unsigned numResults() const { return N.numResults(); }
  void setResultType(unsigned I, TensorType T);
  /// An error naming the node: "Reshape node 'r1': <Msg>".
  llvm::Error error(const llvm::Twine &Msg) const;

private:
  Node &N;
};

/// Infers the result types of one node from its operands.
llvm::Error inferNodeTypes(Node &N);
/// Infers every node of the graph in order.
llvm::Error inferGraphTypes(Graph &G);

/// Error helpers shared by the IR libraries.
llvm::Error makeError(const llvm::Twine &Msg);

} // namespace solder

#endif
