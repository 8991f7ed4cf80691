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
#include <set>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace solder {

/// 90 for "sm_90", "sm_90a" or "compute_90"; 90 when it has no digits.
unsigned smVersionOf(llvm::StringRef Arch);

/// Fills the Cubin of every kernel in Kernels that has none (compiled for
/// Arch); kernels identical but for their names share one compile and
/// record the function to run in Symbol.
llvm::Error compileCubins(llvm::MutableArrayRef<PlanKernel> Kernels,
                          llvm::StringRef Arch, llvm::StringRef CacheDir,
                          llvm::raw_ostream *Progress);

} // namespace solder

#endif
