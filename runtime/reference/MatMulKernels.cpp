//===- MatMulKernels.cpp - Reference MatMul and Gemm ----------------------===//
//
// MatMul with numpy semantics (1-D operands promoted then squeezed, batch
// dims broadcast) and Gemm (transA/transB, alpha, beta, C broadcast to the
// output). f32/f64 use OpenBLAS gemm, one call per batch, or a single call
// when B is shared by the whole batch; f16/bf16 are computed in f32 and
// rounded once; integer types use plain loops accumulating in 64 bits (the
// result wraps to the element type, as in ONNX Runtime).
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/ConvPoolUtils.h"

namespace solder {
namespace ref {

using namespace detail;

namespace {

/// Integer C = Alpha * op(A) * op(B) + Beta * C with 64-bit accumulation.
template <typename T>
void intGemm(bool TransA, bool TransB, int64_t M, int64_t N, int64_t K,
             int64_t Alpha, const T *A, int64_t Lda, const T *B, int64_t Ldb,
             int64_t Beta, T *C, int64_t Ldc) {
  for (int64_t I = 0; I < M; ++I)
    for (int64_t J = 0; J < N; ++J) {
      int64_t Acc = 0;
      for (int64_t L = 0; L < K; ++L) {
        int64_t AV = int64_t(TransA ? A[L * Lda + I] : A[I * Lda + L]);
        int64_t BV = int64_t(TransB ? B[J * Ldb + L] : B[L * Ldb + J]);
        Acc += AV * BV;
      }
      T &Out = C[I * Ldc + J];
      Out = T(Alpha * Acc + (Beta ? Beta * int64_t(Out) : 0));
    }
}

/// Offsets of each batch of an operand whose batch dims broadcast to Out.
llvm::SmallVector<int64_t, 8> batchOffsets(llvm::ArrayRef<int64_t> Batch,
                                           llvm::ArrayRef<int64_t> Out,
                                           int64_t MatrixSize) {
  unsigned R = Out.size();
  llvm::SmallVector<int64_t, 8> Strides(R, 0);
  int64_t S = MatrixSize;
  for (unsigned I = 0; I < Batch.size(); ++I) {
    unsigned OI = R - 1 - I, BI = Batch.size() - 1 - I;
    Strides[OI] = Batch[BI] == 1 ? 0 : S;
    S *= Batch[BI];
  }
  llvm::SmallVector<int64_t, 8> Offsets;
  int64_t Total = product(Out);
  Offsets.reserve(Total);
  llvm::SmallVector<int64_t, 8> Idx(R, 0);
  for (int64_t N = 0; N < Total; ++N) {
    int64_t Off = 0;
    for (unsigned I = 0; I < R; ++I)
      Off += Idx[I] * Strides[I];
    Offsets.push_back(Off);
    for (int I = int(R) - 1; I >= 0; --I) {
      if (++Idx[I] < Out[I])
        break;
      Idx[I] = 0;
    }
  }
  return Offsets;
}

struct MatMulProblem {
  int64_t M, N, K;
  llvm::SmallVector<int64_t, 8> AOff, BOff; // per output batch
  bool BShared;                             // every batch uses B's one matrix
  bool AContiguous;                         // A's batches are consecutive
};

template <typename T>
void runMatMul(const MatMulProblem &P, const T *A, const T *B, T *Y) {
  int64_t Batches = P.AOff.size();
  if (P.BShared && P.AContiguous) {
    gemm(false, false, Batches * P.M, P.N, P.K, T(1), A, P.K, B, P.N, T(0), Y,
         P.N);
    return;
  }
  for (int64_t I = 0; I < Batches; ++I)
    gemm(false, false, P.M, P.N, P.K, T(1), A + P.AOff[I], P.K, B + P.BOff[I],
         P.N, T(0), Y + I * P.M * P.N, P.N);
}

template <typename T>
void runIntMatMul(const MatMulProblem &P, const T *A, const T *B, T *Y) {
  for (size_t I = 0; I < P.AOff.size(); ++I)
    intGemm<T>(false, false, P.M, P.N, P.K, 1, A + P.AOff[I], P.K,
               B + P.BOff[I], P.N, 0, Y + I * P.M * P.N, P.N);
}

/// Calls Run with typed pointers to A, B (and C when present) and Y: f32/f64
/// natively, f16/bf16 through f32 buffers, integers with IntRun.
template <typename FloatFn, typename IntFn>
llvm::Error dispatchContraction(KernelContext &Ctx, const Tensor &A,
                                const Tensor &B, const Tensor *C, Tensor &Y,
                                FloatFn Run, IntFn IntRun) {
  DType T = A.dtype();
  if (B.dtype() != T || (C && C->dtype() != T))
    return Ctx.error("operands have different element types");
  switch (T) {
  case DType::F32:
    Run(A.data<float>(), B.data<float>(), C ? C->data<float>() : nullptr,
        Y.mutableData<float>());
    return llvm::Error::success();
  case DType::F64:
    Run(A.data<double>(), B.data<double>(), C ? C->data<double>() : nullptr,
        Y.mutableData<double>());
    return llvm::Error::success();
  case DType::F16:
  case DType::BF16: {
    std::vector<float> AS, BS, CS, YS(Y.numElements());
    Run(floatData(A, AS), floatData(B, BS), C ? floatData(*C, CS) : nullptr,
        YS.data());
    storeFloats(YS.data(), Y);
    return llvm::Error::success();
  }
#define SOLDER_INT_CASE(DT, CT)                                                \
  case DType::DT:                                                              \
    IntRun(A.data<CT>(), B.data<CT>(), C ? C->data<CT>() : nullptr,            \
           Y.mutableData<CT>());                                               \
    return llvm::Error::success();
    SOLDER_INT_CASE(I8, int8_t)
    SOLDER_INT_CASE(U8, uint8_t)
    SOLDER_INT_CASE(I16, int16_t)
    SOLDER_INT_CASE(U16, uint16_t)
    SOLDER_INT_CASE(I32, int32_t)
    SOLDER_INT_CASE(U32, uint32_t)
    SOLDER_INT_CASE(I64, int64_t)
    SOLDER_INT_CASE(U64, uint64_t)
#undef SOLDER_INT_CASE
  default:
    return Ctx.error(llvm::Twine("unsupported element type ") + dtypeName(T));
  }
}

} // namespace

llvm::Error evalMatMul(KernelContext &Ctx) {
  const Tensor &A = *Ctx.in(0), &B = *Ctx.in(1);
  if (A.rank() == 0 || B.rank() == 0)
    return Ctx.error("operands must have rank >= 1");
  llvm::SmallVector<int64_t, 6> AD(A.dims().begin(), A.dims().end());
  llvm::SmallVector<int64_t, 6> BD(B.dims().begin(), B.dims().end());
  bool AVec = AD.size() == 1, BVec = BD.size() == 1;
  if (AVec)
    AD.insert(AD.begin(), 1);
  if (BVec)
    BD.push_back(1);
  MatMulProblem P;
  P.M = AD[AD.size() - 2];
  P.K = AD.back();
  P.N = BD.back();
  if (BD[BD.size() - 2] != P.K)
    return Ctx.error("inner dims differ: " + llvm::Twine(P.K) + " vs " +
                     llvm::Twine(BD[BD.size() - 2]));
  llvm::ArrayRef<int64_t> ABatch = llvm::ArrayRef<int64_t>(AD).drop_back(2);
  llvm::ArrayRef<int64_t> BBatch = llvm::ArrayRef<int64_t>(BD).drop_back(2);
  unsigned BR = std::max(ABatch.size(), BBatch.size());
  llvm::SmallVector<int64_t, 6> OutBatch(BR, 1);
  for (unsigned I = 0; I < BR; ++I) {
    int64_t X = I < ABatch.size() ? ABatch[ABatch.size() - 1 - I] : 1;
    int64_t Z = I < BBatch.size() ? BBatch[BBatch.size() - 1 - I] : 1;
    if (X != Z && X != 1 && Z != 1)
      return Ctx.error("batch dims " + llvm::Twine(X) + " and " +
                       llvm::Twine(Z) + " do not broadcast");
    OutBatch[BR - 1 - I] = X == 1 ? Z : X;
  }
  P.AOff = batchOffsets(ABatch, OutBatch, P.M * P.K);
  P.BOff = batchOffsets(BBatch, OutBatch, P.K * P.N);
  P.BShared = product(BBatch) == 1;
  P.AContiguous = product(ABatch) == product(OutBatch);
  if (!fitsBlas(P.M * int64_t(P.AOff.size()), P.N, P.K))
    return Ctx.error("problem too large for BLAS");

  llvm::SmallVector<int64_t, 6> YDims(OutBatch.begin(), OutBatch.end());
  if (!AVec)
    YDims.push_back(P.M);
  if (!BVec)
    YDims.push_back(P.N);
  Tensor Y(A.dtype(), YDims);
  if (auto E = dispatchContraction(
          Ctx, A, B, nullptr, Y,
          [&](auto *AP, auto *BP, auto *, auto *YP) {
            runMatMul(P, AP, BP, YP);
          },
          [&](auto *AP, auto *BP, auto *, auto *YP) {
            runIntMatMul(P, AP, BP, YP);
          }))
    return E;
  Ctx.Results[0] = std::move(Y);
  return llvm::Error::success();
}

namespace {

/// Y = beta * C broadcast to M x N (unidirectional, numpy rules).
template <typename T>
void fillBroadcastC(const T *C, llvm::ArrayRef<int64_t> CD, int64_t M,
                    int64_t N, double Beta, T *Y) {
  int64_t CM = CD.size() == 2 ? CD[0] : 1;
  int64_t CN = CD.empty() ? 1 : CD.back();
  for (int64_t I = 0; I < M; ++I)
    for (int64_t J = 0; J < N; ++J)
      Y[I * N + J] =
          T(Beta * double(C[(CM == 1 ? 0 : I) * CN + (CN == 1 ? 0 : J)]));
}

} // namespace

llvm::Error evalGemm(KernelContext &Ctx) {
  const Tensor &A = *Ctx.in(0), &B = *Ctx.in(1);
  const Tensor *C = Ctx.in(2);
  if (A.rank() != 2 || B.rank() != 2)
    return Ctx.error("A and B must be 2-D");
  const AttrMap &At = Ctx.attrs();
  bool TA = At.getInt("transA", 0), TB = At.getInt("transB", 0);
  float Alpha = At.getFloat("alpha", 1.0f), Beta = At.getFloat("beta", 1.0f);
  int64_t M = TA ? A.dims()[1] : A.dims()[0];
  int64_t K = TA ? A.dims()[0] : A.dims()[1];
  int64_t KB = TB ? B.dims()[1] : B.dims()[0];
  int64_t N = TB ? B.dims()[0] : B.dims()[1];
  if (K != KB)
    return Ctx.error("inner dims differ: " + llvm::Twine(K) + " vs " +
                     llvm::Twine(KB));
  if (C) {
    llvm::ArrayRef<int64_t> CD = C->dims();
    bool Ok = CD.size() <= 2 &&
              (CD.empty() || CD.back() == 1 || CD.back() == N) &&
              (CD.size() < 2 || CD[0] == 1 || CD[0] == M);
    if (!Ok)
      return Ctx.error("C does not broadcast to [" + llvm::Twine(M) + "," +
                       llvm::Twine(N) + "]");
  }
  if (!fitsBlas(M, N, K))
    return Ctx.error("problem too large for BLAS");
  Tensor Y(A.dtype(), {M, N});
  int64_t Lda = A.dims()[1], Ldb = B.dims()[1];
  bool HasC = C && Beta != 0.0f;
  if (auto E = dispatchContraction(
          Ctx, A, B, C, Y,
          [&](auto *AP, auto *BP, auto *CP, auto *YP) {
            using T = std::remove_const_t<std::remove_pointer_t<decltype(AP)>>;
            if (HasC)
              fillBroadcastC(CP, C->dims(), M, N, double(Beta), YP);
            gemm(TA, TB, M, N, K, T(Alpha), AP, Lda, BP, Ldb, T(HasC ? 1 : 0),
                 YP, N);
          },
          [&](auto *AP, auto *BP, auto *CP, auto *YP) {
            if (HasC)
              fillBroadcastC(CP, C->dims(), M, N, 1.0, YP);
            intGemm(TA, TB, M, N, K, int64_t(Alpha), AP, Lda, BP, Ldb,
                    HasC ? int64_t(Beta) : 0, YP, N);
          }))
    return E;
  Ctx.Results[0] = std::move(Y);
  return llvm::Error::success();
}

} // namespace ref
} // namespace solder
