//===- ArgReduceKernel.cpp - ArgMax and ArgMin reference kernels ----------===//
//
// The i64 index of the largest (ArgMax) or smallest (ArgMin) element along
// one axis, keepdims keeping that axis as 1. Ties go to the first index, or
// the last with select_last_index. A NaN wins over every number, as in
// numpy's argmax/argmin (the ONNX reference): the first NaN, or the last
// one with select_last_index.
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/KernelUtils.h"
#include <cmath>

namespace solder {
namespace ref {

/// Whether V replaces Best (at an earlier index) as the running extreme.
template <bool Max, typename C> static bool argBetter(C V, C Best, bool Last) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(Best))
      return Last && std::isnan(V);
    if (std::isnan(V))
      return true;
  }
  if (V == Best)
    return Last;
  return Max ? V > Best : V < Best;
}

template <bool Max> static llvm::Error argReduceKernel(KernelContext &Ctx) {
  auto XOr = requireOperand(Ctx, 0);
  if (!XOr)
    return XOr.takeError();
  const Tensor &X = **XOr;
  if (X.rank() == 0)
    return Ctx.error("input must have rank >= 1");
  auto AxisOr = normalizeAxis(Ctx, Ctx.attrs().getInt("axis", 0), X.rank());
  if (!AxisOr)
    return AxisOr.takeError();
  unsigned Axis = *AxisOr;
  bool KeepDims = Ctx.attrs().getInt("keepdims", 1) != 0;
  bool Last = Ctx.attrs().getInt("select_last_index", 0) != 0;
  int64_t Outer = 1, Len = X.dims()[Axis], Inner = 1;
  DimVector OutDims;
  for (unsigned I = 0; I < X.rank(); ++I) {
    if (I < Axis)
      Outer *= X.dims()[I];
    else if (I > Axis)
      Inner *= X.dims()[I];
    if (I != Axis || KeepDims)
      OutDims.push_back(I == Axis ? 1 : X.dims()[I]);
  }
  if (Len == 0 && Outer * Inner > 0)
    return Ctx.error("cannot take the arg" + llvm::Twine(Max ? "max" : "min") +
                     " of an empty axis");
  return visitDType<dtypes::Numeric>(Ctx, X.dtype(), [&](auto Tag) {
    using Tr = TraitsOf<decltype(Tag)>;
    using S = typename Tr::Storage;
    using C = typename Tr::Compute;
    const S *In = X.data<S>();
    Tensor Y(DType::I64, OutDims);
    int64_t *Out = Y.mutableData<int64_t>();
    for (int64_t O = 0; O < Outer; ++O)
      for (int64_t I = 0; I < Inner; ++I) {
        const S *Line = In + O * Len * Inner + I;
        int64_t BestAt = 0;
        C Best = Tr::load(Line[0]);
        for (int64_t J = 1; J < Len; ++J) {
          C V = Tr::load(Line[J * Inner]);
          if (argBetter<Max>(V, Best, Last)) {
            Best = V;
            BestAt = J;
          }
        }
        Out[O * Inner + I] = BestAt;
      }
    Ctx.Results[0] = std::move(Y);
    return llvm::Error::success();
  });
}

llvm::Error evalArgMax(KernelContext &Ctx) {
  return argReduceKernel<true>(Ctx);
}

llvm::Error evalArgMin(KernelContext &Ctx) {
  return argReduceKernel<false>(Ctx);
}

} // namespace ref
} // namespace solder
