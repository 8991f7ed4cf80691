//===- WgmmaGemm.h - The Hopper main loop of the generated GEMM -*- C++ -*-===//
//
// Private to codegen/: GemmEmitter.cpp prints one of two main loops into a
// generated GEMM kernel, mma.sync (sm_80 and later, any alignment) or
// wgmma (sm_90a, 16-byte aligned rows), then the same epilogue. This
// header is the wgmma side: its tile choice and its text, plus the way a
// caller (tests, tile sweeps) forces either path and a tile.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_CODEGEN_WGMMAGEMM_H
#define SOLDER_CODEGEN_WGMMAGEMM_H

#include "codegen/GeneratedKernel.h"
#include "codegen/KernelEmitter.h"
#include "ir/DType.h"
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace solder {
namespace codegen {

/// A block of the wgmma GEMM: BM / 64 warpgroups, each computing 64 rows x
/// BN columns of the block's tile with one m64nBNk16 wgmma per 16 of K;
/// K walked 64 at a time through Stages shared-memory stages.
struct WgmmaTile {
  int BM = 128, BN = 128, Stages = 4;
};

/// Whether the wgmma path can run an M x N x K product on compute
/// capability Sm: sm_90 (sm_90a instructions), A's rows and B's rows
/// 16-byte aligned (K, and N when B is [K, N], multiples of 8).
bool wgmmaApplies(unsigned Sm, int64_t N, int64_t K, bool TransB);

/// The tile for an M x N x K product: the fewest waves of blocks over the
/// GPU's SMs, each block costing the larger of its tensor-core time and
/// its operand traffic per step; with a row normalization, rows of N
/// split over at most 8 blocks (one cluster).
WgmmaTile chooseWgmmaTile(int64_t M, int64_t N, int64_t K, bool Norm);

/// Whether emitGeneratedGemm takes the wgmma loop (where it applies) for
/// an M x N x K product, Norm when the epilogue normalizes rows: the loop
/// that measured faster on an H100 (bench/gemm_lab; GpuRuntimeTest's
/// GeneratedGemmMatchesReference and GemmVariantsMatchReference check
/// both loops there, and EmulatedKernel.GemmVariantsMatchReference on
/// the CPU). CodegenOptions::PreferWgmma and GemmVariant override it.
bool wgmmaPreferred(int64_t M, int64_t N, int64_t K, bool Norm);

/// Dynamic shared memory of the tile's kernel, in bytes (the stages, plus
/// the slack that aligns them to 1024 bytes, plus the specialized loop's
/// barriers).
unsigned wgmmaSharedBytes(const WgmmaTile &T, bool Specialized = false);

/// The main loop of the wgmma kernel for element type T ("__half"), with A
/// at APtr ([M, K]) and B at BPtr ([K, N], or [N, K] when TransB). It
/// defines what the epilogue reads, as the mma.sync loop does: BM, BN, NTH,
/// WM, WN, TM, TN, MT, NT, M, N, K, tid, lane, warp, wm, wn, g, tq, m0, n0
/// and `float acc[MT][NT][4]`, whose element [0][nt][h * 2 + e] is the
/// product at row m0 + wm * TM + g + h * 8, column n0 + nt * 8 + tq * 2 + e.
/// Specialized: the warp-specialized loop, launched with NTH + 128
/// threads, whose last 128 (the producers) return before the epilogue;
/// Tma: its producer is one thread issuing tensor copies through the
/// tensor maps at TmapA and TmapB (tmaOperandMaps). KSplit > 1 (the
/// specialized loop only): block z of a cluster walks its share of K as
/// KSplitText (defining kt0 and KT from KTALL) says, producers staying.
/// Persistent (TMA, no split): the text ends inside the consumers' loop
/// over tiles, which the caller closes after printing the epilogue.
/// MoveRegisters (TMA, no split): setmaxnreg gives the producer
/// warpgroup's registers to the consumers (tiles 256 wide).
/// ProducersStay (the specialized loop): the producers skip the consumers'
/// loop instead of returning, for barriers after it (split K, a row
/// normalization).
/// PrefetchB (TMA, a dependent launch whose B is constant): the producer
/// fetches B's first stages before waiting for the previous grid
/// (solder_grid_wait, KernelBuilder::waitForPreviousGridInBody), the
/// consumers wait before anything else.
/// RowStats (the TMA loop; not split, persistent or with moved registers):
/// the producer warpgroup's other three warps sum the rows of A's stages as
/// they land and leave each row's mean and variance in st_mean_s[BM] and
/// st_var_s[BM] once the consumers meet them at named barrier 2 (NTH + 96
/// threads), for a deferred LayerNorm's statistics; K must be a multiple of
/// 64 (no zero-filled columns summed).
/// Tile (the TMA loop, not RowStats or persistent): the producer
/// warpgroup's other three warps copy this block's BM x BN tile of an
/// [M, N] operand (Ptr, row-major, N a multiple of 8) into shared memory
/// at byte Offset of the dynamic region, rows Pitch elements apart, with
/// 16-byte cp.async while the consumers multiply, then meet them at named
/// barrier 3 (NTH + 96 threads): the epilogue reads a residual from shared
/// memory instead of two bytes at a time in the accumulators' layout.
/// Wait: they first wait for the previous grid (a dependent launch whose
/// body waits itself).
/// Multicast (the TMA loop; not split, RowStats or ProducersStay): the
/// kernel runs in clusters of two blocks along M (blockIdx.x 2i, 2i + 1,
/// the same n0; tiles walked in pairs when persistent), each fetching half
/// of B's stage into both blocks (tmaOperandMaps with Multicast), which
/// halves B's traffic from L2; the consumers release a stage to both
/// producers, and each producer leaves once every stage it filled was
/// released by both blocks.
/// NFastest (not persistent): blockIdx.x walks the column tiles and
/// blockIdx.y the row tiles, so the blocks sharing rows start together
/// (a cluster of two then pairs blockIdx.y).
struct TileOperandCopy {
  std::string Ptr;
  int64_t Offset = 0, Pitch = 0;
  bool Wait = false;
};

std::string wgmmaMainLoop(const WgmmaTile &T, bool TransB, int64_t M, int64_t N,
                          int64_t K, const std::string &ElemType,
                          const std::string &APtr, const std::string &BPtr,
                          bool Specialized = false, bool Tma = false,
                          const std::string &TmapA = "",
                          const std::string &TmapB = "", int KSplit = 1,
                          const std::string &KSplitText = "",
                          bool Persistent = false, bool MoveRegisters = false,
                          bool ProducersStay = false, bool PrefetchB = false,
                          bool RowStats = false,
                          const TileOperandCopy *Tile = nullptr,
                          bool Multicast = false, bool NFastest = false);

/// Which main loop a generated GEMM uses, forced (tests, tile sweeps);
/// BM = 0 lets the wgmma tile be chosen, KSplit = 0 the split of K.
struct GemmVariant {
  bool Wgmma = false;
  WgmmaTile Tile = {0, 0, 0};
  /// Blocks of the split-K cluster of the mma.sync or TMA loop (0:
  /// chosen; 1: none).
  int KSplit = 0;
  /// The wgmma loop with a producer warpgroup (WgmmaGemm.cpp; no row
  /// normalization, tiles of at most 192 columns).
  bool Specialized = false;
  /// Its producer drives TMA instead of copying (implies Specialized);
  /// the kernel takes the operands' tensor maps (tmaOperandMaps).
  bool Tma = false;
  /// The TMA loop over a grid of at most one block per SM, each walking
  /// tiles (no K split, no row normalization).
  bool Persistent = false;
  /// The TMA loop's epilogue through shared memory, stored as whole
  /// 16-byte chunks (one 2-byte result, tiles dividing the product).
  bool StagedEpilogue = false;
  /// A row normalization's statistics meet through global memory among
  /// the blocks of a row, all resident at once (a cooperative launch),
  /// instead of across a thread-block cluster (the TMA loop, at most 132
  /// blocks, no K split).
  bool GridNorm = false;
  /// The TMA loop in clusters of two blocks along M sharing B's stages by
  /// multicast (an even number of row tiles, no K split).
  bool Multicast = false;
  /// Under GridNorm: the blocks of a row of tiles launched one after
  /// another (column tiles along blockIdx.x) rather than a wave apart.
  bool RowsTogether = false;
};

/// The tensor maps of the TMA producer for A ([M, K]) and B ([K, N], or
/// [N, K] when TransB) with tile T, in the kernel's order (A, B); with
/// Multicast, B's box is the half of a stage each block of the pair
/// fetches.
std::vector<TensorMapShape> tmaOperandMaps(const WgmmaTile &T, bool TransB,
                                           int64_t M, int64_t N, int64_t K,
                                           DType Elem, bool Multicast = false);

/// The TMA loop's tile for an M-row product N wide.
WgmmaTile chooseTmaTile(int64_t M, int64_t N);

/// emitGeneratedGemm with the main loop forced (nullptr: chosen as
/// emitGeneratedGemm chooses). An error when the forced path does not
/// apply to the group.
/// Stats: see emitGeneratedGemm.
llvm::Expected<GeneratedKernel>
emitGeneratedGemmVariant(const Node &Group, const CodegenOptions &Opts,
                         KernelNamer &Names, const GemmVariant *Force,
                         const Node *Stats = nullptr);

} // namespace codegen
} // namespace solder

#endif
