//===- TensorCoreSupport.cpp - What the tensor-core emitters share -------===//
//
// The inline-PTX helpers of the mma.sync kernels (attention, GEMM), and
// what printing their kernel texts takes: `$NAME` substitution, float
// literals, multi-line text into the printer.
//
//===----------------------------------------------------------------------===//
#include "codegen/EmitterUtils.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>

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

} // namespace

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

} // namespace codegen
} // namespace solder
