//===- CudnnAttention.cpp - Attention as one cuDNN SDPA call --------------===//
#include "runtime/cuda/CudnnAttention.h"
#include "runtime/cuda/CudaSupport.h"
#include "runtime/cuda/DnnGraph.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"
#include <cstdint>
#include <cstring>
#include <limits>

using namespace llvm;

namespace solder {

std::string cudnnAttentionUnsupported(const AttentionConfig &C) {
  if (C.Elem != DType::F16 && C.Elem != DType::BF16)
    return "cuDNN's fused attention takes f16 or bf16, not " +
           dtypeName(C.Elem).str();
  if (C.HeadDim % 8 || C.VHeadDim % 8 || C.HeadDim > 256 || C.VHeadDim > 256)
    return "cuDNN's fused attention takes head dims that are multiples of 8 "
           "up to 256, not " +
           std::to_string(C.HeadDim) + " and " + std::to_string(C.VHeadDim);
  if (C.QHeads % C.KvHeads)
    return "query heads are not a multiple of key/value heads";
  for (const auto *St : {&C.QStrides, &C.KStrides, &C.VStrides, &C.OStrides})
    if ((*St)[3] != 1)
      return "a head's elements are not contiguous";
  // Base addresses must keep cuDNN's 16-byte alignment.
  for (const BufferRef *R : {&C.Q, &C.K, &C.V, &C.O})
    if (R->Offset % 16)
      return "an operand starts off a 16-byte boundary";
  if (C.HasBias && (C.BiasStrides[3] != 1 || C.Bias.Offset % 16))
    return "the mask is not contiguous along the keys";
  return "";
}

std::string attentionPlanKey(const AttentionConfig &C) {
  std::string K = dtypeName(C.Elem).str() + "/" + dtypeName(C.BiasElem).str();
  for (int64_t X : {C.Batch, C.QHeads, C.KvHeads, C.QLen, C.KvLen, C.HeadDim,
                    C.VHeadDim, int64_t(C.Causal), int64_t(C.HasBias)})
    K += " " + std::to_string(X);
  for (const auto *St : {&C.QStrides, &C.KStrides, &C.VStrides, &C.OStrides,
                         &C.BiasDims, &C.BiasStrides})
    for (int64_t X : *St)
      K += " " + std::to_string(X);
  uint32_t Bits;
  static_assert(sizeof(Bits) == sizeof(C.Scale), "float scale");
  std::memcpy(&Bits, &C.Scale, sizeof(Bits));
  return K + " " + std::to_string(Bits);
}

std::string attentionLabel(const Plan &P, size_t Index) {
  for (const PlanStep &S : P.Steps)
    if (S.K == PlanStep::Kind::Attention && S.Index == Index)
      return S.Label;
  return "attention call " + std::to_string(Index);
}

namespace {

// Unique ids of the tensors the caller binds.
enum : int64_t { UidQ = 1, UidK, UidV, UidO, UidBias, UidScale, UidMasked };

/// Packed strides of Dims.
std::vector<int64_t> packed(ArrayRef<int64_t> Dims) {
  std::vector<int64_t> S(Dims.size(), 1);
  for (size_t I = Dims.size() - 1; I-- > 0;)
    S[I] = S[I + 1] * Dims[I + 1];
  return S;
}

/// The operation graph of C on H, its mask described with BiasDims (a
/// broadcast dim of size 1) or, with FullBiasDims, over the full
/// [B, H, Sq, Sk] with stride 0 where it broadcasts: engines differ in
/// which they take.
Expected<cudnnBackendDescriptor_t> buildGraph(GraphBuilder &G,
                                              const AttentionConfig &C,
                                              cudnnHandle_t H,
                                              bool FullBiasDims) {
  cudnnDataType_t Io = dnnType(C.Elem), F = CUDNN_DATA_FLOAT;
  int64_t B = C.Batch, Hq = C.QHeads, Hk = C.KvHeads, Sq = C.QLen, Sk = C.KvLen,
          D = C.HeadDim, Dv = C.VHeadDim;
  auto Q = G.tensor(UidQ, Io, {B, Hq, Sq, D},
                    {C.QStrides[0], C.QStrides[1], C.QStrides[2], 1}, false);
  // K read transposed: [b, h, d, s].
  auto Kt = G.tensor(UidK, Io, {B, Hk, D, Sk},
                     {C.KStrides[0], C.KStrides[1], 1, C.KStrides[2]}, false);
  auto V = G.tensor(UidV, Io, {B, Hk, Sk, Dv},
                    {C.VStrides[0], C.VStrides[1], C.VStrides[2], 1}, false);
  auto O = G.tensor(UidO, Io, {B, Hq, Sq, Dv},
                    {C.OStrides[0], C.OStrides[1], C.OStrides[2], 1}, false);
  auto Scale = G.tensor(UidScale, F, {1, 1, 1, 1}, {1, 1, 1, 1}, false,
                        /*ByValue=*/true);
  for (auto *T : {&Q, &Kt, &V, &O, &Scale})
    if (!*T)
      return T->takeError();
  std::vector<int64_t> SDims = {B, Hq, Sq, Sk}, SStr = packed(SDims);
  std::vector<int64_t> RDims = {B, Hq, Sq, 1}, RStr = packed(RDims);
  int64_t Next = 100;
  auto Virtual = [&](cudnnDataType_t T, bool Row = false) {
    return G.tensor(Next++, T, Row ? RDims : SDims, Row ? RStr : SStr, true);
  };
  auto S = Virtual(F);
  if (!S)
    return S.takeError();
  if (Error E = G.matmul(*Q, *Kt, *S))
    return std::move(E);
  auto Scaled = Virtual(F);
  if (!Scaled)
    return Scaled.takeError();
  if (Error E = G.pointwise(CUDNN_POINTWISE_MUL, *S, *Scale, nullptr, *Scaled))
    return std::move(E);
  cudnnBackendDescriptor_t Last = *Scaled;
  if (C.HasBias) {
    std::vector<int64_t> Dims(C.BiasDims.begin(), C.BiasDims.end());
    std::vector<int64_t> Str(C.BiasStrides.begin(), C.BiasStrides.end());
    if (FullBiasDims) {
      Dims = SDims;
      for (int I = 0; I < 4; ++I)
        if (C.BiasDims[I] == 1 && SDims[I] != 1)
          Str[I] = 0;
    }
    auto Bias = G.tensor(UidBias, dnnType(C.BiasElem), Dims, Str, false);
    auto Biased = Virtual(F);
    if (!Bias)
      return Bias.takeError();
    if (!Biased)
      return Biased.takeError();
    if (Error E =
            G.pointwise(CUDNN_POINTWISE_ADD, Last, *Bias, nullptr, *Biased))
      return std::move(E);
    Last = *Biased;
  }
  if (C.Causal) {
    auto Row = Virtual(CUDNN_DATA_INT32), Col = Virtual(CUDNN_DATA_INT32);
    auto Keep = Virtual(CUDNN_DATA_BOOLEAN), Masked = Virtual(F);
    auto Fill = G.tensor(UidMasked, F, {1, 1, 1, 1}, {1, 1, 1, 1}, false,
                         /*ByValue=*/true);
    for (auto *T : {&Row, &Col, &Keep, &Masked, &Fill})
      if (!*T)
        return T->takeError();
    if (Error E = G.pointwise(CUDNN_POINTWISE_GEN_INDEX, Last, nullptr, nullptr,
                              *Row, F, 2))
      return std::move(E);
    if (Error E = G.pointwise(CUDNN_POINTWISE_GEN_INDEX, Last, nullptr, nullptr,
                              *Col, F, 3))
      return std::move(E);
    if (Error E = G.pointwise(CUDNN_POINTWISE_CMP_GE, *Row, *Col, nullptr,
                              *Keep, CUDNN_DATA_BOOLEAN))
      return std::move(E);
    if (Error E = G.pointwise(CUDNN_POINTWISE_BINARY_SELECT, Last, *Fill, *Keep,
                              *Masked))
      return std::move(E);
    Last = *Masked;
  }
  // Softmax over the keys, as the engines' pattern has it.
  auto Max = Virtual(F, true), Sub = Virtual(F), Exp = Virtual(F),
       Sum = Virtual(F, true), Log = Virtual(F, true), Stats = Virtual(F, true);
  auto P = Virtual(Io);
  for (auto *T : {&Max, &Sub, &Exp, &Sum, &Log, &Stats, &P})
    if (!*T)
      return T->takeError();
  if (Error E = G.reduction(CUDNN_REDUCE_TENSOR_MAX, Last, *Max))
    return std::move(E);
  if (Error E = G.pointwise(CUDNN_POINTWISE_SUB, Last, *Max, nullptr, *Sub))
    return std::move(E);
  if (Error E = G.pointwise(CUDNN_POINTWISE_EXP, *Sub, nullptr, nullptr, *Exp))
    return std::move(E);
  if (Error E = G.reduction(CUDNN_REDUCE_TENSOR_ADD, *Exp, *Sum))
    return std::move(E);
  if (Error E = G.pointwise(CUDNN_POINTWISE_LOG, *Sum, nullptr, nullptr, *Log))
    return std::move(E);
  if (Error E = G.pointwise(CUDNN_POINTWISE_ADD, *Max, *Log, nullptr, *Stats))
    return std::move(E);
  if (Error E = G.pointwise(CUDNN_POINTWISE_DIV, *Exp, *Sum, nullptr, *P))
    return std::move(E);
  if (Error E = G.matmul(*P, *V, *O))
    return std::move(E);

  return finishGraph(G, H, "finalizing the attention graph");
}

} // namespace

Error AttentionCall::init(const AttentionConfig &C, cudnnHandle_t H) {
  Config = &C;
  Scale = C.Scale;
  MaskedScore = std::numeric_limits<float>::lowest();
  if (std::string Why = cudnnAttentionUnsupported(C); !Why.empty())
    return createStringError(inconvertibleErrorCode(), Why);
  std::string Failures;
  // Described with the mask's own broadcast dims first, then with full dims
  // and zero strides.
  for (bool Full : {false, true}) {
    if (Full && !C.HasBias)
      break;
    GraphBuilder G;
    Expected<cudnnBackendDescriptor_t> Ops = buildGraph(G, C, H, Full);
    int64_t EngineId = -1;
    Expected<DnnDescriptor> Plan =
        Ops ? planFor(G, *Ops, H, EngineId)
            : Expected<DnnDescriptor>(Ops.takeError());
    if (!Plan) {
      Failures += (Failures.empty() ? "" : "; ") + toString(Plan.takeError());
      continue;
    }
    Graph = std::move(G.Owned);
    ExecPlan = std::move(*Plan);
    Expected<size_t> Ws = planWorkspace(ExecPlan.get());
    if (!Ws)
      return Ws.takeError();
    Workspace = *Ws;
    Description = "cuDNN SDPA (engine " + std::to_string(EngineId) + ")";
    return Error::success();
  }
  return createStringError(inconvertibleErrorCode(),
                           "cuDNN cannot run this attention: " + Failures);
}

Error AttentionCall::enqueue(cudnnHandle_t H, const void *Q, const void *K,
                             const void *V, const void *Bias, void *O,
                             void *Ws) const {
  std::vector<int64_t> Uids = {UidQ, UidK, UidV, UidO, UidScale};
  std::vector<void *> Ptrs = {const_cast<void *>(Q), const_cast<void *>(K),
                              const_cast<void *>(V), O,
                              const_cast<float *>(&Scale)};
  if (Config->HasBias) {
    Uids.push_back(UidBias);
    Ptrs.push_back(const_cast<void *>(Bias));
  }
  if (Config->Causal) {
    Uids.push_back(UidMasked);
    Ptrs.push_back(const_cast<float *>(&MaskedScore));
  }
  return executePlan(H, ExecPlan.get(), Uids, Ptrs, Ws, "cuDNN attention");
}

} // namespace solder
