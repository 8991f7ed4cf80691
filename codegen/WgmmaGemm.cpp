//===- WgmmaGemm.cpp - The Hopper main loop of the generated GEMM ---------===//
//
// For sm_90 the generated GEMM multiplies with wgmma.mma_async (sm_90a):
// a block of BM / 64 warpgroups (4 warps each) owns a BM x BN tile of the
// product; warpgroup w computes rows 64w..64w+63 with one m64nBNk16 wgmma
// per 16 of K, both operands read by the tensor cores straight from shared
// memory through matrix descriptors, fp32 accumulators in registers.
//
// Operands reach shared memory by per-thread 16-byte cp.async (the kernel
// keeps plain pointer parameters), into the layouts wgmma reads with
// 128-byte swizzle: rows of 128 bytes, 16-byte chunk c of row r stored at
// chunk c ^ (r % 8), 8 rows making a 1024-byte atom:
//
//   A [M, K] (K-major), 64 of K per stage:     row m = 128 bytes of k
//     atom 0: rows m0..m0+7   | SBO = 1024 to the next 8 rows
//   B [K, N] (N-major, wgmma's transposed B): per 64 columns of N, 64 rows
//     of k of 128 bytes each; SBO = 1024 to the next 8 rows of k, LBO =
//     8192 to the next 64 columns
//   B [N, K] (Gemm transB, K-major): as A, one row per column of N
//
// A stage of K advances a descriptor by 32 bytes per 16 of K (K-major) or
// by 16 rows (N-major). Every element past M, N or K is zero-filled by the
// copy, so edges need no other care (K and N multiples of 8: a 16-byte
// chunk is wholly inside or outside).
//
// The ring of S stages is filled S - 2 steps ahead. Step kt waits for its
// own copies (cp.async.wait_group), fences them into the async proxy
// (fence.proxy.async: the tensor cores read shared memory through it),
// meets the other warps at a barrier, refills the stage that step kt - 2
// read, and issues its wgmmas; each warpgroup then waits for all but its
// latest wgmma group. So step kt's products still run while step kt + 1
// is issued, and a stage is refilled only after every warpgroup has
// waited for the wgmmas that read it (the barrier between).
//
// The accumulators of one warp are those of an m16n8 mma.sync tile
// repeated along N, so the epilogue (GemmEmitter.cpp) is the same text for
// both loops: warp w is the mma.sync loop's warp row wm = w with TM = 16,
// one warp column (WN = 1, TN = BN).
//
//===----------------------------------------------------------------------===//
#include "codegen/WgmmaGemm.h"
#include "codegen/EmitterUtils.h"
#include <algorithm>

namespace solder {
namespace codegen {

namespace {

/// SMs of the GPU the tile is chosen for (an H100 SXM; the PCIe card's 114
/// only shift where the waves fall).
constexpr int64_t SmCount = 132;
/// Shared memory the stages may take (the SM's 227 KB less the epilogue's
/// static arrays and the alignment slack).
constexpr int64_t StageBudget = 216 * 1024;
constexpr int MaxStages = 6;

// Both loops' thread and block coordinates and operand pointers.
const char *const BlockVars =
    R"(const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
const int wm = warp, wn = 0, g = lane >> 2, tq = lane & 3;
const long long m0 = (long long)$M_BLOCK * BM;
const int n0 = $N_BLOCK * BN;
const $T *const Ag = $APARAM;
const $T *const Bg = $BPARAM;)";

// Both loops' step of K: 4 wgmmas on stage rs, one commit group.
const char *const IssueStep =
    R"(  solder_wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < BK / 16; ++kk)
    solder_wgmma(acc[0], da0 + (unsigned)((rs * A_STAGE + kk * 32) >> 4),
                 db0 + (unsigned)((rs * B_STAGE + kk * $BKSTEP) >> 4));
  solder_wgmma_commit();)";

// Both loops' copies: A's chunks, then B's ($SETUP_B, $COPY_B), by NTH
// threads numbered tid.
const char *const LoadStage =
    R"(const int a_r = tid >> 3, a_c = tid & 7;
const $T *const a_src = Ag + (m0 + a_r) * K + a_c * 8;
const unsigned a_dst = as_u + a_r * 128 + ((a_c ^ (a_r & 7)) << 4);
$SETUP_B
auto load_stage = [&](int s, int kt) {
  const int k0 = kt * BK;
  const bool a_kok = k0 + a_c * 8 < K;
#pragma unroll
  for (int i = 0; i < CA; ++i) {
    const bool ok = a_kok && m0 + a_r + i * (NTH / 8) < M;
    solder_cp16_u(a_dst + s * A_STAGE + i * (NTH * 16),
                  ok ? a_src + (long long)i * (NTH / 8) * K + k0 : Ag, ok);
  }
$COPY_B
};)";

