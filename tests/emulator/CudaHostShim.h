//===- CudaHostShim.h - Generated CUDA C++ compiled as host C++ -*- C++ -*-===//
//
// Included (`-include`) ahead of a generated kernel's source when the
// kernel emulator compiles it with the host compiler (KernelEmulator.h).
// CUDA's keywords become nothing or their host meaning, the thread and
// block indices read the emulated thread, and barriers and warp-wide
// instructions call into the emulator, which runs a block's threads (or a
// cluster's) as fibers. The inline-PTX helpers of TensorCoreSupport.cpp
// have host versions here; HostSource.cpp has taken the kernel's own out
// and turned its `__shared__` variables into per-block bytes, so
// `__shared__` is left undefined: one the rewrite missed fails to compile
// rather than being shared between the blocks of a cluster. Only what
// solder's generated kernels use is here.
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
#undef __cluster_dims__
#define __cluster_dims__(...)
#define __global__
#define __device__
#define __host__
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
constexpr unsigned Slot = SOLDER_EMU_SLOT_BYTES;
inline unsigned lane() { return solder_emu_rt->Cur->Linear % 32; }
template <typename T> T shuffle(T V, unsigned Src) {
  const unsigned char *S = solder_emu_rt->Exchange(&V, sizeof(T));
  T Out;
  std::memcpy(&Out, S + Src % 32 * Slot, sizeof(T));
  solder_emu_rt->ExchangeDone();
  return Out;
}
template <typename To, typename From> To bits(From V) {
  static_assert(sizeof(To) == sizeof(From), "same size");
  To T;
  std::memcpy(&T, &V, sizeof(T));
  return T;
}
inline unsigned char *shared(unsigned Addr) {
  return solder_emu_rt->BlockShared(~0u) + Addr;
}
/// A 16-bit element of mma.sync's type as float.
inline float element(uint16_t H) {
#ifdef SOLDER_EMU_MMA_BF16
  return bits<float>(uint32_t(H) << 16);
#else
  __half_raw R;
  R.x = H;
  return __half2float(__half(R));
#endif
}
/// ldmatrix of N 8x8 matrices of 16-bit elements: lanes 8j..8j+7 give the
/// rows of matrix j; lane L gets, of each, row L / 4 columns 2 (L % 4) and
/// + 1, or transposed, column L / 4 rows 2 (L % 4) and + 1.
template <int N, bool Trans> void ldmatrix(unsigned *R, unsigned Addr) {
  const unsigned char *S = solder_emu_rt->Exchange(&Addr, 4);
  unsigned L = lane();
  auto Row = [&](unsigned Lane) {
    unsigned A;
    std::memcpy(&A, S + Lane * Slot, 4);
    return shared(A);
  };
  for (int J = 0; J < N; ++J) {
    uint16_t Lo, Hi;
    if (!Trans) {
      const unsigned char *P = Row(J * 8 + L / 4) + (L % 4) * 4;
      std::memcpy(&Lo, P, 2);
      std::memcpy(&Hi, P + 2, 2);
    } else {
      std::memcpy(&Lo, Row(J * 8 + 2 * (L % 4)) + (L / 4) * 2, 2);
      std::memcpy(&Hi, Row(J * 8 + 2 * (L % 4) + 1) + (L / 4) * 2, 2);
    }
    R[J] = unsigned(Lo) | unsigned(Hi) << 16;
  }
  solder_emu_rt->ExchangeDone();
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

// The inline-PTX helpers of codegen/TensorCoreSupport.cpp (HostSource.cpp
// takes the kernel's own definitions out).
inline unsigned solder_smem(const void *P) {
  return unsigned(static_cast<const unsigned char *>(P) -
                  solder_emu_rt->BlockShared(~0u));
}
/// D += A B for one m16n8k16 tile: lane 4g + t holds A's rows g and g + 8
/// at columns 2t, 2t + 1 (and + 8), B's column g at rows 2t, 2t + 1 (and
/// + 8), D's rows g and g + 8 at columns 2t, 2t + 1.
inline void solder_mma16816(float (&D)[4], const unsigned (&A)[4], unsigned B0,
                            unsigned B1) {
  unsigned In[6] = {A[0], A[1], A[2], A[3], B0, B1};
  const unsigned char *S = solder_emu_rt->Exchange(In, sizeof(In));
  auto Half = [&](unsigned Lane, unsigned Reg, unsigned Hi) {
    unsigned W;
    std::memcpy(&W, S + Lane * solder_emu::Slot + Reg * 4, 4);
    return solder_emu::element(uint16_t(Hi ? W >> 16 : W));
  };
  unsigned L = solder_emu::lane(), G = L / 4, T = L % 4;
  for (unsigned I = 0; I < 4; ++I) {
    unsigned Row = G + 8 * (I / 2), Col = 2 * T + I % 2;
    float Acc = D[I];
    for (unsigned K = 0; K < 16; ++K) {
      float Av =
          Half((Row % 8) * 4 + (K % 8) / 2, (Row >= 8) + 2 * (K >= 8), K % 2);
      float Bv = Half(Col * 4 + (K % 8) / 2, 4 + (K >= 8), K % 2);
      Acc += Av * Bv;
    }
    D[I] = Acc;
  }
  solder_emu_rt->ExchangeDone();
}
inline void solder_ldm_x4(unsigned (&R)[4], const void *P) {
  solder_emu::ldmatrix<4, false>(R, solder_smem(P));
}
inline void solder_ldm_x2(unsigned (&R)[2], const void *P) {
  solder_emu::ldmatrix<2, false>(R, solder_smem(P));
}
inline void solder_ldm_x4_t(unsigned (&R)[4], const void *P) {
  solder_emu::ldmatrix<4, true>(R, solder_smem(P));
}
inline void solder_ldm_x2_t(unsigned (&R)[2], const void *P) {
  solder_emu::ldmatrix<2, true>(R, solder_smem(P));
}
inline void solder_ldm_x4_u(unsigned (&R)[4], unsigned A) {
  solder_emu::ldmatrix<4, false>(R, A);
}
inline void solder_ldm_x4_t_u(unsigned (&R)[4], unsigned A) {
  solder_emu::ldmatrix<4, true>(R, A);
}
// cp.async copies at once; the waits have nothing left to wait for.
inline void solder_cp16(void *Dst, const void *Src, bool Full) {
  if (Full)
    std::memcpy(Dst, Src, 16);
  else
    std::memset(Dst, 0, 16);
}
inline void solder_cp16_u(unsigned Dst, const void *Src, bool Full) {
  solder_cp16(solder_emu::shared(Dst), Src, Full);
}
// Grids run one after another here: nothing to let start early or wait for.
inline void solder_launch_dependents() {}
inline void solder_grid_wait() {}
inline void solder_cp_commit() {}
inline void solder_cp_wait1() {}
inline void solder_cp_wait0() {}
template <int N> void solder_cp_wait() {}
inline float solder_ld_cluster(const float *P, unsigned Rank) {
  float V;
  std::memcpy(&V, solder_emu_rt->BlockShared(Rank) + solder_smem(P), 4);
  return V;
}
inline void solder_cluster_sync() { solder_emu_rt->SyncCluster(); }
// The blocks of a row run as one cluster's fibers (HostSource.cpp's
// solder_coresident), so waiting is yielding until the others arrived.
inline void solder_rowgroup_wait(unsigned *Arrived, unsigned Blocks) {
  ++*Arrived;
  while (*Arrived < Blocks)
    solder_emu_rt->Yield();
}
// (A cluster's fibers share one host thread: plain reads and writes.)
inline unsigned atomicAdd(unsigned *P, unsigned V) {
  unsigned Old = *P;
  *P = Old + V;
  return Old;
}
inline unsigned atomicExch(unsigned *P, unsigned V) {
  unsigned Old = *P;
  *P = V;
  return Old;
}
template <typename T> T __ldcg(const T *P) { return *P; }

// Shared-memory barriers (mbarrier), their state kept in the barrier's own
// 8 bytes: arrivals still expected (bits 0-15), the count they reset to
// (16-31), the phase (bit 32), transaction bytes still expected (signed,
// 33-63). A phase completes when no arrival and no byte is outstanding.
// Bulk tensor copies (TMA) run at once and then complete their bytes.
namespace solder_emu {
struct Mbar {
  unsigned Pending, Count, Phase;
  long long Tx;
};
/// The barrier at Bar of the block of cluster rank Rank (~0u: this one).
inline Mbar loadMbar(unsigned Bar, unsigned Rank = ~0u) {
  uint64_t W;
  std::memcpy(&W, solder_emu_rt->BlockShared(Rank) + Bar, 8);
  return {unsigned(W & 0xFFFF), unsigned(W >> 16 & 0xFFFF),
          unsigned(W >> 32 & 1), (long long)W >> 33};
}
inline void storeMbar(unsigned Bar, Mbar M, unsigned Rank = ~0u) {
  if (M.Pending == 0 && M.Tx == 0) {
    M.Phase ^= 1;
    M.Pending = M.Count;
  }
  uint64_t W = uint64_t(M.Pending) | uint64_t(M.Count) << 16 |
               uint64_t(M.Phase) << 32 | uint64_t(M.Tx) << 33;
  std::memcpy(solder_emu_rt->BlockShared(Rank) + Bar, &W, 8);
  solder_emu_rt->Advance();
}
} // namespace solder_emu
inline void solder_mbar_init(unsigned Bar, unsigned Count) {
  uint64_t W = uint64_t(Count) | uint64_t(Count) << 16;
  std::memcpy(solder_emu::shared(Bar), &W, 8);
}
inline void solder_fence_mbar_init() {}
inline void solder_mbar_arrive(unsigned Bar) {
  solder_emu::Mbar M = solder_emu::loadMbar(Bar);
  --M.Pending;
  solder_emu::storeMbar(Bar, M);
}
inline void solder_mbar_expect_tx(unsigned Bar, unsigned Bytes) {
  solder_emu::Mbar M = solder_emu::loadMbar(Bar);
  M.Tx += Bytes;
  --M.Pending;
  solder_emu::storeMbar(Bar, M);
}
/// Waits until the phase of this parity has completed (a fresh barrier's
/// "previous" phase, parity 1, counts as complete).
inline void solder_mbar_wait(unsigned Bar, unsigned Parity) {
  while (solder_emu::loadMbar(Bar).Phase == Parity)
    solder_emu_rt->Yield();
}
// setmaxnreg moves registers between warpgroups: nothing to move here.
inline void solder_regs_producer() {}
inline void solder_regs_consumer() {}
inline void solder_bar_sync(unsigned Id, unsigned Count) {
  solder_emu_rt->NamedBarrier(Id, Count);
}
/// cp.async.bulk.tensor.2d: the Box at (C0, C1) of the map's tensor (zeros
/// outside it) into shared memory at Dst, 128-byte swizzled, then the
/// box's bytes completed on Bar.
/// Into the block of cluster rank Rank (~0u: this one).
inline void solder_tma_2d(unsigned Dst, const void *Map, int C0, int C1,
                          unsigned Bar, unsigned Rank = ~0u) {
  const SolderEmuTensorMap &T = *static_cast<const SolderEmuTensorMap *>(Map);
  unsigned RowBytes = T.Box[0] * T.ElemBytes;
  const unsigned char *Base = static_cast<const unsigned char *>(T.Base);
  unsigned char *Shared = solder_emu_rt->BlockShared(Rank);
  for (unsigned R = 0; R < T.Box[1]; ++R)
    for (unsigned B = 0; B < RowBytes; ++B) {
      long long Row = (long long)C1 + R, Col = (long long)C0 + B / T.ElemBytes;
      bool In = Row >= 0 && Row < T.Dims[1] && Col >= 0 && Col < T.Dims[0];
      unsigned A = Dst + R * RowBytes + B;
      Shared[A ^ ((A >> 7 & 7) << 4)] =
          In ? Base[Row * T.RowBytes + Col * T.ElemBytes + B % T.ElemBytes] : 0;
    }
  solder_emu::Mbar M = solder_emu::loadMbar(Bar, Rank);
  M.Tx -= (long long)RowBytes * T.Box[1];
  solder_emu::storeMbar(Bar, M, Rank);
}
/// The same box into every block of the cluster in Mask, each completing
/// the bytes on its own barrier at Bar.
inline void solder_tma_2d_mc(unsigned Dst, const void *Map, int C0, int C1,
                             unsigned Bar, unsigned short Mask) {
  for (unsigned Rank = 0; Rank < 16; ++Rank)
    if (Mask >> Rank & 1)
      solder_tma_2d(Dst, Map, C0, C1, Bar, Rank);
}
inline void solder_mbar_arrive_peer(unsigned Bar, unsigned Rank) {
  solder_emu::Mbar M = solder_emu::loadMbar(Bar, Rank);
  --M.Pending;
  solder_emu::storeMbar(Bar, M, Rank);
}

// wgmma.mma_async m64nNk16 (sm_90a) with both operands in shared memory
// behind matrix descriptors (128-byte swizzle), run at once: the fences,
// commits and waits around it have nothing to order. N and whether B is
// N-major (tnspB) come from the kernel's helper (-D, HostSource.cpp).
inline void solder_wgmma_fence() {}
inline void solder_wgmma_commit() {}
template <int N> void solder_wgmma_wait() {}
inline void solder_fence_async_smem() {}
#ifdef SOLDER_EMU_WGMMA_N
namespace solder_emu {
struct Descriptor {
  unsigned Start, Lbo, Sbo;
};
inline Descriptor descriptor(unsigned long long D) {
  return {unsigned(D & 0x3FFF) << 4, unsigned(D >> 16 & 0x3FFF) << 4,
          unsigned(D >> 32 & 0x3FFF) << 4};
}
/// The 16-bit element at shared address A of a 128-byte-swizzled layout:
/// the 16-byte chunk (address bits 4-6) XOR the row in the 1024-byte atom
/// (bits 7-9).
inline float swizzled(unsigned A) {
  uint16_t H;
  std::memcpy(&H, shared(A ^ ((A >> 7 & 7) << 4)), 2);
  return element(H);
}
/// K-major: row R's 16 of K are 32 bytes of a 128-byte row; 8 rows make an
/// atom, SBO apart.
inline float kMajor(const Descriptor &D, unsigned R, unsigned K) {
  return swizzled(D.Start + R / 8 * D.Sbo + R % 8 * 128 + K * 2);
}
/// MN-major: each k is a 128-byte row of 64 of N; 8 rows of k make an
/// atom, SBO apart along K and LBO apart along N.
inline float mnMajor(const Descriptor &D, unsigned K, unsigned N) {
  return swizzled(D.Start + N / 64 * D.Lbo + K / 8 * D.Sbo + K % 8 * 128 +
                  N % 64 * 2);
}
} // namespace solder_emu
/// Warp w % 4 of the warpgroup owns rows 16 (w % 4) .. + 15 of the 64:
/// register I of column block J is row 16 (w % 4) + lane / 4 (+ 8 for
/// I >= 2), column 8 J + 2 (lane % 4) + I % 2.
inline void solder_wgmma(float (&Acc)[SOLDER_EMU_WGMMA_N / 8][4],
                         unsigned long long DA, unsigned long long DB) {
  using namespace solder_emu;
  Descriptor A = descriptor(DA), B = descriptor(DB);
  unsigned L = lane(), W = solder_emu_rt->Cur->Linear / 32 % 4;
  float Rows[2][16];
  for (unsigned H = 0; H < 2; ++H)
    for (unsigned K = 0; K < 16; ++K)
      Rows[H][K] = kMajor(A, 16 * W + L / 4 + 8 * H, K);
  for (unsigned J = 0; J < SOLDER_EMU_WGMMA_N / 8; ++J)
    for (unsigned E = 0; E < 2; ++E) {
      unsigned Col = 8 * J + 2 * (L % 4) + E;
      float Column[16];
      for (unsigned K = 0; K < 16; ++K)
        Column[K] =
            SOLDER_EMU_WGMMA_TNSPB ? mnMajor(B, K, Col) : kMajor(B, Col, K);
      for (unsigned H = 0; H < 2; ++H) {
        float S = Acc[J][2 * H + E];
        for (unsigned K = 0; K < 16; ++K)
          S += Rows[H][K] * Column[K];
        Acc[J][2 * H + E] = S;
      }
    }
}
#endif

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
inline float __tanhf(float V) { return std::tanh(V); }
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
