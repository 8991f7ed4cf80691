//===- KernelEmulator.h - Generated kernels run on the CPU ------*- C++ -*-===//
//
// Runs solder's generated CUDA kernels where there is no GPU (CI, the
// development machine), so that tests check what the code generator's
// kernels compute, not only that NVRTC accepts them. A kernel's source is
// compiled by the host C++ compiler with CudaHostShim.h in front into a
// shared object (cached in the build tree by the source's hash); a launch
// runs the blocks one after another on the calling thread, each block's
// threads as fibers (ucontext) that switch at barriers and warp shuffles.
//
// The blocks of a thread-block cluster run together, each with its own
// shared memory. The inline-PTX helpers the kernels share (cp.async,
// ldmatrix, mma.sync m16n8k16, wgmma, the cluster's shared-memory loads
// and barrier, mbarriers, named barriers, TMA copies, the dependent-launch
// prologue, setmaxnreg) have host versions in the shim, warp-wide ones
// exchanging the lanes' operands (HostSource.h); a kernel with other
// inline PTX is refused. Tensor-map parameters take the emulator's own
// SolderEmuTensorMap (EmuAbi.h), by reference.
//
// What it checks: indexing, fusion, reductions and their warp/block
// combination, tensor-core fragment layouts, conversions and stores,
// whole-tensor coverage (run on a poisoned arena). What it cannot:
// anything only hardware shows (races between blocks, which run one
// cluster at a time; memory ordering; the asynchrony of cp.async; speed).
// Threads waiting at barriers that cannot all open (a barrier inside
// divergent code) are reported, not hung on.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TESTS_EMULATOR_KERNELEMULATOR_H
#define SOLDER_TESTS_EMULATOR_KERNELEMULATOR_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <array>
#include <memory>
#include <string>
#include <vector>

struct SolderEmuRuntime;

namespace solder {
namespace emu {

/// Why a kernel with this source cannot be emulated, or "" when it can.
std::string whyNotEmulated(llvm::StringRef Source);

/// The host compiler the emulator uses ($CXX, else c++), or "" when none
/// is found.
std::string hostCompiler();

class EmulatedKernel {
public:
  ~EmulatedKernel();
  /// Runs the kernel over Grid blocks of Block threads; Args are its
  /// parameters (all pointers, as solder's kernels take them).
  llvm::Error launch(std::array<unsigned, 3> Grid,
                     std::array<unsigned, 3> Block, unsigned DynamicShared,
                     llvm::ArrayRef<void *> Args) const;
  const std::string &name() const { return Name; }

private:
  friend llvm::Expected<std::vector<std::unique_ptr<EmulatedKernel>>>
  compileKernels(llvm::ArrayRef<std::pair<std::string, std::string>>,
                 const std::string &);
  std::string Name;
  void *Library = nullptr;
  void *Entry = nullptr;
  ::SolderEmuRuntime **Runtime = nullptr;
  /// Blocks run together (HostSource::Cluster) and the hardware cluster
  /// inside them (the kernel's __cluster_dims__).
  std::array<unsigned, 3> Cluster = {1, 1, 1};
  std::array<unsigned, 3> HwCluster = {1, 1, 1};
};

/// Compiles each (name, source) pair into an emulated kernel, in parallel,
/// reusing shared objects already in CacheDir.
llvm::Expected<std::vector<std::unique_ptr<EmulatedKernel>>>
compileKernels(llvm::ArrayRef<std::pair<std::string, std::string>> Kernels,
               const std::string &CacheDir);

} // namespace emu
} // namespace solder

#endif
