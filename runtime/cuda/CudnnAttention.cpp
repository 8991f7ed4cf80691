//===- CudnnAttention.cpp - Attention as one cuDNN SDPA call --------------===//
#include "runtime/cuda/CudnnAttention.h"
#include "runtime/cuda/CudaSupport.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Twine.h"
#include <cstdint>
#include <cstring>
#include <limits>

using namespace llvm;

namespace solder {

DnnDescriptor &DnnDescriptor::operator=(DnnDescriptor &&O) noexcept {
  if (this != &O) {
    if (D)
      cudaLibs().cudnnBackendDestroyDescriptor(D);
    D = O.D;
    O.D = nullptr;
  }
  return *this;
}

DnnDescriptor::~DnnDescriptor() {
  if (D)
    cudaLibs().cudnnBackendDestroyDescriptor(D);
}

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

/// The message of a failed cuDNN call, with cuDNN's own last error text.
Error dnnError(cudnnStatus_t S, const Twine &What) {
  char Detail[512] = {0};
  cudaLibs().cudnnGetLastErrorString(Detail, sizeof(Detail));
  std::string Msg = (What + ": " + cudaLibs().cudnnGetErrorString(S)).str();
  if (Detail[0])
    Msg += std::string(" (") + Detail + ")";
  return createStringError(inconvertibleErrorCode(), Msg);
}

#define SOLDER_DNN_TRY(Expr, What)                                             \
  do {                                                                         \
    cudnnStatus_t Status_ = (Expr);                                            \
    if (Status_ != CUDNN_STATUS_SUCCESS)                                       \
      return dnnError(Status_, What);                                          \
  } while (0)

cudnnDataType_t dnnType(DType T) {
  return T == DType::BF16  ? CUDNN_DATA_BFLOAT16
         : T == DType::F32 ? CUDNN_DATA_FLOAT
                           : CUDNN_DATA_HALF;
}

/// Builds the descriptors of one operation graph, keeping every one alive
/// until the builder goes (the graph and plan refer to them).
class GraphBuilder {
public:
  std::vector<DnnDescriptor> Owned;

  Expected<cudnnBackendDescriptor_t> create(cudnnBackendDescriptorType_t T) {
    cudnnBackendDescriptor_t D = nullptr;
    SOLDER_DNN_TRY(cudaLibs().cudnnBackendCreateDescriptor(T, &D),
                   "creating a cuDNN descriptor");
    Owned.emplace_back(D);
    return D;
  }
  static Error set(cudnnBackendDescriptor_t D, cudnnBackendAttributeName_t A,
                   cudnnBackendAttributeType_t T, int64_t N, const void *V) {
    SOLDER_DNN_TRY(cudaLibs().cudnnBackendSetAttribute(D, A, T, N, V),
                   "setting cuDNN attribute " + Twine(int(A)));
    return Error::success();
  }
  static Error finalize(cudnnBackendDescriptor_t D, const Twine &What) {
    SOLDER_DNN_TRY(cudaLibs().cudnnBackendFinalize(D), What);
    return Error::success();
  }

  /// A tensor of dims [n0..n3]; virtual ones live only inside the engine.
  Expected<cudnnBackendDescriptor_t>
  tensor(int64_t Uid, cudnnDataType_t T, ArrayRef<int64_t> Dims,
         ArrayRef<int64_t> Strides, bool Virtual, bool ByValue = false) {
    Expected<cudnnBackendDescriptor_t> D =
        create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    if (!D)
      return D.takeError();
    int64_t Align = 16;
    bool V = Virtual, B = ByValue;
    if (Error E =
            set(*D, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &T))
      return std::move(E);
    if (Error E = set(*D, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64,
                      Dims.size(), Dims.data()))
      return std::move(E);
    if (Error E = set(*D, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64,
                      Strides.size(), Strides.data()))
      return std::move(E);
    if (Error E =
            set(*D, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &Uid))
      return std::move(E);
    if (Error E = set(*D, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
                      &Align))
      return std::move(E);
    if (Error E =
            set(*D, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &V))
      return std::move(E);
    if (ByValue)
      if (Error E =
              set(*D, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &B))
        return std::move(E);
    if (Error E = finalize(*D, "finalizing tensor " + Twine(Uid)))
      return std::move(E);
    return D;
  }

  using Links = std::initializer_list<
      std::pair<cudnnBackendAttributeName_t, cudnnBackendDescriptor_t>>;

  /// A finalized descriptor of type T with the descriptor attributes L
  /// (null ones left unset); an operation joins Ops.
  Expected<cudnnBackendDescriptor_t>
  node(cudnnBackendDescriptorType_t T, Links L, const char *What, bool IsOp) {
    Expected<cudnnBackendDescriptor_t> D = create(T);
    if (!D)
      return D.takeError();
    for (auto [Attr, Value] : L)
      if (Value)
        if (Error E = set(*D, Attr, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &Value))
          return std::move(E);
    if (Error E = finalize(*D, Twine("finalizing ") + What))
      return std::move(E);
    if (IsOp)
      Ops.push_back(*D);
    return D;
  }

