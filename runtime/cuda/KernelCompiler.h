//===- KernelCompiler.h - Code generation and NVRTC for plans ---*- C++ -*-===//
//
// The runtime's two entry points into codegen/: emitting the kernels of a
// graph, and compiling plan kernels to cubins (in parallel, through the
// disk cache) for one architecture.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_KERNELCOMPILER_H
#define SOLDER_RUNTIME_CUDA_KERNELCOMPILER_H

#include "codegen/GeneratedKernel.h"
#include "runtime/cuda/Plan.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace solder {

/// The kernels of G; PerturbGroupId is CodegenOptions::PerturbGroupId.
llvm::Expected<std::vector<GeneratedKernel>>
generateKernels(const Graph &G, llvm::StringRef Arch,
                int64_t PerturbGroupId = -1);

/// Fills the Cubin of every kernel in Kernels (compiled for Arch).
llvm::Error compileCubins(llvm::MutableArrayRef<PlanKernel> Kernels,
                          llvm::StringRef Arch, llvm::StringRef CacheDir,
                          llvm::raw_ostream *Progress);

} // namespace solder

#endif
