//===- AttentionEmitter.cpp - One flash-attention kernel per Attention ----===//
//
// The generated kernel computes softmax(scale * Q K^T + mask) V without
// ever storing the scores (flash attention, online softmax). A block of NW
// warps owns ROWS = NW * RPW query rows of one (batch, head): it stages
// those rows of Q (scaled, as float) in shared memory, then streams K and V
// in tiles of 32 keys through shared memory. For each of its rows a warp
// gives each lane one key of the tile: the lane computes that score (a dot
// product over the head dim from shared memory; K rows padded by one float
// so the 32 lanes hit 32 banks), the warp reduces max and sum with
// shuffles, rescales its running output by exp(old max - new max) and adds
// the tile's probabilities times V, each lane owning head-dim columns lane,
// lane + 32, ... of the output row. Everything is float whatever the
// storage type (f32, f16, bf16); results are rounded once when stored.
//
// Masked keys (causal, a false bool mask, -inf added) get probability 0; a
// row left with no key stores zeros (the reference kernel's rule). A large
// finite negative mask (-3.4e38, fp16's -65504) is added like any other
// value, so a row masked entirely by it comes out uniform, as the unfused
// softmax does.
//
// This is the SIMT variant: correct for every type and head dim up to 128,
// not a tensor-core kernel (docs/ARCHITECTURE.md says what comes next).
//
//===----------------------------------------------------------------------===//
#include "codegen/EmitterUtils.h"
#include "ir/AttentionSpec.h"
#include "ir/StridedView.h"
#include <cmath>
#include <utility>

namespace solder {
namespace codegen {

namespace {
constexpr int KeysPerTile = 32;
constexpr int RowsPerWarp = 2;
/// Blocks below which the tensor-core kernel halves its rows per block
/// (about two per SM on an H100's 132).
constexpr int64_t MinAttentionBlocks = 256;
/// Keys from which a one-warp block splits them over several warps.
constexpr int64_t SplitKeysFrom = 256;
/// Static shared memory a block may use.
constexpr int64_t MaxStaticShared = 48 * 1024;
constexpr int MaxHeadDim = MaxAttentionHeadDim;

// The kernel body; $LOAD_Q(x) etc. are replaced by the storage type's load.
const char *const Body =
    R"(constexpr int D = $D, DV = $DV, BC = $BC, NW = $NW, RPW = $RPW;
constexpr int ROWS = NW * RPW, NT = (DV + 31) / 32;
__shared__ float ks[BC][D + 1];
__shared__ float vs[BC][DV];
__shared__ float qs[ROWS][D];
__shared__ float ps[NW][BC];
const float ninf = __int_as_float(0xff800000);
const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
const long long b = blockIdx.z, h = blockIdx.y;
const long long q0 = (long long)blockIdx.x * ROWS;
const long long kh = h / $GROUP;
const long long qbase = $QOFF + b * $QSB + h * $QSH;
const long long kbase = $KOFF + b * $KSB + kh * $KSH;
const long long vbase = $VOFF + b * $VSB + kh * $VSH;
const long long obase = b * $OSB + h * $OSH;
for (int x = tid; x < ROWS * D; x += NW * 32) {
  const int r = x / D, d = x % D;
  const long long i = q0 + r;
  qs[r][d] = i < $SQ ? $LOAD(in0[qbase + i * $QSS + d]) * $SCALE : 0.f;
}
float m[RPW], l[RPW], acc[RPW][NT];
#pragma unroll
for (int rr = 0; rr < RPW; ++rr) {
  m[rr] = ninf;
  l[rr] = 0.f;
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[rr][t] = 0.f;
}
// Keys past the last row's position take no part in a causal block.
const long long kv_end = $CAUSAL ? (q0 + ROWS < $SK ? q0 + ROWS : $SK) : $SK;
for (long long t0 = 0; t0 < kv_end; t0 += BC) {
  __syncthreads();
  for (int x = tid; x < BC * D; x += NW * 32) {
    const int jj = x / D, d = x % D;
    const long long j = t0 + jj;
    ks[jj][d] = j < $SK ? $LOAD(in1[kbase + j * $KSS + d]) : 0.f;
  }
  for (int x = tid; x < BC * DV; x += NW * 32) {
    const int jj = x / DV, d = x % DV;
    const long long j = t0 + jj;
    vs[jj][d] = j < $SK ? $LOAD(in2[vbase + j * $VSS + d]) : 0.f;
  }
  __syncthreads();
#pragma unroll
  for (int rr = 0; rr < RPW; ++rr) {
    const int r = warp * RPW + rr;
    const long long i = q0 + r;
    if (i < $SQ) { // uniform over the warp
      const long long j = t0 + lane;
      bool valid = j < $SK && (!$CAUSAL || j <= i);
      $BOOL_MASK
      float s = ninf;
      if (valid) {
        float dot = 0.f;
#pragma unroll 8
        for (int d = 0; d < D; ++d) dot += qs[r][d] * ks[lane][d];
        s = dot$ADD_MASK;
      }
      float tmax = s;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1)
        tmax = fmaxf(tmax, __shfl_xor_sync(0xffffffffu, tmax, o));
      const float mn = fmaxf(m[rr], tmax);
      // exp(-inf - -inf) would be NaN: nothing seen yet keeps factor 1.
      const float corr = mn == ninf ? 1.f : expf(m[rr] - mn);
      const float p = s == ninf ? 0.f : expf(s - mn);
      float psum = p;
#pragma unroll
      for (int o = 16; o > 0; o >>= 1)
        psum += __shfl_xor_sync(0xffffffffu, psum, o);
      l[rr] = l[rr] * corr + psum;
      m[rr] = mn;
      ps[warp][lane] = p;
      __syncwarp();
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        const int d = lane + 32 * t;
        if (d < DV) {
          float a = acc[rr][t] * corr;
#pragma unroll 8
          for (int jj = 0; jj < BC; ++jj) a += ps[warp][jj] * vs[jj][d];
          acc[rr][t] = a;
        }
      }
      __syncwarp();
    }
  }
}
#pragma unroll
for (int rr = 0; rr < RPW; ++rr) {
  const long long i = q0 + warp * RPW + rr;
  if (i < $SQ) {
    const float inv = l[rr] > 0.f ? 1.f / l[rr] : 0.f;
#pragma unroll
    for (int t = 0; t < NT; ++t) {
      const int d = lane + 32 * t;
      if (d < DV) out0[obase + i * $OSS + d] = $STORE(acc[rr][t] * inv);
    }
  }
})";