  /// A descriptor of type T whose attribute A (of type AT) is V, plus the
  /// compute type Prec under PrecAttr; not finalized.
  template <typename V>
  Expected<cudnnBackendDescriptor_t>
  described(cudnnBackendDescriptorType_t T, cudnnBackendAttributeName_t A,
            cudnnBackendAttributeType_t AT, V Value,
            cudnnBackendAttributeName_t PrecAttr, cudnnDataType_t Prec) {
    Expected<cudnnBackendDescriptor_t> D = create(T);
    if (!D)
      return D.takeError();
    if (Error E = set(*D, A, AT, 1, &Value))
      return std::move(E);
    if (Error E = set(*D, PrecAttr, CUDNN_TYPE_DATA_TYPE, 1, &Prec))
      return std::move(E);
    return D;
  }

  /// Y = mode(X[, B[, T]]), computed in Prec (GEN_INDEX along Axis).
  Error pointwise(cudnnPointwiseMode_t Mode, cudnnBackendDescriptor_t X,
                  cudnnBackendDescriptor_t B, cudnnBackendDescriptor_t T,
                  cudnnBackendDescriptor_t Y,
                  cudnnDataType_t Prec = CUDNN_DATA_FLOAT, int64_t Axis = -1) {
    auto Pw = described(CUDNN_BACKEND_POINTWISE_DESCRIPTOR,
                        CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE,
                        Mode, CUDNN_ATTR_POINTWISE_MATH_PREC, Prec);
    if (!Pw)
      return Pw.takeError();
    if (Axis >= 0)
      if (Error E =
              set(*Pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &Axis))
        return E;
    if (Error E = finalize(*Pw, "finalizing a pointwise descriptor"))
      return E;
    return node(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR,
                {{CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *Pw},
                 {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, X},
                 {CUDNN_ATTR_OPERATION_POINTWISE_BDESC, B},
                 {CUDNN_ATTR_OPERATION_POINTWISE_TDESC, T},
                 {CUDNN_ATTR_OPERATION_POINTWISE_YDESC, Y}},
                "a pointwise operation", true)
        .takeError();
  }

  /// Y = reduce(X) over the dims where Y has 1.
  Error reduction(cudnnReduceTensorOp_t Mode, cudnnBackendDescriptor_t X,
                  cudnnBackendDescriptor_t Y) {
    auto R = described(CUDNN_BACKEND_REDUCTION_DESCRIPTOR,
                       CUDNN_ATTR_REDUCTION_OPERATOR,
                       CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, Mode,
                       CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_DATA_FLOAT);
    if (!R)
      return R.takeError();
    if (Error E = finalize(*R, "finalizing a reduction descriptor"))
      return E;
    return node(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR,
                {{CUDNN_ATTR_OPERATION_REDUCTION_DESC, *R},
                 {CUDNN_ATTR_OPERATION_REDUCTION_XDESC, X},
                 {CUDNN_ATTR_OPERATION_REDUCTION_YDESC, Y}},
                "a reduction operation", true)
        .takeError();
  }

  /// C = A B (batched over the leading dims), fp32 accumulation.
  Error matmul(cudnnBackendDescriptor_t A, cudnnBackendDescriptor_t B,
               cudnnBackendDescriptor_t C) {
    Expected<cudnnBackendDescriptor_t> M =
        create(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    if (!M)
      return M.takeError();
    cudnnDataType_t F = CUDNN_DATA_FLOAT;
    if (Error E =
            set(*M, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &F))
      return E;
    if (Error E = finalize(*M, "finalizing a matmul descriptor"))
      return E;
    return node(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR,
                {{CUDNN_ATTR_OPERATION_MATMUL_ADESC, A},
                 {CUDNN_ATTR_OPERATION_MATMUL_BDESC, B},
                 {CUDNN_ATTR_OPERATION_MATMUL_CDESC, C},
                 {CUDNN_ATTR_OPERATION_MATMUL_DESC, *M}},
                "a matmul operation", true)
        .takeError();
  }

  std::vector<cudnnBackendDescriptor_t> Ops;
};

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

