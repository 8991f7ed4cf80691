//===- TensorCoreSupport.cpp - What the tensor-core emitters share -------===//
//
// The inline-PTX helpers of the mma.sync kernels (attention, GEMM) and of
// the wgmma GEMM (sm_90a), and what printing their kernel texts takes:
// `$NAME` substitution, float literals, multi-line text into the printer.
//
//===----------------------------------------------------------------------===//
#include "codegen/TensorCoreSupport.h"
#include "codegen/EmitterUtils.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cassert>

namespace solder {
namespace codegen {

namespace {

// A float pair packed as the 32-bit register mma.sync takes, D += A B for
// one m16n8k16 tile, ldmatrix (x4 and x2, plain and transposed), cp.async
// of 16 bytes and its group waits (all sm_80+).
const char *const MmaHelperText =
    R"(__device__ __forceinline__ unsigned solder_pack2(float a, float b) {
  $T2 v = $MAKE2(a, b);
  return *(unsigned *)&v;
}
__device__ __forceinline__ void solder_mma16816(float (&d)[4], const unsigned (&a)[4],
                                                unsigned b0, unsigned b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.$MMA.$MMA.f32 "
               "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
__device__ __forceinline__ unsigned solder_smem(const void *p) {
  unsigned a;
  asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
  return a;
}
__device__ __forceinline__ void solder_ldm_x4(unsigned (&r)[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(solder_smem(p)));
}
__device__ __forceinline__ void solder_ldm_x2(unsigned (&r)[2], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0,%1}, [%2];"
               : "=r"(r[0]), "=r"(r[1]) : "r"(solder_smem(p)));
}
__device__ __forceinline__ void solder_ldm_x4_t(unsigned (&r)[4], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(solder_smem(p)));
}
__device__ __forceinline__ void solder_ldm_x2_t(unsigned (&r)[2], const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0,%1}, [%2];"
               : "=r"(r[0]), "=r"(r[1]) : "r"(solder_smem(p)));
}
__device__ __forceinline__ void solder_cp16(void *dst, const void *src, bool full) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
               :: "r"(solder_smem(dst)), "l"(src), "r"(full ? 16 : 0) : "memory");
}
__device__ __forceinline__ void solder_cp_commit() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}
__device__ __forceinline__ void solder_cp_wait1() {
  asm volatile("cp.async.wait_group 1;" ::: "memory");
}
__device__ __forceinline__ void solder_cp_wait0() {
  asm volatile("cp.async.wait_group 0;" ::: "memory");
}
__device__ __forceinline__ void solder_ldm_x4_u(unsigned (&r)[4], unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ void solder_ldm_x4_t_u(unsigned (&r)[4], unsigned a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(a));
}
__device__ __forceinline__ void solder_cp16_u(unsigned dst, const void *src, bool full) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"
               :: "r"(dst), "l"(src), "r"(full ? 16 : 0) : "memory");
}
template <int N> __device__ __forceinline__ void solder_cp_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
})";

// Thread-block clusters (sm_90): a float of another block's shared memory,
// and the cluster-wide barrier (release/acquire: shared-memory writes
// before it are visible to every block of the cluster after it).
const char *const ClusterHelperText =
    R"(__device__ __forceinline__ float solder_ld_cluster(const float *p, unsigned rank) {
  unsigned remote;
  float v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(solder_smem(p)), "r"(rank));
  asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(v) : "r"(remote) : "memory");
  return v;
}
__device__ __forceinline__ void solder_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
})";

// Blocks of a cooperative launch waiting for each other through global
// memory (a row normalization's statistics over blocks that are no
// cluster): each block's first thread publishes its block's writes (the
// caller's barrier of every writing thread before, then a device-scope
// fence) and arrives on a counter, then waits with acquire loads until all
// have arrived. The last block to leave resets both counters for the next
// launch.
const char *const RowGroupHelperText =
    R"(__device__ __forceinline__ void solder_rowgroup_wait(unsigned *arrived, unsigned blocks) {
  __threadfence();
  atomicAdd(arrived, 1u);
  unsigned v;
  do {
    asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(v) : "l"(arrived) : "memory");
  } while (v < blocks);
}
__device__ __forceinline__ void solder_rowgroup_leave(unsigned *arrived, unsigned *left, unsigned blocks) {
  if (atomicAdd(left, 1u) == blocks - 1) {
    atomicExch(arrived, 0u);
    atomicExch(left, 0u);
  }
})";

// Hopper's warpgroup MMA (sm_90a). A shared-memory matrix descriptor
// (start address, leading and stride byte offsets, each in 16-byte units;
// layout 1 = 128-byte swizzle in bits 62-63), the ordering instructions
// around wgmma.mma_async, and the fence that makes shared memory written
// through the generic proxy (cp.async, plain stores) visible to the async
// proxy the tensor cores read it through.
const char *const WgmmaHelperText =
    R"(__device__ __forceinline__ unsigned long long solder_wgmma_desc(unsigned addr, unsigned lbo, unsigned sbo) {
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | ((unsigned long long)(lbo >> 4) << 16) |
         ((unsigned long long)(sbo >> 4) << 32) | (1ull << 62);
}
__device__ __forceinline__ void solder_wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void solder_wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
template <int N> __device__ __forceinline__ void solder_wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void solder_fence_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
)";