// The tensor-core variant (f16/bf16, D a multiple of 16, Dv of 8, both up
// to 128): NW warps (1, 2 or 4: fewer when the grid would not fill the
// GPU), each owning 16 query rows; mma.sync m16n8k16 with fp32
// accumulation computes a warp's 16 x BC scores from Q fragments held in
// registers and a K tile in shared memory, then P V with the probabilities
// re-packed from the score accumulators as A fragments (the C layout of
// m16n8 matches the A layout of m16k16). K and V tiles are double-buffered
// in shared memory, row-major with 16 bytes of padding per row (ldmatrix's
// eight row addresses then hit distinct banks): cp.async fetches tile t + 1
// while tile t is computed, when K's and V's strides allow 16-byte copies.
// B fragments come from ldmatrix, V's through .trans. A row-invariant mask
// (a key-padding mask, [B, 1, 1, Sk]) is staged per tile as float, a bool
// mask as 0 / -inf, which the softmax treats alike. A thread holds rows g
// and g + 8 of its warp's 16 (g = lane / 4); row max and sum reduce over
// the four threads of a quad.
const char *const TensorCoreBody =
    R"(constexpr int D = $D, DV = $DV, NW = $NW, MB = $MB, BC = $BC, NTH = NW * 32;
// KS: the warps share one block of query rows and split each tile's keys
// (a small grid), combining their partial softmax sums at the end.
constexpr bool KS = $KSPLIT;
constexpr int BR = KS ? 16 * MB : 16 * MB * NW;
constexpr int KP = D + 8, VP = DV + 8, KT = D / 16, NT = BC / 8, OT = DV / 8;
constexpr int NTW = KS ? NT / NW : NT, KCW = NTW / 2;
__shared__ __align__(16) $T ks[2][BC][KP];
__shared__ __align__(16) $T vs[2][BC][VP];
$MASK_SMEM
const float ninf = __int_as_float(0xff800000);
const float l2e = 1.4426950408889634f;
const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
const int g = lane >> 2, tq = lane & 3;
const long long b = blockIdx.z, h = blockIdx.y;
// This warp's MB blocks of 16 query rows start at q0; its keys of a tile
// are n-tiles nt0 .. nt0 + NTW - 1.
const long long q0 = (long long)blockIdx.x * BR + (KS ? 0 : warp * 16 * MB);
const int nt0 = KS ? warp * NTW : 0;
const long long kh = h / $GROUP;
const long long qbase = $QOFF + b * $QSB + h * $QSH;
const long long kbase = $KOFF + b * $KSB + kh * $KSH;
const long long vbase = $VOFF + b * $VSB + kh * $VSH;
const long long obase = b * $OSB + h * $OSH;
// Keys past the block's last row take no part in a causal block.
const long long block_end = (long long)blockIdx.x * BR + BR;
const long long kv_end = $CAUSAL ? (block_end < $SK ? block_end : $SK) : $SK;
const int ntiles = (int)((kv_end + BC - 1) / BC);
auto load_tile = [&](int buf, long long t0) {
$LOAD_TILE
};
// The first K/V tile is in flight while Q is read.
if (ntiles > 0) load_tile(0, 0);
// Q fragments of rows q0 + 16 mb + g and + 8, all of D.
unsigned qa[MB][KT][4];
#pragma unroll
for (int mb = 0; mb < MB; ++mb)
#pragma unroll
  for (int kk = 0; kk < KT; ++kk)
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const long long i = q0 + mb * 16 + g + (r & 1) * 8;
      const int d = kk * 16 + (r >> 1) * 8 + tq * 2;
      qa[mb][kk][r] = i < $SQ ? *(const unsigned *)&in0[qbase + i * $QSS + d] : 0u;
    }
