//===- ExprTable.h - Elementwise ops as CUDA expressions --------*- C++ -*-===//
//
// The one table that maps an elementwise op to the C expression computing
// it, with per-dtype overrides, plus the load/store/cast conversions around
// it. Every element is computed in a "compute type": float for f32 and the
// 16-bit floats (load -> float -> op -> round once on store), double for f64,
// int for the integers up to 32 bits, long long / unsigned types for the
// wide ones, bool for bool.
//
//   Relu on f16:  __float2half_rn(fmaxf(__half2float(x[i]), (float)0))
//
// Operands are always plain identifiers (the kernel loads each into a
// local), so templates may use one operand several times.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_CODEGEN_EXPRTABLE_H
#define SOLDER_CODEGEN_EXPRTABLE_H

#include "ir/Graph.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <string>

namespace solder {

/// The type an element of T is computed in ("float" for f16).
DType computeDType(DType T);
/// Its CUDA spelling: "float", "double", "int", "unsigned int", "long long",
/// "unsigned long long", "bool".
llvm::StringRef computeTypeName(DType T);

/// Storage expression X of dtype T converted to T's compute type.
std::string loadExpr(DType T, llvm::StringRef X);
/// Compute-type expression V converted to T's storage type (rounds once).
std::string storeExpr(DType T, llvm::StringRef V);
/// ONNX Cast of V (in From's compute type) to a storage value of To:
/// float -> int truncates (NaN -> 0), int -> int wraps, x -> bool is
/// `x != 0`, f64 -> f16/bf16 rounds once.
std::string castToStorage(DType From, DType To, llvm::StringRef V);

/// A literal of T's compute type holding V exactly (hex floats; NaN and
/// infinities through bit patterns).
std::string computeLiteral(DType T, double V);
/// A literal of T's storage type with the value V (f16/bf16 through their
/// bit patterns).
std::string storageLiteral(DType T, double V);
/// The lowest / highest finite-or-infinite value of T's compute type, as a
/// literal (-inf/+inf for floats).
std::string lowestLiteral(DType T);
std::string highestLiteral(DType T);

/// The dtype whose compute type evaluates N: operand 1 for Where, operand 0
/// otherwise.
DType exprOperandDType(const Node &N);

/// The expression of elementwise node N applied to Args (identifiers or
/// literals in the compute types of the operands; an empty string for an
/// absent optional operand). The result is in the compute type of N's
/// result. Errors name the node when the op or its dtype has no rule.
llvm::Expected<std::string> elementwiseExpr(const Node &N,
                                            llvm::ArrayRef<std::string> Args);

/// Whether the table has a rule for Op on operands of dtype T (any variant).
bool hasExprRule(OpKind Op, DType T);

} // namespace solder

#endif