// Shared-memory barriers (sm_90) for a producer warpgroup handing stages
// to consumers: init (then the init fence), a plain arrive, and a wait
// for the phase of the given parity (braces keep each copy's labels
// local). A wait for parity 1 on a fresh barrier returns at once: its
// "previous" phase counts as complete, so a ring of free stages needs no
// first release.
const char *const MbarrierHelperText =
    R"(__device__ __forceinline__ void solder_mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void solder_fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ void solder_mbar_arrive(unsigned bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void solder_mbar_expect_tx(unsigned bar, unsigned bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void solder_tma_2d(unsigned dst, const void *map, int c0, int c1, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar) : "memory");
}
__device__ __forceinline__ void solder_mbar_wait(unsigned bar, unsigned parity) {
  asm volatile("{\n.reg .pred p;\nWAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               "@!p bra WAIT;\n}" ::"r"(bar), "r"(parity) : "memory");
}
__device__ __forceinline__ void solder_bar_sync(unsigned id, unsigned count) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void solder_regs_producer() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
}
__device__ __forceinline__ void solder_regs_consumer() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n" ::: "memory");
})";

// TMA multicast in a cluster (sm_90): one bulk tensor copy lands at the
// same shared-memory offset in every block of Mask and completes its bytes
// on each one's barrier at the same offset; and an arrival on the barrier
// of another block of the cluster (the wgmmas that read the stage were
// waited for before it; CTA-scope release as for a local arrival: at
// cluster scope the fence stalled the consumers, 4096 x 768 x 3072 ran
// 57 us against 35 without multicast on an H200).
const char *const MulticastHelperText =
    R"(__device__ __forceinline__ void solder_tma_2d_mc(unsigned dst, const void *map, int c0, int c1, unsigned bar, unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
               ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(bar), "h"(mask) : "memory");
}
__device__ __forceinline__ void solder_mbar_arrive_peer(unsigned bar, unsigned rank) {
  asm volatile("{\n.reg .b32 r;\nmapa.shared::cluster.u32 r, %0, %1;\nmbarrier.arrive.shared::cluster.b64 _, [r];\n}" ::"r"(bar), "r"(rank) : "memory");
})";

} // namespace

std::string mbarrierHelpers() { return MbarrierHelperText; }

std::string multicastHelpers() { return MulticastHelperText; }

bool needsArchSpecificTarget(llvm::StringRef Source) {
  return Source.contains(ArchSpecificMarker);
}

std::string wgmmaHelpers(DType T, int N, bool TransposeB) {
  assert(N % 8 == 0 && N >= 8 && N <= 256 && "wgmma m64nNk16: N in 8..256");
  bool Half = T == DType::F16;
  std::string Ty = Half ? "f16" : "bf16";
  int Regs = N / 2; // 64 x N f32 accumulators over 128 threads
  std::string Dst, Cons;
  for (int I = 0; I < Regs; ++I) {
    Dst += (I ? ", %" : "%") + std::to_string(I);
    Cons += std::string(I ? ", " : "") + "\"+f\"(d[" + std::to_string(I / 4) +
            "][" + std::to_string(I % 4) + "])";
  }
  // Register I of the fragment is d[I / 4][I % 4]: row (warp % 4) * 16 +
  // lane / 4 (+ 8 for I % 4 >= 2), column (I / 4) * 8 + (lane % 4) * 2 +
  // I % 2, the layout of mma.sync's m16n8 accumulators tiled along N.
  std::string F = "__device__ __forceinline__ void solder_wgmma(float (&d)[" +
                  std::to_string(N / 8) +
                  "][4], unsigned long long da, unsigned long long db) {\n"
                  "  asm volatile(\"{\\n.reg .pred p;\\nsetp.ne.b32 p, %" +
                  std::to_string(Regs + 2) +
                  ", 0;\\n\"\n"
                  "               \"wgmma.mma_async.sync.aligned.m64n" +
                  std::to_string(N) + "k16.f32." + Ty + "." + Ty + " {" + Dst +
                  "}, %" + std::to_string(Regs) + ", %" +
                  std::to_string(Regs + 1) + ", p, 1, 1, 0, " +
                  (TransposeB ? "1" : "0") +
                  ";\\n}\"\n"
                  "               : " +
                  Cons +
                  "\n"
                  "               : \"l\"(da), \"l\"(db), \"r\"(1));\n"
                  "}";
  return std::string(WgmmaHelperText) + F;
}

/// Replaces every `$NAME` in Text by its value (longest names first, so
/// $QS never eats the start of $QSB).
std::string substitute(std::string Text,
                       std::vector<std::pair<std::string, std::string>> Vars) {
  std::sort(Vars.begin(), Vars.end(), [](const auto &A, const auto &B) {
    return A.first.size() > B.first.size();
  });
  for (const auto &[Name, Value] : Vars) {
    std::string Key = "$" + Name;
    for (size_t P = Text.find(Key); P != std::string::npos;
         P = Text.find(Key, P + Value.size()))
      Text.replace(P, Key.size(), Value);
  }
  return Text;
}

std::string floatLiteral(double V) {
  std::string S;
  llvm::raw_string_ostream OS(S);
  OS << llvm::format("%.9g", V);
  OS.flush();
  if (S.find_first_of(".en") == std::string::npos)
    S += ".0";
  return S + "f";
}

void printLines(CudaPrinter &P, llvm::StringRef Text) {
  while (!Text.empty()) {
    auto [Line, Tail] = Text.split('\n');
    P.line(Line);
    Text = Tail;
  }
}

std::string mmaHelpers(DType T) {
  bool Half = T == DType::F16;
  return substitute(MmaHelperText, {{"T2", Half ? "__half2" : "__nv_bfloat162"},
                                    {"MAKE2", Half ? "__floats2half2_rn"
                                                   : "__floats2bfloat162_rn"},
                                    {"MMA", Half ? "f16" : "bf16"}});
}

std::string clusterHelpers() { return ClusterHelperText; }

std::string rowGroupHelpers() { return RowGroupHelperText; }

} // namespace codegen
} // namespace solder
