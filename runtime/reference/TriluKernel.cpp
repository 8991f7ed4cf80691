//===- TriluKernel.cpp - Reference Trilu ----------------------------------===//
//
// Trilu(X, k) {upper}: in every matrix of the last two dims, element (r, c)
// is kept when c - r >= k (upper, the default) or c - r <= k (lower) and
// zeroed otherwise. k defaults to 0, the main diagonal.
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/KernelUtils.h"

namespace solder {
namespace ref {

llvm::Error evalTrilu(KernelContext &Ctx) {
  auto XOr = requireOperand(Ctx, 0);
  if (!XOr)
    return XOr.takeError();
  const Tensor &X = **XOr;
  if (X.rank() < 2)
    return Ctx.error("input must have rank >= 2");
  int64_t K = 0;
  if (const Tensor *KT = Ctx.in(1)) {
    if (KT->numElements() != 1 || !isInteger(KT->dtype()))
      return Ctx.error("k must be an integer scalar");
    K = KT->getInt64(0);
  }
  bool Upper = Ctx.attrs().getInt("upper", 1) != 0;
  int64_t Rows = X.dims()[X.rank() - 2], Cols = X.dims()[X.rank() - 1];
  int64_t Count = X.numElements();
  return visitDType<dtypes::All>(Ctx, X.dtype(), [&](auto Tag) {
    using S = typename TraitsOf<decltype(Tag)>::Storage;
    Tensor Y(X.dtype(), X.dims());
    const S *In = X.data<S>();
    S *Out = Y.mutableData<S>();
    for (int64_t I = 0; I < Count; ++I) {
      int64_t C = I % Cols, R = (I / Cols) % Rows;
      bool Keep = Upper ? C - R >= K : C - R <= K;
      Out[I] = Keep ? In[I] : S(0); // S(0) is +0 for f16/bf16 too
    }
    Ctx.Results[0] = std::move(Y);
    return llvm::Error::success();
  });
}

} // namespace ref
} // namespace solder
