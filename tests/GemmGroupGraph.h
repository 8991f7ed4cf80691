//===- GemmGroupGraph.h - Matmul groups as IR text, for tests ---*- C++ -*-===//
//
// Shared by the GPU runtime tests and the emulator's: a matmul with each
// epilogue kind the generated GEMM takes, and forced variants of its loops.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TESTS_GEMMGROUPGRAPH_H
#define SOLDER_TESTS_GEMMGROUPGRAPH_H

#include "codegen/WgmmaGemm.h"
#include <algorithm>
#include <random>
#include <string>
#include <vector>

namespace solder {
namespace test {

/// Random values in [-1, 1) as IR constant text.
inline std::string randomValues(int64_t Count, unsigned Seed) {
  std::mt19937 Rng(Seed);
  std::string V;
  for (int64_t I = 0; I < Count; ++I)
    V += (I ? ", " : "") +
         std::to_string(std::uniform_real_distribution<double>(-1, 1)(Rng));
  return "[" + V + "]";
}

/// A matmul group for the generated GEMM: x [Lead..., M, K] times constant
/// weights w ([K, N], or [N, K] through Gemm with transB, alpha and a C
/// bias), then Epi: "bias", "gelu" (bias + Gelu), "ln" (bias + residual +
/// LayerNorm), "rms" (residual + RMSNormalization), "heads" (bias, x given
/// as [M, 4, K / 4] and merged by a Reshape, as attention's heads are:
/// a contiguous view), "xt" (bias, x given as [K, M] and transposed: a
/// strided view the library reads as it is). The weights are a
/// random block of 24 rows (columns for transB) tiled along K, which
/// constant folding turns into one constant, as exports have them.
inline std::string gemmGroupGraph(const std::string &T, int64_t Lead, int64_t M,
                                  int64_t N, int64_t K, const std::string &Epi,
                                  bool TransB) {
  auto S = [](int64_t V) { return std::to_string(V); };
  std::string XD = Lead ? "[" + S(Lead) + "," + S(M) + "," + S(K) + "]"
                        : "[" + S(M) + "," + S(K) + "]";
  std::string YD = Lead ? "[" + S(Lead) + "," + S(M) + "," + S(N) + "]"
                        : "[" + S(M) + "," + S(N) + "]";
  // 24 rows: the period is no multiple of the tensor cores' 16 of K, so a
  // kernel reading the wrong 16 rows of B cannot pass.
  int64_t Block = std::min<int64_t>(K, 24), Reps = (K + Block - 1) / Block;
  std::string G = "graph \"g\" opset 23 {\n";
  if (Epi == "heads") {
    G += "  input %xh : " + T + "[" + S(M) + ",4," + S(K / 4) + "]\n";
    G += "  const %xs : i64[2] = [" + S(M) + ", " + S(K) + "]\n";
  } else if (Epi == "xt") {
    G += "  input %xh : " + T + "[" + S(K) + "," + S(M) + "]\n";
  } else {
    G += "  input %x : " + T + XD + "\n";
  }
  G += "  input %r : " + T + YD + "\n";
  G += "  input %gamma : " + T + "[" + S(N) + "]\n";
  G += "  input %beta : " + T + "[" + S(N) + "]\n";
  G += "  const %b : " + T + "[" + S(N) + "] = " + randomValues(N, 2) + "\n";
  if (TransB) {
    G += "  const %w0 : " + T + "[" + S(N) + "," + S(Block) +
         "] = " + randomValues(N * Block, 1) + "\n";
    G += "  const %reps : i64[2] = [1, " + S(Reps) + "]\n";
    G += "  const %st : i64[1] = [0]\n  const %en : i64[1] = [" + S(K) +
         "]\n  const %ax : i64[1] = [1]\n";
    G += "  %wt = Tile(%w0, %reps) : " + T + "[" + S(N) + "," +
         S(Block * Reps) + "] @\"tile\"\n";
    G += "  %w = Slice(%wt, %st, %en, %ax) : " + T + "[" + S(N) + "," + S(K) +
         "] @\"slice\"\n";
  } else {
    G += "  const %w0 : " + T + "[" + S(Block) + "," + S(N) +
         "] = " + randomValues(Block * N, 1) + "\n";
    G += "  const %reps : i64[2] = [" + S(Reps) + ", 1]\n";
    G += "  const %st : i64[1] = [0]\n  const %en : i64[1] = [" + S(K) +
         "]\n  const %ax : i64[1] = [0]\n";
    G += "  %wt = Tile(%w0, %reps) : " + T + "[" + S(Block * Reps) + "," +
         S(N) + "] @\"tile\"\n";
    G += "  %w = Slice(%wt, %st, %en, %ax) : " + T + "[" + S(K) + "," + S(N) +
         "] @\"slice\"\n";
  }
  if (Epi == "heads") {
    G += "  %x = Reshape(%xh, %xs) : " + T + XD + " @\"merge\"\n";
  } else if (Epi == "xt") {
    G += "  %x = Transpose(%xh) {perm = [1, 0]} : " + T + XD + " @\"swap\"\n";
  }
  std::string Y = "%m";
  if (TransB)
    G += "  %m = Gemm(%x, %w, %b) {alpha = 0.5, transB = 1} : " + T + YD +
         " @\"gemm\"\n";
  else
    G += "  %m = MatMul(%x, %w) : " + T + YD + " @\"mm\"\n";
  if (!TransB && Epi != "rms") {
    G += "  %mb = Add(%m, %b) : " + T + YD + " @\"bias\"\n";
    Y = "%mb";
  }
  if (Epi == "gelu") {
    G += "  %y = Gelu(" + Y + ") : " + T + YD + " @\"gelu\"\n";
    Y = "%y";
  } else if (Epi == "ln" || Epi == "rms") {
    G += "  %s = Add(" + Y + ", %r) : " + T + YD + " @\"res\"\n";
    if (Epi == "ln")
      G += "  %y = LayerNormalization(%s, %gamma, %beta) {axis = -1, "
           "epsilon = 1e-05} : " +
           T + YD + " @\"ln\"\n";
    else
      G += "  %y = RMSNormalization(%s, %gamma) {axis = -1, epsilon = "
           "1e-05} : " +
           T + YD + " @\"rms\"\n";
    Y = "%y";
  }
  // Every input is used (the residual only by the normalizing cases).
  G += "  %keep = Add(%gamma, %beta) : " + T + "[" + S(N) + "] @\"keep\"\n";
  G += "  output " + Y + "\n  output %keep\n";
  if (Epi != "ln" && Epi != "rms")
    G += "  %rr = Relu(%r) : " + T + YD + " @\"rr\"\n  output %rr\n";
  G += "}\n";
  return G;
}

/// A forced variant of the generated GEMM: the group, and the main loop.
/// The wgmma loop with a tile ({0, 0, 0}: the one chooseWgmmaTile picks):
/// one and several steps of K, K not a multiple of 64, M and N edges, one
/// to four warpgroups (three: copies not a multiple of the threads), B as
/// [K, N] (N-major) and as [N, K] (Gemm transB, any multiple of 8
/// columns), LayerNorm and RMS norm over clusters of 1 to 8 blocks. The
/// mma.sync loop with K split over a cluster of 2 to 8 blocks: K a
/// multiple of the split and not, splits left with no step of K (K = 256
/// over 8), M and N edges, B either way, batched A. The warp-specialized
/// wgmma loop: one to many steps of K (fewer than the producers' lag of
/// 2, K not a multiple of 64), edges, B either way, one and two consumer
/// warpgroups; with its TMA producer and with K split over a cluster of 2
/// to 4 (a split left with no step of K, B either way, both producers);
/// persistent, walking up to 3 tiles a block, edges, B either way; 256
/// wide (consumers taking the producers' registers), persistent too; the
/// epilogue through shared memory, persistent (up to 4 tiles a block) and
/// not, B either way; TMA under LayerNorm and RMS norm (producers staying
/// for the cluster's barriers), edges, B either way, staged; and with the
/// row statistics through global memory among a cooperative launch's
/// blocks (2 to 8 a row, edges, B either way, staged, RMS norm). B
/// multicast over clusters of two blocks: K not a multiple of 64, B either
/// way, staged, persistent (64 wide with N edges, 256 wide), and under the
/// row statistics through global memory.
struct GemmVariantCase {
  int64_t Lead, M, N, K;
  const char *Epi;
  bool TransB;
  codegen::GemmVariant V;
  std::string name() const {
    return V.Wgmma
               ? std::string(V.Tma           ? "TMA "
                             : V.Specialized ? "warp-specialized "
                                             : "") +
                     "wgmma tile " + std::to_string(V.Tile.BM) + "x" +
                     std::to_string(V.Tile.BN) +
                     (V.KSplit ? ", K split " + std::to_string(V.KSplit) : "") +
                     (V.Persistent ? ", persistent" : "") +
                     (V.StagedEpilogue ? ", staged epilogue" : "") +
                     (V.GridNorm ? ", row statistics through global memory"
                                 : "") +
                     (V.Multicast ? ", B multicast" : "") +
                     (V.RowsTogether ? ", a row's blocks launched together"
                                     : "")
               : "mma.sync, K split " + std::to_string(V.KSplit);
  }
};

inline const std::vector<GemmVariantCase> &gemmVariantCases() {
  auto W = [](int BM, int BN, int Stages) {
    codegen::GemmVariant V;
    V.Wgmma = true;
    V.Tile = {BM, BN, Stages};
    return V;
  };
  auto Ws = [](int BM, int BN, int Stages) {
    codegen::GemmVariant V;
    V.Wgmma = true;
    V.Specialized = true;
    V.Tile = {BM, BN, Stages};
    return V;
  };
  auto Split = [](int KSplit) {
    codegen::GemmVariant V;
    V.KSplit = KSplit;
    return V;
  };
  auto WsSplit = [&](int BM, int BN, int Stages, int KSplit, bool Tma) {
    codegen::GemmVariant V = Ws(BM, BN, Stages);
    V.Tma = Tma;
    V.KSplit = KSplit;
    return V;
  };
  auto Persistent = [&](int BM, int BN, int Stages) {
    codegen::GemmVariant V = WsSplit(BM, BN, Stages, 0, true);
    V.Persistent = true;
    return V;
  };
  auto Staged = [](codegen::GemmVariant V) {
    V.StagedEpilogue = true;
    return V;
  };
  auto Grid = [](codegen::GemmVariant V) {
    V.GridNorm = true;
    return V;
  };
  auto Mc = [](codegen::GemmVariant V) {
    V.Multicast = true;
    return V;
  };
  auto Rows = [](codegen::GemmVariant V) {
    V.RowsTogether = true;
    return V;
  };
  static const std::vector<GemmVariantCase> Cases = {
      {0, 128, 128, 64, "bias", false, W(64, 64, 4)},
      {0, 200, 320, 200, "gelu", false, W(128, 128, 4)},
      {0, 200, 320, 200, "gelu", false, W(192, 128, 5)},
      {1, 128, 768, 768, "ln", false, W(0, 0, 0)},
      {0, 512, 768, 3072, "ln", false, W(128, 192, 5)},
      {0, 512, 768, 768, "ln", false, W(64, 128, 6)},
      {0, 33, 1000, 64, "ln", false, W(0, 0, 0)},
      {0, 256, 2304, 768, "bias", false, W(128, 256, 4)},
      {0, 256, 3072, 768, "gelu", false, W(256, 128, 4)},
      {0, 600, 384, 96, "bias", false, W(0, 0, 0)},
      {2, 7, 256, 64, "rms", false, W(0, 0, 0)},
      {0, 1, 64, 8, "bias", false, W(0, 0, 0)},
      {0, 64, 96, 72, "gelu", true, W(64, 96, 4)},
      {0, 100, 512, 136, "ln", true, W(0, 0, 0)},
      {0, 300, 136, 64, "rms", true, W(192, 64, 5)},
      {0, 64, 256, 1024, "bias", false, Split(4)},
      {0, 50, 200, 520, "gelu", false, Split(2)},
      {0, 33, 128, 256, "gelu", true, Split(8)},
      {2, 20, 192, 512, "gelu", false, Split(0)},
      {0, 200, 320, 200, "gelu", false, Ws(128, 128, 4)},
      {0, 256, 2304, 768, "bias", false, Ws(128, 192, 5)},
      {0, 64, 96, 72, "gelu", true, Ws(64, 96, 4)},
      {0, 600, 384, 96, "bias", false, Ws(128, 128, 4)},
      {0, 1, 64, 8, "bias", false, Ws(64, 64, 4)},
      {1, 130, 256, 1000, "gelu", false, Ws(64, 128, 6)},
      {0, 128, 768, 3072, "bias", false, WsSplit(64, 64, 6, 4, true)},
      {0, 200, 320, 200, "gelu", false, WsSplit(64, 64, 4, 3, true)},
      {0, 64, 96, 72, "gelu", true, WsSplit(64, 96, 4, 2, true)},
      {0, 130, 256, 1000, "gelu", false, WsSplit(64, 128, 6, 2, true)},
      {0, 128, 768, 768, "bias", false, WsSplit(64, 64, 6, 2, false)},
      {0, 2100, 520, 136, "gelu", false, Persistent(64, 64, 4)},
      {0, 1500, 1000, 64, "gelu", true, Persistent(64, 64, 4)},
      {0, 300, 520, 200, "gelu", false, WsSplit(128, 256, 4, 0, true)},
      {0, 256, 512, 136, "gelu", true, WsSplit(128, 256, 4, 0, true)},
      {0, 4200, 1104, 64, "bias", false, Persistent(128, 256, 4)},
      {0, 2048, 1024, 136, "gelu", false, Staged(Persistent(64, 64, 4))},
      {0, 256, 384, 200, "gelu", false, Staged(WsSplit(128, 192, 5, 1, true))},
      {0, 512, 512, 72, "gelu", true, Staged(Persistent(128, 128, 4))},
      {1, 128, 768, 768, "ln", false, WsSplit(64, 128, 6, 0, true)},
      {0, 512, 768, 3072, "ln", false, WsSplit(128, 192, 5, 0, true)},
      {0, 33, 1000, 64, "ln", false, WsSplit(64, 128, 4, 0, true)},
      {2, 7, 256, 64, "rms", false, WsSplit(64, 64, 4, 0, true)},
      {0, 100, 512, 136, "ln", true, WsSplit(64, 128, 4, 0, true)},
      {0, 512, 768, 3072, "ln", false, Staged(WsSplit(128, 192, 3, 0, true))},
      {0, 256, 512, 136, "rms", true, Staged(WsSplit(64, 128, 4, 0, true))},
      {0, 256, 768, 200, "ln", false, Staged(WsSplit(128, 256, 4, 0, true))},
      {0, 200, 320, 200, "gelu", false, Persistent(128, 128, 4)},
      {0, 128, 768, 768, "heads", false, WsSplit(64, 64, 6, 0, true)},
      {1, 128, 768, 768, "ln", false, Grid(WsSplit(64, 128, 6, 0, true))},
      {0, 512, 768, 3072, "ln", false,
       Grid(Staged(WsSplit(128, 192, 5, 0, true)))},
      {0, 33, 1000, 64, "ln", false, Grid(WsSplit(64, 128, 4, 0, true))},
      {0, 100, 512, 136, "ln", true, Grid(WsSplit(64, 256, 4, 0, true))},
      {0, 256, 512, 136, "rms", true,
       Grid(Staged(WsSplit(64, 128, 4, 0, true)))},
      {0, 192, 256, 128, "heads", false, W(64, 64, 4)},
      // B multicast over clusters of two (an even number of row tiles).
      {0, 256, 384, 200, "gelu", false,
       Mc(Staged(WsSplit(128, 192, 5, 1, true)))},
      {0, 256, 512, 136, "gelu", true, Mc(WsSplit(64, 128, 4, 0, true))},
      {0, 2048, 520, 136, "gelu", false, Mc(Persistent(64, 64, 4))},
      {0, 4096, 1104, 64, "bias", false, Mc(Persistent(128, 256, 4))},
      {0, 512, 768, 3072, "ln", false,
       Mc(Grid(Staged(WsSplit(128, 192, 5, 0, true))))},
      {0, 256, 512, 136, "rms", true,
       Mc(Grid(Staged(WsSplit(64, 128, 4, 0, true))))},
      // A row's blocks launched one after another (column tiles along x).
      {1, 128, 768, 768, "ln", false, Rows(Grid(WsSplit(64, 128, 6, 0, true)))},
      {0, 33, 1000, 64, "ln", false, Rows(Grid(WsSplit(64, 128, 4, 0, true)))},
      {0, 512, 768, 3072, "ln", false,
       Rows(Mc(Grid(Staged(WsSplit(128, 192, 5, 0, true)))))},
      {0, 256, 512, 136, "rms", true,
       Rows(Grid(Staged(WsSplit(64, 128, 4, 0, true))))},
  };
  return Cases;
}

} // namespace test
} // namespace solder

#endif
