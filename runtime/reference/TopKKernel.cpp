//===- TopKKernel.cpp - TopK reference kernel -----------------------------===//
//
// The K largest (largest=1) or smallest elements of each line along
// `axis`, best first, and their i64 indices. Equal values keep the lower
// index first, as ONNX asks; a NaN ranks above every number (numpy's sort
// puts it last), so it comes first for largest and last for smallest.
// sorted=0 leaves the order to the implementation: the sorted order is
// one.
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/KernelUtils.h"
#include <algorithm>
#include <cmath>
#include <numeric>

namespace solder {
namespace ref {

/// Whether A ranks above B in ascending order with NaN on top.
template <typename C> static bool rankAbove(C A, C B) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(A) || std::isnan(B))
      return std::isnan(A) && !std::isnan(B);
  }
  return A > B;
}

llvm::Error evalTopK(KernelContext &Ctx) {
  const Tensor *X = Ctx.in(0), *KT = Ctx.in(1);
  if (!X || !KT)
    return Ctx.error("expects X and K");
  if (X->rank() == 0)
    return Ctx.error("input must have rank >= 1");
  if (KT->numElements() != 1)
    return Ctx.error("k must have one element");
  auto AxisOr = normalizeAxis(Ctx, Ctx.attrs().getInt("axis", -1), X->rank());
  if (!AxisOr)
    return AxisOr.takeError();
  unsigned Axis = *AxisOr;
  int64_t K = KT->getInt64(0), Len = X->dims()[Axis];
  if (K < 0 || K > Len)
    return Ctx.error("k = " + llvm::Twine(K) + " is not in [0, " +
                     llvm::Twine(Len) + "]");
  bool Largest = Ctx.attrs().getInt("largest", 1) != 0;
  int64_t Outer = 1, Inner = 1;
  for (unsigned I = 0; I < X->rank(); ++I)
    if (I < Axis)
      Outer *= X->dims()[I];
    else if (I > Axis)
      Inner *= X->dims()[I];
  DimVector OutDims(X->dims().begin(), X->dims().end());
  OutDims[Axis] = K;
  return visitDType<dtypes::Numeric>(Ctx, X->dtype(), [&](auto Tag) {
    using Tr = TraitsOf<decltype(Tag)>;
    using S = typename Tr::Storage;
    using C = typename Tr::Compute;
    const S *In = X->data<S>();
    Tensor Values(X->dtype(), OutDims), Indices(DType::I64, OutDims);
    S *VOut = Values.mutableData<S>();
    int64_t *IOut = Indices.mutableData<int64_t>();
    std::vector<int64_t> Order(Len);
    for (int64_t O = 0; O < Outer; ++O)
      for (int64_t I = 0; I < Inner; ++I) {
        const S *Line = In + O * Len * Inner + I;
        std::iota(Order.begin(), Order.end(), 0);
        // Stable: equal values keep the lower index first.
        std::stable_sort(Order.begin(), Order.end(), [&](int64_t A, int64_t B) {
          C VA = Tr::load(Line[A * Inner]);
          C VB = Tr::load(Line[B * Inner]);
          return Largest ? rankAbove(VA, VB) : rankAbove(VB, VA);
        });
        for (int64_t J = 0; J < K; ++J) {
          int64_t At = (O * K + J) * Inner + I;
          VOut[At] = Line[Order[J] * Inner];
          IOut[At] = Order[J];
        }
      }
    Ctx.Results[0] = std::move(Values);
    if (Ctx.N.numResults() > 1 && Ctx.N.result(1))
      Ctx.Results[1] = std::move(Indices);
    return llvm::Error::success();
  });
}

} // namespace ref
} // namespace solder