const char *const WgmmaLoop =
    R"(constexpr int BM = $BM, BN = $BN, BK = 64, STAGES = $STAGES, NWG = BM / 64;
constexpr int NTH = NWG * 128, WM = NWG * 4, WN = 1, TM = 16, TN = BN, MT = 1, NT = BN / 8;
constexpr int A_STAGE = BM * 128, B_STAGE = $BSTAGE;
constexpr int CA = BM * 8 / NTH, CB = (BN * 8 + NTH - 1) / NTH;
static_assert(WM * WN * 32 == NTH && CA * NTH == BM * 8, "tile");
constexpr long long M = $M;
constexpr int N = $N, K = $K, KT = (K + BK - 1) / BK;
extern __shared__ __align__(128) unsigned char solder_dyn_smem[];
// Stages on a 1024-byte boundary (the swizzle atom), A's then B's.
const unsigned as_u = (solder_smem(solder_dyn_smem) + 1023u) & ~1023u;
const unsigned bs_u = as_u + STAGES * A_STAGE;
$BLOCK_VARS
// A: this thread's chunk i is row a_r + i * (NTH / 8), 16-byte column a_c
// (rows NTH / 8 apart share the swizzle phase).
$LOAD_STAGE
float acc[MT][NT][4];
#pragma unroll
for (int nt = 0; nt < NT; ++nt)
  acc[0][nt][0] = acc[0][nt][1] = acc[0][nt][2] = acc[0][nt][3] = 0.f;
#pragma unroll
for (int s = 0; s < STAGES - 2; ++s) {
  if (s < KT) load_stage(s, s);
  solder_cp_commit();
}
// Warpgroup warp / 4 reads rows 64 * (warp / 4).. of A's stage.
const unsigned long long da0 = solder_wgmma_desc(as_u + (warp >> 2) * (64 * 128), 16, 1024);
const unsigned long long db0 = solder_wgmma_desc(bs_u, $BLBO, 1024);
int rs = 0, ws = STAGES - 2;
for (int kt = 0; kt < KT; ++kt) {
  solder_cp_wait<STAGES - 3>();
  solder_fence_async_smem();
  __syncthreads();
  // The stage refilled here was last read by step kt - 2's wgmmas, which
  // every warpgroup waited for before this barrier.
  if (kt + STAGES - 2 < KT) load_stage(ws, kt + STAGES - 2);
  solder_cp_commit();
  ws = ws == STAGES - 1 ? 0 : ws + 1;
$ISSUE_STEP
  solder_wgmma_wait<1>();
  rs = rs == STAGES - 1 ? 0 : rs + 1;
}
solder_wgmma_wait<0>();
solder_cp_wait0();)";

// The warp-specialized variant: BM / 64 consumer warpgroups multiply, one
// more (the last) only copies. Stage s is handed over through two
// shared-memory barriers: full[s] (the producers' 128 threads arrive once
// their copies of it landed and were fenced into the async proxy) and
// empty[s] (every consumer thread arrives once the wgmmas that read it
// completed). The producers keep LAG copy groups in flight; consumers
// keep one wgmma group in flight. No block-wide barrier after the start,
// so copying and multiplying overlap without lockstep. The producers
// leave before the epilogue, which therefore must have no block barrier
// (no row normalization). With K split over a cluster (block z walks
// steps kt0..kt0 + KT), or a row normalization's block and cluster
// barriers after the loop, they stay instead, skipping the consumers'
// loop, and take part in those barriers.
//
// Persistent (TMA only): a block per SM walks tiles tile, tile +
// gridDim.x, ... (m fastest); the producer runs ahead into the next
// tile's stages while the consumers run this one's epilogue, which the
// caller prints inside the consumers' tile loop and closes.
const char *const WgmmaLoopWs =
    R"(constexpr int BM = $BM, BN = $BN, BK = 64, STAGES = $STAGES, NWG = BM / 64, LAG = 2;
