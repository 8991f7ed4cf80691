//===- gemm_lab.cpp - The generated GEMM's loops, checked and timed -------===//
//
// A developer's bench for codegen/GemmEmitter.cpp and WgmmaGemm.cpp on the
// GPU machine: emits forced variants of the generated GEMM (the mma.sync
// loop with K split as chosen and over 1 to 8 blocks at 128 rows; the
// wgmma loop with the chosen tile and explicit tiles, the TMA loop also
// with K split over 1 to 6 blocks at 128 rows, and persistent) for small
// layout probes (odd edges, transB, a LayerNorm over a cluster with a
// partial block) and for the BERT-base fp16 shapes (M = 4096 and 128; N x K
// = 768x768, 2304x768, 3072x768, 768x3072; x W + b, and LayerNorm(x W + b +
// r) for N = 768), checks each launch against a naive fp32 kernel on the
// GPU (output poisoned with NaN first; on a mismatch it prints where the
// wrong values sit in the reference, which names a layout error) and times
// back-to-back launches (median of 5 x 100, CUDA events). The first probe
// also runs each wgmma variant with B's LBO and SBO swapped ("swapB"),
// which must come out wrong if the descriptors are right.
//
// Kernels compile with NVRTC wherever it is (no GPU needed), into --cache,
// so the GPU machine only loads them:
//   cmake --build build --target solder_gemm_lab
//   build/bench/solder_gemm_lab --compile-only --cache build/gemm-lab-cache
//   # there, with the build carried:
//   build/bench/solder_gemm_lab --cache build/gemm-lab-cache
// Options: --filter "gemm 4096x768x768", --variant "wgmma-tma 128x192 s5"
// (one variant by its exact name, e.g. under ncu), --iters N, --dump DIR
// (sources and cubins, for cuobjdump -sass | grep HGMMA), --compile-only.
//
// It links the CUDA driver (libcuda) directly, unlike solder itself, so it
// is built only when asked for and runs only where a driver is.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelEmitter.h"
#include "codegen/NvrtcCompiler.h"
#include "codegen/WgmmaGemm.h"
#include "ir/FusedGroup.h"
#include "ir/Parser.h"
#include "passes/Pipeline.h"
#include "llvm/Support/FileSystem.h"
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <map>
#include <string>
#include <vector>

using namespace solder;
using namespace solder::codegen;

static void check(cudaError_t R, const char *What, int Line) {
  if (R != cudaSuccess) {
    std::fprintf(stderr, "CUDA error %d (%s) at %s line %d\n", int(R),
                 cudaGetErrorString(R), What, Line);
    std::exit(3);
  }
}
#define CK(x) check((x), #x, __LINE__)

static const char *SupportSrc = R"(
#include <cuda_fp16.h>
__device__ unsigned hash(unsigned x) {
  x ^= x >> 16; x *= 0x7feb352dU; x ^= x >> 15; x *= 0x846ca68bU; x ^= x >> 16; return x;
}
extern "C" __global__ void fill(__half *p, long long n, unsigned seed, float scale) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    unsigned h = hash((unsigned)i * 2654435761u + seed * 97u + 12345u);
    float u = (h & 0xFFFFFF) / float(0x1000000) * 2.f - 1.f;
    p[i] = __float2half(u * scale);
  }
}
extern "C" __global__ void poison(__half *p, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    p[i] = __ushort_as_half(0x7e00);
}
// y[m][n] = sum_k x[m][k] w[k][n] (+ b[n]); transB: w is [N, K].
extern "C" __global__ void ref_gemm(const __half *x, const __half *w, const __half *b, float *y, int M, int N, int K, int transB) {
  int n = blockIdx.x * blockDim.x + threadIdx.x, m = blockIdx.y;
  if (n >= N) return;
  float s = 0.f;
  for (int k = 0; k < K; ++k)
    s += __half2float(x[(long long)m * K + k]) * __half2float(transB ? w[(long long)n * K + k] : w[(long long)k * N + n]);
  if (b) s += __half2float(b[n]);
  if (transB) s = fmaxf(s, 0.f);
  y[(long long)m * N + n] = s;
}
// z = LayerNorm(y + r) over rows of N, in place on y. One thread per row.
extern "C" __global__ void ref_ln(float *y, const __half *r, const __half *gamma, const __half *beta, int M, int N, float eps) {
  int m = blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= M) return;
  float *row = y + (long long)m * N;
  double s = 0;
  for (int n = 0; n < N; ++n) { row[n] += __half2float(r[(long long)m * N + n]); s += row[n]; }
  float mean = float(s / N);
  double q = 0;
  for (int n = 0; n < N; ++n) q += double(row[n] - mean) * (row[n] - mean);
  float inv = rsqrtf(float(q / N) + eps);
  for (int n = 0; n < N; ++n) row[n] = (row[n] - mean) * inv * __half2float(gamma[n]) + __half2float(beta[n]);
}
// res[0] = max |out - ref| (inf on NaN), res[1] = max |ref|.
extern "C" __global__ void maxdiff(const __half *out, const float *ref, long long n, float *res) {
  float d = 0.f, a = 0.f;
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    float o = __half2float(out[i]);
    float e = fabsf(o - ref[i]);
    if (!(e == e)) e = 1e30f;
    d = fmaxf(d, e);
    a = fmaxf(a, fabsf(ref[i]));
  }
  atomicMax((int *)&res[0], __float_as_int(d));
  atomicMax((int *)&res[1], __float_as_int(a));
}
)";