float m[MB][2], l[MB][2], o[MB][OT][4];
#pragma unroll
for (int mb = 0; mb < MB; ++mb) {
  m[mb][0] = m[mb][1] = ninf;
  l[mb][0] = l[mb][1] = 0.f;
#pragma unroll
  for (int t = 0; t < OT; ++t) o[mb][t][0] = o[mb][t][1] = o[mb][t][2] = o[mb][t][3] = 0.f;
}
for (int tile = 0; tile < ntiles; ++tile) {
  const int buf = tile & 1;
  const long long t0 = (long long)tile * BC;
  if (tile + 1 < ntiles) {
    load_tile(buf ^ 1, t0 + BC);
    solder_cp_wait1();
  } else {
    solder_cp_wait0();
  }
  __syncthreads();
  // Keys of this tile past Sk, and (causal) past the warp's first row,
  // need the per-score check; interior tiles skip it.
  const int kv_lim = $SK - t0 < BC ? (int)($SK - t0) : BC;
  const bool edge = kv_lim < BC || ($CAUSAL && t0 + BC - 1 > q0);
  float c[MB][NTW][4];
#pragma unroll
  for (int nt = 0; nt < NTW; ++nt) {
    const int ntg = nt0 + nt;
#pragma unroll
    for (int mb = 0; mb < MB; ++mb)
      c[mb][nt][0] = c[mb][nt][1] = c[mb][nt][2] = c[mb][nt][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < KT; kk += 2) {
      if (kk + 1 < KT) {
        unsigned r[4];
        solder_ldm_x4(r, &ks[buf][ntg * 8 + (lane & 7)][kk * 16 + (lane >> 3) * 8]);
#pragma unroll
        for (int mb = 0; mb < MB; ++mb) {
          solder_mma16816(c[mb][nt], qa[mb][kk], r[0], r[1]);
          solder_mma16816(c[mb][nt], qa[mb][kk + 1], r[2], r[3]);
        }
      } else {
        unsigned r[2];
        solder_ldm_x2(r, &ks[buf][ntg * 8 + (lane & 7)][kk * 16 + ((lane >> 3) & 1) * 8]);
#pragma unroll
        for (int mb = 0; mb < MB; ++mb)
          solder_mma16816(c[mb][nt], qa[mb][kk], r[0], r[1]);
      }
    }
  }
  // Scale, mask and the online-softmax update, per row (mb, r): row
  // 16 mb + g + 8 r of the warp's.
#pragma unroll
  for (int mb = 0; mb < MB; ++mb)
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int ir = mb * 16 + g + r * 8; // row within the warp's rows
    float mx = ninf;
#pragma unroll
    for (int nt = 0; nt < NTW; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int jj = (nt0 + nt) * 8 + tq * 2 + e;
        const long long i = q0 + ir, j = t0 + jj;
        bool valid = true;
        if (edge) valid = jj < kv_lim && (!$CAUSAL || j <= i);
        $ROW_CHECK
        $BOOL_MASK
        float s = ninf;
        if (valid) s = c[mb][nt][r * 2 + e] * $SCALE$ADD_MASK;
        c[mb][nt][r * 2 + e] = s;
        mx = fmaxf(mx, s);
      }
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
    const float mn = fmaxf(m[mb][r], mx);
    // exp(-inf - -inf) would be NaN: nothing seen yet keeps factor 1.
    const float corr = mn == ninf ? 1.f : exp2f((m[mb][r] - mn) * l2e);
    float sum = 0.f;
#pragma unroll
    for (int nt = 0; nt < NTW; ++nt)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const float s = c[mb][nt][r * 2 + e];
        const float p = s == ninf ? 0.f : exp2f((s - mn) * l2e);
        c[mb][nt][r * 2 + e] = p;
        sum += p;
      }
    l[mb][r] = l[mb][r] * corr + sum; // this thread's columns; the quad sums at the end
    m[mb][r] = mn;