constexpr int NTH = NWG * 128, WM = NWG * 4, WN = 1, TM = 16, TN = BN, MT = 1, NT = BN / 8;
constexpr int A_STAGE = BM * 128, B_STAGE = $BSTAGE;
static_assert(WM * WN * 32 == NTH && BM % 16 == 0, "tile");
constexpr long long M = $M;
constexpr int N = $N, K = $K, KTALL = (K + BK - 1) / BK;
$KSPLIT
extern __shared__ __align__(128) unsigned char solder_dyn_smem[];
// Stages on a 1024-byte boundary (the swizzle atom), A's then B's, then
// full[STAGES] and empty[STAGES] barriers.
const unsigned as_u = (solder_smem(solder_dyn_smem) + 1023u) & ~1023u;
const unsigned bs_u = as_u + STAGES * A_STAGE;
const unsigned full_u = bs_u + STAGES * B_STAGE, empty_u = full_u + STAGES * 8;
$BLOCK_VARS$CLUSTER_RANK$STATS_DECL
if (tid == 0) {
  for (int s = 0; s < STAGES; ++s) {
    solder_mbar_init(full_u + 8 * s, $FULL_COUNT);
    solder_mbar_init(empty_u + 8 * s, $EMPTY_COUNT);
  }
  solder_fence_mbar_init();
}
$INIT_SYNC
$PRODUCER$REG_INC$CONSUMER_WAIT
// Warpgroup warp / 4 reads rows 64 * (warp / 4).. of A's stage.
const unsigned long long da0 = solder_wgmma_desc(as_u + (warp >> 2) * (64 * 128), 16, 1024);
const unsigned long long db0 = solder_wgmma_desc(bs_u, $BLBO, 1024);
int rs = 0, prev = -1;
unsigned ph = 0;
$TILE_BEGIN
float acc[MT][NT][4];
#pragma unroll
for (int nt = 0; nt < NT; ++nt)
  acc[0][nt][0] = acc[0][nt][1] = acc[0][nt][2] = acc[0][nt][3] = 0.f;
for (int kt = 0; kt < $CONSUMER_KT; ++kt) {
  solder_mbar_wait(full_u + 8 * rs, ph);
$ISSUE_STEP
  // Step kt - 1's wgmmas are done: its stage may be refilled.
  solder_wgmma_wait<1>();
$RELEASE_PREV
  prev = rs;
  rs = rs + 1 == STAGES ? 0 : rs + 1;
  ph ^= rs == 0;
}
solder_wgmma_wait<0>();$TILE_RELEASE)";

// The producers of the specialized loop: 128 threads copying with
// cp.async (each publishes a stage once its own copies landed and were
// fenced into the async proxy) ...
const char *const CopyProducer =
    R"(if (tid >= NTH) {
  // The producer warpgroup: the copies of the other loop with 128 threads.
  constexpr int NTH = 128, CA = BM * 8 / NTH, CB = (BN * 8 + NTH - 1) / NTH;
  const int tid = threadIdx.x - NWG * 128;
$LOAD_STAGE
  int s = 0;
  unsigned ph = 0;
  for (int kt = 0; kt < KT; ++kt) {
    solder_mbar_wait(empty_u + 8 * s, ph ^ 1);
    load_stage(s, kt0 + kt);
    solder_cp_commit();
    if (kt >= LAG) {
      // The stage of step kt - LAG has landed: publish it.
      solder_cp_wait<LAG>();
      solder_fence_async_smem();
      solder_mbar_arrive(full_u + 8 * ((kt - LAG) % STAGES));
    }
    s = s + 1 == STAGES ? 0 : s + 1;
    ph ^= s == 0;
  }
  solder_cp_wait0();
  solder_fence_async_smem();
  for (int kt = KT > LAG ? KT - LAG : 0; kt < KT; ++kt)
    solder_mbar_arrive(full_u + 8 * (kt % STAGES));
$PRODUCER_END
})";
// ... or one thread driving the tensor memory accelerator (TMA) through
// the kernel's tensor-map parameters (128-byte swizzle, boxes of 64 of the
// inner dim; the runtime encodes them from the buffers' addresses): a
// stage is full when its bytes arrived (expect_tx, complete_tx), edges
// zero-filled by the copy engine.
const char *const TmaProducer =
    R"(if (tid >= NTH) {$REG_DEC
  if (tid == NTH) {
    int s = 0;
    unsigned ph = 0;
$PREFETCH_FLAG
$TILE_BEGIN
$PREFETCH
    for (int kt = 0; kt < KT; ++kt) {
      const unsigned fb = full_u + 8 * s;
      if (kt >= pre) {
        solder_mbar_wait(empty_u + 8 * s, ph ^ 1);
        solder_mbar_expect_tx(fb, A_STAGE + B_STAGE);
$TMA_B
      }
      solder_tma_2d(as_u + s * A_STAGE, &$TMAP_A, (kt0 + kt) * BK, (int)m0, fb);
      s = s + 1 == STAGES ? 0 : s + 1;
      ph ^= s == 0;
    }
$TILE_END$PRODUCER_TAIL
  }$STATS_WARPS
