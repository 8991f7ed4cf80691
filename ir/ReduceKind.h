//===- ReduceKind.h - How a Reduce* op combines elements --------*- C++ -*-===//
//
// One reading of the Reduce* ops for the reference executor and the code
// generator (L2, LogSum and LogSumExp are for float types only).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_REDUCEKIND_H
#define SOLDER_IR_REDUCEKIND_H

#include "ir/OpKind.h"
#include <optional>

namespace solder {

enum class ReduceKind {
  Sum,
  Mean,
  Max,
  Min,
  Prod,
  L1,
  L2,
  LogSum,
  LogSumExp,
  SumSquare
};

/// The reduction a Reduce* op performs; nothing for any other op.
inline std::optional<ReduceKind> reduceKindOf(OpKind K) {
  switch (K) {
  case OpKind::ReduceMean:
    return ReduceKind::Mean;
  case OpKind::ReduceSum:
    return ReduceKind::Sum;
  case OpKind::ReduceMax:
    return ReduceKind::Max;
  case OpKind::ReduceMin:
    return ReduceKind::Min;
  case OpKind::ReduceProd:
    return ReduceKind::Prod;
  case OpKind::ReduceL1:
    return ReduceKind::L1;
  case OpKind::ReduceL2:
    return ReduceKind::L2;
  case OpKind::ReduceLogSum:
    return ReduceKind::LogSum;
  case OpKind::ReduceLogSumExp:
    return ReduceKind::LogSumExp;
  case OpKind::ReduceSumSquare:
    return ReduceKind::SumSquare;
  default:
    return std::nullopt;
  }
}

} // namespace solder

#endif
