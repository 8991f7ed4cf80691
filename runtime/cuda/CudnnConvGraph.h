//===- CudnnConvGraph.h - Conv and epilogue as one cuDNN graph -*- C++ -*-===//
//
// A ConvConfig with Graph set (Plan.h) run through cuDNN's backend graph
// API: the forward convolution (f32 accumulation into a virtual tensor)
// and its pointwise chain (codegen/ConvGraphEpilogue.h) are one operation
// graph, which cuDNN's runtime-fusion engines compile into one kernel the
// first time the plan is built in a process. The engine is cuDNN's
// heuristics' first that finalizes (mode A, then the fallback list). The
// execution plan belongs to the cuDNN handle it was built with, so each
// execution context builds its own; identical convolutions share one
// (convGraphPlanKey).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_CUDNNCONVGRAPH_H
#define SOLDER_RUNTIME_CUDA_CUDNNCONVGRAPH_H

#include "runtime/cuda/DnnGraph.h"
#include "runtime/cuda/Plan.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace solder {

class ConvGraphCall {
public:
  /// Builds the operation graph of C and an execution plan on H; errors
  /// say what cuDNN refused.
  llvm::Error init(const ConvConfig &C, cudnnHandle_t H);
  size_t workspaceBytes() const { return Workspace; }
  /// "cuDNN graph, engine 12", for reports.
  const std::string &describe() const { return Description; }
  /// Reads[I] is the memory of Operand tensor I (others ignored).
  llvm::Error enqueue(cudnnHandle_t H, const void *X, const void *W, void *Y,
                      llvm::ArrayRef<const void *> Reads,
                      void *Workspace) const;

private:
  const ConvConfig *Config = nullptr;
  /// The graph's descriptors, which the plan refers to (declared first so
  /// the plan goes before them).
  std::vector<DnnDescriptor> Graph;
  DnnDescriptor ExecPlan;
  size_t Workspace = 0;
  std::string Description;
  /// By-value operands, read by cuDNN at each execution (indexed by
  /// tensor).
  std::vector<float> Scalars;
};

/// What an execution plan depends on: C without its buffers.
std::string convGraphPlanKey(const ConvConfig &C);

/// The label of the step that runs convolution Index of P (its ONNX
/// nodes), for errors.
std::string convLabel(const Plan &P, size_t Index);

} // namespace solder

#endif