static float labHalfToFloat(uint16_t H) {
  uint32_t S = (H >> 15) & 1, E = (H >> 10) & 31, M = H & 1023;
  float V;
  if (E == 0)
    V = std::ldexp(float(M), -24);
  else if (E == 31)
    V = M ? NAN : INFINITY;
  else
    V = std::ldexp(float(M | 1024), int(E) - 25);
  return S ? -V : V;
}

struct Config {
  std::string Kind; // gemm | ln | gemmT
  int64_t M, N, K;
  std::vector<GemmVariant> Variants;
  bool SwapProbe = false; // also each wgmma variant with B's LBO/SBO swapped
};

static std::string graphText(const Config &C) {
  auto S = [](int64_t V) { return std::to_string(V); };
  std::string MN = "[" + S(C.M) + "," + S(C.N) + "]";
  std::string T = "graph \"g\" opset 23 {\n  input %x : f16[" + S(C.M) + "," +
                  S(C.K) + "]\n";
  if (C.Kind == "gemmT")
    T += "  input %w : f16[" + S(C.N) + "," + S(C.K) + "]\n";
  else
    T += "  input %w : f16[" + S(C.K) + "," + S(C.N) + "]\n";
  T += "  input %b : f16[" + S(C.N) + "]\n";
  if (C.Kind == "ln")
    T += "  input %r : f16" + MN + "\n  input %gamma : f16[" + S(C.N) +
         "]\n  input %beta : f16[" + S(C.N) + "]\n";
  if (C.Kind == "gemmT")
    T += "  %g = Gemm(%x, %w, %b) {transB = 1} : f16" + MN +
         " @\"gemm\"\n  %y = Relu(%g) : f16" + MN + " @\"relu\"\n";
  else {
    T += "  %m = MatMul(%x, %w) : f16" + MN + " @\"mm\"\n";
    T += std::string(C.Kind == "ln" ? "  %mb" : "  %y") +
         " = Add(%m, %b) : f16" + MN + " @\"bias\"\n";
  }
  if (C.Kind == "ln") {
    T += "  %s = Add(%mb, %r) : f16" + MN + " @\"res\"\n";
    T += "  %y = LayerNormalization(%s, %gamma, %beta) {axis = -1, epsilon = "
         "1e-12} : f16" +
         MN + " @\"ln\"\n";
  }
  T += "  output %y\n}\n";
  return T;
}

static std::string variantName(const GemmVariant &V) {
  if (!V.Wgmma)
    return V.KSplit ? "mma.sync split " + std::to_string(V.KSplit)
                    : "mma.sync auto";
  if (!V.Tile.BM)
    return "wgmma auto";
  return std::string(V.Tma           ? "wgmma-tma "
                     : V.Specialized ? "wgmma-ws "
                                     : "wgmma ") +
         std::to_string(V.Tile.BM) + "x" + std::to_string(V.Tile.BN) + " s" +
         std::to_string(V.Tile.Stages) +
         (V.KSplit ? " split " + std::to_string(V.KSplit) : "") +
         (V.Persistent ? " persistent" : "") +
         (V.StagedEpilogue ? " staged" : "") + (V.GridNorm ? " grid" : "") +
         (V.Multicast ? " mc" : "") + (V.RowsTogether ? " rows" : "");
}

