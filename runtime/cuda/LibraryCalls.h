//===- LibraryCalls.h - cuBLASLt matmuls and cuDNN convolutions -*- C++ -*-===//
//
// The library steps of a plan. Each holds the descriptors of one call,
// created once per execution context; algorithms are chosen once per
// loaded model (cuBLASLt heuristics; cuDNN's measured search, cached per
// configuration) and shared by its contexts. fp32 math stays fp32 unless
// the plan allows TF32: CUBLAS_COMPUTE_32F and CUDNN_FMA_MATH.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_LIBRARYCALLS_H
#define SOLDER_RUNTIME_CUDA_LIBRARYCALLS_H

#include "runtime/cuda/CudaSupport.h"
#include "runtime/cuda/Plan.h"
#include "llvm/ADT/ArrayRef.h"
#include <memory>
#include <utility>

namespace solder {

/// Workspace cuBLASLt heuristics may ask for, per context.
constexpr size_t GemmWorkspaceLimit = size_t(32) << 20;
/// Largest workspace a cuDNN algorithm may use.
constexpr size_t ConvWorkspaceLimit = size_t(512) << 20;

class GemmCall {
public:
  GemmCall() = default;
  GemmCall(const GemmCall &) = delete;
  GemmCall &operator=(const GemmCall &) = delete;
  ~GemmCall();
  llvm::Error init(const GemmConfig &C);
  /// Asks the heuristics for the best algorithm (at model load).
  llvm::Error chooseAlgo(cublasLtHandle_t H, cublasLtMatmulAlgo_t &Algo,
                         size_t &Workspace) const;
  /// Whether a stored algorithm still runs this problem here (same GPU
  /// model, another cuBLASLt version may refuse it); Workspace is its need.
  bool checkAlgo(cublasLtHandle_t H, const cublasLtMatmulAlgo_t &Algo,
                 size_t &Workspace) const;
  /// Bias is read by the *_BIAS epilogues, C when C.CFrom is Separate
  /// (null otherwise).
  llvm::Error enqueue(cublasLtHandle_t H, const cublasLtMatmulAlgo_t &Algo,
                      const void *A, const void *B, const void *Bias,
                      const void *C, void *D, void *Workspace,
                      size_t WorkspaceBytes, cudaStream_t Stream) const;

private:
  const GemmConfig *Config = nullptr;
  cublasLtMatmulDesc_t Desc = nullptr;
  /// LayoutC is LayoutD's twin for a separate C (cuBLASLt wants distinct
  /// descriptors for C and D when their pointers differ); null otherwise.
  cublasLtMatrixLayout_t LayoutA = nullptr, LayoutB = nullptr,
                         LayoutC = nullptr, LayoutD = nullptr;
};

struct ConvScratch;

class ConvCall {
public:
  ConvCall() = default;
  ConvCall(const ConvCall &) = delete;
  ConvCall &operator=(const ConvCall &) = delete;
  ~ConvCall();
  /// Descriptors for C; the math type is C.MathType once an algorithm is
  /// chosen, else what C's dtype and TF32 setting allow.
  llvm::Error init(const ConvConfig &C);
  /// Measures the algorithms (at model load) and fills Algo and MathType.
  /// A fused call with ReLU takes IMPLICIT_PRECOMP_GEMM, the only
  /// algorithm cudnnConvolutionBiasActivationForward supports with it;
  /// without Search, fp32 and NCHW ones take the implicit GEMM.
  llvm::Error chooseAlgo(cudnnHandle_t H, int &Algo, int &MathType,
                         bool Search = true) const;
  llvm::Expected<size_t> workspaceBytes(cudnnHandle_t H) const;
  /// The workspace the algorithm search asks for: the largest any
  /// algorithm needs, up to ConvWorkspaceLimit. The search takes less
  /// where the device has less.
  size_t searchWorkspaceBytes(cudnnHandle_t H) const;
  /// Bias is read by fused calls, Z by fused calls with HasZ (null
  /// otherwise).
  llvm::Error enqueue(cudnnHandle_t H, const void *X, const void *W, void *Y,
                      const void *Bias, const void *Z, void *Workspace,
                      size_t WorkspaceBytes) const;

private:
  /// Index of the fastest of Choices ((algo, math type) pairs), timed on
  /// scratch buffers.
  llvm::Expected<int> retime(cudnnHandle_t H,
                             llvm::ArrayRef<std::pair<int, int>> Choices,
                             const ConvScratch &S) const;
  /// cuDNN's workspace size for Algo on this problem.
  cudnnStatus_t queryWorkspace(cudnnHandle_t H, int Algo, size_t &Bytes) const;
  const ConvConfig *Config = nullptr;
  cudnnTensorDescriptor_t XDesc = nullptr, YDesc = nullptr;
  cudnnFilterDescriptor_t WDesc = nullptr;
  cudnnConvolutionDescriptor_t ConvDesc = nullptr;
  /// Fused calls only: the bias as [1,C,1,...] and the activation.
  cudnnTensorDescriptor_t BiasDesc = nullptr;
  cudnnActivationDescriptor_t ActDesc = nullptr;
};

/// How library step S of P runs, for reports: the library, its math mode
/// (fp32 FMA, TF32 or fp16/bf16 tensor ops, fp32 accumulation) and the
/// algorithm when the plan was tuned ("chosen at load" otherwise). Empty
/// for a step that is not a library call.
std::string describeLibraryChoice(const Plan &P, const PlanStep &S);

} // namespace solder

#endif
