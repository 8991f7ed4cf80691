//===- HostSource.h - A generated kernel's text, made host C++ --*- C++ -*-===//
//
// What the kernel emulator changes in a generated kernel before the host
// compiler sees it (the rest is CudaHostShim.h's work):
//   * the inline-PTX helpers of codegen/TensorCoreSupport.cpp (cp.async,
//     ldmatrix, mma.sync, the cluster's shared-memory loads and barrier,
//     wgmma and its fences) are taken out: the shim defines host versions under
//     the same names; any other inline PTX makes the kernel not emulatable;
//   * each `__shared__` variable becomes a reference to the block's own
//     bytes (SolderEmuRuntime::SharedVariable), and dynamic shared memory a
//     pointer to the block's region, so blocks of a cluster, which run
//     together, each have their own;
//   * mma.sync's element type, wgmma's N and tnspB, and the
//     `__cluster_dims__` are read off.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TESTS_EMULATOR_HOSTSOURCE_H
#define SOLDER_TESTS_EMULATOR_HOSTSOURCE_H

#include "llvm/ADT/StringRef.h"
#include <array>
#include <string>

namespace solder {
namespace emu {

struct HostSource {
  /// The text for the host compiler; empty when the kernel cannot be
  /// emulated (Why says why).
  std::string Text;
  std::string Why;
  /// mma.sync multiplies bf16 (else f16): the shim, included ahead of the
  /// text, is told with -DSOLDER_EMU_MMA_BF16.
  bool MmaBf16 = false;
  /// wgmma's N (0: no wgmma) and whether its B is N-major (tnspB), for
  /// -DSOLDER_EMU_WGMMA_N and -DSOLDER_EMU_WGMMA_TNSPB.
  unsigned WgmmaN = 0;
  bool WgmmaTransB = false;
  /// Blocks run together in x, y, z: the cluster's, or those of a
  /// cooperative launch that wait for each other (solder_coresident).
  std::array<unsigned, 3> Cluster = {1, 1, 1};
  /// The hardware cluster (__cluster_dims__) inside that group: the blocks
  /// whose shared memory and cluster barrier are shared.
  std::array<unsigned, 3> HwCluster = {1, 1, 1};
};

HostSource hostSource(llvm::StringRef Source);

} // namespace emu
} // namespace solder

#endif
