//===- GpuCommands.h - The GPU subcommands ----------------------*- C++ -*-===//
//
// `solder compile`, `solder bench` and `solder dump-kernels` (builds with
// the CUDA toolkit only), and the loading step they share: a model given
// as ONNX is compiled, a plan file is read.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TOOLS_GPUCOMMANDS_H
#define SOLDER_TOOLS_GPUCOMMANDS_H

#include "solder/Solder.h"
#include "llvm/Support/CommandLine.h"
#include <memory>
#include <string>
#include <vector>

namespace solder {

llvm::cl::SubCommand &compileSubCommand();
int runCompileCommand();
llvm::cl::SubCommand &benchSubCommand();
int runBenchCommand();
llvm::cl::SubCommand &dumpKernelsSubCommand();
int runDumpKernelsCommand();

struct ModelLoadOptions {
  std::vector<std::string> Shapes; ///< --shape NAME=DIMS
  std::string Arch;
  std::string CacheDir;
  bool AllowTF32 = false;
  std::vector<std::string> DisabledPasses;
  /// Progress lines (stderr when it is a terminal), or null.
  llvm::raw_ostream *Progress = nullptr;
};

/// Compiles MODEL.onnx or reads MODEL.plan (told apart by the plan magic).
llvm::Expected<std::shared_ptr<CompiledModel>>
loadOrCompileModel(llvm::StringRef Path, const ModelLoadOptions &Opts);

/// stderr when it is a terminal, else null.
llvm::raw_ostream *progressStream();

} // namespace solder

#endif
