//===- PoolKernels.cpp - Reference pools and LRN --------------------------===//
//
// MaxPool (with the optional Indices result), AveragePool, the global pools
// and LRN over NC... tensors with 1 to 3 spatial dims. Windows share
// Conv's geometry (ConvPoolUtils.h); 1-D and 2-D pools run as 3-D ones with
// leading unit dims. Padding never contributes a value: MaxPool ignores it
// and AveragePool only counts it in the divisor under count_include_pad.
// f16/bf16 are computed in f32 and rounded once.
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/ConvPoolUtils.h"
#include <cmath>
#include <limits>

namespace solder {
namespace ref {

using namespace detail;

namespace {

/// Pads G with leading unit spatial dims up to 3.
void padWindowTo3D(WindowGeometry &G) {
  while (G.rank() < 3) {
    G.In.insert(G.In.begin(), 1);
    G.Kernel.insert(G.Kernel.begin(), 1);
    G.Stride.insert(G.Stride.begin(), 1);
    G.Dilation.insert(G.Dilation.begin(), 1);
    G.PadBegin.insert(G.PadBegin.begin(), 0);
    G.PadEnd.insert(G.PadEnd.begin(), 0);
    G.Out.insert(G.Out.begin(), 1);
  }
}

/// Checks X and reads the window of a MaxPool/AveragePool node; YDims gets
/// the output shape, G the 3-D geometry.
llvm::Error readPool(KernelContext &Ctx, WindowGeometry &G,
                     llvm::SmallVectorImpl<int64_t> &YDims) {
  const Tensor &X = *Ctx.in(0);
  if (X.rank() < 3 || X.rank() > 5)
    return Ctx.error("expects 1 to 3 spatial dims, X has rank " +
                     llvm::Twine(X.rank()));
  std::vector<int64_t> K = Ctx.attrs().getInts("kernel_shape");
  if (K.empty())
    return Ctx.error("missing kernel_shape");
  if (auto E = computeWindow(Ctx, X.dims().drop_front(2), K,
                             Ctx.attrs().getInt("ceil_mode", 0) != 0, G))
    return E;
  YDims.assign({X.dims()[0], X.dims()[1]});
  YDims.append(G.Out.begin(), G.Out.end());
  padWindowTo3D(G);
  return llvm::Error::success();
}

/// Visits every output position of one NC plane: Fn(OutIndex, Start[3])
/// where Start is the window origin (may be negative, inside the padding).
template <typename Fn> void forEachWindow(const WindowGeometry &G, Fn F) {
  int64_t O = 0;
  for (int64_t A = 0; A < G.Out[0]; ++A)
    for (int64_t B = 0; B < G.Out[1]; ++B)
      for (int64_t C = 0; C < G.Out[2]; ++C) {
        int64_t Start[3] = {A * G.Stride[0] - G.PadBegin[0],
                            B * G.Stride[1] - G.PadBegin[1],
                            C * G.Stride[2] - G.PadBegin[2]};
        F(O++, Start);
      }
}

template <typename T>
void runMaxPool(const WindowGeometry &G, int64_t Planes, bool ColumnMajor,
                const T *X, T *Y, int64_t *Indices) {
  const int64_t I0 = G.In[0], I1 = G.In[1], I2 = G.In[2];
  int64_t InSz = I0 * I1 * I2, OutSz = product(G.Out);
  for (int64_t P = 0; P < Planes; ++P) {
    const T *XP = X + P * InSz;
    forEachWindow(G, [&](int64_t O, const int64_t *S) {
      T Best = std::numeric_limits<T>::lowest();
      if (std::numeric_limits<T>::has_infinity)
        Best = -std::numeric_limits<T>::infinity();
      int64_t BestIdx = -1;
      for (int64_t K0 = 0; K0 < G.Kernel[0]; ++K0) {
        int64_t P0 = S[0] + K0 * G.Dilation[0];
        if (P0 < 0 || P0 >= I0)
          continue;
        for (int64_t K1 = 0; K1 < G.Kernel[1]; ++K1) {
          int64_t P1 = S[1] + K1 * G.Dilation[1];
          if (P1 < 0 || P1 >= I1)
            continue;
          for (int64_t K2 = 0; K2 < G.Kernel[2]; ++K2) {
            int64_t P2 = S[2] + K2 * G.Dilation[2];
            if (P2 < 0 || P2 >= I2)
              continue;
            int64_t Idx = (P0 * I1 + P1) * I2 + P2;
            if (BestIdx < 0 || XP[Idx] > Best) {
              Best = XP[Idx];
              BestIdx = ColumnMajor ? P0 + (P1 + P2 * I1) * I0 : Idx;
            }
          }
        }
      }
      Y[P * OutSz + O] = Best;
      if (Indices)
        Indices[P * OutSz + O] = P * InSz + std::max<int64_t>(BestIdx, 0);
    });
  }
}

/// Number of taps at Start + k*Dil (k < Kernel) inside [Lo, Hi).
int64_t tapsInside(int64_t Start, int64_t Kernel, int64_t Dil, int64_t Lo,
                   int64_t Hi) {
  int64_t N = 0;
  for (int64_t K = 0; K < Kernel; ++K) {
    int64_t P = Start + K * Dil;
    N += P >= Lo && P < Hi;
  }
  return N;
}

template <typename T>
void runAveragePool(const WindowGeometry &G, int64_t Planes, bool IncludePad,
                    const T *X, T *Y) {
  const int64_t I0 = G.In[0], I1 = G.In[1], I2 = G.In[2];
  int64_t InSz = I0 * I1 * I2, OutSz = product(G.Out);
  for (int64_t P = 0; P < Planes; ++P) {
    const T *XP = X + P * InSz;
    forEachWindow(G, [&](int64_t O, const int64_t *S) {
      double Sum = 0;
      for (int64_t K0 = 0; K0 < G.Kernel[0]; ++K0) {
        int64_t P0 = S[0] + K0 * G.Dilation[0];
        if (P0 < 0 || P0 >= I0)
          continue;
        for (int64_t K1 = 0; K1 < G.Kernel[1]; ++K1) {
          int64_t P1 = S[1] + K1 * G.Dilation[1];
          if (P1 < 0 || P1 >= I1)
            continue;
          const T *Row = XP + (P0 * I1 + P1) * I2;
          for (int64_t K2 = 0; K2 < G.Kernel[2]; ++K2) {
            int64_t P2 = S[2] + K2 * G.Dilation[2];
            if (P2 >= 0 && P2 < I2)
              Sum += double(Row[P2]);
          }
        }
      }
      int64_t Count = 1;
      for (unsigned D = 0; D < 3; ++D)
        Count *= IncludePad
                     ? tapsInside(S[D], G.Kernel[D], G.Dilation[D],
                                  -G.PadBegin[D], G.In[D] + G.PadEnd[D])
                     : tapsInside(S[D], G.Kernel[D], G.Dilation[D], 0, G.In[D]);
      Y[P * OutSz + O] = Count ? T(Sum / double(Count)) : T(0);
    });
  }
}

/// Runs Fn(const T *X, T *Y) on X's data: f32/f64 (and, when AllowInt, i8
/// and u8) natively, f16/bf16 through f32 buffers.
template <typename Fn>
llvm::Error dispatchPool(KernelContext &Ctx, const Tensor &X, Tensor &Y,
                         bool AllowInt, Fn Run) {
  switch (X.dtype()) {
  case DType::F32:
    Run(X.data<float>(), Y.mutableData<float>());
    return llvm::Error::success();
  case DType::F64:
    Run(X.data<double>(), Y.mutableData<double>());
    return llvm::Error::success();
  case DType::F16:
  case DType::BF16: {
    std::vector<float> XS, YS(Y.numElements());
    Run(floatData(X, XS), YS.data());
    storeFloats(YS.data(), Y);
    return llvm::Error::success();
  }
  case DType::I8:
    if (!AllowInt)
      break;
    Run(X.data<int8_t>(), Y.mutableData<int8_t>());
    return llvm::Error::success();
  case DType::U8:
    if (!AllowInt)
      break;
    Run(X.data<uint8_t>(), Y.mutableData<uint8_t>());
    return llvm::Error::success();
  default:
    break;
  }
  return Ctx.error(llvm::Twine("unsupported element type ") +
                   dtypeName(X.dtype()));
}

} // namespace

llvm::Error evalMaxPool(KernelContext &Ctx) {
  WindowGeometry G;
  llvm::SmallVector<int64_t, 5> YDims;
  if (auto E = readPool(Ctx, G, YDims))
    return E;
  const Tensor &X = *Ctx.in(0);
  int64_t StorageOrder = Ctx.attrs().getInt("storage_order", 0);
  if (StorageOrder != 0 && StorageOrder != 1)
    return Ctx.error("storage_order must be 0 or 1");
  Tensor Y(X.dtype(), YDims);
  bool WantIndices = Ctx.Results.size() > 1 && Ctx.N.result(1);
  Tensor Indices;
  if (WantIndices)
    Indices = Tensor(DType::I64, YDims);
  int64_t Planes = YDims[0] * YDims[1];
  if (auto E = dispatchPool(
          Ctx, X, Y, /*AllowInt=*/true, [&](const auto *XP, auto *YP) {
            runMaxPool(G, Planes, StorageOrder == 1, XP, YP,
                       WantIndices ? Indices.mutableData<int64_t>() : nullptr);
          }))
    return E;
  Ctx.Results[0] = std::move(Y);
  if (WantIndices)
    Ctx.Results[1] = std::move(Indices);
  return llvm::Error::success();
}

llvm::Error evalAveragePool(KernelContext &Ctx) {
  WindowGeometry G;
  llvm::SmallVector<int64_t, 5> YDims;
  if (auto E = readPool(Ctx, G, YDims))
    return E;
  const Tensor &X = *Ctx.in(0);
  bool IncludePad = Ctx.attrs().getInt("count_include_pad", 0) != 0;
  Tensor Y(X.dtype(), YDims);
  int64_t Planes = YDims[0] * YDims[1];
  if (auto E = dispatchPool(Ctx, X, Y, /*AllowInt=*/false,
                            [&](const auto *XP, auto *YP) {
                              runAveragePool(G, Planes, IncludePad, XP, YP);
                            }))
    return E;
  Ctx.Results[0] = std::move(Y);
  return llvm::Error::success();
}

namespace {

/// GlobalAveragePool / GlobalMaxPool: one value per NC plane.
llvm::Error evalGlobalPool(KernelContext &Ctx, bool IsMax) {
  const Tensor &X = *Ctx.in(0);
  if (X.rank() < 2)
    return Ctx.error("expects rank >= 2, got " + llvm::Twine(X.rank()));
  llvm::SmallVector<int64_t, 5> YDims(X.dims().begin(), X.dims().end());
  std::fill(YDims.begin() + 2, YDims.end(), 1);
  int64_t Planes = X.dims()[0] * X.dims()[1];
  int64_t Size = product(X.dims().drop_front(2));
  if (Size == 0)
    return Ctx.error("empty spatial dims");
  Tensor Y(X.dtype(), YDims);
  auto Run = [&](const auto *XP, auto *YP) {
    using T = std::remove_reference_t<decltype(*YP)>;
    for (int64_t P = 0; P < Planes; ++P) {
      const T *Row = XP + P * Size;
      if (IsMax) {
        T M = Row[0];
        for (int64_t I = 1; I < Size; ++I)
          M = Row[I] > M ? Row[I] : M;
        YP[P] = M;
      } else {
        double S = 0;
        for (int64_t I = 0; I < Size; ++I)
          S += double(Row[I]);
        YP[P] = T(S / double(Size));
      }
    }
  };
  if (auto E = dispatchPool(Ctx, X, Y, /*AllowInt=*/false, Run))
    return E;
  Ctx.Results[0] = std::move(Y);
  return llvm::Error::success();
}

} // namespace

llvm::Error evalGlobalAveragePool(KernelContext &Ctx) {
  return evalGlobalPool(Ctx, /*IsMax=*/false);
}

llvm::Error evalGlobalMaxPool(KernelContext &Ctx) {
  return evalGlobalPool(Ctx, /*IsMax=*/true);
}

llvm::Error evalLRN(KernelContext &Ctx) {
  const Tensor &X = *Ctx.in(0);
  if (X.rank() < 2)
    return Ctx.error("expects rank >= 2, got " + llvm::Twine(X.rank()));
  const AttrMap &A = Ctx.attrs();
  double Alpha = A.getFloat("alpha", 1e-4f), Beta = A.getFloat("beta", 0.75f),
         Bias = A.getFloat("bias", 1.0f);
  int64_t Size = A.getInt("size", 0);
  if (Size < 1)
    return Ctx.error("size must be positive");
  int64_t N = X.dims()[0], C = X.dims()[1];
  int64_t Spatial = product(X.dims().drop_front(2));
  // The window of channel c is [c - floor((size-1)/2), c + ceil((size-1)/2)].
  int64_t Before = (Size - 1) / 2, After = Size - 1 - Before;
  Tensor Y(X.dtype(), X.dims());
  auto Run = [&](const auto *XP, auto *YP) {
    using T = std::remove_reference_t<decltype(*YP)>;
    std::vector<double> Sq(Spatial);
    for (int64_t I = 0; I < N; ++I)
      for (int64_t Ch = 0; Ch < C; ++Ch) {
        std::fill(Sq.begin(), Sq.end(), 0.0);
        int64_t Lo = std::max<int64_t>(0, Ch - Before);
        int64_t Hi = std::min<int64_t>(C - 1, Ch + After);
        for (int64_t J = Lo; J <= Hi; ++J) {
          const T *Row = XP + (I * C + J) * Spatial;
          for (int64_t S = 0; S < Spatial; ++S)
            Sq[S] += double(Row[S]) * double(Row[S]);
        }
        const T *In = XP + (I * C + Ch) * Spatial;
        T *Out = YP + (I * C + Ch) * Spatial;
        for (int64_t S = 0; S < Spatial; ++S)
          Out[S] = T(double(In[S]) /
                     std::pow(Bias + Alpha / double(Size) * Sq[S], Beta));
      }
  };
  if (auto E = dispatchPool(Ctx, X, Y, /*AllowInt=*/false, Run))
    return E;
  Ctx.Results[0] = std::move(Y);
  return llvm::Error::success();
}

} // namespace ref
} // namespace solder
