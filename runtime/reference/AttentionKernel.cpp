//===- AttentionKernel.cpp - Reference Attention --------------------------===//
//
// softmax(scale * q . k + mask) . v for every (batch, head, query), in
// double, with the indexing of ir/AttentionSpec.h. Masked-out keys (causal,
// or a false bool mask) take no part; a query with no key left gives zeros.
// An additive mask is added as is, so a finite "-inf" (-3.4e38, -65504)
// behaves as in the unfused graph: a row masked entirely becomes uniform.
//
//===----------------------------------------------------------------------===//
#include "ir/AttentionSpec.h"
#include "runtime/reference/KernelUtils.h"
#include <cmath>
#include <limits>
#include <vector>

namespace solder {
namespace ref {

llvm::Error evalAttention(KernelContext &Ctx) {
  const Tensor *Q = Ctx.in(0), *K = Ctx.in(1), *V = Ctx.in(2), *M = Ctx.in(3);
  if (!Q || !K || !V)
    return Ctx.error("needs Q, K and V");
  if (K->dtype() != Q->dtype() || V->dtype() != Q->dtype())
    return Ctx.error("Q, K and V must have one type");
  if (M && M->dtype() != DType::Bool && M->dtype() != Q->dtype() &&
      M->dtype() != DType::F32)
    return Ctx.error("the mask must be bool, f32 or Q's type");
  AttentionOperandDims Dims;
  Dims.Q.assign(Q->dims().begin(), Q->dims().end());
  Dims.K.assign(K->dims().begin(), K->dims().end());
  Dims.V.assign(V->dims().begin(), V->dims().end());
  if (M) {
    Dims.HasMask = true;
    Dims.BoolMask = M->dtype() == DType::Bool;
    Dims.Mask.assign(M->dims().begin(), M->dims().end());
  }
  llvm::Expected<AttentionSpec> SOr = resolveAttention(Ctx.N, Dims);
  if (!SOr)
    return SOr.takeError();
  const AttentionSpec &S = *SOr;
  auto QS = S.strides(S.QHeads, S.QLen, S.HeadDim);
  auto KS = S.strides(S.KvHeads, S.KvLen, S.HeadDim);
  auto VS = S.strides(S.KvHeads, S.KvLen, S.VHeadDim);
  auto OS = S.outStrides();
  llvm::SmallVector<int64_t, 4> OutDims;
  if (S.ThreeD)
    OutDims = {S.Batch, S.QLen, S.QHeads * S.VHeadDim};
  else
    OutDims = {S.Batch, S.QHeads, S.QLen, S.VHeadDim};
  int64_t Group = S.QHeads / S.KvHeads;

  return visitDType<dtypes::Float>(Ctx, Q->dtype(), [&](auto Tag) {
    using Tr = TraitsOf<decltype(Tag)>;
    using St = typename Tr::Storage;
    using C = typename Tr::Compute;
    const St *QD = Q->data<St>(), *KD = K->data<St>(), *VD = V->data<St>();
    Tensor Y(Q->dtype(), OutDims);
    St *YD = Y.mutableData<St>();
    std::vector<double> Score(S.KvLen), Acc(S.VHeadDim);
    std::vector<char> Keep(S.KvLen);
    for (int64_t B = 0; B < S.Batch; ++B)
      for (int64_t H = 0; H < S.QHeads; ++H)
        for (int64_t I = 0; I < S.QLen; ++I) {
          int64_t KvH = H / Group;
          double Max = -std::numeric_limits<double>::infinity();
          for (int64_t J = 0; J < S.KvLen; ++J) {
            bool In = !S.Causal || J <= I;
            int64_t MI = B * S.MaskStrides[0] + H * S.MaskStrides[1] +
                         I * S.MaskStrides[2] + J * S.MaskStrides[3];
            if (M && S.Mask == AttentionSpec::MaskKind::Bool)
              In = In && M->data<uint8_t>()[MI] != 0;
            Keep[J] = In;
            if (!In)
              continue;
            double Dot = 0;
            for (int64_t D = 0; D < S.HeadDim; ++D)
              Dot +=
                  double(Tr::load(QD[B * QS[0] + H * QS[1] + I * QS[2] + D])) *
                  double(Tr::load(KD[B * KS[0] + KvH * KS[1] + J * KS[2] + D]));
            double X = Dot * S.Scale;
            if (M && S.Mask == AttentionSpec::MaskKind::Additive)
              X += M->dtype() == DType::F32
                       ? double(M->data<float>()[MI])
                       : double(Tr::load(M->data<St>()[MI]));
            Score[J] = X;
            Max = std::max(Max, X);
          }
          double Sum = 0;
          for (int64_t J = 0; J < S.KvLen; ++J)
            if (Keep[J]) {
              // exp(-inf - -inf) would be NaN: a row whose scores are all
              // -inf has no weight left, like a row with no key.
              Score[J] = std::isinf(Max) ? 0.0 : std::exp(Score[J] - Max);
              Sum += Score[J];
            }
          std::fill(Acc.begin(), Acc.end(), 0.0);
          for (int64_t J = 0; J < S.KvLen; ++J) {
            if (!Keep[J] || Score[J] == 0)
              continue;
            for (int64_t D = 0; D < S.VHeadDim; ++D)
              Acc[D] +=
                  Score[J] *
                  double(Tr::load(VD[B * VS[0] + KvH * VS[1] + J * VS[2] + D]));
          }
          for (int64_t D = 0; D < S.VHeadDim; ++D)
            YD[B * OS[0] + H * OS[1] + I * OS[2] + D] =
                Tr::store(C(Sum > 0 ? Acc[D] / Sum : 0.0));
        }
    Ctx.Results[0] = std::move(Y);
    return llvm::Error::success();
  });
}

} // namespace ref
} // namespace solder