$PRODUCER_END
})";
// A dependent launch (PDL) whose B is constant (weights): before the
// previous grid has finished, the producer fetches B for the first stages
// of its first tile (their barriers expect A's bytes too, so no stage is
// full yet), then waits for that grid (griddepcontrol.wait) and copies A.
// The copies of B then overlap the previous kernel's tail and this one's
// launch instead of following them.
const char *const PrefetchFlag = "    bool first = true;";
const char *const Prefetch =
    R"(    const int pre = first ? (KT < STAGES ? KT : STAGES) : 0;
    if (first) {
      for (int kt = 0; kt < pre; ++kt) {
        const int s = kt;
        const unsigned fb = full_u + 8 * s;
        solder_mbar_expect_tx(fb, A_STAGE + B_STAGE);
$TMA_B
      }
      solder_grid_wait();
      first = false;
    })";
// Row statistics of A (a deferred LayerNorm's, GemmEmitter.cpp): the
// producer warpgroup's three idle warps sum each row of every stage as it
// lands (thread t rows t, t + 96, ...), shifted by the row's first value
// (a mean far from 0 cannot cancel the variance), and release the stage
// with the consumers (the empty barriers count them). A row's 128 bytes
// keep their chunks under the swizzle: chunk c is at c ^ (row % 8). They
// leave each row's mean and variance in shared memory for the epilogue
// (named barrier 2). Measured on an H100 the consumers summing the rows
// between their wgmmas cost BERT-base's FFN1 at b1 3.7 us.
const char *const StatsDecl = R"(
__shared__ float st_mean_s[BM], st_var_s[BM];)";
const char *const StatsWarps = R"( else if (tid >= NTH + 32) {
    constexpr int ROWS = (BM + 95) / 96;
    const int st_t = tid - NTH - 32;
    const unsigned char *const st_base =
        solder_dyn_smem + (as_u - solder_smem(solder_dyn_smem));
    // A pair of sums per chunk of the row: eight short dependence chains
    // a stage instead of one of 64 (one long chain made these warps the
    // pipeline's slowest: BERT-base FFN1 at b1 +4 us).
    float st_p[ROWS], st_s1[ROWS][8], st_s2[ROWS][8];
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
      st_p[i] = 0.f;
#pragma unroll
      for (int c = 0; c < 8; ++c)
        st_s1[i][c] = st_s2[i][c] = 0.f;
    }
    int s = 0;
    unsigned ph = 0;
    for (int kt = 0; kt < KT; ++kt) {
      solder_mbar_wait(full_u + 8 * s, ph);
#pragma unroll
      for (int i = 0; i < ROWS; ++i) {
        const int row = st_t + i * 96;
        if (row >= BM)
          break;
        const unsigned char *const a = st_base + s * A_STAGE + row * 128;
        if (kt == 0)
          st_p[i] = $TO_FLOAT(*reinterpret_cast<const $T *>(a + ((row & 7) << 4)));
#pragma unroll
        for (int c = 0; c < 8; ++c) {
          const uint4 v = *reinterpret_cast<const uint4 *>(a + ((c ^ (row & 7)) << 4));
          const $T *const e = reinterpret_cast<const $T *>(&v);
#pragma unroll
          for (int q = 0; q < 8; ++q) {
            const float d = $TO_FLOAT(e[q]) - st_p[i];
            st_s1[i][c] += d;
            st_s2[i][c] += d * d;
          }
        }
      }
      solder_mbar_arrive(empty_u + 8 * s);
      s = s + 1 == STAGES ? 0 : s + 1;
      ph ^= s == 0;
    }
#pragma unroll
    for (int i = 0; i < ROWS; ++i) {
      const int row = st_t + i * 96;
      if (row < BM) {
        float s1 = 0.f, s2 = 0.f;
#pragma unroll
        for (int c = 0; c < 8; ++c) {
          s1 += st_s1[i][c];
          s2 += st_s2[i][c];
        }
        const float m = s1 / K;
        st_mean_s[row] = st_p[i] + m;
        st_var_s[row] = fmaxf(s2 / K - m * m, 0.f);
      }
    }
    solder_bar_sync(2, NTH + 96);
  })";
