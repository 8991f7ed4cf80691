//===- MemoryPlanner.h - Arena placement of intermediates ------*- C++ -*-===//
//
// Places the intermediate buffers of a plan in one activation arena. Each
// buffer has a size and a lifetime [FirstStep, LastStep] (inclusive: the
// step writing it first, the last step reading it). Two buffers may share
// bytes only when their lifetimes do not overlap.
//
// Placement is greedy best-fit by size: buffers are taken largest first
// and each goes into the smallest gap, between already-placed buffers
// whose lifetimes overlap its own, that fits it; with no such gap it goes
// above the highest of them. Offsets are multiples of Alignment. The arena
// is never larger than the (aligned) sum of all buffers.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_MEMORYPLANNER_H
#define SOLDER_RUNTIME_CUDA_MEMORYPLANNER_H

#include "llvm/ADT/ArrayRef.h"
#include <cstdint>
#include <vector>

namespace solder {

/// Device pointers and arena offsets are aligned to this many bytes.
constexpr uint64_t ArenaAlignment = 256;

inline uint64_t alignTo256(uint64_t Bytes) {
  return (Bytes + ArenaAlignment - 1) / ArenaAlignment * ArenaAlignment;
}

struct BufferLifetime {
  uint64_t Bytes = 0;
  unsigned FirstStep = 0;
  unsigned LastStep = 0;
};

struct MemoryPlan {
  /// Offset of each buffer, in the order given.
  std::vector<uint64_t> Offsets;
  uint64_t ArenaBytes = 0;
  /// Sum of every buffer's aligned size: the arena without reuse.
  uint64_t NaiveBytes = 0;
};

MemoryPlan planMemory(llvm::ArrayRef<BufferLifetime> Buffers,
                      uint64_t Alignment = ArenaAlignment);

/// True when no two buffers with overlapping lifetimes overlap in bytes and
/// every buffer lies inside the arena (for tests and debug checks).
bool isValidMemoryPlan(llvm::ArrayRef<BufferLifetime> Buffers,
                       const MemoryPlan &Plan);

} // namespace solder

#endif