#pragma unroll
    for (int t = 0; t < OT; ++t) {
      o[mb][t][r * 2] *= corr;
      o[mb][t][r * 2 + 1] *= corr;
    }
  }
  // O += P V, 16 keys at a time; each V fragment serves the MB row blocks.
#pragma unroll
  for (int kc = 0; kc < KCW; ++kc) {
    unsigned pa[MB][4];
#pragma unroll
    for (int mb = 0; mb < MB; ++mb) {
      pa[mb][0] = $PACK(c[mb][2 * kc][0], c[mb][2 * kc][1]);
      pa[mb][1] = $PACK(c[mb][2 * kc][2], c[mb][2 * kc][3]);
      pa[mb][2] = $PACK(c[mb][2 * kc + 1][0], c[mb][2 * kc + 1][1]);
      pa[mb][3] = $PACK(c[mb][2 * kc + 1][2], c[mb][2 * kc + 1][3]);
    }
    const int vrow = (nt0 / 2 + kc) * 16 + ((lane >> 3) & 1) * 8 + (lane & 7);
#pragma unroll
    for (int t = 0; t < OT; t += 2) {
      if (t + 1 < OT) {
        unsigned r[4];
        solder_ldm_x4_t(r, &vs[buf][vrow][(t + (lane >> 4)) * 8]);
#pragma unroll
        for (int mb = 0; mb < MB; ++mb) {
          solder_mma16816(o[mb][t], pa[mb], r[0], r[1]);
          solder_mma16816(o[mb][t + 1], pa[mb], r[2], r[3]);
        }
      } else {
        unsigned r[2];
        solder_ldm_x2_t(r, &vs[buf][vrow][t * 8]);
#pragma unroll
        for (int mb = 0; mb < MB; ++mb)
          solder_mma16816(o[mb][t], pa[mb], r[0], r[1]);
      }
    }
  }
  // The next iteration refills the other buffer; this one is refilled
  // only after every warp is done with it.
  __syncthreads();
}
if (!KS) {
#pragma unroll
for (int mb = 0; mb < MB; ++mb)
#pragma unroll
for (int r = 0; r < 2; ++r) {
  float sum = l[mb][r];
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  sum += __shfl_xor_sync(0xffffffffu, sum, 2);
  const float inv = sum > 0.f ? 1.f / sum : 0.f;
  const long long i = q0 + mb * 16 + g + r * 8;
  if (i < $SQ) {
#pragma unroll
    for (int t = 0; t < OT; ++t)
      *($T2 *)&out0[obase + i * $OSS + t * 8 + tq * 2] =
          $MAKE2(o[mb][t][r * 2] * inv, o[mb][t][r * 2 + 1] * inv);
  }
}
} else {
// Each warp's running max, sum and unnormalized output rows go to shared
// memory (the K tiles' space, free after the loop's last barrier); then
// the block merges them: scale each by exp(m_w - m) for the rows' overall
// max m, add, divide by the merged sum.
constexpr int RB = 16 * MB;
__shared__ float cm[NW][RB], cl[NW][RB];
float *const co = reinterpret_cast<float *>(&ks[0][0][0]); // [NW][RB][DV]
#pragma unroll
for (int mb = 0; mb < MB; ++mb)
#pragma unroll
for (int r = 0; r < 2; ++r) {
  float sum = l[mb][r];
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  sum += __shfl_xor_sync(0xffffffffu, sum, 2);
  const int ir = mb * 16 + g + r * 8;
  if (tq == 0) {
    cm[warp][ir] = m[mb][r];
    cl[warp][ir] = sum;
  }
#pragma unroll
  for (int t = 0; t < OT; ++t) {
    co[(warp * RB + ir) * DV + t * 8 + tq * 2] = o[mb][t][r * 2];
    co[(warp * RB + ir) * DV + t * 8 + tq * 2 + 1] = o[mb][t][r * 2 + 1];
  }
}
__syncthreads();
for (int x = tid; x < RB * (DV / 2); x += NTH) {
  const int ir = x / (DV / 2), d = (x % (DV / 2)) * 2;
  float mx = ninf;
#pragma unroll
  for (int w = 0; w < NW; ++w) mx = fmaxf(mx, cm[w][ir]);
  float sum = 0.f, v0 = 0.f, v1 = 0.f;
  if (mx != ninf) {
#pragma unroll
    for (int w = 0; w < NW; ++w) {
      // A warp that saw no key of the row has max -inf: factor 0.
      const float f = exp2f((cm[w][ir] - mx) * l2e);
      sum += cl[w][ir] * f;
      v0 += co[(w * RB + ir) * DV + d] * f;
      v1 += co[(w * RB + ir) * DV + d + 1] * f;
    }
  }
  const float inv = sum > 0.f ? 1.f / sum : 0.f;
  const long long i = q0 + ir;
  if (i < $SQ)
    *($T2 *)&out0[obase + i * $OSS + d] = $MAKE2(v0 * inv, v1 * inv);
}
})";