// An operand's tile for the epilogue (TileOperandCopy): the producer
// warpgroup's three idle warps copy it while the consumers multiply.
const char *const TileWarps = R"( else if (tid >= NTH + 32) {$TILE_WAIT
    const unsigned tile_u = solder_smem(solder_dyn_smem) + $TILE_OFF;
    for (int i = tid - NTH - 32; i < BM * (BN / 8); i += 96) {
      const int r = i / (BN / 8), c = (i % (BN / 8)) * 8;
      const bool ok = m0 + r < M && n0 + c < N;
      solder_cp16_u(tile_u + (r * $TILE_PITCH + c) * 2, ok ? $TILE_PTR + (m0 + r) * N + n0 + c : $TILE_PTR, ok);
    }
    solder_cp_commit();
    solder_cp_wait<0>();
    solder_bar_sync(3, NTH + 96);
  })";
// The consumers read the previous grid's writes only in the epilogue
// (bias, residual), but wait at once: they idle until a stage is full.
const char *const ConsumerWait = "\nsolder_grid_wait();";
// Registers moved from the producer warpgroup (one thread issues copies)
// to the consumers, whose 64 x 256 accumulators take 128 a thread: of the
// 168 a thread of 384 the budget allows, 232 for consumers, 40 for
// producers (which must return before any consumer code).
const char *const RegDec = R"(
  solder_regs_producer();)";
const char *const RegInc = R"(
solder_regs_consumer();)";
// The persistent loop's walk over tiles: m0 and n0 of each (shadowing the
// block's own).
const char *const TileBegin =
    R"(for (int tile = blockIdx.x; tile < $TILES_M * $TILES_N; tile += gridDim.x) {
const long long m0 = (long long)(tile % $TILES_M) * BM;
const int n0 = (tile / $TILES_M) * BN;)";
// The consumers release the tile's last stage (the loop releases each
// stage one step late) before its epilogue.
const char *const TileRelease = R"(
$RELEASE_PREV
prev = -1;)";
// A stage's release by the consumers: each thread arrives, or with B
// multicast in a cluster of two one lane a warp arrives on both blocks'
// barrier (the peer's producer overwrites this block's stage too).
const char *const ReleasePrev = R"(  if (prev >= 0)
    solder_mbar_arrive(empty_u + 8 * prev);)";
const char *const ReleasePrevMc = R"(  if (prev >= 0) {
    __syncwarp();
    if (lane == 0) {
      solder_mbar_arrive(empty_u + 8 * prev);
      solder_mbar_arrive_peer(empty_u + 8 * prev, crank ^ 1u);
    }
  })";
// With B multicast the producer leaves only once both blocks' consumers
// released every stage it filled: a block may not exit while the other
// still arrives on its barriers.
const char *const ProducerTailMc = R"(
    for (int i = 0; i < STAGES; ++i) {
      solder_mbar_wait(empty_u + 8 * s, ph ^ 1);
      s = s + 1 == STAGES ? 0 : s + 1;
      ph ^= s == 0;
    })";
const char *const TmaBKN =
    R"(      for (int j = 0; j < BN / 64; ++j)
        solder_tma_2d(bs_u + s * B_STAGE + j * 8192, &$TMAP_B, n0 + 64 * j, (kt0 + kt) * BK, fb);)";
const char *const TmaBNK =
    R"(      solder_tma_2d(bs_u + s * B_STAGE, &$TMAP_B, (kt0 + kt) * BK, n0, fb);)";
// B multicast to both blocks of a cluster of two along M (the same n0):
// each block fetches half of the stage (of [K, N], 32 of each 64 rows of
// K; of [N, K], half the rows of N) into both.
const char *const TmaBKNmc =
    R"(      for (int j = 0; j < BN / 64; ++j)
        solder_tma_2d_mc(bs_u + s * B_STAGE + j * 8192 + crank * 4096, &$TMAP_B, n0 + 64 * j, (kt0 + kt) * BK + 32 * crank, fb, 3);)";
const char *const TmaBNKmc =
    R"(      solder_tma_2d_mc(bs_u + s * B_STAGE + crank * (BN / 2 * 128), &$TMAP_B, (kt0 + kt) * BK, n0 + crank * (BN / 2), fb, 3);)";

// B as [K, N] (N-major): chunk x = tid + i * NTH of a stage is k-row
// x / (BN / 8), 16-byte column cc = x % (BN / 8), stored in 64-column block
// cc / 8 at swizzled chunk (cc % 8) ^ (row % 8).
const char *const SetupBKN =
    R"(const $T *b_src[CB];
