//===- ReferenceExecutor.h - Runs a Graph on the CPU ------------*- C++ -*-===//
//
// The correctness oracle: interprets the IR node by node with the reference
// kernels. Tensors are freed after their last use.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_REFERENCE_REFERENCEEXECUTOR_H
#define SOLDER_RUNTIME_REFERENCE_REFERENCEEXECUTOR_H

#include "ir/Graph.h"
#include "llvm/Support/Error.h"
#include <vector>

namespace solder {

/// Runs G on Inputs (one per graph input, in order). Input dtypes and ranks
/// must match the graph's, and static dims must agree; symbolic dims take
/// the sizes the inputs have. Returns one tensor per graph output.
llvm::Expected<std::vector<Tensor>>
runReference(const Graph &G, llvm::ArrayRef<Tensor> Inputs);

} // namespace solder

#endif
