//===- CudnnAttention.h - Attention as one cuDNN SDPA call ------*- C++ -*-===//
//
// An AttentionConfig (Plan.h) run by cuDNN 9's fused flash-attention
// engines. The backend graph API has no attention operation in cuDNN 9.14
// (the version the GPU machine has), so the call is the operation graph
// cuDNN's engines recognise: Q K^T (matmul, fp32 out), times the scale, plus
// the mask, the causal select, softmax written out as max / sub / exp / sum
// / div (with the log-sum-exp statistics as a virtual tensor), then P V.
// cuDNN picks the engine (heuristics mode A; the first configuration that
// finalizes). Every descriptor is owned here; the execution plan belongs to
// the cuDNN handle it was built with.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_CUDNNATTENTION_H
#define SOLDER_RUNTIME_CUDA_CUDNNATTENTION_H

#include "runtime/cuda/CudaLibraries.h"
#include "runtime/cuda/DnnGraph.h"
#include "runtime/cuda/Plan.h"
#include "llvm/Support/Error.h"
#include <memory>
#include <string>
#include <vector>

namespace solder {

class AttentionCall {
public:
  /// Builds the operation graph of C and an execution plan on H; errors
  /// say what cuDNN refused (no engine for this shape, mask or version).
  llvm::Error init(const AttentionConfig &C, cudnnHandle_t H);
  size_t workspaceBytes() const { return Workspace; }
  /// "cuDNN SDPA, engine 7" (for reports).
  const std::string &describe() const { return Description; }
  /// Bias only when the config has one; Workspace holds workspaceBytes().
  llvm::Error enqueue(cudnnHandle_t H, const void *Q, const void *K,
                      const void *V, const void *Bias, void *O,
                      void *Workspace) const;

private:
  const AttentionConfig *Config = nullptr;
  /// The graph's descriptors, which the plan refers to (declared first so
  /// the plan goes before them).
  std::vector<DnnDescriptor> Graph;
  DnnDescriptor ExecPlan;
  size_t Workspace = 0;
  std::string Description;
  /// By-value operands of the graph, read by cuDNN at each execution.
  float Scale = 1.0f, MaskedScore = 0.0f;
};

/// Why cuDNN's attention cannot take a problem of C's form, or "" (the
/// checks that need no GPU: types, head dims, alignment; cuDNN itself may
/// still refuse it when the plan is loaded).
std::string cudnnAttentionUnsupported(const AttentionConfig &C);

/// What an execution plan depends on: C without its buffers (a model's
/// identical layers share one plan, bound to their buffers per call).
std::string attentionPlanKey(const AttentionConfig &C);

/// The label of the step that runs attention call Index of P (its ONNX
/// nodes), for errors.
std::string attentionLabel(const Plan &P, size_t Index);

} // namespace solder

#endif
