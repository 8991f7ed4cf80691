//===- OpKind.h - The op enum and fusion kinds ------------------*- C++ -*-===//
#ifndef SOLDER_IR_OPKIND_H
#define SOLDER_IR_OPKIND_H

#include "llvm/ADT/StringRef.h"
#include <cstdint>
#include <optional>

namespace solder {

enum class OpKind : uint16_t {
#define SOLDER_OP(Enum, Name, Fusion, MinIn, MaxIn, MinOut, MaxOut) Enum,
#include "ir/Ops.def"
};

constexpr unsigned NumOpKinds = 0
#define SOLDER_OP(Enum, Name, Fusion, MinIn, MaxIn, MinOut, MaxOut) +1
#include "ir/Ops.def"
    ;

/// How an op may combine with its neighbours in a fused kernel (TVM's
/// pattern kinds). Passes compare kinds; they keep no lists of op names.
enum class FusionKind : uint8_t {
  Elementwise, ///< out[i] = f(in[i])
  Broadcast,   ///< elementwise over numpy-broadcast operands
  Injective,   ///< each output element is one input element (data movement)
  Reduction,   ///< reduces (or normalizes) along axes
  Contraction, ///< Conv/MatMul/Gemm: the anchors of epilogue fusion
  Opaque,      ///< runs alone
};

llvm::StringRef fusionKindName(FusionKind K);
llvm::StringRef opName(OpKind K);
std::optional<OpKind> lookupOp(llvm::StringRef Name);

} // namespace solder

#endif