// Tile loads of the tensor-core body: 16-byte cp.async (zero-filled past
// Sk) when every K and V stride and offset is a multiple of 8 elements,
// else 4-byte loads (the strides are always even: see
// isReadThroughByAttention).
const char *const AsyncTileLoad =
    R"(  for (int x = tid; x < BC * (D / 8); x += NTH) {
    const int jj = x / (D / 8), dc = (x % (D / 8)) * 8;
    const long long j = t0 + jj;
    solder_cp16(&ks[buf][jj][dc], &in1[kbase + (j < $SK ? j : 0) * $KSS + dc], j < $SK);
  }
  for (int x = tid; x < BC * (DV / 8); x += NTH) {
    const int jj = x / (DV / 8), dc = (x % (DV / 8)) * 8;
    const long long j = t0 + jj;
    solder_cp16(&vs[buf][jj][dc], &in2[vbase + (j < $SK ? j : 0) * $VSS + dc], j < $SK);
  }
$MASK_LOAD
  solder_cp_commit();)";
const char *const PlainTileLoad =
    R"(  for (int x = tid; x < BC * (D / 2); x += NTH) {
    const int jj = x / (D / 2), dc = (x % (D / 2)) * 2;
    const long long j = t0 + jj;
    *(unsigned *)&ks[buf][jj][dc] = j < $SK ? *(const unsigned *)&in1[kbase + j * $KSS + dc] : 0u;
  }
  for (int x = tid; x < BC * (DV / 2); x += NTH) {
    const int jj = x / (DV / 2), dc = (x % (DV / 2)) * 2;
    const long long j = t0 + jj;
    *(unsigned *)&vs[buf][jj][dc] = j < $SK ? *(const unsigned *)&in2[vbase + j * $VSS + dc] : 0u;
  }
$MASK_LOAD)";

/// Result R of Slice or Split node P (over a static rank-3 input) as a
/// view of P's input, or nullopt.
std::optional<StridedView> partView(const Node &P, const Value *R) {
  const Value *In = P.operand(0);
  if (!In || !In->type().isStatic() || In->type().rank() != 3 ||
      !R->type().isStatic())
    return std::nullopt;
  StridedView Whole = StridedView::contiguous(In->type().staticDims());
  if (P.kind() == OpKind::Slice)
    return isStridedViewOp(P) ? viewOfResult(P, Whole) : std::nullopt;
  if (P.kind() != OpKind::Split)
    return std::nullopt;
  std::optional<int64_t> Axis = normalizeAxis(P.attrs().getInt("axis", 0), 3);
  if (Axis != 2)
    return std::nullopt;
  // Parts follow each other along the hidden dim.
  StridedView V = Whole;
  V.Dims = R->type().staticDims();
  for (const Value *Part : P.results()) {
    if (Part == R)
      return V;
    if (!Part || !Part->type().isStatic())
      return std::nullopt;
    V.Offset += Part->type().Dims[2].size();
  }
  return std::nullopt;
}

/// Whether the tensor-core body takes this attention.
bool useTensorCores(const AttentionSpec &S, DType T) {
  return (T == DType::F16 || T == DType::BF16) && S.HeadDim % 16 == 0 &&
         S.VHeadDim % 8 == 0;
}
} // namespace

