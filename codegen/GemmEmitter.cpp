//===- GemmEmitter.cpp - One tensor-core GEMM kernel per contraction group ===//
//
// Matches: a contraction group anchored at a MatMul (A of rank >= 2, B a
// matrix) or Gemm (A not transposed) over f16/bf16 whose other members are
// an elementwise epilogue, optionally with one LayerNormalization or
// RMSNormalization over the last axis (norm-epilogue-fusion's groups), and
// layout ops before the anchor that leave A contiguous (attention's heads
// merged back by a Reshape: the kernel reads the bytes under the view).
// Produces: one kernel computing the whole group, D = epilogue(A B):
//
//   * a block owns a BM x BN tile of D (rows of A flattened over its leading
//     dims), its WM x WN warps a TM x TN part each; K is walked in steps of
//     32 (64 for the small tiles of latency-bound shapes) through a ring of
//     3 to 6 shared-memory stages filled by 16-byte cp.async (zero-filled
//     past the edges), so the next tiles load while this one is multiplied;
//     rows are padded by 16 bytes so ldmatrix's eight row addresses hit
//     distinct banks;
//   * fragments come from ldmatrix (B's through .trans when B is [K, N]),
//     products from mma.sync m16n8k16 with fp32 accumulators;
//   * or, for sm_90 with K (and N for B as [K, N]) a multiple of 8, the
//     Hopper loop of WgmmaGemm.cpp: warpgroups of 4 warps multiply with
//     wgmma.mma_async straight from swizzled shared memory (sm_90a), 64 of
//     K a step; its accumulators sit where mma.sync's would for warp rows
//     of 16, so the epilogue below serves both. Taken where it measured
//     faster on an H100 (wgmmaPreferred); GemmVariant forces either loop;
//   * the epilogue is printed from the group's body by FusedValueEmitter,
//     as every fused kernel's is: the anchor's result at (row, col) is the
//     accumulator, bias/residual/activation/casts follow in registers and
//     each result is stored once.
//
// A row normalization needs whole rows of N, which span several blocks.
// Each block computes its columns' mean and centred sum of squares of
// every row and the row's blocks combine those (Chan et al.'s formula:
// one exchange, as exact as two passes over the row), then every block
// normalizes its own tile; the tile never leaves registers between the
// GEMM and the store. Where the TMA loop's tiles fit one wave (at most
// 132 blocks), the blocks of a row exchange through global memory (the
// kernel's scratch: a part per block and row, arrival counters the last
// block to leave resets), launched cooperatively so all are resident;
// the residual's tile is copied into shared memory by the producer
// warpgroup's idle warps during the main loop. Otherwise a row of N <=
// 1024 spans ceil(N / BN) blocks launched as one thread-block cluster
// (sm_90) that exchange through distributed shared memory.
//
// Shapes whose K (or N, for B as [K, N]) is not a multiple of 8 cannot use
// 16-byte copies; they take element loads into the same tiles (correct,
// slower). Everything is specialised to the shapes (literals), like every
// generated kernel.
//
//===----------------------------------------------------------------------===//
#include "codegen/FusedValueEmitter.h"
#include "codegen/TensorCoreSupport.h"
#include "codegen/WgmmaGemm.h"
#include "ir/FusedGroup.h"
#include "ir/OpRegistry.h"
#include "ir/StridedView.h"

