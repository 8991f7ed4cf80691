//===- Kernels.cpp - Dispatch from OpKind to reference kernel --------------===//
#include "runtime/reference/Kernels.h"

namespace solder {
namespace ref {

llvm::Error KernelContext::error(const llvm::Twine &Msg) const {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 N.describe() + ": " + Msg);
}

using KernelFn = llvm::Error (*)(KernelContext &);

static KernelFn lookupKernel(OpKind K) {
  static constexpr KernelFn Table[] = {
#define SOLDER_OP(Enum, Name, Fusion, MinIn, MaxIn, MinOut, MaxOut) &eval##Enum,
#include "ir/Ops.def"
  };
  return Table[unsigned(K)];
}

llvm::Error evaluateNode(const Node &N, llvm::ArrayRef<const Tensor *> Operands,
                         llvm::SmallVectorImpl<Tensor> &Results) {
  Results.clear();
  Results.resize(N.numResults());
  KernelContext Ctx{N, Operands, Results};
  return lookupKernel(N.kind())(Ctx);
}

} // namespace ref
} // namespace solder
