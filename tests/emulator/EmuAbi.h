//===- EmuAbi.h - What an emulated kernel and the emulator share -*- C++
//-*-===//
//
// A kernel compiled for the emulator (KernelEmulator.h) is a shared object
// that calls back into the emulator for everything a GPU thread asks of
// the hardware: which thread it is, shared memory, block, warp and cluster
// barriers, and the warp-collective instructions (shuffles, ldmatrix,
// mma.sync), which exchange values between the lanes of a warp. Both sides
// include this header; the kernel's side defines the one pointer,
// `solder_emu_rt`, which the emulator sets after loading it.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TESTS_EMULATOR_EMUABI_H
#define SOLDER_TESTS_EMULATOR_EMUABI_H

#include <vector_types.h>

/// Bytes a lane may put into one warp exchange.
#define SOLDER_EMU_SLOT_BYTES 64

struct SolderEmuThread {
  uint3 ThreadIdx, BlockIdx;
  dim3 BlockDim, GridDim;
  /// threadIdx linearised (x fastest); its warp is Linear / 32.
  unsigned Linear;
  /// The block's rank in its cluster (0 without clusters).
  unsigned ClusterRank;
};

struct SolderEmuRuntime {
  /// The thread running now.
  SolderEmuThread *Cur;
  /// __syncthreads(): every live thread of the block arrives.
  void (*SyncThreads)();
  /// __syncwarp(): every live thread of the warp arrives.
  void (*SyncWarp)();
  /// The cluster barrier: every live thread of the cluster arrives.
  void (*SyncCluster)();
  /// Puts Bytes (at most SOLDER_EMU_SLOT_BYTES) at In into this lane's
  /// slot, waits for the whole warp, and returns the warp's 32 slots (slot
  /// L at L * SOLDER_EMU_SLOT_BYTES). Read them, then call ExchangeDone.
  const unsigned char *(*Exchange)(const void *In, unsigned Bytes);
  /// The warp has read its slots: they may be written again.
  void (*ExchangeDone)();
  /// The shared memory of the block of cluster rank Rank (the running
  /// thread's own for ~0u): its dynamic shared memory first.
  unsigned char *(*BlockShared)(unsigned Rank);
  /// A `__shared__` variable of the running block: the same bytes for
  /// every thread of the block that asks with the same Site.
  unsigned char *(*SharedVariable)(unsigned Site, unsigned Bytes,
                                   unsigned Align);
  /// Lets the other threads run (a thread spinning on a shared-memory
  /// barrier's phase); the emulator reports a deadlock when every thread
  /// only yields.
  void (*Yield)();
  /// Notes progress another thread may be waiting for (an mbarrier arrival
  /// or a completed bulk copy).
  void (*Advance)();
  /// bar.sync Id, Count: Count threads of the block arrive at named
  /// barrier Id (0-15).
  void (*NamedBarrier)(unsigned Id, unsigned Count);
};

/// What the emulator puts in a kernel's tensor-map parameter
/// (solder_tmap_t, 128 bytes) in place of the driver's encoding: a
/// row-major 2-D tensor at Base, Dims inner first, RowBytes apart, copied
/// Box at a time into shared memory with the 128-byte swizzle.
struct SolderEmuTensorMap {
  const void *Base;
  long long Dims[2];
  long long RowBytes;
  unsigned Box[2];
  unsigned ElemBytes;
};

#endif