unsigned b_dst[CB];
int b_row[CB];
bool b_ok[CB];
#pragma unroll
for (int i = 0; i < CB; ++i) {
  const int x = tid + i * NTH, r = x / (BN / 8), cc = x % (BN / 8);
  b_ok[i] = x < BN * 8 && n0 + cc * 8 < N;
  b_row[i] = r;
  b_src[i] = Bg + (long long)r * N + (b_ok[i] ? n0 + cc * 8 : 0);
  b_dst[i] = bs_u + (cc >> 3) * (BK * 128) + r * 128 + (((cc & 7) ^ (r & 7)) << 4);
})";
const char *const CopyBKN =
    R"(#pragma unroll
  for (int i = 0; i < CB; ++i) {
    if (CB * NTH != BN * 8 && tid + i * NTH >= BN * 8)
      break;
    const bool ok = b_ok[i] && k0 + b_row[i] < K;
    solder_cp16_u(b_dst[i] + s * B_STAGE, ok ? b_src[i] + (long long)k0 * N : Bg, ok);
  })";
// B as [N, K] (K-major): as A, row (of N) b_r + i * (NTH / 8).
const char *const SetupBNK =
    R"(const int b_r = tid >> 3, b_c = tid & 7;
const $T *const b_src = Bg + (long long)(n0 + b_r) * K + b_c * 8;
const unsigned b_dst = bs_u + b_r * 128 + ((b_c ^ (b_r & 7)) << 4);)";
const char *const CopyBNK =
    R"(  const bool b_kok = k0 + b_c * 8 < K;
#pragma unroll
  for (int i = 0; i < CB; ++i) {
    const int r = b_r + i * (NTH / 8);
    if (CB * NTH != BN * 8 && r >= BN)
      break;
    const bool ok = b_kok && n0 + r < N;
    solder_cp16_u(b_dst + s * B_STAGE + i * (NTH * 16),
                  ok ? b_src + (long long)i * (NTH / 8) * K + k0 : Bg, ok);
  })";

int64_t ceilDiv(int64_t A, int64_t B) { return (A + B - 1) / B; }

int stagesFor(int BM, int BN) {
  int64_t StageBytes = int64_t(BM + BN) * 128;
  return int(std::min<int64_t>(MaxStages, StageBudget / StageBytes));
}

} // namespace

bool wgmmaApplies(unsigned Sm, int64_t N, int64_t K, bool TransB) {
  return Sm == 90 && K % 8 == 0 && (TransB || N % 8 == 0);
}

WgmmaTile chooseWgmmaTile(int64_t M, int64_t N, int64_t K, bool Norm) {
  // No more stages than steps of K to fill them (a short K then leaves
  // shared memory for a second block on the SM).
  const int MaxUseful = int(std::max<int64_t>(4, ceilDiv(K, 64) + 2));
  auto Make = [&](int BM, int BN) {
    return WgmmaTile{BM, BN, std::min(stagesFor(BM, BN), MaxUseful)};
  };
  // Measured on an H100 (bench/gemm_lab, BERT-base shapes; RESULTS.md):
  // rows of a normalization over many row blocks run fastest with the
  // fewest blocks per row (each one more cluster member to exchange
  // statistics with): 128 x 256 at 4096 x 768 took 30 us, 128 x 128 34 us,
  // 128 x 192 41 us.
  if (Norm && M >= 1024 && ceilDiv(N, 256) <= 8)
    return Make(128, 256);
  // At most 128 rows: one block row of 128 (B, the large operand, read
  // once) with narrow columns for blocks: 128 x 64 ran 6.3 us at 128 x
  // 2304 x 768 against 6.8 us for 64 x 64.
  if (!Norm && M > 64 && M <= 128)
    return Make(128, 64);
  WgmmaTile Best;
  double BestCost = -1;
  for (int BM : {64, 128, 256})
    for (int BN : {64, 128, 192, 256}) {
      // No warpgroup without rows; 168 registers a thread at 384 threads
      // and 128 at 512 leave room for 96 and 64 accumulators. Three
      // warpgroups (BM = 192) measured slower than two or four at every
      // BERT shape (4096 x 2304 x 768: 63 us against 46 us).
      if (BM > 64 && M <= BM - 64)
        continue;
      if ((BM == 256 && BN > 128) || (BN == 192 && BM != 128))
        continue;
      if (Norm && ceilDiv(N, BN) > 8)
        continue;
      if (stagesFor(BM, BN) < 4)
        continue;
      int64_t Tiles = ceilDiv(M, BM) * ceilDiv(N, BN);
      int64_t Waves = ceilDiv(Tiles, SmCount);
      // Per step of 64 of K: BM x BN x 64 multiply-adds at about 2048 a
      // clock, or (BM + BN) x 128 bytes at about 64 a clock from L2.
      double Step = std::max(double(BM) * BN / 32.0, double(BM + BN) * 2.0);
      double Cost = double(Waves) * Step;
      bool Better = BestCost < 0 || Cost < BestCost * 0.999 ||
                    (Cost <= BestCost * 1.001 &&
                     int64_t(BM) * BN > int64_t(Best.BM) * Best.BN);
      if (Better) {
        BestCost = Cost;
        Best = Make(BM, BN);
      }
    }
  return Best;
}