llvm::Error emitAttention(KernelBuilder &B) {
  const Node &N = B.node();
  llvm::Expected<AttentionSpec> SOr = resolveAttention(N);
  if (!SOr)
    return SOr.takeError();
  const AttentionSpec &S = *SOr;
  DType T = N.operand(0)->dtype();
  if (T != DType::F32 && T != DType::F16 && T != DType::BF16)
    return nodeError(N, "the generated attention kernel takes f32, f16 or "
                        "bf16, not " +
                            dtypeName(T));
  if (S.HeadDim > MaxHeadDim || S.VHeadDim > MaxHeadDim || S.HeadDim < 1 ||
      S.VHeadDim < 1)
    return nodeError(N, "the generated attention kernel takes head dims 1 "
                        "to " +
                            llvm::Twine(MaxHeadDim) + ", got " +
                            llvm::Twine(S.HeadDim) + " and " +
                            llvm::Twine(S.VHeadDim));
  if (!std::isfinite(S.Scale))
    return nodeError(N, "the attention scale is not finite");
  if (S.QHeads < 1 || S.Batch < 1)
    return nodeError(N, "attention over an empty batch or no heads");
  bool Tc = useTensorCores(S, T) && B.opts().BlockSize >= 128 &&
            B.opts().SmVersion >= 80;
  unsigned Warps = Tc ? 4 : std::min(B.opts().BlockSize / 32, 8u);
  int64_t Rows = Tc ? 64 : int64_t(Warps) * RowsPerWarp;
  // Tensor cores: each warp owns two blocks of 16 rows (every K and V
  // fragment it loads serves both) while the grid still fills the GPU;
  // a grid of few blocks leaves most SMs idle (BERT at batch 1: 2 x 12
  // blocks of 64 rows), so then one block of 16 rows per warp and fewer
  // warps per block, each block streaming K and V itself.
  unsigned RowBlocks = 1;
  auto GridBlocks = [&](int64_t R) {
    return (S.QLen + R - 1) / R * S.QHeads * S.Batch;
  };
  if (Tc && GridBlocks(2 * Rows) >= MinAttentionBlocks) {
    RowBlocks = 2;
    Rows *= 2;
  }
  while (Tc && RowBlocks == 1 && Warps > 1 &&
         GridBlocks(Rows) < MinAttentionBlocks) {
    Warps /= 2;
    Rows /= 2;
  }
  // The tensor-core body: 64 keys per tile where two buffers of K and V
  // fit the static shared memory, else 32.
  int64_t TcKeys =
      256 * (S.HeadDim + S.VHeadDim + 16) + 512 <= MaxStaticShared ? 64 : 32;
  // A grid that still has too few blocks with one warp of 16 rows each
  // (BERT at batch 1: 96), or one-warp blocks that would each stream many
  // keys alone (BERT at batch 1 with 512 tokens), gives each block several
  // warps that split every tile's keys (4 of 16 keys, or 2 of 16 with
  // 32-key tiles) and merge their softmax sums at the end, through the K
  // tiles' shared memory.
  bool KeySplit = false;
  if (Tc && Warps == 1 &&
      (GridBlocks(Rows) < MinAttentionBlocks || S.KvLen >= SplitKeysFrom)) {
    unsigned SplitWarps = TcKeys == 64 ? 4 : 2;
    int64_t MergeBytes = int64_t(SplitWarps) * 16 * S.VHeadDim * 4;
    int64_t KBytes = 2 * TcKeys * (S.HeadDim + 8) * 2;
    if (MergeBytes <= KBytes && B.opts().BlockSize >= SplitWarps * 32) {
      KeySplit = true;
      Warps = SplitWarps;
    }
  }
  int64_t Blocks = (S.QLen + Rows - 1) / Rows;
  if (S.QHeads > 65535 || S.Batch > 65535 || Blocks > (int64_t(1) << 31) - 1)
    return nodeError(N, "too many heads, sequences or query rows for one "
                        "attention launch");

  CudaPrinter &P = B.p();
  B.addOutput(N.result(0));
  // Q, K and V, each maybe read through a part of the packed projection.
  std::array<AttentionOperandLayout, 3> Reads = attentionOperandLayouts(N, S);
  for (const AttentionOperandLayout &R : Reads)
    B.addInput(R.Src);
  bool HasMask = S.Mask != AttentionSpec::MaskKind::None;
  if (HasMask)
    B.addInput(N.operand(3));
  AttentionGroup Group = attentionGroup(N);
  B.describeGroup(
      Group.Id, std::move(Group.Members),
      "flash attention (" + std::string(Tc ? "tensor cores" : "SIMT") + ") " +
          std::string(S.ThreeD ? "3-D" : "4-D") +
          " B=" + std::to_string(S.Batch) + " Hq=" + std::to_string(S.QHeads) +
          " Hkv=" + std::to_string(S.KvHeads) +
          " Sq=" + std::to_string(S.QLen) + " Sk=" + std::to_string(S.KvLen) +
          " D=" + std::to_string(S.HeadDim) +
          " Dv=" + std::to_string(S.VHeadDim) + " " + dtypeName(T).str() +
          (KeySplit ? ", keys split over " + std::to_string(Warps) + " warps"
                    : ""));
  const auto &QS = Reads[0].Strides, &KS = Reads[1].Strides,
             &VS = Reads[2].Strides;
  auto OS = S.outStrides();
  auto L = [](int64_t V) { return std::to_string(V) + "LL"; };
  std::string Load = T == DType::F16    ? "__half2float"
                     : T == DType::BF16 ? "__bfloat162float"
                                        : "";
  std::string Store = T == DType::F16    ? "__float2half_rn"
                      : T == DType::BF16 ? "__float2bfloat16_rn"
                                         : "";
  bool Half = T == DType::F16;
  std::string T2 = Half ? "__half2" : "__nv_bfloat162";
  std::string Make2 = Half ? "__floats2half2_rn" : "__floats2bfloat162_rn";
  // 16-byte copies where aligned.

  auto Aligned8 = [](const std::array<int64_t, 4> &St, int64_t Off) {
    return Off % 8 == 0 && St[0] % 8 == 0 && St[1] % 8 == 0 && St[2] % 8 == 0;
  };
  bool AsyncCopy = S.HeadDim % 8 == 0 && S.VHeadDim % 8 == 0 &&
                   Aligned8(KS, Reads[1].Offset) &&
                   Aligned8(VS, Reads[2].Offset);
  // The mask element of (b, h, i, j); without the row term for a mask
  // that does not vary along the query rows, which the tensor-core body
  // stages per tile (a bool one as 0 / -inf) instead of reading per score.
  // For a dynamic model's variants (CodegenOptions::ShapeParams) the
  // lengths and the strides that grow with them are parameters, so
  // variants at other sequence lengths share this kernel; a zero stride
  // stays a literal (the text then says which axes the mask broadcasts
  // over).
  auto Param = [&](int64_t V) {
    return V && B.opts().ShapeParams ? B.addCount(V) : L(V);
  };
  std::string SQ = Param(S.QLen), SK = Param(S.KvLen);
  std::array<std::string, 3> MaskStride;
  for (unsigned I = 0; I < 3; ++I)
    MaskStride[I] = HasMask ? Param(S.MaskStrides[I]) : "";
  auto MaskAt = [&](bool PerRow) {
    return "in3[b * " + MaskStride[0] + " + h * " + MaskStride[1] +
           (PerRow ? " + i * " + MaskStride[2] : std::string()) + " + j * " +
           L(S.MaskStrides[3]) + "]";
  };
  bool IsBool = S.Mask == AttentionSpec::MaskKind::Bool;
  bool StageMask = Tc && HasMask && S.MaskStrides[2] == 0;
  std::string BoolMask, AddMask, MaskSmem, MaskLoad;
  if (StageMask) {
    std::string Value = IsBool ? "(" + MaskAt(false) +
                                     " != 0 ? 0.f : __int_as_float(0xff800000))"
                               : loadExpr(N.operand(3)->dtype(), MaskAt(false));
    MaskSmem = "__shared__ float mk[2][BC];";
    MaskLoad = "  for (int x = tid; x < BC; x += NTH) {\n"
               "    const long long j = t0 + x;\n"
               "    mk[buf][x] = j < $SK ? " +
               Value + " : 0.f;\n  }";
    AddMask = " + mk[buf][jj]";
  } else if (HasMask && IsBool) {
    BoolMask = "if (valid) valid = " + MaskAt(true) + " != 0;";
  } else if (HasMask) {
    AddMask = " + " + loadExpr(N.operand(3)->dtype(), MaskAt(true));
  }
  // A mask read per score must not be read past the last query row.
  std::string RowCheck =
      Tc && HasMask && !StageMask ? "valid = valid && i < $SQ;" : "";
  if (Tc)
    P.declare("attention_mma", mmaHelpers(T));
  std::string Text =
      Tc ? substitute(TensorCoreBody,
                      {{"LOAD_TILE", AsyncCopy ? AsyncTileLoad : PlainTileLoad},
                       {"MASK_SMEM", MaskSmem}})
         : std::string(Body);
  Text = substitute(Text, {{"MASK_LOAD", MaskLoad}, {"ROW_CHECK", RowCheck}});
  Text = substitute(std::move(Text),
                    {{"D", std::to_string(S.HeadDim)},
                     {"T", P.storageType(T)},
                     {"T2", T2},
                     {"ZERO2", Make2 + "(0.f, 0.f)"},
                     {"PACK", "solder_pack2"},
                     {"MAKE2", Make2},
                     {"DV", std::to_string(S.VHeadDim)},
                     {"BC", std::to_string(Tc ? TcKeys : KeysPerTile)},
                     {"NW", std::to_string(Warps)},
                     {"MB", std::to_string(RowBlocks)},
                     {"KSPLIT", KeySplit ? "true" : "false"},
                     {"RPW", std::to_string(RowsPerWarp)},
                     {"GROUP", L(S.QHeads / S.KvHeads)},
                     {"QOFF", L(Reads[0].Offset)},
                     {"KOFF", L(Reads[1].Offset)},
                     {"VOFF", L(Reads[2].Offset)},
                     {"QSB", Param(QS[0])},
                     {"QSH", Param(QS[1])},
                     {"QSS", L(QS[2])},
                     {"KSB", Param(KS[0])},
                     {"KSH", Param(KS[1])},
                     {"KSS", L(KS[2])},
                     {"VSB", Param(VS[0])},
                     {"VSH", Param(VS[1])},
                     {"VSS", L(VS[2])},
                     {"OSB", Param(OS[0])},
                     {"OSH", Param(OS[1])},
                     {"OSS", L(OS[2])},
                     {"SQ", SQ},
                     {"SK", SK},
                     {"SCALE", floatLiteral(S.Scale)},
                     {"CAUSAL", S.Causal ? "true" : "false"},
                     {"BOOL_MASK", BoolMask},
                     {"ADD_MASK", AddMask},
                     {"LOAD", Load},
                     {"STORE", Store}});
  auto Kernel = B.beginKernel();
  printLines(P, Text);
  B.setGrid({unsigned(std::max<int64_t>(Blocks, 1)), unsigned(S.QHeads),
             unsigned(S.Batch)},
            Warps * 32);
  return llvm::Error::success();
}

} // namespace codegen

