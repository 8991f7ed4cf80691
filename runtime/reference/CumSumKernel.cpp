//===- CumSumKernel.cpp - Reference CumSum --------------------------------===//
//
// CumSum(X, axis) {exclusive, reverse}: every line of X along the axis
// becomes its running sums, taken from the line's end with reverse, and
// shifted by one place (the first sum is 0) with exclusive. Floats
// accumulate in the compute type (float for f16/bf16, each output rounded
// once, as the generated kernel does); integers wrap.
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/KernelUtils.h"

namespace solder {
namespace ref {

/// ONNX CumSum's types: floats and the 32/64-bit integers.
constexpr uint32_t CumSumTypes =
    dtypes::Float | dtypes::bit(DType::I32) | dtypes::bit(DType::I64) |
    dtypes::bit(DType::U32) | dtypes::bit(DType::U64);

template <typename C> static C wrappingAdd(C A, C B) {
  if constexpr (std::is_integral_v<C>)
    return C(std::make_unsigned_t<C>(A) + std::make_unsigned_t<C>(B));
  else
    return A + B;
}

llvm::Error evalCumSum(KernelContext &Ctx) {
  auto XOr = requireOperand(Ctx, 0);
  if (!XOr)
    return XOr.takeError();
  auto AxisOr = requireOperand(Ctx, 1);
  if (!AxisOr)
    return AxisOr.takeError();
  const Tensor &X = **XOr, &AxisT = **AxisOr;
  if (AxisT.numElements() != 1 || !isInteger(AxisT.dtype()))
    return Ctx.error("axis must be an integer scalar");
  if (X.rank() == 0)
    return Ctx.error("input must have rank >= 1");
  auto Axis = normalizeAxis(Ctx, AxisT.getInt64(0), X.rank());
  if (!Axis)
    return Axis.takeError();
  bool Exclusive = Ctx.attrs().getInt("exclusive", 0) != 0;
  bool Reverse = Ctx.attrs().getInt("reverse", 0) != 0;
  llvm::ArrayRef<int64_t> D = X.dims();
  int64_t Len = D[*Axis], Outer = 1, Inner = 1;
  for (unsigned I = 0; I < *Axis; ++I)
    Outer *= D[I];
  for (unsigned I = *Axis + 1; I < D.size(); ++I)
    Inner *= D[I];
  return visitDType<CumSumTypes>(Ctx, X.dtype(), [&](auto Tag) {
    using Tr = TraitsOf<decltype(Tag)>;
    using S = typename Tr::Storage;
    using C = typename Tr::Compute;
    Tensor Y(X.dtype(), X.dims());
    const S *In = X.data<S>();
    S *Out = Y.mutableData<S>();
    // One accumulator per line; lines of one outer index are contiguous
    // along Inner, so each step walks a contiguous row.
    llvm::SmallVector<C, 16> Acc;
    for (int64_t O = 0; O < Outer; ++O) {
      Acc.assign(Inner, C(0));
      for (int64_t J = 0; J < Len; ++J) {
        int64_t Base = (O * Len + (Reverse ? Len - 1 - J : J)) * Inner;
        for (int64_t I = 0; I < Inner; ++I) {
          C V = Tr::load(In[Base + I]);
          if (Exclusive)
            Out[Base + I] = Tr::store(Acc[I]);
          Acc[I] = wrappingAdd(Acc[I], V);
          if (!Exclusive)
            Out[Base + I] = Tr::store(Acc[I]);
        }
      }
    }
    Ctx.Results[0] = std::move(Y);
    return llvm::Error::success();
  });
}

} // namespace ref
} // namespace solder
