//===- ShapeKernels.cpp - Reference Shape, ConstantOfShape, Range ---------===//
//
// The ops that make tensors from shapes or scalars rather than from
// elements: Shape (with opset-15 start/end), ConstantOfShape (fill with the
// `value` attribute, f32 0 by default) and Range (start + i * delta).
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/Kernels.h"
#include <algorithm>
#include <cmath>
#include <cstring>

namespace solder {
namespace ref {

llvm::Error evalShape(KernelContext &Ctx) {
  const Tensor &X = *Ctx.in(0);
  int64_t R = X.rank();
  int64_t Start = Ctx.attrs().getInt("start", 0);
  int64_t End = Ctx.attrs().getInt("end", R);
  if (Start < 0)
    Start += R;
  if (End < 0)
    End += R;
  Start = std::clamp<int64_t>(Start, 0, R);
  End = std::clamp<int64_t>(End, 0, R);
  llvm::ArrayRef<int64_t> D = X.dims();
  Ctx.Results[0] = Tensor::fromInt64s(End > Start ? D.slice(Start, End - Start)
                                                  : llvm::ArrayRef<int64_t>());
  return llvm::Error::success();
}

llvm::Error evalConstantOfShape(KernelContext &Ctx) {
  const Tensor &S = *Ctx.in(0);
  if (S.rank() != 1)
    return Ctx.error("shape operand must be 1-D");
  llvm::SmallVector<int64_t, 6> Dims;
  int64_t Count = 1;
  for (int64_t D : S.toInt64Vector()) {
    if (D < 0)
      return Ctx.error("negative dim " + llvm::Twine(D));
    if (D > MaxDimSize || (D && Count > MaxElementCount / D))
      return Ctx.error("result too large");
    Count *= D;
    Dims.push_back(D);
  }
  Tensor Value = Tensor::scalar(DType::F32, 0.0);
  if (const Attribute *A = Ctx.attrs().find("value")) {
    if (A->kind() != AttrKind::Tensor || A->getTensor().numElements() != 1)
      return Ctx.error("value must be a one-element tensor");
    Value = A->getTensor();
  }
  Tensor Y(Value.dtype(), Dims);
  size_t ES = dtypeSize(Value.dtype());
  char *Dst = static_cast<char *>(Y.mutableRawData());
  bool AllZero = true;
  for (size_t I = 0; I < ES; ++I)
    AllZero &= static_cast<const char *>(Value.rawData())[I] == 0;
  if (!AllZero) // fresh tensors are already zero-filled
    for (int64_t I = 0; I < Count; ++I)
      std::memcpy(Dst + I * ES, Value.rawData(), ES);
  Ctx.Results[0] = std::move(Y);
  return llvm::Error::success();
}

namespace {

template <typename T>
llvm::Error fillRange(KernelContext &Ctx, T Start, T Limit, T Delta) {
  if (Delta == T(0))
    return Ctx.error("delta is 0");
  double N = std::ceil((double(Limit) - double(Start)) / double(Delta));
  if (N > double(MaxElementCount))
    return Ctx.error("result too large");
  int64_t Count = N > 0 ? int64_t(N) : 0;
  if (std::is_integral<T>::value) {
    // Exact integer count: ceil((limit - start) / delta).
    int64_t L = int64_t(Limit), S = int64_t(Start), D = int64_t(Delta);
    int64_t Diff = L - S;
    Count = D > 0 ? (Diff > 0 ? (Diff + D - 1) / D : 0)
                  : (Diff < 0 ? (-Diff + -D - 1) / -D : 0);
  }
  if (Count > MaxElementCount)
    return Ctx.error("result too large");
  Tensor Y(Ctx.in(0)->dtype(), {Count});
  T *P = Y.mutableData<T>();
  for (int64_t I = 0; I < Count; ++I)
    P[I] = T(Start + T(I) * Delta);
  Ctx.Results[0] = std::move(Y);
  return llvm::Error::success();
}

} // namespace

llvm::Error evalRange(KernelContext &Ctx) {
  const Tensor &S = *Ctx.in(0), &L = *Ctx.in(1), &D = *Ctx.in(2);
  if (S.numElements() != 1 || L.numElements() != 1 || D.numElements() != 1)
    return Ctx.error("start, limit and delta must be scalars");
  if (L.dtype() != S.dtype() || D.dtype() != S.dtype())
    return Ctx.error("start, limit and delta differ in dtype");
  switch (S.dtype()) {
  case DType::F32:
    return fillRange(Ctx, *S.data<float>(), *L.data<float>(), *D.data<float>());
  case DType::F64:
    return fillRange(Ctx, *S.data<double>(), *L.data<double>(),
                     *D.data<double>());
  case DType::I16:
    return fillRange(Ctx, *S.data<int16_t>(), *L.data<int16_t>(),
                     *D.data<int16_t>());
  case DType::I32:
    return fillRange(Ctx, *S.data<int32_t>(), *L.data<int32_t>(),
                     *D.data<int32_t>());
  case DType::I64:
    return fillRange(Ctx, *S.data<int64_t>(), *L.data<int64_t>(),
                     *D.data<int64_t>());
  default:
    return Ctx.error(llvm::Twine("unsupported element type ") +
                     dtypeName(S.dtype()));
  }
}

} // namespace ref
} // namespace solder
