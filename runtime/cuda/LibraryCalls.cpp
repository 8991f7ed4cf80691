//===- LibraryCalls.cpp - cuBLASLt matmuls and cuDNN convolutions ---------===//
#include "runtime/cuda/LibraryCalls.h"
#include "runtime/cuda/CudaLibraries.h"
#include "llvm/ADT/SmallVector.h"
#include <algorithm>
#include <array>
#include <vector>

using namespace llvm;

namespace solder {

static cudaDataType_t cudaType(DType T) {
  switch (T) {
  case DType::F16:
    return CUDA_R_16F;
  case DType::BF16:
    return CUDA_R_16BF;
  case DType::F64:
    return CUDA_R_64F;
  default:
    return CUDA_R_32F;
  }
}

static cublasLtEpilogue_t cublasEpilogue(GemmConfig::Epilogue E) {
  switch (E) {
  case GemmConfig::Epilogue::None:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case GemmConfig::Epilogue::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case GemmConfig::Epilogue::Relu:
    return CUBLASLT_EPILOGUE_RELU;
  case GemmConfig::Epilogue::ReluBias:
    return CUBLASLT_EPILOGUE_RELU_BIAS;
  case GemmConfig::Epilogue::Gelu:
    return CUBLASLT_EPILOGUE_GELU;
  case GemmConfig::Epilogue::GeluBias:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

static cudnnDataType_t cudnnType(DType T) {
  switch (T) {
  case DType::F16:
    return CUDNN_DATA_HALF;
  case DType::BF16:
    return CUDNN_DATA_BFLOAT16;
  case DType::F64:
    return CUDNN_DATA_DOUBLE;
  default:
    return CUDNN_DATA_FLOAT;
  }
}

//===----------------------------------------------------------------------===//
// cuBLASLt
//===----------------------------------------------------------------------===//

GemmCall::~GemmCall() {
  if (LayoutA)
    cudaLibs().cublasLtMatrixLayoutDestroy(LayoutA);
  if (LayoutB)
    cudaLibs().cublasLtMatrixLayoutDestroy(LayoutB);
  if (LayoutC)
    cudaLibs().cublasLtMatrixLayoutDestroy(LayoutC);
  if (LayoutD)
    cudaLibs().cublasLtMatrixLayoutDestroy(LayoutD);
  if (Desc)
    cudaLibs().cublasLtMatmulDescDestroy(Desc);
}

Error GemmCall::init(const GemmConfig &C) {
  Config = &C;
  bool F64 = C.Elem == DType::F64;
  cublasComputeType_t Compute =
      F64 ? CUBLAS_COMPUTE_64F
          : (C.Elem == DType::F32 && C.AllowTF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                 : CUBLAS_COMPUTE_32F);
  cudaDataType_t Scale = F64 ? CUDA_R_64F : CUDA_R_32F;
  SOLDER_CUBLAS_TRY(cudaLibs().cublasLtMatmulDescCreate(&Desc, Compute, Scale),
                    "cublasLtMatmulDescCreate");
  cublasOperation_t OpA = C.TransA ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t OpB = C.TransB ? CUBLAS_OP_T : CUBLAS_OP_N;
  SOLDER_CUBLAS_TRY(cudaLibs().cublasLtMatmulDescSetAttribute(
                        Desc, CUBLASLT_MATMUL_DESC_TRANSA, &OpA, sizeof(OpA)),
                    "cudaLibs().cublasLtMatmulDescSetAttribute(TRANSA)");
  SOLDER_CUBLAS_TRY(cudaLibs().cublasLtMatmulDescSetAttribute(
                        Desc, CUBLASLT_MATMUL_DESC_TRANSB, &OpB, sizeof(OpB)),
                    "cudaLibs().cublasLtMatmulDescSetAttribute(TRANSB)");
  cudaDataType_t T = cudaType(C.Elem);
  if (C.Epi != GemmConfig::Epilogue::None) {
    cublasLtEpilogue_t Epi = cublasEpilogue(C.Epi);
    SOLDER_CUBLAS_TRY(
        cudaLibs().cublasLtMatmulDescSetAttribute(
            Desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &Epi, sizeof(Epi)),
        "cudaLibs().cublasLtMatmulDescSetAttribute(EPILOGUE)");
  }
  if (C.hasBias()) {
    // The bias has D's type (it is a model tensor of the result's dtype).
    int32_t BiasType = int32_t(T);
    SOLDER_CUBLAS_TRY(cudaLibs().cublasLtMatmulDescSetAttribute(
                          Desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &BiasType,
                          sizeof(BiasType)),
                      "cudaLibs().cublasLtMatmulDescSetAttribute(BIAS_DATA_"
                      "TYPE)");
  }
  auto Layout = [&](cublasLtMatrixLayout_t &L, int64_t Rows, int64_t Cols,
                    int64_t Ld, int64_t Stride) -> Error {
    SOLDER_CUBLAS_TRY(
        cudaLibs().cublasLtMatrixLayoutCreate(&L, T, Rows, Cols, Ld),
        "cublasLtMatrixLayoutCreate");
    if (C.Batch > 1) {
      int32_t Count = int32_t(C.Batch);
      SOLDER_CUBLAS_TRY(
          cudaLibs().cublasLtMatrixLayoutSetAttribute(
              L, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &Count, sizeof(Count)),
          "cudaLibs().cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)");
      if (C.pointerArrays()) {
        // The operands passed to enqueue are device arrays of pointers.
        uint32_t Mode = CUBLASLT_BATCH_MODE_POINTER_ARRAY;
        SOLDER_CUBLAS_TRY(
            cudaLibs().cublasLtMatrixLayoutSetAttribute(
                L, CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, &Mode, sizeof(Mode)),
            "cudaLibs().cublasLtMatrixLayoutSetAttribute(BATCH_MODE)");
        return Error::success();
      }
      SOLDER_CUBLAS_TRY(
          cudaLibs().cublasLtMatrixLayoutSetAttribute(
              L, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &Stride,
              sizeof(Stride)),
          "cudaLibs().cublasLtMatrixLayoutSetAttribute(BATCH_OFFSET)");
    }
    return Error::success();
  };
  if (Error E = Layout(LayoutA, C.TransA ? C.K : C.M, C.TransA ? C.M : C.K,
                       C.Lda, C.StrideA))
    return E;
  if (Error E = Layout(LayoutB, C.TransB ? C.N : C.K, C.TransB ? C.K : C.N,
                       C.Ldb, C.StrideB))
    return E;
  // A separate C (a residual of the result's shape) is laid out like D.
  if (C.CFrom == GemmConfig::CSource::Separate)
    if (Error E = Layout(LayoutC, C.M, C.N, C.Ldd, C.StrideD))
      return E;
  return Layout(LayoutD, C.M, C.N, C.Ldd, C.StrideD);
}

bool GemmCall::checkAlgo(cublasLtHandle_t H, const cublasLtMatmulAlgo_t &Algo,
                         size_t &Workspace) const {
  cublasLtMatmulHeuristicResult_t Result;
  if (cudaLibs().cublasLtMatmulAlgoCheck(
          H, Desc, LayoutA, LayoutB, LayoutC ? LayoutC : LayoutD, LayoutD,
          &Algo, &Result) != CUBLAS_STATUS_SUCCESS ||
      Result.state != CUBLAS_STATUS_SUCCESS ||
      Result.workspaceSize > GemmWorkspaceLimit)
    return false;
  Workspace = Result.workspaceSize;
  return true;
}

Error GemmCall::chooseAlgo(cublasLtHandle_t H, cublasLtMatmulAlgo_t &Algo,
                           size_t &Workspace) const {
  cublasLtMatmulPreference_t Pref;
  SOLDER_CUBLAS_TRY(cudaLibs().cublasLtMatmulPreferenceCreate(&Pref),
                    "cublasLtMatmulPreferenceCreate");
  uint64_t Limit = GemmWorkspaceLimit;
  cudaLibs().cublasLtMatmulPreferenceSetAttribute(
      Pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &Limit, sizeof(Limit));
  cublasLtMatmulHeuristicResult_t Result;
  int Found = 0;
  cublasStatus_t S = cudaLibs().cublasLtMatmulAlgoGetHeuristic(
      H, Desc, LayoutA, LayoutB, LayoutC ? LayoutC : LayoutD, LayoutD, Pref, 1,
      &Result, &Found);
  cudaLibs().cublasLtMatmulPreferenceDestroy(Pref);
  if (S != CUBLAS_STATUS_SUCCESS || Found == 0)
    return createStringError(
        inconvertibleErrorCode(),
        "cuBLASLt has no algorithm for a " + Twine(dtypeName(Config->Elem)) +
            " matmul " + Twine(Config->M) + "x" + Twine(Config->N) + "x" +
            Twine(Config->K) + " (batch " + Twine(Config->Batch) +
            "), status " + Twine(int(S)));
  Algo = Result.algo;
  Workspace = Result.workspaceSize;
  return Error::success();
}

Error GemmCall::enqueue(cublasLtHandle_t H, const cublasLtMatmulAlgo_t &Algo,
                        const void *A, const void *B, const void *Bias,
                        const void *CPtr, void *D, void *Workspace,
                        size_t WorkspaceBytes, cudaStream_t Stream) const {
  const GemmConfig &C = *Config;
  if (C.hasBias())
    SOLDER_CUBLAS_TRY(
        cudaLibs().cublasLtMatmulDescSetAttribute(
            Desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &Bias, sizeof(Bias)),
        "cudaLibs().cublasLtMatmulDescSetAttribute(BIAS_POINTER)");
  double AlphaD = C.Alpha, BetaD = C.Beta;
  float AlphaF = C.Alpha, BetaF = C.Beta;
  bool F64 = C.Elem == DType::F64;
  const void *Alpha = F64 ? static_cast<const void *>(&AlphaD) : &AlphaF;
  const void *Beta = F64 ? static_cast<const void *>(&BetaD) : &BetaF;
  bool SeparateC = C.CFrom == GemmConfig::CSource::Separate;
  SOLDER_CUBLAS_TRY(cudaLibs().cublasLtMatmul(
                        H, Desc, Alpha, A, LayoutA, B, LayoutB, Beta,
                        SeparateC ? CPtr : D, SeparateC ? LayoutC : LayoutD, D,
                        LayoutD, &Algo, Workspace, WorkspaceBytes, Stream),
                    "cublasLtMatmul");
  return Error::success();
}

//===----------------------------------------------------------------------===//
// cuDNN
//===----------------------------------------------------------------------===//

ConvCall::~ConvCall() {
  if (XDesc)
    cudaLibs().cudnnDestroyTensorDescriptor(XDesc);
  if (YDesc)
    cudaLibs().cudnnDestroyTensorDescriptor(YDesc);
  if (WDesc)
    cudaLibs().cudnnDestroyFilterDescriptor(WDesc);
  if (ConvDesc)
    cudaLibs().cudnnDestroyConvolutionDescriptor(ConvDesc);
  if (BiasDesc)
    cudaLibs().cudnnDestroyTensorDescriptor(BiasDesc);
  if (ActDesc)
    cudaLibs().cudnnDestroyActivationDescriptor(ActDesc);
}

/// The math of an algorithm taken unmeasured: FMA for strict fp32, tensor
/// ops for fp16/bf16 (their tensor-core kernels), cuDNN's default else.
static cudnnMathType_t defaultMath(const ConvConfig &C) {
  if (C.Elem == DType::F32 && !C.AllowTF32)
    return CUDNN_FMA_MATH;
  if (C.Elem == DType::F16 || C.Elem == DType::BF16)
    return CUDNN_TENSOR_OP_MATH;
  return CUDNN_DEFAULT_MATH;
}

/// Dims in NCHW order; ChannelsLast lays them out as N, spatial..., C.
static Error setTensor(cudnnTensorDescriptor_t D, cudnnDataType_t T,
                       ArrayRef<int64_t> Dims, bool ChannelsLast = false) {
  SmallVector<int, 5> Sz, Strides(Dims.size());
  for (int64_t X : Dims)
    Sz.push_back(int(X));
  // Memory order of the dims, innermost last.
  SmallVector<size_t, 5> Order;
  Order.push_back(0);
  for (size_t I = ChannelsLast ? 2 : 1; I < Dims.size(); ++I)
    Order.push_back(I);
  if (ChannelsLast)
    Order.push_back(1);
  int S = 1;
  for (size_t I = Order.size(); I-- > 0;) {
    Strides[Order[I]] = S;
    S *= Sz[Order[I]];
  }
  SOLDER_CUDNN_TRY(cudaLibs().cudnnSetTensorNdDescriptor(
                       D, T, int(Sz.size()), Sz.data(), Strides.data()),
                   "cudnnSetTensorNdDescriptor");
  return Error::success();
}

Error ConvCall::init(const ConvConfig &C) {
  Config = &C;
  cudnnDataType_t T = cudnnType(C.Elem);
  SOLDER_CUDNN_TRY(cudaLibs().cudnnCreateTensorDescriptor(&XDesc),
                   "cudnnCreateTensorDescriptor");
  SOLDER_CUDNN_TRY(cudaLibs().cudnnCreateTensorDescriptor(&YDesc),
                   "cudnnCreateTensorDescriptor");
  SOLDER_CUDNN_TRY(cudaLibs().cudnnCreateFilterDescriptor(&WDesc),
                   "cudnnCreateFilterDescriptor");
  SOLDER_CUDNN_TRY(cudaLibs().cudnnCreateConvolutionDescriptor(&ConvDesc),
                   "cudnnCreateConvolutionDescriptor");
  if (Error E = setTensor(XDesc, T, C.XDims, C.Nhwc))
    return E;
  if (Error E = setTensor(YDesc, T, C.YDims, C.Nhwc))
    return E;
  SmallVector<int, 5> W(C.WDims.begin(), C.WDims.end());
  SOLDER_CUDNN_TRY(cudaLibs().cudnnSetFilterNdDescriptor(
                       WDesc, T, C.Nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                       int(W.size()), W.data()),
                   "cudnnSetFilterNdDescriptor");
  cudnnDataType_t Compute =
      C.Elem == DType::F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  SOLDER_CUDNN_TRY(cudaLibs().cudnnSetConvolutionNdDescriptor(
                       ConvDesc, int(C.Pads.size()), C.Pads.data(),
                       C.Strides.data(), C.Dilations.data(),
                       CUDNN_CROSS_CORRELATION, Compute),
                   "cudnnSetConvolutionNdDescriptor");
  SOLDER_CUDNN_TRY(cudaLibs().cudnnSetConvolutionGroupCount(ConvDesc, C.Groups),
                   "cudnnSetConvolutionGroupCount");
  // fp32 without TF32 always runs FMA math: CUDNN_DEFAULT_MATH lets
  // Ampere and later use TF32 tensor cores.
  cudnnMathType_t Math;
  if (C.Elem == DType::F32 && !C.AllowTF32)
    Math = CUDNN_FMA_MATH;
  else if (C.Algo >= 0)
    Math = cudnnMathType_t(C.MathType);
  else
    Math = defaultMath(C);
  SOLDER_CUDNN_TRY(cudaLibs().cudnnSetConvolutionMathType(ConvDesc, Math),
                   "cudnnSetConvolutionMathType");
  // The shapes must agree with cuDNN's own rule, or the call would fail
  // later with a less helpful status.
  SmallVector<int, 5> Out(C.XDims.size());
  const cudnnTensorDescriptor_t In = C.Transpose ? YDesc : XDesc;
  ArrayRef<int64_t> Expect = C.Transpose ? C.XDims : C.YDims;
  SOLDER_CUDNN_TRY(cudaLibs().cudnnGetConvolutionNdForwardOutputDim(
                       ConvDesc, In, WDesc, int(Out.size()), Out.data()),
                   "cudnnGetConvolutionNdForwardOutputDim");
  for (size_t I = 0; I < Out.size(); ++I)
    if (Out[I] != Expect[I])
      return createStringError(inconvertibleErrorCode(),
                               "cuDNN computes a different output shape for "
                               "this convolution (dim " +
                                   Twine(I) + ": " + Twine(Out[I]) + " vs " +
                                   Twine(Expect[I]) + ")");
  if (!C.Fused)
    return Error::success();
  if (C.Transpose)
    return createStringError(inconvertibleErrorCode(),
                             "a transposed convolution cannot be fused with "
                             "its bias and activation in cuDNN");
  // cuDNN wants the bias as a full-rank [1,C,1,...] tensor.
  SmallVector<int64_t, 5> BiasDims(C.YDims.size(), 1);
  BiasDims[1] = C.YDims[1];
  SOLDER_CUDNN_TRY(cudaLibs().cudnnCreateTensorDescriptor(&BiasDesc),
                   "cudnnCreateTensorDescriptor");
  if (Error E = setTensor(BiasDesc, T, BiasDims))
    return E;
  SOLDER_CUDNN_TRY(cudaLibs().cudnnCreateActivationDescriptor(&ActDesc),
                   "cudnnCreateActivationDescriptor");
  cudnnActivationMode_t Mode = C.Act == ConvConfig::Activation::Relu
                                   ? CUDNN_ACTIVATION_RELU
                                   : CUDNN_ACTIVATION_IDENTITY;
  SOLDER_CUDNN_TRY(cudaLibs().cudnnSetActivationDescriptor(
                       ActDesc, Mode, CUDNN_PROPAGATE_NAN, 0.0),
                   "cudnnSetActivationDescriptor");
  return Error::success();
}

/// Whether a measured algorithm's math is allowed by the config.
static bool mathAllowed(const ConvConfig &C, cudnnMathType_t M) {
  if (C.Elem != DType::F32 || C.AllowTF32)
    return true;
  return M == CUDNN_DEFAULT_MATH || M == CUDNN_FMA_MATH;
}

namespace {
/// A usable algorithm from cuDNN's measurement.
struct Candidate {
  int Algo = 0;
  int MathType = 0;
  size_t Memory = 0;
  float Ms = 0;
};

/// How many of cuDNN's fastest candidates are timed again, and how often.
constexpr size_t RetimedCandidates = 3;
constexpr int RetimeWarmup = 2, RetimeRuns = 10;

size_t numBytes(ArrayRef<int64_t> Dims, DType T) {
  size_t N = dtypeSize(T);
  for (int64_t D : Dims)
    N *= size_t(D);
  return N;
}

} // namespace

/// Device buffers for timing one convolution as it runs (X, W, Y, and
/// the bias and z of a fused call), zeroed, freed on scope exit, and the
/// largest workspace up to what the search asked for that the device
/// could give.
struct ConvScratch {
  void *X = nullptr, *W = nullptr, *Y = nullptr, *Bias = nullptr, *Z = nullptr,
       *Work = nullptr;
  size_t WorkBytes = 0;
  std::vector<void *> Ptrs;
  ConvScratch() = default;
  ConvScratch(const ConvScratch &) = delete;
  ConvScratch &operator=(const ConvScratch &) = delete;
  ~ConvScratch() {
    for (void *P : Ptrs)
      cudaFree(P);
  }
  /// Null when the device is out of memory.
  void *get(size_t Bytes) {
    void *P = nullptr;
    Bytes = std::max<size_t>(Bytes, 256);
    if (cudaMalloc(&P, Bytes) != cudaSuccess) {
      cudaGetLastError();
      return nullptr;
    }
    Ptrs.push_back(P);
    cudaMemset(P, 0, Bytes);
    return P;
  }
  /// False when the operands do not fit on the device. The workspace
  /// halves from Wanted until it fits (down to 1 MiB, then none): a full
  /// GPU searches fewer algorithms, as cuDNN's own search skips those it
  /// cannot allocate for, rather than failing the load.
  bool allocate(const ConvConfig &C, size_t Wanted) {
    X = get(numBytes(C.XDims, C.Elem));
    W = X ? get(numBytes(C.WDims, C.Elem)) : nullptr;
    Y = W ? get(numBytes(C.YDims, C.Elem)) : nullptr;
    if (!Y)
      return false;
    if (C.Fused) {
      Bias = get(numBytes({C.YDims[1]}, C.Elem));
      if (!Bias)
        return false;
      if (C.HasZ && !(Z = get(numBytes(C.YDims, C.Elem))))
        return false;
    }
    for (WorkBytes = Wanted; WorkBytes; WorkBytes /= 2) {
      if (WorkBytes < (size_t(1) << 20))
        WorkBytes = 0;
      else if ((Work = get(WorkBytes)))
        break;
    }
    return true;
  }
};

/// cudnnFind runs each algorithm once, so for small problems (batch 1, a
/// few microseconds per call) its order is mostly noise and the choice
/// changed from process to process (ResNet-50 b1: 2.5 to 3.2 ms per run).
/// The fastest few are timed again here, several runs each, on the model's
/// real shapes and the search's buffers, and the fastest on average wins.
Expected<int> ConvCall::retime(cudnnHandle_t H,
                               ArrayRef<std::pair<int, int>> Choices,
                               const ConvScratch &S) const {
  cudaEvent_t Start, Stop;
  SOLDER_CUDA_TRY(cudaEventCreate(&Start), "cudaEventCreate");
  SOLDER_CUDA_TRY(cudaEventCreate(&Stop), "cudaEventCreate");
  int Best = 0;
  float BestMs = 0;
  Error Failure = Error::success();
  for (size_t I = 0; I < Choices.size() && !Failure; ++I) {
    ConvConfig Trial = *Config;
    Trial.Algo = Choices[I].first;
    Trial.MathType = Choices[I].second;
    ConvCall Call;
    Failure = Call.init(Trial);
    for (int R = 0; R < RetimeWarmup + RetimeRuns && !Failure; ++R) {
      if (R == RetimeWarmup)
        cudaEventRecord(Start, nullptr);
      // The handle runs on the legacy default stream, like the events.
      Failure =
          Call.enqueue(H, S.X, S.W, S.Y, S.Bias, S.Z, S.Work, S.WorkBytes);
    }
    if (Failure)
      break;
    cudaEventRecord(Stop, nullptr);
    cudaEventSynchronize(Stop);
    float Ms = 0;
    cudaEventElapsedTime(&Ms, Start, Stop);
    if (I == 0 || Ms < BestMs) {
      Best = int(I);
      BestMs = Ms;
    }
  }
  cudaEventDestroy(Start);
  cudaEventDestroy(Stop);
  if (Failure)
    return std::move(Failure);
  return Best;
}

/// Asks for every algorithm's workspace, so that the search can try
/// every algorithm the plan may pick.
size_t ConvCall::searchWorkspaceBytes(cudnnHandle_t H) const {
  size_t Max = 0;
  int Count = Config->Transpose ? int(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT)
                                : int(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
  for (int A = 0; A < Count; ++A) {
    size_t Bytes = 0;
    cudnnStatus_t S = queryWorkspace(H, A, Bytes);
    // Unsupported algorithms report an error here: skipped, as the
    // search skips them.
    if (S == CUDNN_STATUS_SUCCESS && Bytes <= ConvWorkspaceLimit)
      Max = std::max(Max, Bytes);
  }
  return Max;
}

Error ConvCall::chooseAlgo(cudnnHandle_t H, int &Algo, int &MathType,
                           bool Search) const {
  const ConvConfig &C = *Config;
  // fp16/bf16 NHWC: the tensor-core implicit GEMM, which the fused calls
  // with ReLU must run anyway. Measuring would mislead: cudnnFind and the
  // re-timing below launch eagerly, so a cheap-to-launch FMA kernel wins
  // there and then runs 4x slower in the plan's graph (ResNet-50 fp16 b32:
  // 0.20 ms against 0.05 ms for a 1x1 downsample conv).
  bool HalfNhwc =
      C.Nhwc && !C.Transpose && (C.Elem == DType::F16 || C.Elem == DType::BF16);
  if (HalfNhwc || (C.Fused && C.Act == ConvConfig::Activation::Relu)) {
    // The only algorithm cudnnConvolutionBiasActivationForward runs with
    // ReLU; nothing to measure.
    Algo = int(CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
    MathType = int(defaultMath(C));
    return Error::success();
  }
  constexpr int MaxResults = 16;
  int Returned = 0;
  std::vector<Candidate> Usable;
  // The Ex search runs on zeroed buffers of ours: the plain one
  // allocates its own and leaves them unwritten (compute-sanitizer's
  // initcheck reported every read of them).
  ConvScratch S;
  bool Measurable = Search && S.allocate(C, searchWorkspaceBytes(H));
  auto Consider = [&](auto &Perf) {
    if (Perf.status == CUDNN_STATUS_SUCCESS && Perf.memory <= S.WorkBytes &&
        mathAllowed(C, Perf.mathType))
      Usable.push_back(
          {int(Perf.algo), int(Perf.mathType), Perf.memory, Perf.time});
  };
  if (Measurable && !C.Transpose) {
    cudnnConvolutionFwdAlgoPerf_t Perf[MaxResults];
    SOLDER_CUDNN_TRY(cudaLibs().cudnnFindConvolutionForwardAlgorithmEx(
                         H, XDesc, S.X, WDesc, S.W, ConvDesc, YDesc, S.Y,
                         MaxResults, &Returned, Perf, S.Work, S.WorkBytes),
                     "cudnnFindConvolutionForwardAlgorithmEx");
    for (int I = 0; I < Returned; ++I)
      Consider(Perf[I]);
  } else if (Measurable) {
    // Transposed: cuDNN's backward data, dy = X and dx = Y.
    cudnnConvolutionBwdDataAlgoPerf_t Perf[MaxResults];
    SOLDER_CUDNN_TRY(cudaLibs().cudnnFindConvolutionBackwardDataAlgorithmEx(
                         H, WDesc, S.W, XDesc, S.X, ConvDesc, YDesc, S.Y,
                         MaxResults, &Returned, Perf, S.Work, S.WorkBytes),
                     "cudnnFindConvolutionBackwardDataAlgorithmEx");
    for (int I = 0; I < Returned; ++I)
      Consider(Perf[I]);
  }
  if (!Usable.empty()) {
    // cuDNN returns them fastest first.
    Usable.resize(std::min(Usable.size(), RetimedCandidates));
    size_t Pick = 0;
    if (Usable.size() > 1) {
      std::vector<std::pair<int, int>> Choices;
      for (const Candidate &K : Usable)
        Choices.push_back({K.Algo, K.MathType});
      Expected<int> Best = retime(H, Choices, S);
      if (!Best)
        return Best.takeError();
      Pick = size_t(*Best);
    }
    Algo = Usable[Pick].Algo;
    MathType = Usable[Pick].MathType;
    return Error::success();
  }
  // Nothing measured usable (seen for a few small problems), no room on
  // the device to measure, or no search asked for: the implicit GEMM,
  // which supports every fp32/fp16 NCHW problem with FMA math and no
  // workspace, else its precomputed form (NHWC problems).
  MathType = int(defaultMath(C));
  cudnnStatus_t Status = CUDNN_STATUS_SUCCESS;
  const std::array<int, 2> Fallbacks =
      C.Transpose ? std::array<int, 2>{CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
                                       CUDNN_CONVOLUTION_BWD_DATA_ALGO_0}
                  : std::array<int, 2>{
                        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
                        CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM};
  for (int Fallback : Fallbacks) {
    size_t Bytes = 0;
    Algo = Fallback;
    Status = queryWorkspace(H, Algo, Bytes);
    if (Status == CUDNN_STATUS_SUCCESS && Bytes <= ConvWorkspaceLimit)
      return Error::success();
  }
  return createStringError(inconvertibleErrorCode(),
                           "cuDNN found no usable algorithm (" +
                               Twine(Returned) + " measured, fallback: " +
                               cudaLibs().cudnnGetErrorString(Status) + ")");
}

cudnnStatus_t ConvCall::queryWorkspace(cudnnHandle_t H, int Algo,
                                       size_t &Bytes) const {
  if (Config->Transpose)
    return cudaLibs().cudnnGetConvolutionBackwardDataWorkspaceSize(
        H, WDesc, XDesc, ConvDesc, YDesc, cudnnConvolutionBwdDataAlgo_t(Algo),
        &Bytes);
  return cudaLibs().cudnnGetConvolutionForwardWorkspaceSize(
      H, XDesc, WDesc, ConvDesc, YDesc, cudnnConvolutionFwdAlgo_t(Algo),
      &Bytes);
}

Expected<size_t> ConvCall::workspaceBytes(cudnnHandle_t H) const {
  size_t Bytes = 0;
  cudnnStatus_t S = queryWorkspace(H, Config->Algo, Bytes);
  if (S != CUDNN_STATUS_SUCCESS)
    return cudnnError(S, Config->Transpose
                             ? "cudnnGetConvolutionBackwardDataWorkspaceSize"
                             : "cudnnGetConvolutionForwardWorkspaceSize");
  return Bytes;
}

Error ConvCall::enqueue(cudnnHandle_t H, const void *X, const void *W, void *Y,
                        const void *Bias, const void *Z, void *Workspace,
                        size_t WorkspaceBytes) const {
  const ConvConfig &C = *Config;
  double OneD = 1.0, ZeroD = 0.0;
  float OneF = 1.0f, ZeroF = 0.0f;
  bool F64 = C.Elem == DType::F64;
  const void *One = F64 ? static_cast<const void *>(&OneD) : &OneF;
  const void *Zero = F64 ? static_cast<const void *>(&ZeroD) : &ZeroF;
  if (C.Fused) {
    // y = act(conv(x, w) + alpha2 z + bias). Without z, alpha2 is 0 and z
    // is y: cuDNN does not read a blend input scaled by zero.
    float Alpha2 = C.HasZ ? C.Alpha2 : 0.0f;
    SOLDER_CUDNN_TRY(cudaLibs().cudnnConvolutionBiasActivationForward(
                         H, One, XDesc, X, WDesc, W, ConvDesc,
                         cudnnConvolutionFwdAlgo_t(C.Algo), Workspace,
                         WorkspaceBytes, &Alpha2, YDesc, C.HasZ ? Z : Y,
                         BiasDesc, Bias, ActDesc, YDesc, Y),
                     "cudnnConvolutionBiasActivationForward");
    return Error::success();
  }
  if (!C.Transpose)
    SOLDER_CUDNN_TRY(cudaLibs().cudnnConvolutionForward(
                         H, One, XDesc, X, WDesc, W, ConvDesc,
                         cudnnConvolutionFwdAlgo_t(C.Algo), Workspace,
                         WorkspaceBytes, Zero, YDesc, Y),
                     "cudnnConvolutionForward");
  else
    SOLDER_CUDNN_TRY(cudaLibs().cudnnConvolutionBackwardData(
                         H, One, WDesc, W, XDesc, X, ConvDesc,
                         cudnnConvolutionBwdDataAlgo_t(C.Algo), Workspace,
                         WorkspaceBytes, Zero, YDesc, Y),
                     "cudnnConvolutionBackwardData");
  return Error::success();
}

//===----------------------------------------------------------------------===//
// Reports
//===----------------------------------------------------------------------===//

static const char *convAlgoName(bool Transpose, int Algo) {
  static const char *const Fwd[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM",
                                    "GEMM",          "DIRECT",
                                    "FFT",           "FFT_TILING",
                                    "WINOGRAD",      "WINOGRAD_NONFUSED"};
  static const char *const Bwd[] = {
      "ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
  if (Transpose)
    return Algo >= 0 && Algo < 6 ? Bwd[Algo] : "?";
  return Algo >= 0 && Algo < 8 ? Fwd[Algo] : "?";
}

/// The math a library call of Elem may use, fp32 accumulation throughout.
static std::string mathMode(DType Elem, bool AllowTF32) {
  if (Elem == DType::F16 || Elem == DType::BF16)
    return dtypeName(Elem).str() + " tensor-op math, fp32 accumulation";
  if (Elem == DType::F32)
    return AllowTF32 ? "TF32 tensor-op math allowed" : "fp32 FMA math";
  return dtypeName(Elem).str() + " math";
}

std::string describeLibraryChoice(const Plan &P, const PlanStep &S) {
  if (S.K == PlanStep::Kind::Gemm && S.Index < P.Gemms.size()) {
    const GemmConfig &C = P.Gemms[S.Index];
    return "cuBLASLt, " + mathMode(C.Elem, C.AllowTF32) + ", " +
           (C.HasAlgo ? "algorithm tuned on " + P.TunedOn
                      : std::string("heuristic algorithm chosen at load"));
  }
  if (S.K == PlanStep::Kind::Conv && S.Index < P.Convs.size()) {
    const ConvConfig &C = P.Convs[S.Index];
    std::string Out = std::string("cuDNN ") + (C.Nhwc ? "NHWC" : "NCHW") + ", ";
    if (C.Graph)
      return "cuDNN operation graph (convolution + " +
             std::to_string(C.GraphOps.size()) + " pointwise ops), " +
             mathMode(C.Elem, false) +
             ", engine chosen by cuDNN's heuristics at load";
    if (C.Algo < 0)
      return Out + mathMode(C.Elem, C.AllowTF32) +
             ", algorithm measured at load";
    static const char *const Math[] = {"default", "tensor-op",
                                       "tensor-op (conversion allowed)", "FMA"};
    const char *M = C.MathType >= 0 && C.MathType < 4 ? Math[C.MathType] : "?";
    return Out + convAlgoName(C.Transpose, C.Algo) + ", " + M +
           " math, tuned on " + P.TunedOn;
  }
  if (S.K == PlanStep::Kind::Attention && S.Index < P.Attentions.size()) {
    const AttentionConfig &C = P.Attentions[S.Index];
    return "cuDNN fused attention, " + mathMode(C.Elem, false) +
           ", engine chosen by cuDNN's heuristics at load";
  }
  return "";
}

} // namespace solder
