//===- TensorCoreSupport.h - Hopper tensor-core helpers ---------*- C++ -*-===//
//
// Private to codegen/: what the wgmma GEMM (WgmmaGemm.cpp) prints into its
// kernels, and the marker line by which a kernel asks NVRTC for the
// architecture-specific target. The mma.sync helpers and the text
// utilities shared with the attention kernels are declared in
// EmitterUtils.h; all are defined in TensorCoreSupport.cpp.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_CODEGEN_TENSORCORESUPPORT_H
#define SOLDER_CODEGEN_TENSORCORESUPPORT_H

#include "ir/DType.h"
#include "llvm/ADT/StringRef.h"
#include <string>

namespace solder {
namespace codegen {

/// A kernel whose source holds this line uses instructions of the
/// architecture-specific target (wgmma needs sm_90a, not sm_90): NVRTC
/// compiles it for `sm_XYa` (NvrtcCompiler.cpp), every other kernel for the
/// plain `sm_XY`. The line is part of the source, so the cubin cache key,
/// which covers the source and the options, tells the two apart.
constexpr const char ArchSpecificMarker[] =
    "// solder: needs the architecture-specific target (sm_90a: wgmma)";

/// Whether Source carries ArchSpecificMarker.
bool needsArchSpecificTarget(llvm::StringRef Source);

/// The wgmma helpers of a GEMM whose warpgroups each compute a 64 x N tile
/// (N a multiple of 8, at most 256) from f16/bf16 operands in shared
/// memory with 128-byte swizzle: the matrix descriptor, one
/// `wgmma.mma_async m64nNk16` accumulating into `float (&)[N / 8][4]`
/// (B N-major when TransposeB, else K-major), its fence, commit and wait,
/// and the generic-to-async proxy fence. Uses mmaHelpers' solder_smem.
std::string wgmmaHelpers(DType T, int N, bool TransposeB);

/// Shared-memory barrier helpers (mbarrier, sm_90): solder_mbar_init,
/// solder_fence_mbar_init, solder_mbar_arrive and solder_mbar_wait (by
/// phase parity), on 32-bit shared addresses.
std::string mbarrierHelpers();
/// TMA multicast to the blocks of a cluster (solder_tma_2d_mc) and an
/// arrival on another block's shared-memory barrier
/// (solder_mbar_arrive_peer); with mbarrierHelpers.
std::string multicastHelpers();

} // namespace codegen
} // namespace solder

#endif
