//===- CastKernels.cpp - Cast reference kernel ----------------------------===//
//
// Cast between every pair of solder's dtypes, following ONNX Cast (opset
// 21) where it is defined and numpy's astype elsewhere:
//  - float -> float rounds to nearest even, once (f64 -> f16/bf16 goes
//    through float with round-to-odd so the second rounding is exact);
//  - float -> integer truncates toward zero; NaN gives 0, values beyond
//    int64/uint64 saturate, others wrap like numpy (-1.0 -> u8 255);
//  - integer -> integer wraps (two's complement), any -> bool is `!= 0`
//    (NaN is true), bool -> any is 0 or 1.
// String and float8 targets do not exist in solder's IR: the frontend and
// shape inference reject them, and this kernel errors for unknown codes.
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/KernelUtils.h"
#include <cmath>
#include <cstring>
#include <limits>

namespace solder {
namespace ref {

/// Rounds D to float with round-to-odd: a later round-to-nearest to a format
/// at least two bits narrower (f16, bf16) then equals rounding D directly.
static float toFloatRoundToOdd(double D) {
  float F = float(D);
  if (std::isnan(D) || double(F) == D)
    return F;
  if (std::fabs(double(F)) > std::fabs(D))
    F = std::nextafter(F, 0.0f);
  uint32_t U;
  std::memcpy(&U, &F, 4);
  U |= 1;
  std::memcpy(&F, &U, 4);
  return F;
}

template <DType Src, DType Dst>
static typename DTypeTraits<Dst>::Storage
convertOne(typename DTypeTraits<Src>::Storage V) {
  using SrcTr = DTypeTraits<Src>;
  using DstTr = DTypeTraits<Dst>;
  using SrcC = typename SrcTr::Compute;
  using DstC = typename DstTr::Compute;
  using DstS = typename DstTr::Storage;
  SrcC X = SrcTr::load(V);
  if constexpr (Dst == DType::Bool) {
    return DstTr::store(X != SrcC(0));
  } else if constexpr (std::is_floating_point_v<DstC>) {
    if constexpr (Src == DType::F64 &&
                  (Dst == DType::F16 || Dst == DType::BF16))
      return DstTr::store(toFloatRoundToOdd(X));
    else
      return DstTr::store(DstC(X));
  } else if constexpr (std::is_floating_point_v<SrcC>) {
    return floatToInt<DstS>(double(X));
  } else {
    return DstS(X); // integer or bool to integer: wraps
  }
}

llvm::Error evalCast(KernelContext &Ctx) {
  auto XOr = requireOperand(Ctx, 0);
  if (!XOr)
    return XOr.takeError();
  const Tensor &X = **XOr;
  int64_t Code = Ctx.attrs().getInt("to", 0);
  std::optional<DType> To = dtypeFromOnnx(Code);
  if (!To)
    return Ctx.error("cast to ONNX data type " + llvm::Twine(Code) +
                     " is not supported");
  if (*To == X.dtype()) {
    Ctx.Results[0] = X;
    return llvm::Error::success();
  }
  return visitDType<dtypes::All>(Ctx, X.dtype(), [&](auto SrcTag) {
    return visitDType<dtypes::All>(Ctx, *To, [&](auto DstTag) {
      constexpr DType Src = decltype(SrcTag)::value;
      constexpr DType Dst = decltype(DstTag)::value;
      using SrcS = typename DTypeTraits<Src>::Storage;
      using DstS = typename DTypeTraits<Dst>::Storage;
      Tensor Y(Dst, X.dims());
      mapUnary(X.data<SrcS>(), Y.mutableData<DstS>(), X.numElements(),
               [](SrcS V) { return convertOne<Src, Dst>(V); });
      Ctx.Results[0] = std::move(Y);
      return llvm::Error::success();
    });
  });
}

} // namespace ref
} // namespace solder