int main(int argc, char **argv) {
  bool CompileOnly = false;
  std::string Cache = "lab-cache", Filter, Dump, Only;
  int Iters = 100;
  for (int I = 1; I < argc; ++I) {
    std::string A = argv[I];
    if (A == "--compile-only")
      CompileOnly = true;
    else if (A == "--cache" && I + 1 < argc)
      Cache = argv[++I];
    else if (A == "--filter" && I + 1 < argc)
      Filter = argv[++I];
    else if (A == "--variant" && I + 1 < argc)
      Only = argv[++I];
    else if (A == "--dump" && I + 1 < argc)
      Dump = argv[++I];
    else if (A == "--iters" && I + 1 < argc)
      Iters = std::atoi(argv[++I]);
  }
  auto W = [](int BM, int BN, int S) {
    GemmVariant V;
    V.Wgmma = true;
    V.Tile = {BM, BN, S};
    return V;
  };
  GemmVariant Mma, Auto;
  Auto.Wgmma = true;
  auto Ws = [](int BM, int BN, int S) {
    GemmVariant V;
    V.Wgmma = true;
    V.Specialized = true;
    V.Tile = {BM, BN, S};
    return V;
  };
  auto Tma = [](int BM, int BN, int S) {
    GemmVariant V;
    V.Wgmma = true;
    V.Tma = true;
    V.Tile = {BM, BN, S};
    return V;
  };
  auto TmaPersistent = [&](int BM, int BN, int S) {
    GemmVariant V = Tma(BM, BN, S);
    V.Persistent = true;
    return V;
  };
  auto Staged = [](GemmVariant V) {
    V.StagedEpilogue = true;
    if (!V.KSplit)
      V.KSplit = 1;
    return V;
  };
  // Row statistics through global memory (a cooperative launch).
  auto Grid = [](GemmVariant V) {
    V.GridNorm = true;
    if (!V.KSplit)
      V.KSplit = 1;
    return V;
  };
  // B multicast over clusters of two blocks along M.
  auto Mc = [](GemmVariant V) {
    V.Multicast = true;
    if (!V.KSplit)
      V.KSplit = 1;
    return V;
  };
  auto Rt = [](GemmVariant V) {
    V.RowsTogether = true;
    return V;
  };
  auto TmaSplit = [&](int BM, int BN, int S, int KSplit) {
    GemmVariant V = Tma(BM, BN, S);
    V.KSplit = KSplit;
    return V;
  };
  auto Split = [](int KSplit) {
    GemmVariant V;
    V.KSplit = KSplit;
    return V;
  };
  std::vector<GemmVariant> Big = {Mma,
                                  Auto,
                                  W(128, 128, 6),
                                  W(192, 128, 5),
                                  W(128, 192, 5),
                                  W(128, 256, 4),
                                  W(256, 128, 4),
                                  W(192, 128, 4),
                                  W(128, 128, 4),
                                  Ws(128, 128, 6),
                                  Ws(128, 192, 5),
                                  Ws(128, 128, 4),
                                  Ws(64, 192, 6),
                                  Ws(64, 128, 6),
                                  Tma(128, 192, 5),
                                  TmaPersistent(128, 192, 5),
                                  TmaPersistent(128, 192, 4),
                                  Staged(TmaPersistent(128, 192, 5)),
                                  Staged(Tma(128, 192, 5)),
                                  Staged(TmaPersistent(128, 128, 6)),
                                  TmaPersistent(128, 128, 6),
                                  TmaPersistent(128, 128, 4),
                                  TmaPersistent(64, 192, 6),
                                  Tma(128, 256, 4),
                                  TmaPersistent(128, 256, 4),
                                  TmaPersistent(128, 256, 3),
                                  Tma(128, 192, 4),
                                  Tma(128, 128, 6),
                                  Tma(128, 128, 4),
                                  Tma(128, 128, 3),
                                  Tma(64, 128, 3),
                                  Tma(64, 192, 4),
                                  Tma(64, 192, 6),
                                  Mc(Staged(Tma(128, 192, 5))),
                                  Mc(Staged(TmaPersistent(128, 192, 5))),
                                  Mc(Staged(TmaPersistent(128, 128, 6))),
                                  Mc(TmaPersistent(128, 256, 4)),
                                  Mc(Staged(Tma(128, 256, 4)))};
  std::vector<GemmVariant> Small = {Mma,
                                    Split(1),
                                    Split(2),
                                    Split(4),
                                    Split(8),
                                    Auto,
                                    W(64, 64, 6),
                                    W(64, 128, 6),
                                    W(128, 64, 6),
                                    W(64, 192, 6),
                                    W(128, 128, 6),
                                    W(64, 256, 4),
                                    Ws(128, 64, 6),
                                    Ws(64, 64, 6),
                                    Ws(64, 128, 6),
                                    Tma(128, 64, 6),
                                    TmaSplit(64, 64, 6, 1),
                                    Staged(TmaSplit(64, 64, 6, 1)),
                                    TmaSplit(64, 64, 6, 2),
                                    TmaSplit(64, 64, 6, 3),
                                    TmaSplit(64, 64, 6, 4),
                                    TmaSplit(64, 64, 6, 6),
                                    TmaSplit(64, 64, 4, 4),
                                    TmaSplit(128, 64, 6, 2),
                                    TmaSplit(128, 64, 6, 4),
                                    TmaSplit(64, 128, 6, 2),
                                    TmaSplit(64, 128, 6, 4),
                                    Tma(64, 128, 6),
                                    Mc(Staged(TmaSplit(64, 64, 6, 1))),
                                    Mc(TmaSplit(64, 128, 6, 1))};
  std::vector<GemmVariant> LnBig = {Mma,
                                    Auto,
                                    W(128, 128, 6),
                                    W(192, 128, 5),
                                    W(128, 192, 5),
                                    W(128, 256, 4),
                                    W(64, 128, 6),
                                    W(64, 192, 6),
                                    W(64, 256, 4),
                                    Tma(128, 192, 5),
                                    Tma(128, 192, 3),
                                    Tma(128, 128, 6),
                                    Tma(128, 128, 3),
                                    Tma(64, 192, 6),
                                    Tma(64, 192, 3),
                                    Tma(64, 128, 3),
                                    Staged(Tma(128, 128, 3)),
                                    Staged(Tma(64, 192, 3)),
                                    Staged(Tma(128, 128, 6)),
                                    Staged(Tma(128, 256, 4)),
                                    Staged(Tma(64, 256, 4)),
                                    Staged(Tma(64, 256, 3)),
                                    Grid(Tma(128, 192, 5)),
                                    Grid(Staged(Tma(128, 192, 5))),
                                    Grid(Staged(Tma(128, 192, 4))),
                                    Grid(Staged(Tma(128, 256, 4))),
                                    Grid(Staged(Tma(128, 256, 3))),
                                    Grid(Staged(Tma(128, 128, 6))),
                                    Mc(Grid(Staged(Tma(128, 192, 5)))),
                                    Mc(Grid(Staged(Tma(128, 256, 4)))),
                                    Rt(Grid(Staged(Tma(128, 192, 5)))),
                                    Rt(Grid(Staged(Tma(128, 192, 4)))),
                                    Rt(Grid(Staged(Tma(128, 256, 4)))),
                                    Rt(Mc(Grid(Staged(Tma(128, 192, 5)))))};
  std::vector<GemmVariant> LnSmall = {Mma,
                                      Auto,
                                      W(64, 128, 6),
                                      W(64, 192, 6),
                                      W(64, 256, 4),
                                      W(128, 128, 6),
                                      W(128, 256, 4),
                                      Tma(64, 128, 6),
                                      Tma(64, 192, 6),
                                      Tma(128, 192, 5),
                                      Grid(Tma(64, 64, 6)),
                                      Grid(Staged(Tma(64, 64, 6))),
                                      Grid(Staged(Tma(64, 128, 6))),
                                      Grid(Staged(Tma(64, 192, 6))),
                                      Grid(Staged(Tma(128, 192, 5))),
                                      Grid(Staged(Tma(128, 128, 6))),
                                      Mc(Grid(Staged(Tma(64, 64, 6)))),
                                      Rt(Grid(Staged(Tma(64, 64, 6)))),
                                      Rt(Grid(Staged(Tma(64, 128, 6))))};
  std::vector<Config> Configs = {
      // Layout checks first: small, odd edges.
      {"gemm", 128, 128, 64, {Auto, W(64, 64, 4)}},
      {"gemmT", 128, 128, 64, {Auto, W(64, 64, 4)}},
      {"gemm",
       200,
       320,
       200,
       {Auto, W(128, 128, 4), W(192, 128, 5), Ws(128, 128, 4), Tma(128, 128, 4),
        TmaSplit(128, 128, 4, 2), TmaSplit(64, 64, 4, 3),
        TmaPersistent(64, 64, 4)},
       true},
      {"gemmT",
       200,
       104,
       200,
       {Auto, W(64, 104, 4), W(128, 128, 4), Tma(64, 104, 4),
        TmaSplit(64, 104, 4, 2)}},
      {"ln",
       200,
       1000,
       136,
       {Auto, W(128, 128, 4), W(64, 256, 4), Tma(64, 128, 4),
        Grid(Tma(64, 128, 4)), Grid(Tma(128, 256, 3))}},
  };
  for (int64_t M : {4096, 128})
    for (auto [N, K] : {std::pair<int64_t, int64_t>{768, 768},
                        {2304, 768},
                        {3072, 768},
                        {768, 3072}}) {
      Configs.push_back({"gemm", M, N, K, M > 128 ? Big : Small});
      if (N == 768)
        Configs.push_back({"ln", M, N, K, M > 128 ? LnBig : LnSmall});
    }

  // Emit everything.
  struct Item {
    const Config *C;
    GemmVariant V;
    GeneratedKernel K;
    std::string Error;
    std::string Note;
  };
  std::vector<std::unique_ptr<Graph>> Graphs;
  std::vector<Item> Items;
  for (const Config &C : Configs) {
    std::string Label = C.Kind + " " + std::to_string(C.M) + "x" +
                        std::to_string(C.N) + "x" + std::to_string(C.K);
    if (!Filter.empty() && Label.find(Filter) == std::string::npos)
      continue;
    auto G = parseGraph(graphText(C));
    if (!G) {
      std::fprintf(stderr, "parse: %s\n",
                   llvm::toString(G.takeError()).c_str());
      return 2;
    }
    PipelineOptions PO;
    PO.TargetGpu = true;
    PO.Prec = Precision::F16;
    if (auto E = runPipeline(**G, PO)) {
      std::fprintf(stderr, "pipeline: %s\n",
                   llvm::toString(std::move(E)).c_str());
      return 2;
    }
    const Node *Group = nullptr;
    for (const auto &N : (*G)->nodes())
      if (isFusedGroup(*N) && groupInfo(*N).Kind == GroupKind::Contraction)
        Group = N.get();
    if (!Group) {
      std::fprintf(stderr, "no contraction group for %s\n", Label.c_str());
      return 2;
    }
    for (const GemmVariant &V : C.Variants) {
      if (!Only.empty() && variantName(V) != Only)
        continue;
      CodegenOptions O;
      O.SmVersion = 90;
      KernelNamer Names(**G);
      auto K = emitGeneratedGemmVariant(*Group, O, Names, &V);
      Item It{&C, V, {}, "", ""};
      if (!K)
        It.Error = llvm::toString(K.takeError());
      else
        It.K = std::move(*K);
      // (Not the persistent loop: there the swapped stride reads past the
      // shared memory, a fault that would end the run.)
      if (C.SwapProbe && V.Wgmma && !V.Persistent && It.Error.empty()) {
        Item Sw = It;
        std::string From = "solder_wgmma_desc(bs_u, 8192, 1024)";
        size_t At = Sw.K.Source.find(From);
        if (At != std::string::npos) {
          Sw.K.Source.replace(At, From.size(),
                              "solder_wgmma_desc(bs_u, 1024, 8192)");
          Sw.Note = " swapB";
          Items.push_back(std::move(It));
          Items.push_back(std::move(Sw));
          continue;
        }
      }
      Items.push_back(std::move(It));
    }
    Graphs.push_back(std::move(*G));
  }
  std::vector<GeneratedKernel> ToCompile;
  GeneratedKernel Support;
  Support.Name = "lab_support";
  Support.Source = SupportSrc;
  ToCompile.push_back(Support);
  for (const Item &It : Items)
    if (It.Error.empty())
      ToCompile.push_back(It.K);
  NvrtcOptions NO;
  NO.Arch = "sm_90";
  NO.CacheDir = Cache;
  CompileStats Stats;
  auto Cubins = compileKernels(ToCompile, NO, &Stats);
  if (!Cubins) {
    std::fprintf(stderr, "%s\n", llvm::toString(Cubins.takeError()).c_str());
    return 2;
  }
  std::fprintf(stderr, "compiled %u, cached %u in %.1f s\n", Stats.Compiled,
               Stats.Cached, Stats.Seconds);
  if (!Dump.empty()) {
    if (std::error_code EC = llvm::sys::fs::create_directories(Dump)) {
      std::fprintf(stderr, "--dump %s: %s\n", Dump.c_str(),
                   EC.message().c_str());
      return 2;
    }
    int Idx = 0;
    size_t Cu = 1;
    for (const Item &It : Items)
      if (It.Error.empty()) {
        {
          std::string CPath = Dump + "/k" + std::to_string(Idx) + ".cubin";
          FILE *F = std::fopen(CPath.c_str(), "wb");
          if (!F) {
            std::fprintf(stderr, "cannot write %s\n", CPath.c_str());
            return 2;
          }
          const std::string &Cb = (*Cubins)[Cu++];
          std::fwrite(Cb.data(), 1, Cb.size(), F);
          std::fclose(F);
        }
        std::string Path = Dump + "/k" + std::to_string(Idx++) + ".cu";
        FILE *F = std::fopen(Path.c_str(), "w");
        if (!F) {
          std::fprintf(stderr, "cannot write %s\n", Path.c_str());
          return 2;
        }
        std::fputs(It.K.Source.c_str(), F);
        std::fclose(F);
        std::printf("%s: %s %s\n", Path.c_str(), variantName(It.V).c_str(),
                    It.K.Summary.c_str());
      }
  }
  if (CompileOnly) {
    for (const Item &It : Items)
      if (!It.Error.empty())
        std::printf("%s: %s\n", variantName(It.V).c_str(), It.Error.c_str());
    return 0;
  }

  CK(cudaSetDevice(0));
  cudaLibrary_t SupMod;
  CK(cudaLibraryLoadData(&SupMod, (*Cubins)[0].data(), nullptr, nullptr, 0,
                         nullptr, nullptr, 0));
  cudaKernel_t Fill, Poison, RefGemm, RefLn, MaxDiff;
  CK(cudaLibraryGetKernel(&Fill, SupMod, "fill"));
  CK(cudaLibraryGetKernel(&Poison, SupMod, "poison"));
  CK(cudaLibraryGetKernel(&RefGemm, SupMod, "ref_gemm"));
  CK(cudaLibraryGetKernel(&RefLn, SupMod, "ref_ln"));
  CK(cudaLibraryGetKernel(&MaxDiff, SupMod, "maxdiff"));
  cudaEvent_t E0, E1;
  CK(cudaEventCreate(&E0));
  CK(cudaEventCreate(&E1));

  std::printf(
      "| kind | M x N x K | variant | us | TFLOP/s | max err | max ref | "
      "summary |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  size_t Ci = 1;
  const Config *Last = nullptr;
  std::map<std::string, void *> Bufs;
  void *Ref = nullptr, *Res = nullptr;
  int Failures = 0;
  for (const Item &It : Items) {
    const Config &C = *It.C;
    std::string Shape = std::to_string(C.M) + " x " + std::to_string(C.N) +
                        " x " + std::to_string(C.K);
    if (!It.Error.empty()) {
      std::printf("| %s | %s | %s | - | - | - | - | %s |\n", C.Kind.c_str(),
                  Shape.c_str(), variantName(It.V).c_str(), It.Error.c_str());
      continue;
    }
    const GeneratedKernel &K = It.K;
    const std::string &Cubin = (*Cubins)[Ci++];
    if (&C != Last) {
      for (auto &[N, P] : Bufs)
        cudaFree(P);
      Bufs.clear();
      if (Ref)
        cudaFree(Ref);
      if (!Res)
        CK(cudaMalloc(&Res, 8));
      Last = &C;
      // Inputs by name, random; the reference.
      auto Alloc = [&](const std::string &Name, int64_t Elems, float Scale,
                       unsigned Seed) {
        void *P;
        CK(cudaMalloc(&P, Elems * 2));
        long long N = Elems;
        void *Args[] = {&P, &N, &Seed, &Scale};
        CK(cudaLaunchKernel(reinterpret_cast<const void *>(Fill),
                            dim3(1024, 1, 1), dim3(256, 1, 1), Args, 0,
                            nullptr));
        Bufs[Name] = P;
      };
      Alloc("x", C.M * C.K, 1.f, 1);
      Alloc("w", C.K * C.N, 1.f / std::sqrt(float(C.K)), 2);
      Alloc("b", C.N, 0.5f, 3);
      if (C.Kind == "ln") {
        Alloc("r", C.M * C.N, 1.f, 4);
        Alloc("gamma", C.N, 1.f, 5);
        Alloc("beta", C.N, 0.5f, 6);
      }
      CK(cudaMalloc(&Ref, C.M * C.N * 4));
      void *X = Bufs["x"], *Wt = Bufs["w"], *Bb = Bufs["b"];
      int M = int(C.M), N = int(C.N), Kk = int(C.K), TB = C.Kind == "gemmT";
      void *A1[] = {&X, &Wt, &Bb, &Ref, &M, &N, &Kk, &TB};
      CK(cudaLaunchKernel(reinterpret_cast<const void *>(RefGemm),
                          dim3((N + 127) / 128, M, 1), dim3(128, 1, 1), A1, 0,
                          nullptr));
      if (C.Kind == "ln") {
        void *R = Bufs["r"], *Ga = Bufs["gamma"], *Be = Bufs["beta"];
        float Eps = 1e-12f;
        void *A2[] = {&Ref, &R, &Ga, &Be, &M, &N, &Eps};
        CK(cudaLaunchKernel(reinterpret_cast<const void *>(RefLn),
                            dim3((M + 127) / 128, 1, 1), dim3(128, 1, 1), A2, 0,
                            nullptr));
      }
      CK(cudaDeviceSynchronize());
    }
    cudaLibrary_t Mod;
    CK(cudaLibraryLoadData(&Mod, Cubin.data(), nullptr, nullptr, 0, nullptr,
                           nullptr, 0));
    cudaKernel_t F;
    CK(cudaLibraryGetKernel(&F, Mod, K.Name.c_str()));
    if (K.DynamicSharedBytes > 48 * 1024)
      CK(cudaKernelSetAttributeForDevice(
          F, cudaFuncAttributeMaxDynamicSharedMemorySize,
          int(K.DynamicSharedBytes), 0));
    // How many of a clustered kernel's clusters the GPU holds at once: with
    // fewer than the grid has, the kernel runs in waves of clusters.
    std::string Residency;
    if (K.Summary.find("cluster") != std::string::npos) {
      cudaLaunchConfig_t Cfg = {};
      Cfg.gridDim = dim3(K.Grid[0], K.Grid[1], K.Grid[2]);
      Cfg.blockDim = dim3(K.Block[0], K.Block[1], K.Block[2]);
      Cfg.dynamicSmemBytes = K.DynamicSharedBytes;
      int Clusters = 0;
      if (cudaOccupancyMaxActiveClusters(&Clusters,
                                         reinterpret_cast<const void *>(F),
                                         &Cfg) == cudaSuccess)
        Residency = " [" + std::to_string(Clusters) + " clusters at once]";
      else
        (void)cudaGetLastError();
    }
    std::vector<void *> Ptrs;
    void *Out;
    CK(cudaMalloc(&Out, C.M * C.N * 2));
    for (const Value *V : K.Outputs) {
      (void)V;
      Ptrs.push_back(Out);
    }
    bool Bad = false;
    for (const Value *V : K.Inputs) {
      auto Itb = Bufs.find(V->name());
      if (Itb == Bufs.end()) {
        std::printf("| %s | %s | %s | no buffer for input %s |\n",
                    C.Kind.c_str(), Shape.c_str(), variantName(It.V).c_str(),
                    V->name().c_str());
        Bad = true;
        break;
      }
      Ptrs.push_back(Itb->second);
    }
    if (Bad || K.Outputs.size() != 1) {
      cudaFree(Out);
      cudaLibraryUnload(Mod);
      continue;
    }
    // Scratch (zero before the first launch; the kernel leaves it zero).
    void *Scratch = nullptr;
    if (K.ScratchBytes) {
      CK(cudaMalloc(&Scratch, K.ScratchBytes));
      CK(cudaMemset(Scratch, 0, K.ScratchBytes));
    }
    std::vector<void *> Args;
    for (void *&P : Ptrs)
      Args.push_back(&P);
    if (Scratch)
      Args.push_back(&Scratch);
    // Tensor maps (TMA producer) after the pointers, encoded as the runtime
    // does (the driver's encoder through cudart, no libcuda link).
    std::vector<CUtensorMap> Maps(K.TensorMaps.size());
    for (size_t I = 0; I < Maps.size(); ++I) {
      static PFN_cuTensorMapEncodeTiled_v12000 Encode = nullptr;
      if (!Encode) {
        cudaDriverEntryPointQueryResult Q;
        CK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled",
                                            reinterpret_cast<void **>(&Encode),
                                            12000, cudaEnableDefault, &Q));
      }
      const KernelTensorMap &T = K.TensorMaps[I];
      cuuint64_t Dims[2] = {cuuint64_t(T.Dims[0]), cuuint64_t(T.Dims[1])};
      cuuint64_t Strides[1] = {cuuint64_t(T.RowBytes)};
      cuuint32_t Box[2] = {T.Box[0], T.Box[1]}, Es[2] = {1, 1};
      CUresult R =
          Encode(&Maps[I], CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
                 Ptrs[K.Outputs.size() + T.Input], Dims, Strides, Box, Es,
                 CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                 CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                 CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
      if (R != CUDA_SUCCESS) {
        std::printf("| %s | %s | %s | tensor map %zu: error %d |\n",
                    C.Kind.c_str(), Shape.c_str(), variantName(It.V).c_str(), I,
                    int(R));
        std::exit(3);
      }
      Args.push_back(&Maps[I]);
    }
    long long NOut = C.M * C.N;
    {
      void *PA[] = {&Out, &NOut};
      CK(cudaLaunchKernel(reinterpret_cast<const void *>(Poison),
                          dim3(1024, 1, 1), dim3(256, 1, 1), PA, 0, nullptr));
    }
    auto Launch = [&] {
      cudaLaunchAttribute Attr;
      Attr.id = cudaLaunchAttributeCooperative;
      Attr.val.cooperative = 1;
      cudaLaunchConfig_t Cfg = {};
      Cfg.gridDim = dim3(K.Grid[0], K.Grid[1], K.Grid[2]);
      Cfg.blockDim = dim3(K.Block[0], K.Block[1], K.Block[2]);
      Cfg.dynamicSmemBytes = K.DynamicSharedBytes;
      Cfg.attrs = &Attr;
      Cfg.numAttrs = K.Cooperative ? 1 : 0;
      return cudaLaunchKernelExC(&Cfg, reinterpret_cast<const void *>(F),
                                 Args.data());
    };
    CK(Launch());
    cudaError_t SyncR = cudaDeviceSynchronize();
    if (SyncR != cudaSuccess) {
      const char *S = cudaGetErrorString(SyncR);
      std::printf("| %s | %s | %s | FAULT %s |\n", C.Kind.c_str(),
                  Shape.c_str(), variantName(It.V).c_str(), S ? S : "?");
      std::fflush(stdout);
      return 4; // the context is gone
    }
    CK(cudaMemset(Res, 0, 8));
    {
      void *DA[] = {&Out, &Ref, &NOut, &Res};
      CK(cudaLaunchKernel(reinterpret_cast<const void *>(MaxDiff),
                          dim3(264, 1, 1), dim3(256, 1, 1), DA, 0, nullptr));
    }
    float R[2];
    CK(cudaMemcpy(R, Res, 8, cudaMemcpyDeviceToHost));
    bool Wrong = !(R[0] <= 2e-2f * std::max(1.f, R[1]));
    // The swapped-descriptor probe must come out wrong: right would mean
    // the check cannot see a layout error.
    bool Probe = It.Note == " swapB";
    if (Wrong != Probe)
      ++Failures;
    if (Wrong && !Probe) {
      // Where do the first wrong elements' values come from?
      int64_t Nn = C.M * C.N;
      std::vector<uint16_t> H(Nn);
      std::vector<float> Rf(Nn);
      CK(cudaMemcpy(H.data(), Out, Nn * 2, cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(Rf.data(), Ref, Nn * 4, cudaMemcpyDeviceToHost));
      int Shown = 0;
      for (int64_t I = 0; I < Nn && Shown < 6; ++I) {
        float O = labHalfToFloat(H[I]);
        if (std::fabs(O - Rf[I]) <= 2e-2f * std::max(1.f, R[1]))
          continue;
        std::string Where;
        for (int64_t J = 0; J < Nn && Where.size() < 60; ++J)
          if (std::fabs(Rf[J] - O) < 2e-3f * std::max(1.f, std::fabs(O)))
            Where += " (" + std::to_string(J / C.N) + "," +
                     std::to_string(J % C.N) + ")";
        std::printf(
            "   wrong at (%lld,%lld): got %g want %g; value found at%s\n",
            (long long)(I / C.N), (long long)(I % C.N), O, Rf[I],
            Where.c_str());
        ++Shown;
      }
    }
    // Time.
    for (int I = 0; I < 10; ++I)
      CK(Launch());
    std::vector<float> Ms;
    for (int Rep = 0; Rep < 5; ++Rep) {
      CK(cudaEventRecord(E0, 0));
      for (int I = 0; I < Iters; ++I)
        CK(Launch());
      CK(cudaEventRecord(E1, 0));
      CK(cudaEventSynchronize(E1));
      float T;
      CK(cudaEventElapsedTime(&T, E0, E1));
      Ms.push_back(T / Iters);
    }
    // Blocks that wait for each other: after every launch above the
    // counters must be back at zero, and a last launch still right.
    if (Scratch) {
      unsigned TilesM = unsigned((C.M + It.V.Tile.BM - 1) / It.V.Tile.BM);
      std::vector<unsigned> Cnt(2 * TilesM);
      CK(cudaMemcpy(Cnt.data(), Scratch, Cnt.size() * 4,
                    cudaMemcpyDeviceToHost));
      bool Zero = std::all_of(Cnt.begin(), Cnt.end(),
                              [](unsigned V) { return V == 0; });
      {
        void *PA[] = {&Out, &NOut};
        CK(cudaLaunchKernel(reinterpret_cast<const void *>(Poison),
                            dim3(1024, 1, 1), dim3(256, 1, 1), PA, 0, nullptr));
      }
      CK(Launch());
      CK(cudaMemset(Res, 0, 8));
      void *DA[] = {&Out, &Ref, &NOut, &Res};
      CK(cudaLaunchKernel(reinterpret_cast<const void *>(MaxDiff),
                          dim3(264, 1, 1), dim3(256, 1, 1), DA, 0, nullptr));
      float R2[2];
      CK(cudaMemcpy(R2, Res, 8, cudaMemcpyDeviceToHost));
      if (!Zero || !(R2[0] <= 2e-2f * std::max(1.f, R2[1]))) {
        std::printf("   after the timed launches: counters %s, max err %g\n",
                    Zero ? "zero" : "NOT ZERO", R2[0]);
        ++Failures;
      }
      cudaFree(Scratch);
    }
    std::sort(Ms.begin(), Ms.end());
    float Us = Ms[2] * 1000.f;
    double Tf = 2.0 * C.M * C.N * C.K / (Us * 1e-6) / 1e12;
    std::printf("| %s | %s | %s%s | %.2f | %.0f | %.3g%s | %.3g | %s |\n",
                C.Kind.c_str(), Shape.c_str(), variantName(It.V).c_str(),
                It.Note.c_str(), Us, Tf, R[0],
                Probe
                    ? (Wrong ? " wrong as it must be" : " RIGHT (check blind)")
                    : (Wrong ? " WRONG" : ""),
                R[1], (K.Summary + Residency).c_str());
    std::fflush(stdout);
    cudaFree(Out);
    cudaLibraryUnload(Mod);
  }
  std::printf("failures: %d\n", Failures);
  return Failures ? 1 : 0;
}
