//===- Kernels.h - CPU reference kernels, one per op ------------*- C++ -*-===//
//
// Each op of ir/Ops.def has one reference kernel `eval<Op>` that computes a
// node's results from its operand tensors with ONNX semantics (broadcasting,
// attributes, dtypes). Kernels read shapes from the actual tensors, not from
// the IR types, so they also serve graphs whose dims are symbolic.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_REFERENCE_KERNELS_H
#define SOLDER_RUNTIME_REFERENCE_KERNELS_H

#include "ir/Graph.h"
#include "ir/Tensor.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

namespace solder {
namespace ref {

struct KernelContext {
  const Node &N;
  /// Operand tensors in operand order; null where an optional one is absent.
  llvm::ArrayRef<const Tensor *> Operands;
  /// Sized to N.numResults(); the kernel assigns every non-null result.
  llvm::SmallVectorImpl<Tensor> &Results;

  const AttrMap &attrs() const { return N.attrs(); }
  const Tensor *in(unsigned I) const {
    return I < Operands.size() ? Operands[I] : nullptr;
  }
  unsigned numIn() const { return Operands.size(); }
  /// "Conv node 'c1': <Msg>" as an llvm::Error.
  llvm::Error error(const llvm::Twine &Msg) const;
};

#define SOLDER_OP(Enum, Name, Fusion, MinIn, MaxIn, MinOut, MaxOut)            \
  llvm::Error eval##Enum(KernelContext &Ctx);
#include "ir/Ops.def"

/// Runs the reference kernel of N on the given operands.
llvm::Error evaluateNode(const Node &N, llvm::ArrayRef<const Tensor *> Operands,
                         llvm::SmallVectorImpl<Tensor> &Results);

} // namespace ref
} // namespace solder

#endif
