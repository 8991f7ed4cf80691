//===- OneHotKernel.cpp - OneHot reference kernel -------------------------===//
//
// OneHot (indices, depth, values) with opset-11 semantics: the result has
// a new dim of size depth at `axis`; an element is values[1] (on) where
// its position along that dim equals its index and values[0] (off)
// elsewhere. Indices (of any numeric type, truncated) in [-depth, -1]
// count from the end; others outside [0, depth) give a line of off values.
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/KernelUtils.h"
#include <cmath>
#include <cstring>

namespace solder {
namespace ref {

llvm::Error evalOneHot(KernelContext &Ctx) {
  const Tensor *I = Ctx.in(0), *D = Ctx.in(1), *V = Ctx.in(2);
  if (!I || !D || !V)
    return Ctx.error("expects indices, depth and values");
  if (D->numElements() != 1)
    return Ctx.error("depth must have one element");
  if (V->rank() != 1 || V->numElements() != 2)
    return Ctx.error("values must be [off_value, on_value]");
  double DepthD = std::trunc(D->getDouble(0));
  if (!(DepthD >= 1) || DepthD > double(MaxDimSize))
    return Ctx.error("depth must be in [1, " + llvm::Twine(MaxDimSize) +
                     "], got " + std::to_string(DepthD));
  int64_t Depth = int64_t(DepthD);
  int64_t Rank = I->rank() + 1;
  int64_t AxisAttr = Ctx.attrs().getInt("axis", -1);
  if (AxisAttr < -Rank || AxisAttr >= Rank)
    return Ctx.error("axis " + llvm::Twine(AxisAttr) + " out of range");
  int64_t Axis = AxisAttr < 0 ? AxisAttr + Rank : AxisAttr;
  DimVector OutDims(I->dims().begin(), I->dims().end());
  OutDims.insert(OutDims.begin() + Axis, Depth);
  int64_t Outer = 1, Inner = 1;
  for (int64_t K = 0; K < int64_t(I->rank()); ++K)
    (K < Axis ? Outer : Inner) *= I->dims()[K];
  Tensor Y(V->dtype(), OutDims);
  size_t Size = dtypeSize(V->dtype());
  const char *Off = static_cast<const char *>(V->rawData());
  const char *On = Off + Size;
  char *Out = static_cast<char *>(Y.mutableRawData());
  for (int64_t O = 0; O < Outer; ++O)
    for (int64_t In = 0; In < Inner; ++In) {
      // Float indices truncate toward zero, like a cast to int64.
      double Raw = std::trunc(I->getDouble(O * Inner + In));
      int64_t Hot = -1;
      if (Raw >= -DepthD && Raw < DepthD)
        Hot = Raw < 0 ? int64_t(Raw) + Depth : int64_t(Raw);
      for (int64_t K = 0; K < Depth; ++K)
        std::memcpy(Out + ((O * Depth + K) * Inner + In) * Size,
                    K == Hot ? On : Off, Size);
    }
  Ctx.Results[0] = std::move(Y);
  return llvm::Error::success();
}

} // namespace ref
} // namespace solder
