//===- Kernels.cpp - Dispatch from OpKind to reference kernel --------------===//
#include "runtime/reference/Kernels.h"
#include "ir/Layout.h"

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

/// A channels-last Conv or pool runs as its NCHW kernel between
/// transposes: the oracle stays the one NCHW implementation.
static llvm::Error evaluateNhwc(const Node &N,
                                llvm::ArrayRef<const Tensor *> Operands,
                                llvm::SmallVectorImpl<Tensor> &Results) {
  KernelContext Check{N, Operands, Results};
  std::vector<Tensor> Nchw;
  std::vector<const Tensor *> Ptrs(Operands.begin(), Operands.end());
  // The input, and a Conv's weights ([M, kH, kW, C] to [M, C, kH, kW]).
  unsigned Permuted = N.kind() == OpKind::Conv ? 2 : 1;
  Nchw.reserve(Permuted);
  for (unsigned I = 0; I < Permuted; ++I) {
    if (I >= Ptrs.size() || !Ptrs[I] || Ptrs[I]->rank() != 4)
      return Check.error("an NHWC operand must have rank 4");
    Nchw.push_back(Ptrs[I]->transposed(ToNchwPerm));
    Ptrs[I] = &Nchw.back();
  }
  KernelContext Ctx{N, Ptrs, Results};
  if (auto E = lookupKernel(N.kind())(Ctx))
    return E;
  for (Tensor &R : Results)
    if (!R.isNull() && R.rank() == 4)
      R = R.transposed(ToNhwcPerm);
  return llvm::Error::success();
}

llvm::Error evaluateNode(const Node &N, llvm::ArrayRef<const Tensor *> Operands,
                         llvm::SmallVectorImpl<Tensor> &Results) {
  Results.clear();
  Results.resize(N.numResults());
  if (isNhwc(N))
    return evaluateNhwc(N, Operands, Results);
  KernelContext Ctx{N, Operands, Results};
  return lookupKernel(N.kind())(Ctx);
}

} // namespace ref
} // namespace solder
