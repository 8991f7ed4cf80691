//===- ResizeKernel.cpp - Resize reference kernel -------------------------===//
//
// Resize through the per-axis tap tables of ir/ResizeSpec.h: each output
// element is the sum, over one tap per resized axis, of the product of the
// taps' weights times the source element, in double and rounded once; an
// element whose position is extrapolated along any axis is
// extrapolation_value. Float types take every mode; other types only
// nearest, where each output copies the source its weight-1 taps select.
//
//===----------------------------------------------------------------------===//
#include "ir/ResizeSpec.h"
#include "runtime/reference/KernelUtils.h"
#include <cstring>

namespace solder {
namespace ref {

llvm::Error evalResize(KernelContext &Ctx) {
  auto XOr = requireOperand(Ctx, 0);
  if (!XOr)
    return XOr.takeError();
  const Tensor &X = **XOr;
  auto Spec = resolveResize(Ctx.N, X.dims(), Ctx.in(1), Ctx.in(2), Ctx.in(3));
  if (!Spec)
    return Spec.takeError();
  bool IsFloat = isFloat(X.dtype());
  if (!IsFloat && !Spec->Nearest)
    return Ctx.error("only mode 'nearest' resizes " + dtypeName(X.dtype()) +
                     " tensors");
  int64_t R = X.rank();
  Tensor Y(X.dtype(), Spec->OutDims);
  DimVector InStrides = contiguousStrides(X.dims());
  std::vector<int64_t> Pos(R, 0);
  size_t Size = dtypeSize(X.dtype());
  const char *In = static_cast<const char *>(X.rawData());
  char *Out = static_cast<char *>(Y.mutableRawData());
  for (int64_t I = 0, E = Y.numElements(); I < E; ++I) {
    // Pos: the output coordinates of element I.
    int64_t Rest = I;
    bool Extrapolated = false;
    for (int64_t D = R - 1; D >= 0; --D) {
      Pos[D] = Rest % Spec->OutDims[D];
      Rest /= Spec->OutDims[D];
      Extrapolated |= Spec->Axes[D].Extrapolated[Pos[D]];
    }
    if (Extrapolated) {
      Y.setDouble(I, Spec->ExtrapolationValue);
      continue;
    }
    if (!IsFloat) {
      // Nearest: the tap of weight 1 along each axis (weight 0 everywhere
      // only with exclude_outside at an edge, which gives 0).
      int64_t Off = 0;
      bool Zero = false;
      for (int64_t D = 0; D < R; ++D) {
        const ResizeAxisTaps &T = Spec->Axes[D];
        int64_t Pick = -1;
        for (unsigned K = 0; K < T.TapsPerOut; ++K)
          if (T.Weight[Pos[D] * T.TapsPerOut + K] != 0)
            Pick = T.Index[Pos[D] * T.TapsPerOut + K];
        Zero |= Pick < 0;
        Off += std::max<int64_t>(Pick, 0) * InStrides[D];
      }
      if (Zero)
        std::memset(Out + I * Size, 0, Size);
      else
        std::memcpy(Out + I * Size, In + Off * Size, Size);
      continue;
    }
    // Every combination of one tap per axis, as an odometer.
    double Sum = 0;
    std::vector<unsigned> Tap(R, 0);
    while (true) {
      double W = 1;
      int64_t Off = 0;
      for (int64_t D = 0; D < R; ++D) {
        const ResizeAxisTaps &T = Spec->Axes[D];
        int64_t At = Pos[D] * T.TapsPerOut + Tap[D];
        W *= T.Weight[At];
        Off += T.Index[At] * InStrides[D];
      }
      if (W != 0)
        Sum += W * X.getDouble(Off);
      int64_t D = R - 1;
      while (D >= 0 && ++Tap[D] == Spec->Axes[D].TapsPerOut)
        Tap[D--] = 0;
      if (D < 0)
        break;
    }
    Y.setDouble(I, Sum);
  }
  Ctx.Results[0] = std::move(Y);
  return llvm::Error::success();
}

} // namespace ref
} // namespace solder