std::array<AttentionOperandLayout, 3>
attentionOperandLayouts(const Node &N, const AttentionSpec &S) {
  std::array<AttentionOperandLayout, 3> Out;
  int64_t Heads[3] = {S.QHeads, S.KvHeads, S.KvHeads};
  int64_t Lens[3] = {S.QLen, S.KvLen, S.KvLen};
  int64_t Dims[3] = {S.HeadDim, S.HeadDim, S.VHeadDim};
  for (unsigned I = 0; I < 3; ++I) {
    const Value *V = N.operand(I);
    AttentionOperandLayout &L = Out[I];
    L.Src = V;
    L.Strides = S.strides(Heads[I], Lens[I], Dims[I]);
    // A part of the packed projection: its input, at the part's offset,
    // stepping batches and positions by the input's strides.
    const Node *P = V->producer();
    if (P && isReadThroughByAttention(*P)) {
      std::optional<StridedView> View = codegen::partView(*P, V);
      L.Src = P->operand(0);
      L.Offset = View->Offset;
      L.Strides[0] = View->Strides[0];
      L.Strides[2] = View->Strides[1];
    }
  }
  return Out;
}

bool isReadThroughByAttention(const Node &N) {
  if (N.kind() != OpKind::Slice && N.kind() != OpKind::Split)
    return false;
  for (const Value *R : N.results()) {
    if (!R || !R->type().isStatic() || R->type().rank() != 3 || !R->hasUses() ||
        (N.graph() && N.graph()->isOutput(R)))
      return false;
    for (const Use &U : R->uses())
      if (U.User->kind() != OpKind::Attention || U.OperandIndex > 2 ||
          !U.User->attrs().has("q_num_heads"))
        return false;
    std::optional<StridedView> V = codegen::partView(N, R);
    // Unit stride along the hidden dim and even offsets keep the kernels'
    // paired (32-bit) loads aligned.
    if (!V || V->Strides[2] != 1 || V->Offset % 2 || V->Strides[1] % 2 ||
        V->Strides[0] % 2)
      return false;
  }
  return N.numResults() > 0;
}

} // namespace solder
