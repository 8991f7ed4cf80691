//===- MemoryPlanner.cpp - Arena placement of intermediates ---------------===//
//
// Greedy best-fit by size over lifetimes (see MemoryPlanner.h). Quadratic in
// the number of buffers, which is a few thousand at most for real models.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/MemoryPlanner.h"
#include <algorithm>
#include <numeric>

namespace solder {

static bool lifetimesOverlap(const BufferLifetime &A, const BufferLifetime &B) {
  return A.FirstStep <= B.LastStep && B.FirstStep <= A.LastStep;
}

MemoryPlan planMemory(llvm::ArrayRef<BufferLifetime> Buffers,
                      uint64_t Alignment) {
  auto Align = [&](uint64_t B) {
    return (B + Alignment - 1) / Alignment * Alignment;
  };
  MemoryPlan Plan;
  Plan.Offsets.assign(Buffers.size(), 0);
  std::vector<size_t> Order(Buffers.size());
  std::iota(Order.begin(), Order.end(), 0);
  // Largest first; ties by earlier start, then index, so plans are
  // deterministic.
  std::stable_sort(Order.begin(), Order.end(), [&](size_t A, size_t B) {
    if (Buffers[A].Bytes != Buffers[B].Bytes)
      return Buffers[A].Bytes > Buffers[B].Bytes;
    return Buffers[A].FirstStep < Buffers[B].FirstStep;
  });

  std::vector<size_t> Placed;
  std::vector<std::pair<uint64_t, uint64_t>> Busy; // [begin, end) in bytes
  for (size_t I : Order) {
    uint64_t Size = Align(Buffers[I].Bytes);
    Plan.NaiveBytes += Size;
    if (Size == 0) {
      Plan.Offsets[I] = 0;
      continue;
    }
    Busy.clear();
    for (size_t P : Placed)
      if (lifetimesOverlap(Buffers[I], Buffers[P]))
        Busy.push_back(
            {Plan.Offsets[P], Plan.Offsets[P] + Align(Buffers[P].Bytes)});
    std::sort(Busy.begin(), Busy.end());
    // Walk the gaps between busy ranges; keep the smallest that fits.
    uint64_t Best = UINT64_MAX, BestGap = UINT64_MAX, Cursor = 0;
    for (auto [Begin, End] : Busy) {
      if (Begin > Cursor && Begin - Cursor >= Size &&
          Begin - Cursor < BestGap) {
        Best = Cursor;
        BestGap = Begin - Cursor;
      }
      Cursor = std::max(Cursor, End);
    }
    if (Best == UINT64_MAX)
      Best = Cursor;
    Plan.Offsets[I] = Best;
    Plan.ArenaBytes = std::max(Plan.ArenaBytes, Best + Size);
    Placed.push_back(I);
  }
  return Plan;
}

bool isValidMemoryPlan(llvm::ArrayRef<BufferLifetime> Buffers,
                       const MemoryPlan &Plan) {
  if (Plan.Offsets.size() != Buffers.size())
    return false;
  for (size_t I = 0; I < Buffers.size(); ++I) {
    if (Plan.Offsets[I] + Buffers[I].Bytes > Plan.ArenaBytes &&
        Buffers[I].Bytes != 0)
      return false;
    for (size_t J = I + 1; J < Buffers.size(); ++J) {
      if (!Buffers[I].Bytes || !Buffers[J].Bytes ||
          !lifetimesOverlap(Buffers[I], Buffers[J]))
        continue;
      uint64_t AB = Plan.Offsets[I], AE = AB + Buffers[I].Bytes;
      uint64_t BB = Plan.Offsets[J], BE = BB + Buffers[J].Bytes;
      if (AB < BE && BB < AE)
        return false;
    }
  }
  return true;
}

} // namespace solder
