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
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <utility>

namespace solder {
namespace codegen {

namespace {
constexpr int KeysPerTile = 32;
constexpr int RowsPerWarp = 2;
constexpr int MaxHeadDim = 128;

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
  if (S.find_first_of(".e") == std::string::npos)
    S += ".0";
  return S + "f";
}

// The kernel body; $LOAD_Q(x) etc. are replaced by the storage type's load.
const char *const Body = R"(constexpr int D = $D, DV = $DV, BC = $BC, NW = $NW, RPW = $RPW;
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
const long long qbase = b * $QSB + h * $QSH;
const long long kbase = b * $KSB + kh * $KSH;
const long long vbase = b * $VSB + kh * $VSH;
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
                        "bf16, not " + dtypeName(T));
  if (S.HeadDim > MaxHeadDim || S.VHeadDim > MaxHeadDim || S.HeadDim < 1 ||
      S.VHeadDim < 1)
    return nodeError(N, "the generated attention kernel takes head dims 1 "
                        "to " + llvm::Twine(MaxHeadDim) + ", got " +
                        llvm::Twine(S.HeadDim) + " and " +
                        llvm::Twine(S.VHeadDim));
  if (!std::isfinite(S.Scale))
    return nodeError(N, "the attention scale is not finite");
  unsigned Warps = std::min(B.opts().BlockSize / 32, 8u);
  int64_t Rows = int64_t(Warps) * RowsPerWarp;
  int64_t Blocks = (S.QLen + Rows - 1) / Rows;
  if (S.QHeads < 1 || S.Batch < 1)
    return nodeError(N, "attention over an empty batch or no heads");
  if (S.QHeads > 65535 || S.Batch > 65535 || Blocks > (int64_t(1) << 31) - 1)
    return nodeError(N, "too many heads, sequences or query rows for one "
                        "attention launch");

  CudaPrinter &P = B.p();
  B.addOutput(N.result(0));
  B.addInput(N.operand(0));
  B.addInput(N.operand(1));
  B.addInput(N.operand(2));
  bool HasMask = S.Mask != AttentionSpec::MaskKind::None;
  if (HasMask)
    B.addInput(N.operand(3));
  B.describeGroup(N.attrs().getInt("id", -1),
                  [&] {
                    std::vector<std::string> Names;
                    if (const Attribute *M = N.attrs().find("members"))
                      Names = M->getStrings();
                    if (Names.empty())
                      Names.push_back(N.name());
                    return Names;
                  }(),
                  "flash attention " + std::string(S.ThreeD ? "3-D" : "4-D") +
                      " B=" + std::to_string(S.Batch) +
                      " Hq=" + std::to_string(S.QHeads) +
                      " Hkv=" + std::to_string(S.KvHeads) +
                      " Sq=" + std::to_string(S.QLen) +
                      " Sk=" + std::to_string(S.KvLen) +
                      " D=" + std::to_string(S.HeadDim) +
                      " Dv=" + std::to_string(S.VHeadDim) + " " +
                      dtypeName(T).str());
  auto QS = S.strides(S.QHeads, S.QLen, S.HeadDim);
  auto KS = S.strides(S.KvHeads, S.KvLen, S.HeadDim);
  auto VS = S.strides(S.KvHeads, S.KvLen, S.VHeadDim);
  auto OS = S.outStrides();
  auto L = [](int64_t V) { return std::to_string(V) + "LL"; };
  std::string MaskIndex = "in3[b * " + L(S.MaskStrides[0]) + " + h * " +
                          L(S.MaskStrides[1]) + " + i * " +
                          L(S.MaskStrides[2]) + " + j * " +
                          L(S.MaskStrides[3]) + "]";
  std::string BoolMask, AddMask;
  if (S.Mask == AttentionSpec::MaskKind::Bool)
    BoolMask = "if (valid) valid = " + MaskIndex + " != 0;";
  else if (S.Mask == AttentionSpec::MaskKind::Additive)
    AddMask = " + " + loadExpr(T, MaskIndex);
  std::string Load = T == DType::F16    ? "__half2float"
                     : T == DType::BF16 ? "__bfloat162float"
                                        : "";
  std::string Store = T == DType::F16    ? "__float2half_rn"
                      : T == DType::BF16 ? "__float2bfloat16_rn"
                                         : "";
  std::string Text = substitute(
      Body, {{"D", std::to_string(S.HeadDim)},
             {"DV", std::to_string(S.VHeadDim)},
             {"BC", std::to_string(KeysPerTile)},
             {"NW", std::to_string(Warps)},
             {"RPW", std::to_string(RowsPerWarp)},
             {"GROUP", L(S.QHeads / S.KvHeads)},
             {"QSB", L(QS[0])},
             {"QSH", L(QS[1])},
             {"QSS", L(QS[2])},
             {"KSB", L(KS[0])},
             {"KSH", L(KS[1])},
             {"KSS", L(KS[2])},
             {"VSB", L(VS[0])},
             {"VSH", L(VS[1])},
             {"VSS", L(VS[2])},
             {"OSB", L(OS[0])},
             {"OSH", L(OS[1])},
             {"OSS", L(OS[2])},
             {"SQ", L(S.QLen)},
             {"SK", L(S.KvLen)},
             {"SCALE", floatLiteral(S.Scale)},
             {"CAUSAL", S.Causal ? "true" : "false"},
             {"BOOL_MASK", BoolMask},
             {"ADD_MASK", AddMask},
             {"LOAD", Load},
             {"STORE", Store}});
  auto Kernel = B.beginKernel();
  llvm::StringRef Rest = Text;
  while (!Rest.empty()) {
    auto [Line, Tail] = Rest.split('\n');
    P.line(Line);
    Rest = Tail;
  }
  B.setGrid({unsigned(std::max<int64_t>(Blocks, 1)), unsigned(S.QHeads),
             unsigned(S.Batch)},
            Warps * 32);
  return llvm::Error::success();
}

} // namespace codegen
} // namespace solder