namespace solder {

using namespace codegen;

namespace {

/// Columns a block of a row-normalizing GEMM owns, and the largest
/// (portable) cluster: rows up to 1024.
constexpr int64_t RowBlockN = 128;
constexpr int64_t MaxCluster = 8;
/// Blocks under which a smaller tile is taken (about one per SM of an
/// H100).
constexpr int64_t FillBlocks = 120;
/// Blocks of a persistent GEMM: one per SM of an H100 SXM (a GPU with
/// fewer runs the rest as a second, short wave).
constexpr int64_t PersistentBlocks = 132;
/// Dynamic shared memory a wgmma kernel's block may take (of the 227 KB an
/// sm_90 block may have, a margin for static arrays).
constexpr int64_t MaxDynamicShared = 220 * 1024;

struct GemmShape {
  const Node *Anchor = nullptr;
  const Value *A = nullptr, *B = nullptr, *C = nullptr;
  /// The buffer A is read from: A itself, or the group operand A is a
  /// contiguous view of (reshapes before the anchor, e.g. attention's
  /// heads merged back).
  const Value *ASource = nullptr;
  bool TransB = false;
  float Alpha = 1.0f, Beta = 1.0f;
  int64_t M = 0, N = 0, K = 0;
  Dims ResultDims;
  /// The row normalization of the epilogue, or null.
  const Node *Norm = nullptr;
  DType T = DType::F16;
};

struct Tile {
  int BM, BN, WM, WN;
};

/// The generated kernel's view of Group, or why it has none.
std::optional<GemmShape> analyze(const Node &Group, unsigned Sm,
                                 std::string &Why) {
  if (!isFusedGroup(Group) || !Group.body() ||
      groupInfo(Group).Kind != GroupKind::Contraction) {
    Why = "not a contraction group";
    return std::nullopt;
  }
  if (Sm < 80) {
    Why = "the generated GEMM needs sm_80 or later (mma.sync, cp.async)";
    return std::nullopt;
  }
  GemmShape S;
  const Graph *Body = Group.body();
  bool AfterAnchor = false;
  std::vector<const Node *> Prologue;
  for (const auto &M : Body->nodes()) {
    FusionKind F = getOpInfo(M->kind()).Fusion;
    if (!AfterAnchor) {
      if (F != FusionKind::Contraction && isStridedViewOp(*M)) {
        Prologue.push_back(M.get());
        continue;
      }
      if (F != FusionKind::Contraction) {
        Why = "the group reads its matmul's operands through " +
              memberName(*M) + " (layout prologue)";
        return std::nullopt;
      }
      S.Anchor = M.get();
      AfterAnchor = true;
      continue;
    }
    if (F == FusionKind::Reduction && !S.Norm &&
        (M->kind() == OpKind::LayerNormalization ||
         M->kind() == OpKind::RMSNormalization)) {
      S.Norm = M.get();
      continue;
    }
    if (F != FusionKind::Elementwise && F != FusionKind::Broadcast) {
      Why = "epilogue member " + memberName(*M) +
            " is neither elementwise nor a row normalization";
      return std::nullopt;
    }
  }
  if (!S.Anchor) {
    Why = "no contraction";
    return std::nullopt;
  }
  const Node &An = *S.Anchor;
  // A may be read through layout ops that leave it contiguous (a reshape
  // is only a new view of the same bytes); anything else is a prologue
  // the kernel has no place for.
  S.ASource = An.operand(0);
  std::vector<const Node *> Chain;
  while (S.ASource && S.ASource->producer() &&
         llvm::is_contained(Prologue, S.ASource->producer())) {
    Chain.push_back(S.ASource->producer());
    S.ASource = S.ASource->producer()->operand(0);
  }
  for (const Node *V : Prologue)
    if (Body->isOutput(V->result(0))) {
      Why =
          "the layout op " + memberName(*V) + " before the matmul is a result";
      return std::nullopt;
    }
  if (Chain.size() != Prologue.size()) {
    Why = "the group reads its matmul's operands through " +
          memberName(*Prologue.front()) + " (layout prologue)";
    return std::nullopt;
  }
  if (!Chain.empty()) {
    std::optional<StridedView> View;
    if (S.ASource->type().isStatic() && An.operand(0)->type().isStatic())
      View = viewReadThrough(dimsOf(S.ASource), llvm::reverse(Chain));
    auto Contiguous = [](const StridedView &V) {
      int64_t Stride = 1;
      for (size_t I = V.Dims.size(); I-- > 0;) {
        if (V.Dims[I] != 1 && V.Strides[I] != Stride)
          return false;
        Stride *= V.Dims[I];
      }
      return V.Offset == 0;
    };
    if (!View || !Contiguous(*View) ||
        llvm::ArrayRef<int64_t>(View->Dims) !=
            llvm::ArrayRef<int64_t>(dimsOf(An.operand(0)))) {
      Why = "the group reads its matmul's operands through " +
            memberName(*Chain.back()) + " (a layout that is not contiguous)";
      return std::nullopt;
    }
  }
  const Value *Others[] = {S.ASource,
                           An.numOperands() > 1 ? An.operand(1) : nullptr,
                           An.numOperands() > 2 ? An.operand(2) : nullptr};
  for (const Value *V : Others)
    if (V && V->producer()) {
      Why = "the matmul's operand '" + V->name() + "' is computed in the group";
      return std::nullopt;
    }
  if (An.kind() != OpKind::MatMul && An.kind() != OpKind::Gemm) {
    Why = An.opName().str() + " has no generated kernel (MatMul and Gemm do)";
    return std::nullopt;
  }
  S.A = An.operand(0);
  S.B = An.operand(1);
  const Value *R = An.result(0);
  for (const Value *V : {S.A, S.B, R})
    if (!V || !V->type().isStatic()) {
      Why = "dynamic shapes";
      return std::nullopt;
    }
  S.T = R->dtype();
  if ((S.T != DType::F16 && S.T != DType::BF16) || S.A->dtype() != S.T ||
      S.B->dtype() != S.T) {
    Why = "the generated GEMM takes f16 or bf16 operands, not " +
          dtypeName(S.A->dtype()).str();
    return std::nullopt;
  }
  Dims AD = dimsOf(S.A), BD = dimsOf(S.B);
  S.ResultDims = dimsOf(R);
  if (AD.size() < 2 || BD.size() != 2) {
    Why = "B is not a matrix (batched B: the library runs it)";
    return std::nullopt;
  }
  if (An.kind() == OpKind::Gemm) {
    if (An.attrs().getInt("transA", 0)) {
      Why = "Gemm with transA";
      return std::nullopt;
    }
    S.TransB = An.attrs().getInt("transB", 0) != 0;
    S.Alpha = float(An.attrs().getFloat("alpha", 1.0));
    S.Beta = float(An.attrs().getFloat("beta", 1.0));
    S.C = An.numOperands() > 2 ? An.operand(2) : nullptr;
  }
  S.K = AD.back();
  S.M = numElementsOf(AD) / std::max<int64_t>(S.K, 1);
  S.N = S.TransB ? BD[0] : BD[1];
  if ((S.TransB ? BD[1] : BD[0]) != S.K || S.ResultDims.back() != S.N ||
      numElementsOf(S.ResultDims) != S.M * S.N) {
    Why = "operand shapes do not form one M x K by K x N product";
    return std::nullopt;
  }
  if (S.M < 1 || S.N < 1 || S.K < 1) {
    Why = "an empty product";
    return std::nullopt;
  }
  if (S.M > (int64_t(1) << 31) * 16 || S.N > (int64_t(1) << 20) ||
      S.K > (int64_t(1) << 30)) {
    Why = "too large for one launch";
    return std::nullopt;
  }
  // Every member keeps the product's shape (a broadcast that enlarges it,
  // or a reshape, has no element of the tile to live in).
  for (const auto &M : Body->nodes())
    for (const Value *V : M->results())
      if (V && M.get() != S.Anchor && !llvm::is_contained(Prologue, M.get()) &&
          (V->hasUses() || Body->isOutput(V)) &&
          (!V->type().isStatic() || dimsOf(V) != S.ResultDims)) {
        if (M.get() == S.Norm && V != S.Norm->result(0)) {
          Why = "the normalization's statistics are results";
          return std::nullopt;
        }
        Why = "member " + memberName(*M) + " changes the product's shape to " +
              typeToString(V->type());
        return std::nullopt;
      }
  if (S.Norm) {
    std::optional<int64_t> Axis = normalizeAxis(
        S.Norm->attrs().getInt("axis", -1), int64_t(S.ResultDims.size()));
    if (!Axis || *Axis != int64_t(S.ResultDims.size()) - 1 ||
        dimsOf(S.Norm->operand(0)) != S.ResultDims) {
      Why = "the normalization is not over the product's rows";
      return std::nullopt;
    }
    if (S.N > RowBlockN && Sm < 90) {
      Why = "rows longer than 128 need thread-block clusters (sm_90)";
      return std::nullopt;
    }
    if (S.N > RowBlockN * MaxCluster) {
      Why = "rows longer than 1024 (one cluster of 8 blocks of 128)";
      return std::nullopt;
    }
  }
  return S;
}

Tile chooseTile(const GemmShape &S) {
  auto Blocks = [&](const Tile &T) {
    return ((S.M + T.BM - 1) / T.BM) * ((S.N + T.BN - 1) / T.BN);
  };
  // Largest first; every tile divides its A and B stages evenly into
  // 16-byte chunks per thread. A row normalization keeps 128 columns per
  // block (its cluster spans the row); wide products fall back to 64.
  static const std::vector<Tile> Rows = {
      {128, 128, 2, 4}, {64, 128, 2, 4}, {32, 128, 1, 4}, {16, 128, 1, 4}};
  static const std::vector<Tile> Wide = {{128, 128, 2, 4}, {64, 128, 2, 4},
                                         {32, 128, 1, 4},  {64, 64, 2, 2},
                                         {32, 64, 1, 2},   {16, 64, 1, 2}};
  static const std::vector<Tile> Narrow = {
      {128, 64, 4, 2}, {64, 64, 2, 2}, {32, 64, 1, 2}, {16, 64, 1, 2}};
  const std::vector<Tile> &Options = S.Norm ? Rows : S.N > 64 ? Wide : Narrow;
  for (const Tile &T : Options)
    if (Blocks(T) >= FillBlocks)
      return T;
  return Options.back();
}

// The main loop. Each thread copies CA chunks of 8 elements of A and CB
// of B per stage; their global pointers, shared-memory offsets and edge
// tests are computed once ($SETUP_A/$SETUP_B), so a step only adds k0
// ($COPY_A/$COPY_B). Fragment addresses are 32-bit shared addresses from
// per-thread bases plus constants ($BFRAG). The stage ring advances by
// counters, not a modulo.
const char *const MainLoop =
    R"(constexpr int BM = $BM, BN = $BN, BK = $BK, WM = $WM, WN = $WN, STAGES = $STAGES;
constexpr int NTH = WM * WN * 32, TM = BM / WM, TN = BN / WN, MT = TM / 16, NT = TN / 8;
constexpr int AP = BK + 8, BP = $BP, A_STAGE = BM * AP, B_STAGE = $BSTAGE;
constexpr int CA = BM * (BK / 8) / NTH, CB = BK * BN / 8 / NTH;
static_assert(CA * NTH == BM * (BK / 8) && CB * NTH == BK * BN / 8, "tile");
constexpr long long M = $M;
constexpr int N = $N, K = $K, KTALL = (K + BK - 1) / BK;
$KSPLIT
extern __shared__ __align__(16) unsigned char solder_dyn_smem[];
$T *const As = reinterpret_cast<$T *>(solder_dyn_smem);
$T *const Bs = As + STAGES * A_STAGE;
const unsigned as_u = solder_smem(As), bs_u = solder_smem(Bs);
const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
const int wm = warp / WN, wn = warp % WN, g = lane >> 2, tq = lane & 3;
const long long m0 = (long long)blockIdx.x * BM;
const int n0 = blockIdx.y * BN;
const $T *const Ag = $APARAM;
const $T *const Bg = $BPARAM;
$SETUP_A
$SETUP_B
auto load_stage = [&](int s, int kt) {
  const int k0 = (kt0 + kt) * BK;
$COPY_A
$COPY_B
};
float acc[MT][NT][4];
#pragma unroll
for (int mt = 0; mt < MT; ++mt)
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
    acc[mt][nt][0] = acc[mt][nt][1] = acc[mt][nt][2] = acc[mt][nt][3] = 0.f;
#pragma unroll
for (int s = 0; s < STAGES - 1; ++s) {
  if (s < KT) load_stage(s, s);
  solder_cp_commit();
}
const unsigned a_ld = as_u + ((wm * TM + (lane & 15)) * AP + (lane >> 4) * 8) * 2;
const unsigned b_ld = bs_u + $BLD;
int rs = 0, ws = STAGES - 1;
for (int kt = 0; kt < KT; ++kt) {
  $WAIT
  __syncthreads();
  // The stage refilled here was read in step kt - 1, which every warp has
  // finished (the barrier above).
  if (kt + STAGES - 1 < KT) load_stage(ws, kt + STAGES - 1);
  solder_cp_commit();
  ws = ws == STAGES - 1 ? 0 : ws + 1;
  const unsigned a_s = a_ld + rs * (A_STAGE * 2), b_s = b_ld + rs * (B_STAGE * 2);
  rs = rs == STAGES - 1 ? 0 : rs + 1;
#pragma unroll
  for (int kk = 0; kk < BK; kk += 16) {
    unsigned af[MT][4], bf[NT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      solder_ldm_x4_u(af[mt], a_s + (mt * 16 * AP + kk) * 2);
#pragma unroll
    for (int nt = 0; nt < NT; nt += 2) {
      unsigned r[4];
      $BFRAG
      bf[nt][0] = r[0];
      bf[nt][1] = r[1];
      bf[nt + 1][0] = r[2];
      bf[nt + 1][1] = r[3];
    }
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
        solder_mma16816(acc[mt][nt], af[mt], bf[nt][0], bf[nt][1]);
  }
}
solder_cp_wait0();)";

// Split K: block z of the cluster walks steps [z * KTS, (z + 1) * KTS).
const char *const KSplitOne = "constexpr int kt0 = 0, KT = KTALL;";
const char *const KSplitMany =
    R"(constexpr int SPLIT = $SPLIT, KTS = (KTALL + SPLIT - 1) / SPLIT;
const int kt0 = blockIdx.z * KTS, KT = KTALL - kt0 < KTS ? KTALL - kt0 : KTS;)";
// After a split main loop the cluster's blocks hold partial sums of one
// tile: each parks its accumulators in its own (now idle) stage memory,
// block 0 adds its peers' through distributed shared memory and alone
// runs the epilogue; the second cluster barrier keeps the peers' shared
// memory alive until it has read it.
const char *const KSplitReduce =
    R"(__syncthreads();
float *const red = reinterpret_cast<float *>(solder_dyn_smem);
if (tid < NTH)
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        red[((mt * NT + nt) * 4 + i) * NTH + tid] = acc[mt][nt][i];
solder_cluster_sync();
if (blockIdx.z == 0 && tid < NTH) {
  for (unsigned r = 1; r < SPLIT; ++r)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          acc[mt][nt][i] += solder_ld_cluster(&red[((mt * NT + nt) * 4 + i) * NTH + tid], r);
}
solder_cluster_sync();
if (blockIdx.z != 0)
  return;)";

/// Blocks of the split-K cluster for a tile of the TMA loop: while the
/// blocks still fit one wave, up to 4, each split at least 12 steps of K.
/// Measured on an H100 (bench/gemm_lab, 64 x 64 tiles, 128 rows): 768 x
/// 3072 ran 10.4 us whole, 8.9 split 2, 8.0 split 3, 8.1 split 4, 11.9
/// split 6; 768 x 768 (12 steps) 5.1 whole, 6.2 split 2; 2304 x 768 (72
/// blocks) 5.1 whole, 7.7 split 2.
int64_t chooseTmaKSplit(int64_t Blocks, int64_t KSteps) {
  int64_t Split = 1;
  for (int64_t S = 2; S <= 4; ++S)
    if (Blocks * S <= 132 && KSteps / S >= 12)
      Split = S;
  return Split;
}

/// Blocks of the split-K cluster for a tile of mma.sync's loop: only when
/// the tiles leave SMs idle, each split at least 16 steps of K (64 each),
/// up to 3 blocks an SM in all. Measured on an H100 (bench/gemm_lab):
/// 128 x 768 x 3072 in 16 x 64 tiles ran 17.9 us whole, 15.1 us split 2,
/// 19.4 us split 4; 128 x 768 x 768 ran 6.2 us whole, 6.9 us split 2 (the
/// cluster's extra pipeline fills and the exchange outweigh short splits).
int64_t chooseKSplit(int64_t Blocks, int64_t KSteps) {
  int64_t Split = 1;
  if (Blocks >= FillBlocks)
    return 1;
  while (Split * 2 <= MaxCluster && Blocks * Split * 2 <= 3 * 132 &&
         KSteps / (Split * 2) >= 16)
    Split *= 2;
  return Split;
}

// A is [M, K]: chunk x of a stage is row x / 4, columns (x % 4) * 8.
const char *const SetupA =
    R"(const $T *a_src[CA];
unsigned a_dst[CA];
int a_col[CA];
bool a_ok[CA];
#pragma unroll
for (int i = 0; i < CA; ++i) {
  const int x = tid + i * NTH, r = x / (BK / 8), c = (x % (BK / 8)) * 8;
  a_ok[i] = m0 + r < M;
  a_col[i] = c;
  a_src[i] = Ag + (a_ok[i] ? (m0 + r) * K : 0LL) + c;
  a_dst[i] = as_u + (r * AP + c) * 2;
})";
const char *const CopyAAsync =
    R"(#pragma unroll
  for (int i = 0; i < CA; ++i) {
    const bool ok = a_ok[i] && k0 + a_col[i] < K;
    solder_cp16_u(a_dst[i] + s * (A_STAGE * 2), ok ? a_src[i] + k0 : Ag, ok);
  })";