  Expected<cudnnBackendDescriptor_t> Graph =
      G.create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  if (!Graph)
    return Graph.takeError();
  if (Error E =
          G.set(*Graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                CUDNN_TYPE_BACKEND_DESCRIPTOR, G.Ops.size(), G.Ops.data()))
    return std::move(E);
  if (Error E = G.set(*Graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE,
                      CUDNN_TYPE_HANDLE, 1, &H))
    return std::move(E);
  if (Error E = G.finalize(*Graph, "finalizing the attention graph"))
    return std::move(E);
  return Graph;
}

/// The first engine configuration cuDNN's heuristics offer for Graph that
/// finalizes into an execution plan on H.
Expected<DnnDescriptor> planFor(GraphBuilder &G, cudnnBackendDescriptor_t Graph,
                                cudnnHandle_t H, int64_t &EngineId) {
  std::string Why = "cuDNN's heuristics offer no engine";
  for (cudnnBackendHeurMode_t Mode :
       {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
    Expected<cudnnBackendDescriptor_t> Heur =
        G.create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    if (!Heur)
      return Heur.takeError();
    if (Error E = G.set(*Heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                        CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &Graph))
      return std::move(E);
    if (Error E = G.set(*Heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE,
                        1, &Mode))
      return std::move(E);
    if (Error E = G.finalize(*Heur, "finalizing the engine heuristics")) {
      Why = toString(std::move(E));
      continue;
    }
    int64_t Count = 0;
    SOLDER_DNN_TRY(cudaLibs().cudnnBackendGetAttribute(
                       *Heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &Count, nullptr),
                   "counting the engine configurations");
    if (Count <= 0)
      continue;
    std::vector<cudnnBackendDescriptor_t> Cfgs;
    for (int64_t I = 0; I < Count; ++I) {
      Expected<cudnnBackendDescriptor_t> Cfg =
          G.create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      if (!Cfg)
        return Cfg.takeError();
      Cfgs.push_back(*Cfg);
    }
    int64_t Got = 0;
    SOLDER_DNN_TRY(cudaLibs().cudnnBackendGetAttribute(
                       *Heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                       CUDNN_TYPE_BACKEND_DESCRIPTOR, Count, &Got, Cfgs.data()),
                   "reading the engine configurations");
    for (int64_t I = 0; I < std::min(Got, Count); ++I) {
      cudnnBackendDescriptor_t Raw = nullptr;
      SOLDER_DNN_TRY(cudaLibs().cudnnBackendCreateDescriptor(
                         CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &Raw),
                     "creating an execution plan");
      DnnDescriptor Plan(Raw);
      if (Error E = G.set(Raw, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                          CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &Cfgs[I]))
        return std::move(E);
      if (Error E = G.set(Raw, CUDNN_ATTR_EXECUTION_PLAN_HANDLE,
                          CUDNN_TYPE_HANDLE, 1, &H))
        return std::move(E);
      if (Error E = G.finalize(Raw, "finalizing an execution plan")) {
        Why = toString(std::move(E));
        continue;
      }
      // The engine's global index, for reports.
      cudnnBackendDescriptor_t Engine = nullptr;
      EngineId = -1;
      if (cudaLibs().cudnnBackendCreateDescriptor(
              CUDNN_BACKEND_ENGINE_DESCRIPTOR, &Engine) ==
          CUDNN_STATUS_SUCCESS) {
        DnnDescriptor Own(Engine);
        int64_t N = 0;
        if (cudaLibs().cudnnBackendGetAttribute(
                Cfgs[I], CUDNN_ATTR_ENGINECFG_ENGINE,
                CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &N,
                &Engine) == CUDNN_STATUS_SUCCESS)
          cudaLibs().cudnnBackendGetAttribute(
              Engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &N,
              &EngineId);
      }
      return std::move(Plan);
    }
  }
  return createStringError(inconvertibleErrorCode(), Why);
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
    int64_t Ws = 0, N = 0;
    SOLDER_DNN_TRY(cudaLibs().cudnnBackendGetAttribute(
                       ExecPlan.get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                       CUDNN_TYPE_INT64, 1, &N, &Ws),
                   "reading the attention plan's workspace size");
    Workspace = size_t(std::max<int64_t>(Ws, 0));
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
  cudnnBackendDescriptor_t Raw = nullptr;
  SOLDER_DNN_TRY(cudaLibs().cudnnBackendCreateDescriptor(
                     CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &Raw),
                 "creating the attention's variant pack");
  DnnDescriptor Pack(Raw);
  if (Error E = GraphBuilder::set(Raw, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                  CUDNN_TYPE_INT64, Uids.size(), Uids.data()))
    return E;
  if (Error E =
          GraphBuilder::set(Raw, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                            CUDNN_TYPE_VOID_PTR, Ptrs.size(), Ptrs.data()))
    return E;
  if (Error E = GraphBuilder::set(Raw, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                  CUDNN_TYPE_VOID_PTR, 1, &Ws))
    return E;
  if (Error E = GraphBuilder::finalize(Raw, "finalizing the variant pack"))
    return E;
  SOLDER_DNN_TRY(cudaLibs().cudnnBackendExecute(H, ExecPlan.get(), Raw),
                 "cuDNN attention");
  return Error::success();
}

} // namespace solder
