//===- Slices.h - One loop split over a few threads -------------*- C++ -*-===//
//
// Internal to the passes that write weights of megabytes (precision
// conversion, horizontal matmul packing): their loops over elements or rows
// run in consecutive slices on several threads. The split depends only on
// the count and the thread count, so results do not depend on the machine
// beyond how many threads ran.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_PASSES_SLICES_H
#define SOLDER_PASSES_SLICES_H

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace solder {

/// The machine's hardware threads, at most Max (at least 1).
inline int64_t hardwareThreads(int64_t Max) {
  return std::max<int64_t>(
      1, std::min<int64_t>(Max, std::thread::hardware_concurrency()));
}

/// Fn(Begin, End) over Threads consecutive slices of [0, N) of equal size
/// (the last may be shorter or absent), the first on this thread; returns
/// when all have run. One slice, Fn(0, N), when Threads <= 1.
template <typename FnT> void forEachSlice(int64_t N, int64_t Threads, FnT Fn) {
  if (Threads <= 1) {
    Fn(int64_t(0), N);
    return;
  }
  int64_t Per = (N + Threads - 1) / Threads;
  std::vector<std::thread> Workers;
  for (int64_t W = 1; W < Threads; ++W) {
    int64_t Begin = W * Per, End = std::min(N, Begin + Per);
    if (Begin < End)
      Workers.emplace_back([=, &Fn] { Fn(Begin, End); });
  }
  Fn(int64_t(0), std::min(N, Per));
  for (std::thread &T : Workers)
    T.join();
}

} // namespace solder

#endif
