//===- CudaBackend.h - The `--backend cuda` of run and test-onnx -*- C++
//-*-===//
//
// createCudaBackend() compiles the prepared graph into a GPU plan and runs
// it with host inputs on the current GPU. Only present in builds with the
// CUDA toolkit (SOLDER_HAVE_CUDA).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TOOLS_CUDABACKEND_H
#define SOLDER_TOOLS_CUDABACKEND_H

#include "tools/Backend.h"
#include <memory>

namespace solder {

struct CudaBackendOptions {
  std::string Arch;     ///< empty: the current GPU's
  std::string CacheDir; ///< empty: the default kernel cache
  /// Off by default: run() makes one run per context, where capturing a
  /// graph would only add work.
  bool UseCudaGraph = false;
  bool AllowTF32 = false;
};

std::unique_ptr<Backend> createCudaBackend(const CudaBackendOptions &Opts = {});

/// Runs a plan file (`solder run MODEL.plan`) on host inputs, in the
/// plan's input order; fails without a GPU.
llvm::Expected<std::vector<Tensor>> runPlanFile(llvm::StringRef Path,
                                                llvm::ArrayRef<Tensor> Inputs);

} // namespace solder

#endif