bool wgmmaPreferred(int64_t M, int64_t N, int64_t K, bool Norm) {
  // Measured on an H100 against the mma.sync loop (bench/gemm_lab). With a
  // row normalization (the plain wgmma loop): wgmma won at 4096 rows (30
  // against 35 us at 4096 x 768 x 768), mma.sync at 128 (10.3 against
  // 13.5 us).
  if (Norm)
    return M >= 1024;
  // Without one the wgmma loop takes its TMA producer, which won at 128
  // and 4096 rows of every BERT-base shape (128 x 768 x 3072: 10.7 against
  // 13.7 us split; 4096 x 768 x 768: 15.1 against 26.0 us).
  if (M > 64)
    return true;
  // Unmeasured below: as the plain loop first measured, wgmma where its
  // tiles alone fill a fair part of the GPU.
  WgmmaTile T = chooseWgmmaTile(M, N, K, Norm);
  return ceilDiv(M, T.BM) * ceilDiv(N, T.BN) >= 24;
}

std::vector<TensorMapShape> tmaOperandMaps(const WgmmaTile &T, bool TransB,
                                           int64_t M, int64_t N, int64_t K,
                                           DType Elem, bool Multicast) {
  TensorMapShape A, B;
  A.Elem = B.Elem = Elem;
  A.Dims[0] = K;
  A.Dims[1] = M;
  A.RowBytes = K * 2;
  A.Box[0] = 64;
  A.Box[1] = uint32_t(T.BM);
  if (TransB) {
    B.Dims[0] = K;
    B.Dims[1] = N;
    B.RowBytes = K * 2;
    B.Box[1] = uint32_t(Multicast ? T.BN / 2 : T.BN);
  } else {
    B.Dims[0] = N;
    B.Dims[1] = K;
    B.RowBytes = N * 2;
    B.Box[1] = Multicast ? 32 : 64;
  }
  B.Box[0] = 64;
  return {A, B};
}

WgmmaTile chooseTmaTile(int64_t M, int64_t N) {
  // Measured on an H100 (bench/gemm_lab): 128 x 192 at every BERT-base
  // b32 shape (4096 rows), 64 x 64 at 128 rows.
  if (M >= 1024 && N >= 192)
    return {128, 192, 5};
  return {64, 64, 6};
}

unsigned wgmmaSharedBytes(const WgmmaTile &T, bool Specialized) {
  return unsigned(int64_t(T.Stages) * (T.BM + T.BN) * 128 + 1024 +
                  (Specialized ? 16 * T.Stages : 0));
}

