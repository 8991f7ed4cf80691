//===- CudaHostShim.h - Generated CUDA C++ compiled as host C++ -*- C++ -*-===//
//
// Included (`-include`) ahead of a generated kernel's source when the
// kernel emulator compiles it with the host compiler (KernelEmulator.h).
// CUDA's keywords become nothing or their host meaning, `__shared__`
// variables become statics (the emulator runs one block at a time), the
// thread and block indices read the emulated thread, and barriers and warp
// shuffles call into the emulator, which runs a block's threads as fibers.
// Only what solder's generated kernels use is here; a kernel with inline
// PTX (tensor cores, clusters, cp.async) is not emulated at all.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TESTS_EMULATOR_CUDAHOSTSHIM_H
#define SOLDER_TESTS_EMULATOR_CUDAHOSTSHIM_H

#include "EmuAbi.h"
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#undef __global__
#undef __device__
#undef __host__
#undef __shared__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __shared__ static
#define __launch_bounds__(...)

extern "C" {
SolderEmuRuntime *solder_emu_rt = nullptr;
}

#define threadIdx (solder_emu_rt->Cur->ThreadIdx)
#define blockIdx (solder_emu_rt->Cur->BlockIdx)
#define blockDim (solder_emu_rt->Cur->BlockDim)
#define gridDim (solder_emu_rt->Cur->GridDim)
#define warpSize 32

inline void __syncthreads() { solder_emu_rt->SyncThreads(); }
inline void __syncwarp(unsigned = 0xffffffffu) { solder_emu_rt->SyncWarp(); }

namespace solder_emu {
inline unsigned lane() { return solder_emu_rt->Cur->Linear % 32; }
template <typename T> T shuffle(T V, unsigned Src) {
  T Out;
  solder_emu_rt->Shuffle(&V, &Out, sizeof(T), Src);
  return Out;
}
template <typename To, typename From> To bits(From V) {
  static_assert(sizeof(To) == sizeof(From), "same size");
  To T;
  std::memcpy(&T, &V, sizeof(T));
  return T;
}
} // namespace solder_emu

// Lanes outside the caller's segment of Width lanes read their own value,
// as on the GPU.
template <typename T> T __shfl_sync(unsigned, T V, int Src, int Width = 32) {
  unsigned L = solder_emu::lane(), Seg = L & ~unsigned(Width - 1);
  return solder_emu::shuffle(V, Seg + unsigned(Src) % unsigned(Width));
}
template <typename T>
T __shfl_xor_sync(unsigned, T V, int Mask, int Width = 32) {
  unsigned L = solder_emu::lane(), Seg = L & ~unsigned(Width - 1);
  unsigned Src = L ^ unsigned(Mask);
  return solder_emu::shuffle(V, Src >= Seg + unsigned(Width) ? L : Src);
}
template <typename T>
T __shfl_down_sync(unsigned, T V, unsigned Delta, int Width = 32) {
  unsigned L = solder_emu::lane(), Seg = L & ~unsigned(Width - 1);
  unsigned Src = L + Delta;
  return solder_emu::shuffle(V, Src >= Seg + unsigned(Width) ? L : Src);
}
template <typename T>
T __shfl_up_sync(unsigned, T V, unsigned Delta, int Width = 32) {
  unsigned L = solder_emu::lane(), Seg = L & ~unsigned(Width - 1);
  return solder_emu::shuffle(V, L < Seg + Delta ? L : L - Delta);
}

inline float __int_as_float(int V) { return solder_emu::bits<float>(V); }
inline int __float_as_int(float V) { return solder_emu::bits<int>(V); }
inline float __uint_as_float(unsigned V) { return solder_emu::bits<float>(V); }
inline unsigned __float_as_uint(float V) {
  return solder_emu::bits<unsigned>(V);
}
inline double __longlong_as_double(long long V) {
  return solder_emu::bits<double>(V);
}
inline long long __double_as_longlong(double V) {
  return solder_emu::bits<long long>(V);
}
inline float rsqrtf(float V) { return 1.0f / std::sqrt(V); }
inline float __expf(float V) { return std::exp(V); }
inline float __logf(float V) { return std::log(V); }
inline float __fdividef(float A, float B) { return A / B; }
inline float __saturatef(float V) { return std::min(1.0f, std::max(0.0f, V)); }
template <typename T> T __ldg(const T *P) { return *P; }
// CUDA's min and max: fminf/fmaxf for floats (a NaN loses), plain
// comparisons for integers.
inline float min(float A, float B) { return std::fmin(A, B); }
inline float max(float A, float B) { return std::fmax(A, B); }
inline double min(double A, double B) { return std::fmin(A, B); }
inline double max(double A, double B) { return std::fmax(A, B); }
template <typename T> T min(T A, T B) { return B < A ? B : A; }
template <typename T> T max(T A, T B) { return A < B ? B : A; }
using std::isinf;
using std::isnan;

#endif
