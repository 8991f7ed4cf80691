//===- EmuAbi.h - What an emulated kernel and the emulator share -*- C++
//-*-===//
//
// A kernel compiled for the emulator (KernelEmulator.h) is a shared object
// that calls back into the emulator for everything a GPU thread asks of
// the hardware: which thread it is, block barriers, warp barriers and warp
// shuffles. Both sides include this header; the kernel's side defines the
// one pointer, `solder_emu_rt`, which the emulator sets after loading it.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TESTS_EMULATOR_EMUABI_H
#define SOLDER_TESTS_EMULATOR_EMUABI_H

#include <vector_types.h>

struct SolderEmuThread {
  uint3 ThreadIdx, BlockIdx;
  dim3 BlockDim, GridDim;
  /// threadIdx linearised (x fastest); its warp is Linear / 32.
  unsigned Linear;
};

struct SolderEmuRuntime {
  /// The thread running now.
  SolderEmuThread *Cur;
  /// __syncthreads(): every live thread of the block arrives.
  void (*SyncThreads)();
  /// __syncwarp(): every live thread of the warp arrives.
  void (*SyncWarp)();
  /// A warp shuffle: this thread offers Bytes at In and receives, once the
  /// whole warp has offered, what lane SrcLane offered.
  void (*Shuffle)(const void *In, void *Out, unsigned Bytes, unsigned SrcLane);
  /// The block's dynamic shared memory.
  unsigned char *DynamicShared;
};

#endif