const char *const CopyAPlain =
    R"(  $T *const as = As + s * A_STAGE;
  for (int x = tid; x < BM * BK; x += NTH) {
    const int r = x / BK, c = x % BK;
    const long long gm = m0 + r;
    const int gk = k0 + c;
    as[r * AP + c] = gm < M && gk < K ? Ag[gm * K + gk] : $ZERO;
  })";
// B as [K, N]: chunk x is row (k) x / (BN / 8), columns (x % (BN / 8)) * 8.
const char *const SetupBKN =
    R"(const $T *b_src[CB];
unsigned b_dst[CB];
int b_row[CB];
bool b_ok[CB];
#pragma unroll
for (int i = 0; i < CB; ++i) {
  const int x = tid + i * NTH, r = x / (BN / 8), c = (x % (BN / 8)) * 8;
  b_ok[i] = n0 + c < N;
  b_row[i] = r;
  b_src[i] = Bg + (long long)r * N + (b_ok[i] ? n0 + c : 0);
  b_dst[i] = bs_u + (r * BP + c) * 2;
})";
const char *const CopyBKNAsync =
    R"(#pragma unroll
  for (int i = 0; i < CB; ++i) {
    const bool ok = b_ok[i] && k0 + b_row[i] < K;
    solder_cp16_u(b_dst[i] + s * (B_STAGE * 2), ok ? b_src[i] + (long long)k0 * N : Bg, ok);
  })";
const char *const CopyBKNPlain =
    R"(  $T *const bs = Bs + s * B_STAGE;
  for (int x = tid; x < BK * BN; x += NTH) {
    const int r = x / BN, c = x % BN;
    const int gk = k0 + r, gn = n0 + c;
    bs[r * BP + c] = gk < K && gn < N ? Bg[(long long)gk * N + gn] : $ZERO;
  })";
// B as [N, K] (Gemm transB): chunk x is row (n) x / 4, columns (k)
// (x % 4) * 8.
const char *const SetupBNK =
    R"(const $T *b_src[CB];
unsigned b_dst[CB];
int b_col[CB];
bool b_ok[CB];
#pragma unroll
for (int i = 0; i < CB; ++i) {
  const int x = tid + i * NTH, r = x / (BK / 8), c = (x % (BK / 8)) * 8;
  b_ok[i] = n0 + r < N;
  b_col[i] = c;
  b_src[i] = Bg + (b_ok[i] ? (long long)(n0 + r) * K : 0LL) + c;
  b_dst[i] = bs_u + (r * BP + c) * 2;
})";
const char *const CopyBNKAsync =
    R"(#pragma unroll
  for (int i = 0; i < CB; ++i) {
    const bool ok = b_ok[i] && k0 + b_col[i] < K;
    solder_cp16_u(b_dst[i] + s * (B_STAGE * 2), ok ? b_src[i] + k0 : Bg, ok);
  })";
const char *const CopyBNKPlain =
    R"(  $T *const bs = Bs + s * B_STAGE;
  for (int x = tid; x < BN * BK; x += NTH) {
    const int r = x / BK, c = x % BK;
    const int gn = n0 + r, gk = k0 + c;
    bs[r * BP + c] = gn < N && gk < K ? Bg[(long long)gn * K + gk] : $ZERO;
  })";
// B fragments of n-tiles nt and nt + 1 for k-step kk. As [K, N] in shared
// memory (rows are k): transposed ldmatrix; as [N, K]: plain.
const char *const BLdKN = "((((lane >> 3) & 1) * 8 + (lane & 7)) * BP + wn * "
                          "TN + (lane >> 4) * 8) * 2";
const char *const BFragKN =
    "solder_ldm_x4_t_u(r, b_s + (kk * BP + nt * 8) * 2);";
const char *const BLdNK = "((wn * TN + (lane >> 4) * 8 + (lane & 7)) * BP + "
                          "((lane >> 3) & 1) * 8) * 2";
const char *const BFragNK = "solder_ldm_x4_u(r, b_s + (nt * 8 * BP + kk) * 2);";

} // namespace

const Value *normSplitValue(const Node &Group) {
  if (!isFusedGroup(Group) || !Group.body() ||
      groupInfo(Group).Kind != GroupKind::Contraction)
    return nullptr;
  const Graph *Body = Group.body();
  const Node *Norm = nullptr;
  for (const auto &M : Body->nodes())
    if (M->kind() == OpKind::LayerNormalization ||
        M->kind() == OpKind::RMSNormalization) {
      Norm = M.get();
      break;
    }
  if (!Norm)
    return nullptr;
  // A residual added right before the normalization goes to the row
  // kernel, which reads whole rows with 16-byte loads, where the GEMM's
  // epilogue would read it two elements at a time in the accumulators'
  // layout.
  const Value *X = Norm->operand(0);
  while (X && X->producer() && X->producer()->kind() == OpKind::Add &&
         X->uses().size() == 1) {
    const Node &Add = *X->producer();
    const Value *L = Add.operand(0), *R = Add.operand(1);
    auto IsResidual = [&](const Value *V) {
      return V && !V->producer() && !V->isConstant() && V->type().isStatic() &&
             X->type().isStatic() && dimsOf(V) == dimsOf(X);
    };
    if (IsResidual(R) && L && L->producer())
      X = L;
    else if (IsResidual(L) && R && R->producer())
      X = R;
    else
      break;
  }
  if (!X || !X->producer() || Body->isOutput(X))
    return nullptr;
  // The GEMM's part is every member up to X's producer; the rest reads X,
  // operands, constants and each other only, and makes every result.
  llvm::DenseSet<const Value *> Before;
  bool After = false;
  for (const auto &M : Body->nodes()) {
    if (!After) {
      for (const Value *V : M->results())
        if (V)
          Before.insert(V);
      After = M.get() == X->producer();
      continue;
    }
    if (M.get() == Norm)
      Norm = nullptr; // reached: the normalization is in the rest
    for (const Value *V : M->operands())
      if (V && V != X && Before.count(V))
        return nullptr;
  }
  if (Norm)
    return nullptr;
  for (const Value *V : Body->outputs())
    if (Before.count(V))
      return nullptr;
  return X;
}

std::string generatedGemmUnsupported(const Node &Group, unsigned SmVersion) {
  std::string Why;
  return analyze(Group, SmVersion, Why) ? std::string() : Why;
}

llvm::Expected<GeneratedKernel> emitGeneratedGemm(const Node &Group,
                                                  const CodegenOptions &Opts,
                                                  KernelNamer &Names,
                                                  const Node *Stats) {
  return emitGeneratedGemmVariant(Group, Opts, Names, nullptr, Stats);
}

const Node *statsNormOf(const Node &R) {
  const Node *L = &R;
  if (isFusedGroup(R)) {
    if (!R.body() || R.body()->nodes().size() != 1)
      return nullptr;
    L = R.body()->nodes().front().get();
  }
  if (L->kind() != OpKind::LayerNormalization || L->numResults() < 3 ||
      !L->result(1) || !L->result(2) || !L->operand(0)->type().isStatic())
    return nullptr;
  // Its normalized result unused (inside a group: not a result either).
  if (L->result(0) && (L->result(0)->hasUses() ||
                       L->result(0)->graph()->isOutput(L->result(0))))
    return nullptr;
  int64_t Rank = int64_t(dimsOf(L->operand(0)).size());
  std::optional<int64_t> Axis =
      normalizeAxis(L->attrs().getInt("axis", -1), Rank);
  return Axis && *Axis == Rank - 1 ? L : nullptr;
}

const Value *statsNormValue(const Node &R, unsigned J) {
  if (!isFusedGroup(R))
    return R.result(J);
  return R.body()->outputs()[J];
}

const Node *deferredStatsGroup(const Node &Group) {
  std::string Why;
  std::optional<GemmShape> S = analyze(Group, 90, Why);
  if (!S || S->Norm)
    return nullptr;
  const Value *A = outerValue(Group, S->ASource);
  for (const Value *V : Group.operands()) {
    const Node *R = V ? V->producer() : nullptr;
    const Node *L = R ? statsNormOf(*R) : nullptr;
    if (L &&
        (isFusedGroup(*R) ? outerValue(*R, L->operand(0)) : L->operand(0)) == A)
      return R;
  }
  return nullptr;
}