std::string wgmmaMainLoop(const WgmmaTile &T, bool TransB, int64_t M, int64_t N,
                          int64_t K, const std::string &ElemType,
                          const std::string &APtr, const std::string &BPtr,
                          bool Specialized, bool Tma, const std::string &TmapA,
                          const std::string &TmapB, int KSplit,
                          const std::string &KSplitText, bool Persistent,
                          bool MoveRegisters, bool ProducersStay,
                          bool PrefetchB, bool RowStats,
                          const TileOperandCopy *Tile, bool Multicast,
                          bool NFastest) {
  if (PrefetchB && !Tma)
    PrefetchB = false;
  if (Multicast && (!Tma || KSplit > 1 || ProducersStay || RowStats))
    Multicast = false;
  if (Tile && (!Tma || RowStats || Persistent))
    Tile = nullptr;
  if (RowStats && (!Tma || KSplit > 1 || Persistent || MoveRegisters))
    RowStats = false;
  // N-major B is stored in whole 64-column blocks.
  int64_t BStage = TransB ? int64_t(T.BN) * 128 : ceilDiv(T.BN, 64) * 8192;
  // Texts first (each may hold the names of the next), names last.
  const char *TmaB =
      Multicast ? (TransB ? TmaBNKmc : TmaBKNmc) : (TransB ? TmaBNK : TmaBKN);
  std::string Loop = substitute(Specialized ? WgmmaLoopWs : WgmmaLoop,
                                {{"PRODUCER", Tma ? TmaProducer : CopyProducer},
                                 {"FULL_COUNT", Tma ? "1" : "128"},
                                 {"TMA_B", TmaB},
                                 {"KSPLIT", KSplitText}});
  Loop = substitute(
      std::move(Loop),
      {{"REG_DEC", MoveRegisters ? RegDec : ""},
       {"REG_INC", MoveRegisters ? RegInc : ""},
       {"CONSUMER_WAIT", PrefetchB ? ConsumerWait : ""},
       // (substitute takes longer names first: the flag before the text)
       {"PREFETCH_FLAG", PrefetchB ? PrefetchFlag : ""},
       {"PREFETCH", PrefetchB ? substitute(Prefetch, {{"TMA_B", TmaB}})
                              : "    const int pre = 0;"},
       {"TILE_BEGIN", Persistent ? TileBegin : ""},
       {"TILE_END", Persistent ? "}" : ""},
       {"TILE_RELEASE", Multicast || Persistent ? TileRelease : ""},
       {"PRODUCER_TAIL", Multicast ? ProducerTailMc : ""},
       {"INIT_SYNC", Multicast ? "solder_cluster_sync();" : "__syncthreads();"},
       {"CLUSTER_RANK",
        Multicast ? "\nconst unsigned crank = $M_BLOCK & 1u;" : ""},
       {"EMPTY_COUNT", Multicast  ? "2 * NTH / 32"
                       : RowStats ? "NTH + 96"
                                  : "NTH"},
       {"PRODUCER_END", ProducersStay ? "" : "  return;"},
       {"CONSUMER_KT", ProducersStay ? "(tid < NTH ? KT : 0)" : "KT"},
       {"BLOCK_VARS", BlockVars},
       {"LOAD_STAGE", LoadStage},
       {"ISSUE_STEP", IssueStep},
       {"STATS_DECL", RowStats ? StatsDecl : ""},
       {"STATS_WARPS", RowStats ? StatsWarps
                       : Tile   ? TileWarps
                                : ""},
       {"TMAP_A", TmapA},
       {"TMAP_B", TmapB}});
  if (Tile)
    Loop = substitute(
        std::move(Loop),
        {{"TILE_WAIT", Tile->Wait ? "\n    solder_grid_wait();" : ""},
         {"TILE_OFF", std::to_string(Tile->Offset)},
         {"TILE_PITCH", std::to_string(Tile->Pitch)},
         {"TILE_PTR", Tile->Ptr}});
  Loop =
      substitute(std::move(Loop),
                 {{"SETUP_B", TransB ? SetupBNK : SetupBKN},
                  {"COPY_B", TransB ? CopyBNK : CopyBKN},
                  {"RELEASE_PREV", Multicast ? ReleasePrevMc : ReleasePrev}});
  return substitute(
      std::move(Loop),
      {{"BM", std::to_string(T.BM)},
       {"BN", std::to_string(T.BN)},
       {"STAGES", std::to_string(T.Stages)},
       {"BSTAGE", std::to_string(BStage)},
       // Descriptor steps per 16 of K: 32 bytes along a
       // K-major row, 16 rows of an N-major block.
       {"BKSTEP", TransB ? "32" : "2048"},
       {"M_BLOCK", NFastest ? "blockIdx.y" : "blockIdx.x"},
       {"N_BLOCK", NFastest ? "blockIdx.x" : "blockIdx.y"},
       {"BLBO", TransB ? "16" : "8192"},
       {"M", std::to_string(M) + "LL"},
       {"N", std::to_string(N)},
       {"K", std::to_string(K)},
       {"SPLIT", std::to_string(KSplit)},
       {"TILES_M", std::to_string(ceilDiv(M, T.BM))},
       {"TILES_N", std::to_string(ceilDiv(N, T.BN))},
       {"T", ElemType},
       {"TO_FLOAT", ElemType == "__half" ? "__half2float" : "__bfloat162float"},
       {"APARAM", APtr},
       {"BPARAM", BPtr}});
}

} // namespace codegen
} // namespace solder
