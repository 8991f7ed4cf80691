//===- InferFunctions.h - Shape-inference functions of every op -*- C++ -*-===//
//
// Internal to ir/: the registry table in OpRegistry.cpp points at these.
// Grouped by op family into ElementwiseInfer.cpp, DataMovementInfer.cpp,
// NeuralNetInfer.cpp, OneHotInfer.cpp, ResizeInfer.cpp and ScatterInfer.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_OPS_INFERFUNCTIONS_H
#define SOLDER_IR_OPS_INFERFUNCTIONS_H

#include "ir/OpRegistry.h"

namespace solder {
namespace infer {

// ElementwiseInfer.cpp
llvm::Error sameAsFirst(InferContext &C);
llvm::Error cast(InferContext &C);
llvm::Error dropout(InferContext &C);
llvm::Error logicalNot(InferContext &C);
llvm::Error floatPredicate(InferContext &C); // IsNaN, IsInf: bool result
llvm::Error mod(InferContext &C);
llvm::Error broadcastArith(InferContext &C);
llvm::Error broadcastCompare(InferContext &C);
llvm::Error broadcastLogical(InferContext &C);
llvm::Error where(InferContext &C);
llvm::Error applyRowStats(InferContext &C);
llvm::Error clipLike(InferContext &C); // result = operand 0, rest scalars
llvm::Error cumSum(InferContext &C);
llvm::Error trilu(InferContext &C);

// DataMovementInfer.cpp
llvm::Error reshape(InferContext &C);
llvm::Error flatten(InferContext &C);
llvm::Error squeeze(InferContext &C);
llvm::Error unsqueeze(InferContext &C);
llvm::Error transpose(InferContext &C);
llvm::Error concat(InferContext &C);
llvm::Error split(InferContext &C);
llvm::Error slice(InferContext &C);
llvm::Error gather(InferContext &C);
llvm::Error gatherElements(InferContext &C);
llvm::Error gatherND(InferContext &C);
llvm::Error expand(InferContext &C);
llvm::Error tile(InferContext &C);
llvm::Error pad(InferContext &C);
llvm::Error shape(InferContext &C);
llvm::Error constantOfShape(InferContext &C);
llvm::Error range(InferContext &C);

// OneHotInfer.cpp, ResizeInfer.cpp (and TopK's)
llvm::Error oneHot(InferContext &C);
llvm::Error resize(InferContext &C);
llvm::Error topK(InferContext &C);

// AttentionInfer.cpp
llvm::Error attention(InferContext &C);

// ScatterInfer.cpp
llvm::Error scatterElements(InferContext &C);
llvm::Error scatterND(InferContext &C);

// NeuralNetInfer.cpp
llvm::Error reduce(InferContext &C);
llvm::Error argReduce(InferContext &C);
llvm::Error layerNorm(InferContext &C);
llvm::Error rmsNorm(InferContext &C);
llvm::Error globalPool(InferContext &C);
llvm::Error conv(InferContext &C);
llvm::Error convTranspose(InferContext &C);
llvm::Error matMul(InferContext &C);
llvm::Error gemm(InferContext &C);
llvm::Error pool(InferContext &C);

// FusedGroupInfer.cpp
llvm::Error fusedGroup(InferContext &C);

} // namespace infer
} // namespace solder

#endif
