//===- UnimplementedKernels.cpp - Weak fallbacks during bring-up -----------===//
//
// Every op gets a weak definition that reports a clear error; the real
// kernels in the other files override them. Delete once all exist.
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/Kernels.h"

namespace solder {
namespace ref {
#define SOLDER_OP(Enum, Name, Fusion, MinIn, MaxIn, MinOut, MaxOut)            \
  __attribute__((weak)) llvm::Error eval##Enum(KernelContext &Ctx) {           \
    return Ctx.error("no reference kernel for " Name);                         \
  }
#include "ir/Ops.def"
} // namespace ref
} // namespace solder