llvm::Expected<GeneratedKernel>
codegen::emitGeneratedGemmVariant(const Node &Group, const CodegenOptions &Opts,
                                  KernelNamer &Names, const GemmVariant *Force,
                                  const Node *Stats) {
  std::string Why;
  std::optional<GemmShape> SO = analyze(Group, Opts.SmVersion, Why);
  if (!SO)
    return groupError(Group, nullptr, "no generated GEMM: " + Why);
  GemmShape S = *SO;
  GroupInfo Info = groupInfo(Group);
  // Split (CodegenOptions::SplitNormGroups): this kernel stops at the
  // value normSplitValue names, which it stores; a row kernel does the
  // rest (the residual add, the normalization).
  const Node *SplitNorm = nullptr;
  const Value *SplitValue = nullptr;
  if (S.Norm && Opts.SplitNormGroups.count(Info.Id)) {
    SplitValue = normSplitValue(Group);
    if (!SplitValue)
      return groupError(Group, S.Norm,
                        "no split at the normalization: a member after it "
                        "reads another value of the epilogue");
    SplitNorm = S.Norm;
    S.Norm = nullptr;
  }
  const Graph *Body = Group.body();
  bool TransB = S.TransB;
  bool CanWgmma = wgmmaApplies(Opts.SmVersion, S.N, S.K, TransB);
  // A row normalization whose TMA tiles fit one wave exchanges its row
  // statistics through global memory (GemmVariant::GridNorm). Measured on
  // an H200 (bench/gemm_lab, us, this form against the best cluster form
  // and cuBLASLt plus the row kernel): 4096 x 768 x 768 16.9 / 24.7 /
  // 17.4, 4096 x 768 x 3072 38.4 / 50.9 / 37.0, 128 x 768 x 768 (64 x 64
  // tiles, 12 blocks a row) 8.2 / 9.6 / 8.7, 128 x 768 x 3072 14.4 / 18.4
  // / 11.7. Tuning times it against the library per group.
  WgmmaTile GridTile = chooseTmaTile(S.M, S.N);
  const int64_t GridTiles = ((S.M + GridTile.BM - 1) / GridTile.BM) *
                            ((S.N + GridTile.BN - 1) / GridTile.BN);
  const bool AutoGrid = !Force && S.Norm && CanWgmma && S.N > GridTile.BN &&
                        GridTiles <= PersistentBlocks &&
                        (TransB || S.N % 64 == 0);
  bool Wgmma =
      Force ? Force->Wgmma
            : CanWgmma && (AutoGrid || Opts.PreferWgmma ||
                           wgmmaPreferred(S.M, S.N, S.K, S.Norm != nullptr));
  if (Wgmma && !CanWgmma)
    return groupError(Group, nullptr,
                      "no wgmma GEMM: it needs sm_90 and K (and N for B as "
                      "[K, N]) a multiple of 8");
  // Without a row normalization the wgmma loop takes its TMA producer
  // (measured faster at every BERT-base shape); forced variants say.
  const bool Tma = Force ? Force->Tma : Wgmma && (!S.Norm || AutoGrid);
  const bool Specialized = Force ? Force->Specialized || Tma : Tma;
  if (Specialized && (!Wgmma || (S.Norm && !Tma)))
    return groupError(Group, nullptr,
                      "no warp-specialized GEMM: it needs the wgmma loop, and "
                      "the TMA producer for a row normalization");

  // The main loop's tile and shared memory.
  Tile T{};
  WgmmaTile W;
  unsigned SharedBytes = 0;
  bool AsyncA = S.K % 8 == 0;
  bool AsyncB = TransB ? S.K % 8 == 0 : S.N % 8 == 0;
  int64_t BK = 0, BPitch = 0, BStage = 0;
  int Stages = 0;
  if (Wgmma) {
    W = Force && Force->Tile.BM ? Force->Tile
        : AutoGrid              ? GridTile
        : Tma                   ? chooseTmaTile(S.M, S.N)
                                : chooseWgmmaTile(S.M, S.N, S.K, S.Norm);
    if (W.BM % 64 || W.BM < 64 || W.BM > 256 || W.BN % 8 || W.BN < 8 ||
        W.BN > 256 || (!TransB && W.BN % 64) || W.Stages < 3 ||
        wgmmaSharedBytes(W, Specialized) > MaxDynamicShared ||
        (Specialized && (W.BN > (Tma ? 256 : 192) || W.BM > 128)) ||
        (S.Norm && !(Force ? Force->GridNorm : AutoGrid) &&
         (S.N + W.BN - 1) / W.BN > MaxCluster))
      return groupError(Group, nullptr,
                        "no wgmma GEMM with tile " + std::to_string(W.BM) +
                            "x" + std::to_string(W.BN) + ", " +
                            std::to_string(W.Stages) + " stages");
    // The epilogue's view: one warp row per warp, one warp column.
    T = {W.BM, W.BN, W.BM / 16, 1};
    SharedBytes = wgmmaSharedBytes(W, Specialized);
    BK = 64;
    Stages = W.Stages;
  } else {
    T = chooseTile(S);
    // Small tiles are the latency-bound ones (few blocks, long K): deeper
    // steps and more of them in flight. Large tiles keep two blocks per SM.
    BK = T.BM <= 32 ? 64 : 32;
    BPitch = TransB ? BK + 8 : T.BN + 8;
    BStage = TransB ? T.BN * BPitch : BK * BPitch;
    int64_t StageBytes = (int64_t(T.BM) * (BK + 8) + BStage) * 2;
    // (H100, BERT's 128 x 768 x 768 + LayerNorm: 16 x 128 tiles of 4 warps
    // and 6 stages ran in 12.1 us, of 2 warps and 8 stages in 16.8 us, the
    // library and its row kernel in 13.1 us.)
    Stages = T.BM <= 32 ? int(std::min<int64_t>(6, 200 * 1024 / StageBytes))
             : StageBytes * 4 <= 100 * 1024 ? 4
                                            : 3;
    SharedBytes = unsigned(StageBytes * Stages);
  }
  // K split over a cluster (sm_90, no row normalization, the mma.sync or
  // the warp-specialized wgmma loop): partial sums meet in block 0's
  // registers.
  const unsigned TilesM = unsigned((S.M + T.BM - 1) / T.BM),
                 TilesN = unsigned((S.N + T.BN - 1) / T.BN);
  const int64_t Tiles = int64_t(TilesM) * TilesN;
  // A row normalization's blocks of a row meet through global memory, all
  // resident at once (one wave, one block per SM), or in a cluster.
  const bool GridNorm =
      S.Norm && TilesN > 1 && (Force ? Force->GridNorm : AutoGrid);
  if (GridNorm && (!Tma || Tiles > PersistentBlocks ||
                   (Force && (Force->KSplit > 1 || Force->Persistent))))
    return groupError(Group, nullptr,
                      "no row statistics through global memory: they need "
                      "the TMA loop, at most " +
                          std::to_string(PersistentBlocks) +
                          " blocks (one wave), no split K and no persistent "
                          "loop");
  const int64_t Cluster = S.Norm && !GridNorm ? TilesN : 1;
  // Under GridNorm a row's blocks wait for each other: launched one after
  // another (column tiles along blockIdx.x) they start together, where a
  // wave apart the first waited for the last's whole launch.
  const bool RowsTogether = Force ? Force->RowsTogether : GridNorm;
  if (RowsTogether && !GridNorm)
    return groupError(Group, nullptr,
                      "no row-major launch order: it is for the row "
                      "statistics through global memory");
  const std::string MBlock = RowsTogether ? "blockIdx.y" : "blockIdx.x",
                    NBlock = RowsTogether ? "blockIdx.x" : "blockIdx.y";
  int64_t KSplit = 1;
  if ((!Wgmma || Specialized) && !S.Norm && Opts.SmVersion >= 90) {
    int64_t KSteps = (S.K + BK - 1) / BK;
    KSplit = Force && Force->KSplit > 0 ? Force->KSplit
             : Wgmma                    ? chooseTmaKSplit(Tiles, KSteps)
                                        : chooseKSplit(Tiles, KSteps);
  } else if (Force && Force->KSplit > 1) {
    return groupError(Group, nullptr,
                      "no split K: it needs sm_90, the mma.sync or the "
                      "warp-specialized loop and no row normalization");
  }
  // A persistent TMA loop: a block per SM walking tiles, so the producer
  // fills the next tile's stages during this one's epilogue.
  const bool Persistent =
      Force ? Force->Persistent
            : Tma && !S.Norm && KSplit == 1 && Tiles > PersistentBlocks;
  if (Persistent && (!Tma || S.Norm))
    return groupError(Group, nullptr,
                      "no persistent GEMM: it needs the TMA loop and no row "
                      "normalization");
  // Tiles wider than 192 need the producers' registers (setmaxnreg),
  // which they give up only when they leave before the epilogue.
  // Under a row normalization the producers stay for its barriers, so
  // they keep their registers (a 128 x 256 tile then spills a little:
  // 300 bytes).
  const bool MoveRegisters = Tma && W.BN > 192 && !S.Norm;
  if ((Persistent || MoveRegisters) && Force && Force->KSplit > 1)
    return groupError(Group, nullptr,
                      "no split K with a persistent loop or tiles wider "
                      "than 192 (their producers leave before the "
                      "reduction's barriers)");
  if (Persistent || MoveRegisters)
    KSplit = 1;
  if (KSplit < 1 || KSplit > MaxCluster)
    return groupError(Group, nullptr,
                      "split K over " + std::to_string(KSplit) +
                          " blocks: a cluster holds 1 to 8");
  if (KSplit > 1)
    SharedBytes = std::max<unsigned>(SharedBytes, unsigned(T.BM * T.BN * 4));
  // The specialized loop's producer warpgroup comes on top.
  const unsigned Threads = unsigned(T.WM * T.WN * 32) + (Specialized ? 128 : 0);
  // B multicast over clusters of two blocks along M (the TMA loop): each
  // block of a pair fetches half of B's stage into both, halving B's
  // traffic from L2 (a 128 x 192 tile moves 40 KB a step of K for 768
  // tensor-core clocks). Pairs need an even number of row tiles (and of
  // persistent blocks). Measured on an H200 (bench/gemm_lab, 128 x 192,
  // staged, us, without -> with): 4096 x 768 x 3072 32.97 -> 30.89; but
  // 4096 x 768 x 768 10.67 -> 10.74, persistent 4096 x 3072 x 768 34.85
  // -> 35.67 and under a LayerNorm through global memory 15.27 -> 15.61
  // and 36.67 -> 37.23: the pair waits for its slower block each stage,
  // which only a long K repays. So by default only there.
  const bool CanMulticast =
      Tma && KSplit == 1 && Cluster == 1 && !Stats && TilesM % 2 == 0 &&
      W.BN % 16 == 0 &&
      (!Persistent || std::min<int64_t>(Tiles, PersistentBlocks) % 2 == 0);
  const bool Multicast = Force ? Force->Multicast
                               : CanMulticast && !S.Norm && !Persistent &&
                                     S.M >= 1024 && S.K >= 2048;
  if (Multicast && !CanMulticast)
    return groupError(Group, nullptr,
                      "no B multicast: it needs the TMA loop without split K, "
                      "statistics or a cluster normalization, and an even "
                      "number of row tiles");

  // Members after the anchor, in body order; results split by whether the
  // normalization comes before them.
  // Split: the members up to the value the row kernel reads.
  std::vector<const Node *> Nodes;
  for (const auto &M : Body->nodes()) {
    Nodes.push_back(M.get());
    if (SplitValue && M.get() == SplitValue->producer())
      break;
  }
  auto PosOf = [&](const Node *N) {
    return size_t(std::find(Nodes.begin(), Nodes.end(), N) - Nodes.begin());
  };
  size_t NormPos = S.Norm ? PosOf(S.Norm) : Nodes.size();
  std::vector<const Value *> OutBody, OutOuter;
  std::vector<bool> AfterNorm;
  if (SplitNorm) {
    // The value the row kernel reads (normSplitValue: no result comes
    // from the members before it).
    OutBody.push_back(SplitValue);
    OutOuter.push_back(SplitValue);
    AfterNorm.push_back(false);
  }
  for (size_t J = 0; J < Body->outputs().size() && !SplitNorm; ++J) {
    const Value *V = Body->outputs()[J];
    OutBody.push_back(V);
    OutOuter.push_back(Group.result(J));
    AfterNorm.push_back(S.Norm && V->producer() &&
                        PosOf(V->producer()) >= NormPos);
  }
  // The TMA loop's epilogue through shared memory (one 2-byte result,
  // whole tiles): threads park their converted pairs in a padded tile,
  // then write it back as whole 16-byte chunks of rows. The persistent
  // loop keeps a buffer of its own (the producer is already filling the
  // stages with the next tile), fewer stages making room; the others
  // reuse the stages once every consumer is past the main loop. Measured
  // on an H100 (bench/gemm_lab, 128 x 192 tiles, us, pairs stored from
  // registers -> staged): 4096 x 768 x 768 14.8 -> 10.6; 4096 x 2304 x 768
  // 37.7 -> 26.9 and 4096 x 3072 x 768 50.1 -> 36.5 (persistent); 4096 x
  // 768 x 3072 35.0 -> 32.2; 64 x 64 tiles at 128 rows 5.1 -> 4.8.
  // Under a row normalization only its result may be stored (the pass
  // before it has no buffer of its own).
  bool Staged = Tma && KSplit == 1 && OutBody.size() == 1 &&
                (!S.Norm || AfterNorm[0]) &&
                dtypeSize(OutBody[0]->dtype()) == 2 && S.M % W.BM == 0 &&
                S.N % W.BN == 0 && (Force ? Force->StagedEpilogue : true);
  const int64_t EpiPitch = W.BN + 8; // halves; rows 16 bytes apart in banks
  const int64_t EpiBytes = int64_t(W.BM) * EpiPitch * 2;
  int64_t EpiOffset = 0;
  if (Staged && Persistent) {
    while (W.Stages > 3 &&
           wgmmaSharedBytes(W, Specialized) + EpiBytes + 16 > MaxDynamicShared)
      --W.Stages;
    EpiOffset = (wgmmaSharedBytes(W, Specialized) + 15) / 16 * 16;
    if (EpiOffset + EpiBytes > MaxDynamicShared)
      Staged = false;
    Stages = W.Stages;
    SharedBytes = unsigned(EpiOffset + EpiBytes);
  } else if (Staged) {
    SharedBytes = std::max<unsigned>(SharedBytes, unsigned(EpiBytes));
  }
  if (Force && Force->StagedEpilogue && !Staged)
    return groupError(Group, nullptr,
                      "no epilogue through shared memory: it needs the TMA "
                      "loop without split K, one 2-byte result and whole "
                      "tiles");

  // A deferred LayerNorm's statistics (Stats, deferredStatsGroup): the
  // consumers sum A's rows from the stages as they multiply them; the
  // body inputs holding the statistics become registers, and Stats'
  // results are stored here (its own kernel does not run).
  const Node *StatsNorm = nullptr;
  llvm::DenseMap<const Value *, bool> StatIn; // body input -> is the mean
  if (Stats) {
    if (Stats != deferredStatsGroup(Group))
      return groupError(Group, nullptr,
                        "internal: the statistics are not of A's rows");
    if (!Tma || KSplit != 1 || Persistent || MoveRegisters || S.Norm ||
        SplitNorm || S.K % 64 != 0 || S.ASource != S.A)
      return groupError(
          Group, nullptr,
          "no LayerNorm statistics in the GEMM: it needs the TMA loop "
          "(not split, persistent or 256 wide) without a normalization, K "
          "a multiple of 64 and A read as it is");
    StatsNorm = statsNormOf(*Stats);
    for (unsigned I = 0; I < Group.numOperands(); ++I) {
      const Value *V = Group.operand(I);
      if (!V || V->producer() != Stats || I >= Body->inputs().size())
        continue;
      const Value *Inner = statsNormValue(*Stats, V->resultIndex());
      if (Inner != StatsNorm->result(1) && Inner != StatsNorm->result(2))
        return groupError(Group, nullptr,
                          "internal: reads a LayerNorm result other than its "
                          "statistics");
      StatIn[Body->inputs()[I]] = Inner == StatsNorm->result(1);
    }
  }

  // The kernel computes every member: it reads the group's operands (A
  // and B among them) and constants.
  std::vector<const Value *> Reads = externalReads(
      Group, OutBody, llvm::DenseSet<const Node *>(Nodes.begin(), Nodes.end()));
  llvm::erase_if(Reads, [&](const Value *V) { return StatIn.count(V); });
  // A staged result that is ApplyRowStats(x, mean, rstd, C, Scale, Bias,
  // Z) (a deferred LayerNorm recomputed for the residual add,
  // passes/NormDeferral.cpp): the accumulator loop stages Z, and the
  // copy-out adds the correction 16 bytes of x at a time, where computed
  // in the accumulators' layout it read x two bytes at a time (BERT-base
  // b1's output projection: 7.4 -> 10.0 us on an H100).
  const Node *StagedApply = nullptr;
  if (Staged && !S.Norm && OutBody[0]->producer() &&
      OutBody[0]->producer()->kind() == OpKind::ApplyRowStats) {
    const Node &Ap = *OutBody[0]->producer();
    // Each operand a kernel input (a group operand).
    auto BodyInput = [&](const Value *V) {
      return V && !V->producer() && !StatIn.count(V) && V->type().isStatic() &&
             llvm::is_contained(Reads, V);
    };
    auto Vector = [&](const Value *V) {
      return !V || (BodyInput(V) && numElementsOf(dimsOf(V)) == S.N &&
                    dimsOf(V).back() == S.N);
    };
    auto RowStat = [&](const Value *V) {
      return BodyInput(V) && numElementsOf(dimsOf(V)) == S.M &&
             dimsOf(V).back() == 1;
    };
    const Value *Z = Ap.numOperands() > 6 ? Ap.operand(6) : nullptr;
    if (Z && Z->producer() && BodyInput(Ap.operand(0)) &&
        dimsOf(Ap.operand(0)) == S.ResultDims &&
        Ap.operand(0)->dtype() == OutBody[0]->dtype() &&
        RowStat(Ap.operand(1)) && RowStat(Ap.operand(2)) &&
        Vector(Ap.operand(3)) && Vector(Ap.operand(4)) &&
        Vector(Ap.operand(5)) && Z->uses().size() == 1)
      StagedApply = &Ap;
  }

  // A row normalization's residual (an [M, N] operand of the epilogue),
  // copied into shared memory by the producer warpgroup's idle warps
  // while the consumers multiply (TileOperandCopy), so the epilogue does
  // not read it two bytes at a time in the accumulators' layout.
  const Value *TileV = nullptr;
  int64_t TileOffset = 0;
  const int64_t TilePitch = W.BN + 8; // rows 16 bytes apart in banks
  if (Tma && S.Norm && !Persistent && KSplit == 1 && !MoveRegisters && !Stats &&
      S.N % 8 == 0) {
    for (const Value *V : Reads) {
      const Value *Outer = outerValue(Group, V);
      if (V == S.ASource || V == S.B || V->producer() || !Outer ||
          Outer->isConstant() || V->dtype() != S.T || !V->type().isStatic() ||
          dimsOf(V) != S.ResultDims)
        continue;
      int64_t Base = std::max<int64_t>(wgmmaSharedBytes(W, Specialized),
                                       Staged ? EpiBytes : 0);
      int64_t Bytes = int64_t(W.BM) * TilePitch * 2;
      // Fewer stages where the tile would not fit beside them.
      while (W.Stages > 3 && (Base + 15) / 16 * 16 + Bytes > MaxDynamicShared) {
        --W.Stages;
        Base = std::max<int64_t>(wgmmaSharedBytes(W, Specialized),
                                 Staged ? EpiBytes : 0);
      }
      if ((Base + 15) / 16 * 16 + Bytes > MaxDynamicShared)
        break;
      Stages = W.Stages;
      TileOffset = (Base + 15) / 16 * 16;
      SharedBytes = unsigned(TileOffset + Bytes);
      TileV = V;
      break;
    }
  }

  CodegenOptions O = groupOptions(Group, Opts);
  O.BlockSize = Threads;
  KernelBuilder B(
      Group, O, Names.nameFor(Group, "g" + std::to_string(Info.Id) + "_gemm"));
  CudaPrinter &P = B.p();
  std::vector<std::string> OutParams, InParams;
  for (const Value *V : OutOuter)
    OutParams.push_back(B.addOutput(V));
  // Stats' results: (parameter, is the mean).
  std::vector<std::pair<std::string, const Value *>> StatOut;
  if (Stats)
    for (unsigned J = 0; J < Stats->numResults(); ++J)
      if (const Value *V = Stats->result(J))
        if (J > 0 || isFusedGroup(*Stats)) // not the unused normalized row
          StatOut.push_back({B.addOutput(V), V});
  std::vector<const Value *> InOuter;
  std::string AParam, BParam;
  for (const Value *V : Reads) {
    InOuter.push_back(outerValue(Group, V));
    InParams.push_back(B.addInput(InOuter.back()));
    if (V == S.ASource)
      AParam = InParams.back();
    if (V == S.B)
      BParam = InParams.back();
  }
  if (AParam.empty() || BParam.empty())
    return groupError(Group, S.Anchor,
                      "internal: the matmul's operands are not kernel inputs");
  // A dependent launch of the TMA loop with constant weights as B fetches
  // them before waiting for the previous grid (wgmmaMainLoop's PrefetchB).
  // A GridNorm kernel places its wait and its trigger itself in any case:
  // its blocks wait for each other, so the next grid may launch only once
  // every row has exchanged its statistics (all blocks resident), never
  // at the start, where its early blocks could hold the SMs that this
  // grid's last blocks need.
  const Value *OuterB = outerValue(Group, S.B);
  const bool ConstB = OuterB && OuterB->isConstant();
  const bool OwnWait =
      Tma && (ConstB || GridNorm) && B.waitForPreviousGridInBody();
  const bool PrefetchB = OwnWait && ConstB;

  std::vector<std::string> NodeNames;
  for (const Node *N : Nodes)
    NodeNames.push_back(memberName(*N));
  std::string Shape = std::to_string(S.M) + "x" + std::to_string(S.N) + "x" +
                      std::to_string(S.K) + " tile " + std::to_string(T.BM) +
                      "x" + std::to_string(T.BN) + "x" + std::to_string(BK) +
                      " " + std::to_string(Stages) + " stages";
  std::string Desc =
      (Tma           ? "tensor-core GEMM (wgmma, TMA producer) "
       : Specialized ? "tensor-core GEMM (wgmma, warp-specialized) "
       : Wgmma       ? "tensor-core GEMM (wgmma) "
                     : "tensor-core GEMM ") +
      Shape + (Cluster > 1 ? ", cluster of " + std::to_string(Cluster) : "") +
      (GridNorm ? ", row statistics through global memory (" +
                      std::to_string(TilesN) + " blocks a row, cooperative" +
                      (RowsTogether ? ", launched together" : "") + ")"
                : "") +
      (KSplit > 1 ? ", K split over a cluster of " + std::to_string(KSplit)
                  : "") +
      (S.Norm ? ", " + S.Norm->opName().str() + " epilogue" : "") +
      (SplitNorm ? ", up to the " + SplitNorm->opName().str() +
                       " (a row kernel follows)"
                 : "") +
      (PrefetchB ? ", B fetched before the previous grid ends" : "") +
      (Multicast ? ", B multicast over clusters of 2" : "") +
      (Stats ? ", the statistics of A's rows for a deferred LayerNorm (" +
                   memberName(*StatsNorm) + ")"
             : "") +
      (StagedApply ? ", the deferred LayerNorm added in the staged copy-out"
                   : "") +
      (TileV ? ", " + memberName(*TileV->uses().front().User) +
                   "'s operand tile copied by the idle producer warps"
             : "") +
      (AsyncA && AsyncB ? "" : ", element loads");
  B.describeGroup(Info.Id, std::move(NodeNames),
                  groupSummary(Group, Desc, Nodes, InOuter, OutOuter));
  bool Perturb = Opts.PerturbGroupId >= 0 && Opts.PerturbGroupId == Info.Id;
  if (Cluster > 1)
    B.setAttributes("__cluster_dims__(1, " + std::to_string(Cluster) + ", 1)");
  if (KSplit > 1)
    B.setAttributes("__cluster_dims__(1, 1, " + std::to_string(KSplit) + ")");
  if (Multicast)
    B.setAttributes(RowsTogether ? "__cluster_dims__(1, 2, 1)"
                                 : "__cluster_dims__(2, 1, 1)");
  // wgmma kernels are compiled for sm_90a (NvrtcCompiler.cpp reads this).
  if (Wgmma)
    P.declare("solder_arch", ArchSpecificMarker);
  P.declare("solder_mma", mmaHelpers(S.T));
  if (Wgmma)
    P.declare("solder_wgmma", wgmmaHelpers(S.T, W.BN, !TransB));
  if (Specialized)
    P.declare("solder_mbar", mbarrierHelpers());
  if (Cluster > 1 || KSplit > 1 || Multicast)
    P.declare("solder_cluster", clusterHelpers());
  if (Multicast)
    P.declare("solder_multicast", multicastHelpers());
  // Row statistics through global memory: counters (arrived, left) per
  // row of blocks, then each block's (mean, centred sum of squares) of
  // its columns for each row.
  const int64_t RowsPadded = int64_t(TilesM) * T.BM;
  const int64_t CounterWords = (2 * int64_t(TilesM) + 63) / 64 * 64;
  std::string ScratchParam;
  if (GridNorm) {
    ScratchParam = B.addScratch(
        uint32_t(CounterWords * 4 + int64_t(TilesN) * RowsPadded * 8));
    P.declare("solder_rowgroup", rowGroupHelpers());
    // The blocks the emulator must run together (tests/emulator).
    P.declare("solder_coresident",
              "// solder_coresident(" +
                  (RowsTogether
                       ? std::to_string(TilesN) + ", " + (Multicast ? "2" : "1")
                       : std::string(Multicast ? "2" : "1") + ", " +
                             std::to_string(TilesN)) +
                  ", 1): the blocks of a row wait for each other");
  }

  std::string Tn = P.storageType(S.T);
  std::string Loop;
  if (Wgmma) {
    std::string TmapA, TmapB;
    if (Tma) {
      std::vector<TensorMapShape> Maps =
          tmaOperandMaps(W, TransB, S.M, S.N, S.K, S.T, Multicast);
      auto InputOf = [&](const Value *X) {
        return unsigned(std::find(Reads.begin(), Reads.end(), X) -
                        Reads.begin());
      };
      TmapA = B.addTensorMap(InputOf(S.ASource), Maps[0]);
      TmapB = B.addTensorMap(InputOf(S.B), Maps[1]);
    }
    std::optional<TileOperandCopy> TileCopy;
    if (TileV) {
      TileCopy.emplace();
      TileCopy->Ptr =
          InParams[size_t(llvm::find(Reads, TileV) - Reads.begin())];
      TileCopy->Offset = TileOffset;
      TileCopy->Pitch = TilePitch;
      TileCopy->Wait = PrefetchB;
    }
    Loop = wgmmaMainLoop(
        W, TransB, S.M, S.N, S.K, Tn, AParam, BParam, Specialized, Tma, TmapA,
        TmapB, int(KSplit), KSplit > 1 ? KSplitMany : KSplitOne, Persistent,
        MoveRegisters, KSplit > 1 || (S.Norm && !GridNorm), PrefetchB,
        Stats != nullptr, TileCopy ? &*TileCopy : nullptr, Multicast,
        RowsTogether);
    // The producers stayed for the reduction's barriers; the epilogue is
    // the consumers'.
    if (KSplit > 1)
      Loop += "\n" + std::string(KSplitReduce) + "\nif (tid >= NTH)\n  return;";
  } else {
    std::string Zero =
        S.T == DType::F16 ? "__float2half(0.f)" : "__float2bfloat16(0.f)";
    Loop = substitute(
        MainLoop, {{"SETUP_A", AsyncA ? SetupA : ""},
                   {"SETUP_B", !AsyncB  ? ""
                               : TransB ? SetupBNK
                                        : SetupBKN},
                   {"COPY_A", AsyncA ? CopyAAsync : CopyAPlain},
                   {"COPY_B", TransB ? (AsyncB ? CopyBNKAsync : CopyBNKPlain)
                                     : (AsyncB ? CopyBKNAsync : CopyBKNPlain)},
                   {"WAIT", "solder_cp_wait<STAGES - 2>();"},
                   {"KSPLIT", KSplit > 1 ? KSplitMany : KSplitOne}});
    if (KSplit > 1)
      Loop += "\n" + std::string(KSplitReduce);
    Loop = substitute(std::move(Loop), {{"BLD", TransB ? BLdNK : BLdKN},
                                        {"BFRAG", TransB ? BFragNK : BFragKN}});
    Loop = substitute(std::move(Loop), {{"BM", std::to_string(T.BM)},
                                        {"BN", std::to_string(T.BN)},
                                        {"BK", std::to_string(BK)},
                                        {"WM", std::to_string(T.WM)},
                                        {"WN", std::to_string(T.WN)},
                                        {"STAGES", std::to_string(Stages)},
                                        {"BP", std::to_string(BPitch)},
                                        {"BSTAGE", std::to_string(BStage)},
                                        {"M", std::to_string(S.M) + "LL"},
                                        {"N", std::to_string(S.N)},
                                        {"K", std::to_string(S.K)},
                                        {"SPLIT", std::to_string(KSplit)},
                                        {"T", Tn},
                                        {"ZERO", Zero},
                                        {"APARAM", AParam},
                                        {"BPARAM", BParam}});
  }

  const Value *AnchorOut = S.Anchor->result(0);
  Dims Lead(S.ResultDims.begin(), S.ResultDims.end() - 1);
  llvm::Error Err = [&]() -> llvm::Error {
    auto Kernel = B.beginKernel();
    if (OwnWait && !PrefetchB)
      P.line("solder_grid_wait();");
    printLines(P, Loop);
    // Dependents launch once every block is past its main loop: their
    // prefetch of weights then overlaps this epilogue, not this kernel's
    // own loads (triggered at the start, every later kernel of a chain
    // launched at once and their prefetches competed with the running
    // one: BERT-base b1 0.443 against 0.407 ms on an H200). GridNorm
    // kernels trigger after their exchange instead.
    if (PrefetchB && !GridNorm)
      P.line("solder_launch_dependents();");
    FusedValueEmitter VE(B, Group, Nodes);
    for (size_t I = 0; I < Reads.size(); ++I)
      VE.setParam(Reads[I], InParams[I]);
    if (Stats) {
      // The statistics the producer warpgroup's other warps left (named
      // barrier 2), for rows g and g + 8 of this warp's 16; the first
      // column block's consumers store them for later readers.
      std::string Eps =
          floatLiteral(StatsNorm->attrs().getFloat("epsilon", 1e-5));
      P.line("solder_bar_sync(2, NTH + 96);");
      P.line("float st_rm[2], st_rr[2];");
      P.line("#pragma unroll");
      {
        auto L = P.scope("for (int h = 0; h < 2; ++h)");
        P.line("const int r = warp * 16 + g + 8 * h;");
        P.line("st_rm[h] = st_mean_s[r];");
        P.line("st_rr[h] = rsqrtf(st_var_s[r] + " + Eps + ");");
      }
      {
        auto If = P.scope("if (n0 == 0)");
        auto L = P.scope("for (int i = tid; i < BM && m0 + i < M; i += NTH)");
        for (const auto &[Param, V] : StatOut) {
          const Value *Inner = statsNormValue(*Stats, V->resultIndex());
          std::string Val = Inner == StatsNorm->result(1)
                                ? "st_mean_s[i]"
                                : "rsqrtf(st_var_s[i] + " + Eps + ")";
          P.line(Param + "[m0 + i] = " + storeExpr(V->dtype(), Val) + ";");
        }
      }
    }
    // The statistics' body inputs at C: the registers above.
    auto RememberStats = [&](const Coords &C) -> llvm::Error {
      for (const auto &[V, IsMean] : StatIn)
        for (const Use &U : V->uses()) {
          auto CC = VE.broadcastCoords(*U.User, V, S.ResultDims, C);
          if (!CC)
            return CC.takeError();
          VE.remember(V, *CC, IsMean ? "st_rm[h]" : "st_rr[h]");
        }
      return llvm::Error::success();
    };

    // Interior tiles need no bounds test; leaving it out when every tile
    // is interior lets the compiler issue the epilogue's loads (bias,
    // residual) together instead of one guarded load at a time.
    const bool Edges = S.M % T.BM != 0 || S.N % T.BN != 0;
    // Results stored as pairs of neighbouring columns (one 4- or 8-byte
    // store per thread instead of two) where no tile has an edge and the
    // row length keeps pairs aligned.
    const bool Pairs = !Edges && S.N % 2 == 0;
    // Prints the loops over this thread's accumulator elements, with `row`,
    // `col` and `a` (the accumulator) defined; Fn prints the body, inside
    // `if (row < M && col < N)` when some tile has an edge (then `else
    // Else` for the elements outside). With Pairs, a result Fn computes goes to
    // `sv<R>[e]` and is stored after the pair's second element (Late: the
    // results after the normalization).
    auto ForElements =
        [&](const std::string &Else, bool Late,
            llvm::function_ref<llvm::Error(const Coords &)> Fn) -> llvm::Error {
      // Producers still here (for a normalization's barriers) hold no
      // accumulators.
      std::optional<CudaPrinter::Scope> Consumers;
      if (Specialized && S.Norm)
        Consumers.emplace(P.scope("if (tid < NTH)"));
      P.line("#pragma unroll");
      auto L1 = P.scope("for (int mt = 0; mt < MT; ++mt)");
      P.line("#pragma unroll");
      auto L2 = P.scope("for (int h = 0; h < 2; ++h)");
      P.line("const long long row = m0 + wm * TM + mt * 16 + g + h * 8;");
      P.line("const int lrow = wm * TM + mt * 16 + g + h * 8;");
      P.line("(void)lrow;");
      P.line("#pragma unroll");
      auto L3 = P.scope("for (int nt = 0; nt < NT; ++nt)");
      std::vector<size_t> Stored;
      for (size_t R = 0; R < OutBody.size(); ++R)
        if (AfterNorm[R] == Late)
          Stored.push_back(R);
      if (Pairs)
        for (size_t R : Stored)
          P.line(P.storageType(OutBody[R]->dtype()) + " sv" +
                 std::to_string(R) + "[2];");
      llvm::Error E = llvm::Error::success();
      {
        P.line("#pragma unroll");
        auto L4 = P.scope("for (int e = 0; e < 2; ++e)");
        P.line("const int col = n0 + wn * TN + nt * 8 + tq * 2 + e;");
        P.line("float &a = acc[mt][nt][h * 2 + e];");
        std::optional<CudaPrinter::Scope> G;
        if (Edges)
          G.emplace(P.scope("if (row < M && col < N)"));
        VE.pushScope();
        Coords C = VE.delinearize("row", Lead);
        C.push_back(S.N == 1 ? "0" : "col");
        VE.registerLinear(S.ResultDims, C, "(row * N + col)");
        E = Fn(C);
        VE.popScope();
        G.reset();
        if (Edges && !Else.empty())
          P.line("else " + Else);
      }
      if (Pairs)
        for (size_t R : Stored) {
          std::string T = P.storageType(OutBody[R]->dtype());
          std::string V = "sv" + std::to_string(R);
          // Two elements of 2, 4 or 8 bytes as one aligned store.
          std::string W = dtypeSize(OutBody[R]->dtype()) == 2   ? "unsigned"
                          : dtypeSize(OutBody[R]->dtype()) == 4 ? "uint2"
                                                                : "uint4";
          std::string To =
              Staged
                  ? "epi[lrow * EP + wn * TN + nt * 8 + tq * 2]"
                  : OutParams[R] + "[row * N + n0 + wn * TN + nt * 8 + tq * 2]";
          P.line("*reinterpret_cast<" + W + " *>(&" + To +
                 ") = "
                 "*reinterpret_cast<const " +
                 W + " *>(" + V + ");");
        }
      return E;
    };
    // The staged tile's pitch and place in shared memory.
    auto DeclareStaged = [&]() {
      std::string Tn = P.storageType(OutBody[0]->dtype());
      P.line("constexpr int EP = " + std::to_string(EpiPitch) + ";");
      P.line(Tn + " *const epi = reinterpret_cast<" + Tn +
             " *>(solder_dyn_smem + " + std::to_string(EpiOffset) + ");");
    };
    // The consumer warpgroups' own barrier (the producers may have left).
    const std::string ConsumerSync = "solder_bar_sync(1, NTH);";
    // The staged tile from shared memory to the result, a 16-byte chunk
    // of a row per thread, Stride threads at a time.
    auto CopyOut = [&](const std::string &Stride) -> llvm::Error {
      P.line("for (int i = tid; i < BM * (BN / 8); i += " + Stride + ") {");
      P.line("  const int r = i / (BN / 8), c = (i % (BN / 8)) * 8;");
      if (!StagedApply) {
        P.line("  *reinterpret_cast<uint4 *>(&" + OutParams[0] +
               "[(m0 + r) * N + n0 + c]) = *reinterpret_cast<const uint4 "
               "*>(&epi[r * EP + c]);");
        P.line("}");
        return llvm::Error::success();
      }
      // The staged Z plus the deferred LayerNorm of x, a chunk of 8.
      const Node &Ap = *StagedApply;
      auto Param = [&](const Value *V) {
        auto It = llvm::find(Reads, V);
        return It == Reads.end() ? std::string()
                                 : InParams[size_t(It - Reads.begin())];
      };
      DType T = OutBody[0]->dtype();
      std::string Tn = P.storageType(T);
      P.line("  const uint4 zv = *reinterpret_cast<const uint4 *>(&epi[r * "
             "EP + c]);");
      P.line("  const uint4 xv = *reinterpret_cast<const uint4 *>(&" +
             Param(Ap.operand(0)) + "[(m0 + r) * N + n0 + c]);");
      P.line("  const " + Tn + " *const zh = reinterpret_cast<const " + Tn +
             " *>(&zv);");
      P.line("  const " + Tn + " *const xh = reinterpret_cast<const " + Tn +
             " *>(&xv);");
      auto RowLoad = [&](const Value *V) {
        return loadExpr(V->dtype(), Param(V) + "[m0 + r]");
      };
      P.line("  const float mean = " + RowLoad(Ap.operand(1)) +
             ", rstd = " + RowLoad(Ap.operand(2)) + ";");
      P.line("  uint4 ov;");
      P.line("  " + Tn + " *const oh = reinterpret_cast<" + Tn + " *>(&ov);");
      P.line("#pragma unroll");
      P.line("  for (int e = 0; e < 8; ++e) {");
      // A per-column vector's element, or "" when absent; the node's
      // expression is the table's (absent operands leave their terms out).
      auto Col = [&](unsigned I) -> std::string {
        const Value *V = Ap.operand(I);
        return V ? loadExpr(V->dtype(), Param(V) + "[n0 + c + e]")
                 : std::string();
      };
      auto Y =
          elementwiseExpr(Ap, {loadExpr(T, "xh[e]"), "mean", "rstd", Col(3),
                               Col(4), Col(5), loadExpr(T, "zh[e]")});
      if (!Y)
        return Y.takeError();
      P.line("    oh[e] = " + storeExpr(T, *Y) + ";");
      P.line("  }");
      P.line("  *reinterpret_cast<uint4 *>(&" + OutParams[0] +
             "[(m0 + r) * N + n0 + c]) = ov;");
      P.line("}");
      return llvm::Error::success();
    };
    // The anchor's value at C from the accumulator (Gemm: alpha, beta C).
    auto Product = [&](const Coords &C) -> llvm::Error {
      std::string V = "a";
      if (S.Alpha != 1.0f)
        V = "(" + floatLiteral(S.Alpha) + " * a)";
      if (S.C && S.Beta != 0.0f) {
        auto CC = VE.broadcastCoords(*S.Anchor, S.C, S.ResultDims, C);
        if (!CC)
          return CC.takeError();
        auto CV = VE.compute(S.C, *CC);
        if (!CV)
          return CV.takeError();
        V = "(" + V + " + " + floatLiteral(S.Beta) + " * " + *CV + ")";
      }
      VE.remember(AnchorOut, C, V);
      return llvm::Error::success();
    };
    // What the accumulator loop stores: with StagedApply its Z (the
    // copy-out adds the rest).
    std::vector<const Value *> StoreBody = OutBody;
    if (StagedApply)
      StoreBody[0] = StagedApply->operand(6);
    auto StoreResults = [&](const Coords &C, bool Late) -> llvm::Error {
      return VE.storeResults(StoreBody, C, Perturb, [&](size_t R) {
        if (AfterNorm[R] != Late)
          return std::string();
        return Pairs ? "sv" + std::to_string(R) + "[e]"
                     : OutParams[R] + "[row * N + col]";
      });
    };

    if (!S.Norm) {
      if (Staged) {
        DeclareStaged();
        // Without a buffer of its own the tile reuses stages another
        // warpgroup's last wgmmas may still read.
        if (!Persistent)
          P.line(ConsumerSync);
      }
      llvm::Error E =
          ForElements("", false, [&](const Coords &C) -> llvm::Error {
            if (auto E = RememberStats(C))
              return E;
            if (auto E = Product(C))
              return E;
            return StoreResults(C, false);
          });
      if (E)
        return E;
      if (Staged) {
        P.line(ConsumerSync);
        if (auto E = CopyOut("NTH"))
          return E;
        // The next tile's pairs wait until this one is out.
        if (Persistent)
          P.line(ConsumerSync);
      }
      if (Persistent)
        P.line("} // tile"); // the loop wgmmaMainLoop opened
      return llvm::Error::success();
    }

    // The residual's tile, once the idle producer warps copied it.
    auto RememberTile = [&](const Coords &C) -> llvm::Error {
      if (!TileV)
        return llvm::Error::success();
      for (const Use &U : TileV->uses()) {
        auto CC = VE.broadcastCoords(*U.User, TileV, S.ResultDims, C);
        if (!CC)
          return CC.takeError();
        VE.remember(TileV, *CC,
                    loadExpr(S.T, "tile_s[lrow * " + std::to_string(TilePitch) +
                                      " + (col - n0)]"));
      }
      return llvm::Error::success();
    };
    if (TileV) {
      P.line("const " + Tn + " *const tile_s = reinterpret_cast<const " + Tn +
             " *>(solder_dyn_smem + " + std::to_string(TileOffset) + ");");
      P.line("if (tid < NTH)");
      P.line("  solder_bar_sync(3, NTH + 96);");
    }
    // Pass 1: the normalized value X (pre-norm results stored), kept in
    // the accumulator; 0 outside the matrix so it adds nothing.
    const Value *X = S.Norm->operand(0);
    if (auto E =
            ForElements("a = 0.f;", false, [&](const Coords &C) -> llvm::Error {
              if (auto E = RememberTile(C))
                return E;
              if (auto E = Product(C))
                return E;
              auto XV = VE.compute(X, C);
              if (!XV)
                return XV.takeError();
              P.line("const float xval = " + *XV + ";");
              VE.remember(X, C, "xval");
              if (auto E = StoreResults(C, false))
                return E;
              P.line("a = xval;");
              return llvm::Error::success();
            }))
      return E;
    bool Rms = S.Norm->kind() == OpKind::RMSNormalization;
    double Eps = S.Norm->attrs().getFloat("epsilon", 1e-5);
    // Prints `float Var` = Term(a) summed over this thread's columns of row
    // (mt, h), then over its quad (the row's columns in the warp).
    auto QuadRowSum = [&](const std::string &Var, const std::string &Term) {
      P.line("float " + Var + " = 0.f;");
      P.line("#pragma unroll");
      {
        auto L3 = P.scope("for (int nt = 0; nt < NT; ++nt)");
        P.line("#pragma unroll");
        auto L4 = P.scope("for (int e = 0; e < 2; ++e)");
        P.line("const float a = acc[mt][nt][h * 2 + e];");
        P.line("(void)a;");
        P.line("if (n0 + wn * TN + nt * 8 + tq * 2 + e < N) " + Var +
               " += " + Term + ";");
      }
      P.line(Var + " += __shfl_xor_sync(0xffffffffu, " + Var + ", 1);");
      P.line(Var + " += __shfl_xor_sync(0xffffffffu, " + Var + ", 2);");
    };
    assert((!GridNorm || Wgmma) && "the TMA loop is a wgmma loop");
    std::string MeanAt = "stat[0][lrow]", RstdAt = "stat[1][lrow]";
    std::string InvN = floatLiteral(1.0 / double(S.N));
    std::string EpsL = floatLiteral(Eps);
    // Combines the Blocks parts of a row (Load(k, r): part k of block r,
    // whose columns are n_r) into MeanDst and RstdDst. Each block's part is
    // (mean, centred sum of squares) of its own columns for LayerNorm (the
    // sum of squares for RMS norm), combined with Chan et al.'s M2 = sum
    // M2_b + n_b (mean_b - mean)^2: one exchange, as exact as two passes
    // over the whole row.
    auto Combine = [&](const std::string &Blocks,
                       llvm::function_ref<std::string(int, const char *)> Load,
                       const std::string &MeanDst, const std::string &RstdDst) {
      if (Rms) {
        P.line("float ss = 0.f;");
        P.line("#pragma unroll");
        P.line("for (int r = 0; r < " + Blocks +
               "; ++r) ss += " + Load(1, "r") + ";");
        P.line(RstdDst + " = rsqrtf(ss * " + InvN + " + " + EpsL + ");");
        return;
      }
      P.line("float mu[" + Blocks + "], mean = 0.f, m2 = 0.f;");
      P.line("#pragma unroll");
      {
        auto L = P.scope("for (int r = 0; r < " + Blocks + "; ++r)");
        P.line("mu[r] = " + Load(0, "r") + ";");
        P.line("mean += float(N - r * BN < BN ? N - r * BN : BN) * mu[r];");
      }
      P.line("mean *= " + InvN + ";");
      P.line("#pragma unroll");
      {
        auto L = P.scope("for (int r = 0; r < " + Blocks + "; ++r)");
        P.line("const float d = mu[r] - mean;");
        P.line("m2 += " + Load(1, "r") +
               " + float(N - r * BN < BN ? N - r * BN : BN) * d * d;");
      }
      P.line(MeanDst + " = mean;");
      P.line(RstdDst + " = rsqrtf(m2 * " + InvN + " + " + EpsL + ");");
    };
    if (GridNorm) {
      // With the wgmma loops a row's columns in this block are one warp's
      // (WN = 1): its quads reduce them with shuffles and publish the
      // block's part; after the consumers' barriers around the wait each
      // thread reads its rows' parts into registers.
      MeanAt = "smean[mt][h]";
      RstdAt = "srstd[mt][h]";
      std::string Tn = std::to_string(TilesN), Tm = std::to_string(TilesM);
      P.line("float smean[MT][2], srstd[MT][2];");
      P.line("const int nb = N - n0 < BN ? N - n0 : BN;");
      P.line("float2 *const xpart = reinterpret_cast<float2 *>(" +
             ScratchParam + " + " + std::to_string(CounterWords) + ");");
      P.line("constexpr long long MP = " + std::to_string(RowsPadded) + ";");
      auto Rows = [&](llvm::function_ref<void()> Body) {
        auto Consumers = P.scope("if (tid < NTH)");
        P.line("#pragma unroll");
        auto L1 = P.scope("for (int mt = 0; mt < MT; ++mt)");
        P.line("#pragma unroll");
        auto L2 = P.scope("for (int h = 0; h < 2; ++h)");
        P.line("const int lrow = wm * TM + mt * 16 + g + h * 8;");
        Body();
      };
      Rows([&] {
        if (Rms) {
          QuadRowSum("q", "a * a");
          P.line("const float mu = 0.f;");
        } else {
          QuadRowSum("s", "a");
          P.line("const float mu = s / nb;");
          QuadRowSum("q", "(a - mu) * (a - mu)");
        }
        P.line("if (tq == 0) xpart[" + NBlock +
               " * MP + m0 + lrow] = make_float2(mu, q);");
      });
      // The producers have left: the consumers' own barrier.
      P.line(ConsumerSync);
      {
        auto If = P.scope("if (tid == 0)");
        P.line("solder_rowgroup_wait(" + ScratchParam + " + " + MBlock + ", " +
               Tn + ");");
        P.line("solder_rowgroup_leave(" + ScratchParam + " + " + MBlock + ", " +
               ScratchParam + " + " + Tm + " + " + MBlock + ", " + Tn + ");");
      }
      P.line(ConsumerSync);
      // Every block of this row is resident: the next grid may launch.
      if (OwnWait)
        P.line("solder_launch_dependents();");
      Rows([&] {
        P.line("const long long prow = m0 + lrow;");
        P.line("float2 pr[" + Tn + "];");
        P.line("#pragma unroll");
        P.line("for (int r = 0; r < " + Tn +
               "; ++r) pr[r] = __ldcg(&xpart[r * MP + prow]);");
        Combine(
            Tn,
            [](int K, const char *R) {
              return std::string("pr[") + R + "]." + (K ? "y" : "x");
            },
            MeanAt, RstdAt);
      });
    } else {
      P.line("__shared__ float red[WN][BM], part[2][BM], stat[2][BM];");
      // Term(a) summed over this block's columns of each row (quad
      // shuffles, then across warps), into red.
      auto LocalSum = [&](const std::string &Term) {
        {
          std::optional<CudaPrinter::Scope> Consumers;
          if (Specialized && S.Norm)
            Consumers.emplace(P.scope("if (tid < NTH)"));
          P.line("#pragma unroll");
          auto L1 = P.scope("for (int mt = 0; mt < MT; ++mt)");
          P.line("#pragma unroll");
          auto L2 = P.scope("for (int h = 0; h < 2; ++h)");
          P.line("const int lrow = wm * TM + mt * 16 + g + h * 8;");
          QuadRowSum("s", Term);
          P.line("if (tq == 0) red[wn][lrow] = s;");
        }
        P.line("__syncthreads();");
      };
      auto RedTotal = [&]() {
        P.line("float t = 0.f;");
        P.line("#pragma unroll");
        P.line("for (int w = 0; w < WN; ++w) t += red[w][i];");
      };
      // Each block's part (Combine) in part[0] and part[1].
      P.line("const int nb = N - n0 < BN ? N - n0 : BN;");
      if (Rms) {
        LocalSum("a * a");
        auto L = P.scope("for (int i = tid; i < BM; i += NTH)");
        RedTotal();
        P.line("part[0][i] = 0.f;");
        P.line("part[1][i] = t;");
      } else {
        LocalSum("a");
        {
          auto L = P.scope("for (int i = tid; i < BM; i += NTH)");
          RedTotal();
          P.line("part[0][i] = t / nb;");
        }
        P.line("__syncthreads();");
        LocalSum("(a - part[0][lrow]) * (a - part[0][lrow])");
        auto L = P.scope("for (int i = tid; i < BM; i += NTH)");
        RedTotal();
        P.line("part[1][i] = t;");
      }
      P.line(Cluster > 1 ? "solder_cluster_sync();" : "__syncthreads();");
      {
        auto L = P.scope("for (int i = tid; i < BM; i += NTH)");
        Combine(
            std::to_string(Cluster),
            [&](int K, const char *R) {
              std::string Part = "part[" + std::to_string(K) + "][i]";
              return Cluster > 1 ? "solder_ld_cluster(&" + Part + ", " +
                                       std::string(R) + ")"
                                 : Part;
            },
            "stat[0][i]", "stat[1][i]");
      }
      P.line("__syncthreads();");
    }
    // Pass 2: normalize, the rest of the epilogue, store. Staged, the
    // tile goes to the stages (idle since the barriers above) first.
    if (Staged)
      DeclareStaged();
    if (auto E = ForElements("", true, [&](const Coords &C) -> llvm::Error {
          if (auto E = RememberTile(C))
            return E;
          VE.remember(X, C, "a");
          std::string Y = Rms ? "(a * " + RstdAt + ")"
                              : "((a - " + MeanAt + ") * " + RstdAt + ")";
          const Value *Scale = S.Norm->operand(1);
          auto SC = VE.broadcastCoords(*S.Norm, Scale, S.ResultDims, C);
          if (!SC)
            return SC.takeError();
          auto SV = VE.compute(Scale, *SC);
          if (!SV)
            return SV.takeError();
          Y = "(" + Y + " * " + *SV + ")";
          if (!Rms && S.Norm->numOperands() > 2 && S.Norm->operand(2)) {
            const Value *Bias = S.Norm->operand(2);
            auto BC = VE.broadcastCoords(*S.Norm, Bias, S.ResultDims, C);
            if (!BC)
              return BC.takeError();
            auto BV = VE.compute(Bias, *BC);
            if (!BV)
              return BV.takeError();
            Y = "(" + Y + " + " + *BV + ")";
          }
          P.line("const float yval = " + Y + ";");
          VE.remember(S.Norm->result(0), C, "yval");
          return StoreResults(C, true);
        }))
      return E;
    if (Staged) {
      // With GridNorm the producers have left; otherwise they stayed, and
      // every thread copies.
      P.line(GridNorm ? ConsumerSync : "__syncthreads();");
      if (auto E = CopyOut(GridNorm ? "NTH" : "blockDim.x"))
        return E;
    }
    // No block leaves while a peer may still read its shared memory.
    if (Cluster > 1)
      P.line("solder_cluster_sync();");
    return llvm::Error::success();
  }();
  if (Err)
    return std::move(Err);
  if (GridNorm)
    B.setCooperative();
  if (Persistent)
    B.setGrid({unsigned(std::min<int64_t>(Tiles, PersistentBlocks)), 1, 1},
              Threads);
  else if (RowsTogether)
    B.setGrid({TilesN, TilesM, 1}, Threads);
  else
    B.setGrid({TilesM, TilesN, unsigned(KSplit)}, Threads);
  B.setDynamicShared(SharedBytes);
  return B.finish();
}

} // namespace solder
