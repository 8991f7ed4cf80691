//===- ConvPoolUtils.h - Helpers of contraction/pool kernels ----*- C++ -*-===//
//
// Private to the reference kernels of contractions and pools: the geometry of
// a sliding window (Conv, ConvTranspose, MaxPool, AveragePool read the same
// auto_pad/pads/strides/dilations attributes), f32 views of 16-bit float
// tensors (f16/bf16 are computed in f32 and rounded once), and row-major
// gemm overloads over OpenBLAS for f32 and f64.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_REFERENCE_CONVPOOLUTILS_H
#define SOLDER_RUNTIME_REFERENCE_CONVPOOLUTILS_H

#include "runtime/reference/Kernels.h"
#include "llvm/ADT/SmallVector.h"
#include <cblas.h>
#include <climits>
#include <vector>

namespace solder {
namespace ref {
namespace detail {

/// Spatial geometry of a windowed op over the trailing dims of an NC... tensor.
struct WindowGeometry {
  llvm::SmallVector<int64_t, 3> In, Kernel, Stride, Dilation, PadBegin, PadEnd,
      Out;
  unsigned rank() const { return In.size(); }
  int64_t effectiveKernel(unsigned I) const {
    return (Kernel[I] - 1) * Dilation[I] + 1;
  }
};

/// Reads strides/dilations/pads/auto_pad of Ctx's node and computes the output
/// size of each spatial dim (ONNX Conv and pool rules). CeilMode applies to
/// explicit pads only, as in ONNX; windows that would start inside the end
/// padding are dropped.
inline llvm::Error computeWindow(KernelContext &Ctx,
                                 llvm::ArrayRef<int64_t> InSpatial,
                                 llvm::ArrayRef<int64_t> KernelShape,
                                 bool CeilMode, WindowGeometry &G) {
  const AttrMap &A = Ctx.attrs();
  unsigned R = InSpatial.size();
  if (KernelShape.size() != R)
    return Ctx.error("kernel_shape has " + llvm::Twine(KernelShape.size()) +
                     " dims, input has " + llvm::Twine(R) + " spatial dims");
  G.In.assign(InSpatial.begin(), InSpatial.end());
  G.Kernel.assign(KernelShape.begin(), KernelShape.end());
  std::vector<int64_t> Strides =
      A.getInts("strides", std::vector<int64_t>(R, 1));
  std::vector<int64_t> Dil = A.getInts("dilations", std::vector<int64_t>(R, 1));
  std::vector<int64_t> Pads = A.getInts("pads", std::vector<int64_t>(2 * R, 0));
  if (Strides.size() != R || Dil.size() != R || Pads.size() != 2 * R)
    return Ctx.error("strides/dilations/pads do not match " + llvm::Twine(R) +
                     " spatial dims");
  G.Stride.assign(Strides.begin(), Strides.end());
  G.Dilation.assign(Dil.begin(), Dil.end());
  G.PadBegin.assign(Pads.begin(), Pads.begin() + R);
  G.PadEnd.assign(Pads.begin() + R, Pads.end());
  G.Out.assign(R, 0);
  std::string AutoPad = A.getString("auto_pad", "NOTSET");
  for (unsigned I = 0; I < R; ++I) {
    if (G.Stride[I] < 1 || G.Dilation[I] < 1 || G.Kernel[I] < 1)
      return Ctx.error("kernel sizes, strides and dilations must be positive");
    int64_t EffK = G.effectiveKernel(I), S = G.Stride[I], In = G.In[I];
    if (AutoPad == "SAME_UPPER" || AutoPad == "SAME_LOWER") {
      G.Out[I] = (In + S - 1) / S;
      int64_t Total = std::max<int64_t>(0, (G.Out[I] - 1) * S + EffK - In);
      G.PadBegin[I] = AutoPad == "SAME_UPPER" ? Total / 2 : Total - Total / 2;
      G.PadEnd[I] = Total - G.PadBegin[I];
      continue;
    }
    if (AutoPad == "VALID") {
      G.PadBegin[I] = G.PadEnd[I] = 0;
    } else if (AutoPad != "NOTSET") {
      return Ctx.error("unknown auto_pad '" + AutoPad + "'");
    }
    int64_t Span = In + G.PadBegin[I] + G.PadEnd[I] - EffK;
    if (Span < 0)
      return Ctx.error("window of size " + llvm::Twine(EffK) +
                       " is larger than the padded input " +
                       llvm::Twine(In + G.PadBegin[I] + G.PadEnd[I]));
    G.Out[I] = (CeilMode ? (Span + S - 1) / S : Span / S) + 1;
    if (CeilMode && (G.Out[I] - 1) * S >= In + G.PadBegin[I])
      --G.Out[I];
  }
  return llvm::Error::success();
}

inline int64_t product(llvm::ArrayRef<int64_t> Dims) {
  int64_t P = 1;
  for (int64_t D : Dims)
    P *= D;
  return P;
}

/// Element data of an f32/f16/bf16 tensor as f32: a pointer into T for f32,
/// otherwise into Scratch after conversion.
inline const float *floatData(const Tensor &T, std::vector<float> &Scratch) {
  if (T.dtype() == DType::F32)
    return T.data<float>();
  int64_t N = T.numElements();
  Scratch.resize(N);
  const uint16_t *P = T.data<uint16_t>();
  if (T.dtype() == DType::F16)
    for (int64_t I = 0; I < N; ++I)
      Scratch[I] = halfToFloat(P[I]);
  else
    for (int64_t I = 0; I < N; ++I)
      Scratch[I] = bf16ToFloat(P[I]);
  return Scratch.data();
}

/// Rounds N floats into Dst, an f16 or bf16 tensor.
inline void storeFloats(const float *Src, Tensor &Dst) {
  int64_t N = Dst.numElements();
  uint16_t *P = Dst.mutableData<uint16_t>();
  if (Dst.dtype() == DType::F16)
    for (int64_t I = 0; I < N; ++I)
      P[I] = floatToHalf(Src[I]);
  else
    for (int64_t I = 0; I < N; ++I)
      P[I] = floatToBF16(Src[I]);
}

inline bool is16BitFloat(DType T) {
  return T == DType::F16 || T == DType::BF16;
}

/// True when every gemm dimension fits the BLAS integer type.
inline bool fitsBlas(int64_t M, int64_t N, int64_t K) {
  return M <= INT_MAX && N <= INT_MAX && K <= INT_MAX;
}

template <typename T>
inline void scaleRows(int64_t M, int64_t N, T Beta, T *C, int64_t Ldc) {
  for (int64_t I = 0; I < M; ++I)
    for (int64_t J = 0; J < N; ++J)
      C[I * Ldc + J] = Beta == T(0) ? T(0) : Beta * C[I * Ldc + J];
}

/// OpenBLAS runs single-threaded. The reference executor is the oracle, so
/// it must give the same answer on every machine: Debian 12's OpenBLAS
/// 0.3.21 gave wrong SGEMM results with 3 or more threads on the GPU
/// machine's 16-core Xeon (light ONNX models alexnet, resnet50, vgg19,
/// inception_v1; right with 1 or 2 threads). Callers parallelize across
/// tests or requests instead.
struct BlasApi {
  decltype(&::cblas_sgemm) Sgemm = nullptr;
  decltype(&::cblas_dgemm) Dgemm = nullptr;
};
/// Loads OpenBLAS on first use (BlasConfig.cpp); a missing library is a
/// fatal error naming it.
const BlasApi &blas();

/// Row-major C = Alpha * op(A) * op(B) + Beta * C.
inline void gemm(bool TransA, bool TransB, int64_t M, int64_t N, int64_t K,
                 float Alpha, const float *A, int64_t Lda, const float *B,
                 int64_t Ldb, float Beta, float *C, int64_t Ldc) {
  if (M == 0 || N == 0)
    return;
  if (K == 0) // BLAS rejects a zero leading dimension; C = Beta * C.
    return scaleRows(M, N, Beta, C, Ldc);
  blas().Sgemm(CblasRowMajor, TransA ? CblasTrans : CblasNoTrans,
               TransB ? CblasTrans : CblasNoTrans, M, N, K, Alpha, A, Lda, B,
               Ldb, Beta, C, Ldc);
}
inline void gemm(bool TransA, bool TransB, int64_t M, int64_t N, int64_t K,
                 double Alpha, const double *A, int64_t Lda, const double *B,
                 int64_t Ldb, double Beta, double *C, int64_t Ldc) {
  if (M == 0 || N == 0)
    return;
  if (K == 0)
    return scaleRows(M, N, Beta, C, Ldc);
  blas().Dgemm(CblasRowMajor, TransA ? CblasTrans : CblasNoTrans,
               TransB ? CblasTrans : CblasNoTrans, M, N, K, Alpha, A, Lda, B,
               Ldb, Beta, C, Ldc);
}

} // namespace detail
} // namespace ref
} // namespace solder

#endif
