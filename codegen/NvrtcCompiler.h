//===- NvrtcCompiler.h - Generated kernels to CUBIN through NVRTC -*- C++
//-*-===//
//
// Compiles generated kernels to CUBINs for one GPU architecture with NVRTC
// (no GPU needed), on a pool of threads, through an on-disk cache keyed by
// a SHA-256 of the source, the options, the NVRTC version and the
// architecture. A compile error carries NVRTC's log and the path of a file
// holding the failing kernel's source.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_CODEGEN_NVRTCCOMPILER_H
#define SOLDER_CODEGEN_NVRTCCOMPILER_H

#include "codegen/GeneratedKernel.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <functional>
#include <string>
#include <vector>

namespace solder {

struct NvrtcOptions {
  /// Target architecture, e.g. "sm_90" (sm_80 or newer).
  std::string Arch = "sm_90";
  /// Cache folder; empty = $XDG_CACHE_HOME/solder, else ~/.cache/solder.
  std::string CacheDir;
  bool UseCache = true;
  /// Worker threads; 0 = std::thread::hardware_concurrency().
  unsigned Threads = 0;
  /// Folder holding cuda_fp16.h; empty = found automatically
  /// ($CUDA_PATH/include, the toolkit found at build time,
  /// /usr/local/cuda/include...).
  std::string CudaIncludeDir;
  /// Where a failing kernel's source is written; empty = the system
  /// temporary folder.
  std::string FailureDir;
  /// Called after each kernel as (done, total), from worker threads but
  /// never concurrently. When null, progress is printed to stderr if it is
  /// a terminal ("compiling kernels 12/85").
  std::function<void(unsigned, unsigned)> Progress;
  /// Called at most once per compileKernels call when the cache folder
  /// cannot be created or written (the call then goes on without caching
  /// what it compiles). When null, "warning: ..." goes to stderr.
  std::function<void(const std::string &)> Warning;
  /// Extra NVRTC options (e.g. "-lineinfo"); part of the cache key.
  std::vector<std::string> ExtraOptions;
};

struct CompileStats {
  unsigned Compiled = 0; ///< kernels NVRTC compiled
  unsigned Cached = 0;   ///< kernels read from the disk cache
  double Seconds = 0;    ///< wall time of the whole call
};

/// "major.minor" of the NVRTC library in use.
std::string nvrtcVersionString();

/// Writes Data to a temporary file beside Path and renames it over Path, as
/// the cache's entries are written: readers see the old file or the new one.
llvm::Error writeCacheFileAtomically(const std::string &Path,
                                     llvm::StringRef Data);

/// The options passed to NVRTC for Opts (without the include folder when
/// none is found).
llvm::Expected<std::vector<std::string>>
nvrtcCompileOptions(const NvrtcOptions &Opts);

/// Compiles every kernel; result I is the CUBIN of Kernels[I]. The first
/// failing kernel (in kernel order) gives the error.
llvm::Expected<std::vector<std::string>>
compileKernels(llvm::ArrayRef<GeneratedKernel> Kernels,
               const NvrtcOptions &Opts, CompileStats *Stats = nullptr);

/// The cache folder Opts resolves to.
std::string resolveCacheDir(const NvrtcOptions &Opts);

} // namespace solder

#endif
