//===- AttentionEmitterTest.cpp - The flash-attention kernel --------------===//
//
// The generated attention kernel: strides of the 3-D and 4-D forms, the
// grouped-head mapping, the baked scale, how each mask kind enters the
// score, its 3-D launch; compiled with NVRTC for f32, f16 and bf16 with
// every mask kind, causal or not; head dims above 128 refused by name.
// (Numerics are checked on the GPU: GpuRuntimeTest.AttentionKernel...)
//
//===----------------------------------------------------------------------===//
#include "tests/codegen/EmitterTestUtils.h"

using namespace solder;
using solder::testing::contains;
using solder::testing::expectEachCompiles;
using solder::testing::onlyKernel;

namespace {

std::string body(const std::string &T, const std::string &Q,
                 const std::string &KV, const std::string &Mask,
                 const std::string &Attrs) {
  std::string B = "  input %q : " + T + Q + "\n  input %k : " + T + KV +
                  "\n  input %v : " + T + KV + "\n";
  if (!Mask.empty())
    B += "  input %m : " + Mask + "\n";
  B += "  %y = Attention(%q, %k, %v" + std::string(Mask.empty() ? "" : ", %m") +
       ") {" + Attrs + "} @\"attn\"\n  output %y";
  return B;
}

TEST(AttentionEmitter, ThreeDimensionalGroupedHeadsWithAdditiveMask) {
  // Q [2, 7, 4 heads * 16], K/V [2, 9, 2 heads * 16], mask [2,1,1,9].
  auto G = solder::testing::parseBody(
      body("f32", "[2,7,64]", "[2,9,32]", "f32[2,1,1,9]",
           "kv_num_heads = 2, q_num_heads = 4, scale = 0.25"));
  ASSERT_TRUE(G);
  GeneratedKernel K = onlyKernel(*G);
  const std::string &S = K.Source;
  EXPECT_TRUE(contains(S, "constexpr int D = 16, DV = 16")) << S;
  EXPECT_TRUE(contains(S, "const long long kh = h / 2LL;")) << S;
  // Row strides are the hidden sizes; heads are D apart.
  EXPECT_TRUE(contains(S, "qbase = 0LL + b * 448LL + h * 16LL;")) << S;
  EXPECT_TRUE(K.Counts.empty()) << "a static plan's kernel bakes its lengths";
  EXPECT_TRUE(contains(S, "in0[qbase + i * 64LL + d]) * 0.25f")) << S;
  EXPECT_TRUE(contains(S, "in1[kbase + j * 32LL + d]")) << S;
  EXPECT_TRUE(contains(S, "s = dot + in3[b * 9LL + h * 0LL + i * 0LL + j * "
                          "1LL];"))
      << S;
  EXPECT_EQ(K.Grid, (std::array<unsigned, 3>{1, 4, 2}));
  EXPECT_EQ(K.Block, (std::array<unsigned, 3>{256, 1, 1}));
  EXPECT_EQ(K.Inputs.size(), 4u);
}

TEST(AttentionEmitter, VariantsTakeTheirLengthsAsParameters) {
  // A dynamic model's variants (ShapeParams) of BERT's attention at 128
  // and 384 tokens (32 x 12 heads fill the GPU at both): one kernel text,
  // compiled once; the lengths and the strides that grow with them come as
  // counts (Sq, Sk, the mask's batch stride, then Q's, K's, V's and the
  // output's batch and head strides).
  CodegenOptions O;
  O.ShapeParams = true;
  auto Kernel = [&](int64_t Len) {
    std::string L = std::to_string(Len);
    auto G = solder::testing::parseBody(body("f16", "[32,12," + L + ",64]",
                                             "[32,12," + L + ",64]",
                                             "f16[32,1,1," + L + "]", ""));
    EXPECT_TRUE(G);
    return G ? onlyKernel(*G, O) : GeneratedKernel();
  };
  // The text the kernel cache sees.
  auto Text = [](const GeneratedKernel &K) {
    EXPECT_NE(withoutSummaryComment(K.Source, K.Summary), K.Source);
    return withoutSummaryComment(K.Source, K.Summary);
  };
  GeneratedKernel Short = Kernel(128), Long = Kernel(384);
  EXPECT_EQ(Text(Short), Text(Long));
  EXPECT_NE(Short.Summary, Long.Summary);
  EXPECT_EQ(Long.Counts,
            (std::vector<int64_t>{384, 384, 384, 12 * 384 * 64, 384 * 64,
                                  12 * 384 * 64, 384 * 64, 12 * 384 * 64,
                                  384 * 64, 12 * 384 * 64, 384 * 64}));
  EXPECT_TRUE(contains(Long.Source, "qbase = 0LL + b * (idx_t)cnt3 + h * "
                                    "(idx_t)cnt4;"))
      << Long.Source;
  EXPECT_TRUE(contains(Long.Source, "mk[buf][x] = j < (idx_t)cnt1 ? "
                                    "__half2float(in3[b * (idx_t)cnt2 + h * "
                                    "0LL + j * 1LL]) : 0.f;"))
      << Long.Source;
  EXPECT_EQ(Long.Grid, (std::array<unsigned, 3>{3, 12, 32}));
  // Static plans bake them: two texts.
  auto G128 = solder::testing::parseBody(
      body("f16", "[32,12,128,64]", "[32,12,128,64]", "f16[32,1,1,128]", ""));
  auto G384 = solder::testing::parseBody(
      body("f16", "[32,12,384,64]", "[32,12,384,64]", "f16[32,1,1,384]", ""));
  ASSERT_TRUE(G128 && G384);
  EXPECT_NE(Text(onlyKernel(*G128)), Text(onlyKernel(*G384)));
}

TEST(AttentionEmitter, HeadDimsStayBakedIn) {
  // Negative twin: the head dim sizes the registers and shared memory, so
  // in variants too another head dim is another kernel.
  CodegenOptions O;
  O.ShapeParams = true;
  auto G64 = solder::testing::parseBody(
      body("f16", "[32,12,128,64]", "[32,12,128,64]", "f16[32,1,1,128]", ""));
  auto G32 = solder::testing::parseBody(
      body("f16", "[32,12,128,32]", "[32,12,128,32]", "f16[32,1,1,128]", ""));
  ASSERT_TRUE(G64 && G32);
  EXPECT_NE(onlyKernel(*G64, O).Source, onlyKernel(*G32, O).Source);
  EXPECT_TRUE(contains(onlyKernel(*G32, O).Source, "constexpr int D = 32"));
}

TEST(AttentionEmitter, BoolMaskAndCausalLimitTheKeys) {
  auto G = solder::testing::parseBody(body("f16", "[1,2,40,32]", "[1,2,40,32]",
                                           "bool[40,40]", "is_causal = 1"));
  ASSERT_TRUE(G);
  const std::string S = onlyKernel(*G).Source;
  EXPECT_TRUE(contains(S, "if (valid) valid = in3[")) << S;
  EXPECT_TRUE(contains(S, "(!true || j <= i)")) << S;
  // Default scale 1/sqrt(32).
  EXPECT_TRUE(contains(S, "* 0.176776692f")) << S;
  // f16 with D % 16 == 0: the tensor-core body.
  EXPECT_TRUE(contains(S, "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32"))
      << S;
  EXPECT_TRUE(contains(S, "__floats2half2_rn(o[mb][t][r * 2] * inv")) << S;
  // A [40, 40] mask varies along the rows: read per score, not staged.
  EXPECT_FALSE(contains(S, "mk[buf]")) << S;
  // Two heads of 40 rows would be 2 blocks of 64 rows: 16 rows per block
  // instead, and still only 6 blocks, so 4 warps split each tile's keys
  // and merge their sums.
  EXPECT_EQ(onlyKernel(*G).Block, (std::array<unsigned, 3>{128, 1, 1}));
  EXPECT_EQ(onlyKernel(*G).Grid, (std::array<unsigned, 3>{3, 2, 1}));
  EXPECT_TRUE(contains(S, "constexpr bool KS = true;")) << S;
  EXPECT_TRUE(contains(onlyKernel(*G).Summary, "keys split over 4 warps"));
}

TEST(AttentionEmitter, FullGridsDoNotSplitKeys) {
  // Twin: 32 x 12 heads of 128 rows fill the GPU; each warp owns its rows.
  auto G = solder::testing::parseBody(
      body("f16", "[32,12,128,64]", "[32,12,128,64]", "f16[32,1,1,128]", ""));
  ASSERT_TRUE(G);
  const std::string S = onlyKernel(*G).Source;
  EXPECT_TRUE(contains(S, "constexpr bool KS = false;")) << S;
  EXPECT_FALSE(contains(onlyKernel(*G).Summary, "keys split"));
}

TEST(AttentionEmitter, KeyPaddingMasksAreStagedPerTile) {
  // BERT's additive [B, 1, 1, S] mask and a bool one: one value per key,
  // staged in shared memory with the K and V tile (a bool as 0 / -inf).
  auto Add = solder::testing::parseBody(
      body("f16", "[32,12,128,64]", "[32,12,128,64]", "f16[32,1,1,128]", ""));
  auto Bool = solder::testing::parseBody(
      body("bf16", "[2,12,128,64]", "[2,12,128,64]", "bool[2,1,1,128]", ""));
  ASSERT_TRUE(Add && Bool);
  GeneratedKernel K = onlyKernel(*Add);
  std::string S = K.Source;
  EXPECT_TRUE(contains(S, "__shared__ float mk[2][BC];")) << S;
  EXPECT_TRUE(contains(S, "mk[buf][x] = j < 128LL ? __half2float(in3[b * "
                          "128LL + h * 0LL + j * 1LL]) : 0.f;"))
      << S;
  EXPECT_TRUE(contains(S, "s = c[mb][nt][r * 2 + e] * 0.125f + mk[buf][jj];"))
      << S;
  // Contiguous K and V: 16-byte asynchronous copies, 64 keys per tile.
  EXPECT_TRUE(contains(S, "cp.async.cg.shared.global")) << S;
  EXPECT_TRUE(contains(S, "solder_cp16(&ks[buf][jj][dc]")) << S;
  EXPECT_TRUE(contains(S, "BC = 64, NTH")) << S;
  // 12 x 32 blocks of 128 rows fill the GPU: 4 warps of two 16-row
  // blocks each.
  EXPECT_TRUE(contains(S, "NW = 4, MB = 2")) << S;
  EXPECT_EQ(K.Block, (std::array<unsigned, 3>{128, 1, 1}));
  EXPECT_EQ(K.Grid, (std::array<unsigned, 3>{1, 12, 32}));
  S = onlyKernel(*Bool).Source;
  EXPECT_TRUE(contains(S, "!= 0 ? 0.f : __int_as_float(0xff800000)")) << S;
  EXPECT_FALSE(contains(S, "if (valid) valid = in3[")) << S;
}

TEST(AttentionEmitter, WideHeadsTakeShorterTilesAndOldGpusTheSimtBody) {
  // D = 128: two buffers of 64 keys would pass 48 KiB of shared memory.
  auto Wide = solder::testing::parseBody(
      body("f16", "[1,8,256,128]", "[1,8,256,128]", "", ""));
  ASSERT_TRUE(Wide);
  EXPECT_TRUE(contains(onlyKernel(*Wide).Source, "BC = 32, NTH"));
  // Below sm_80 there is no m16n8k16, ldmatrix or cp.async.
  CodegenOptions Old;
  Old.SmVersion = 75;
  auto Ks = emitGraphKernels(*Wide, Old);
  ASSERT_TRUE(bool(Ks)) << llvm::toString(Ks.takeError());
  ASSERT_EQ(Ks->size(), 1u);
  EXPECT_TRUE(contains((*Ks)[0].Source, "flash attention (SIMT)"));
  EXPECT_FALSE(contains((*Ks)[0].Source, "mma.sync"));
}

TEST(AttentionEmitter, TensorCoresOnlyForHalfTypesAndHeadDimsOfSixteen) {
  // bf16 takes the bf16 mma; f16 with D = 40 and f32 take the SIMT body.
  auto Bf = solder::testing::parseBody(
      body("bf16", "[1,2,8,64]", "[1,2,8,64]", "", "scale = 0.5"));
  auto Odd = solder::testing::parseBody(
      body("f16", "[1,2,8,40]", "[1,2,8,40]", "", "scale = 0.5"));
  auto F32 = solder::testing::parseBody(
      body("f32", "[1,2,8,64]", "[1,2,8,64]", "", "scale = 0.5"));
  ASSERT_TRUE(Bf && Odd && F32);
  std::string S = onlyKernel(*Bf).Source;
  EXPECT_TRUE(contains(S, ".f32.bf16.bf16.f32")) << S;
  EXPECT_TRUE(contains(S, "__floats2bfloat162_rn(a, b)")) << S;
  S = onlyKernel(*Odd).Source;
  EXPECT_TRUE(contains(S, "flash attention (SIMT)")) << S;
  EXPECT_TRUE(contains(S, "__float2half_rn(acc[rr][t] * inv)")) << S;
  EXPECT_FALSE(contains(S, "mma.sync")) << S;
  EXPECT_FALSE(contains(onlyKernel(*F32).Source, "mma.sync"));
}

TEST(AttentionEmitter, CompilesForEveryTypeAndMask) {
  std::vector<std::string> Bodies;
  for (const char *T : {"f32", "f16", "bf16"})
    for (const char *Mask : {"", "bool[1,1,5,70]", "T[1,3,1,70]"})
      for (const char *Causal : {"is_causal = 0", "is_causal = 1"}) {
        std::string M = Mask;
        if (M.rfind("T", 0) == 0)
          M = T + M.substr(1);
        Bodies.push_back(body(T, "[1,3,5,128]", "[1,3,70,128]", M, Causal));
      }
  Bodies.push_back(body("f16", "[2,77,768]", "[2,77,768]", "",
                        "kv_num_heads = 12, q_num_heads = 12"));
  Bodies.push_back(body("bf16", "[1,4,9,40]", "[1,2,9,40]", "bf16[1,1,1,9]",
                        "is_causal = 1"));
  // Tensor-core shapes: staged masks of both kinds, odd counts of 16-wide
  // head-dim steps (ldmatrix x2), Dv != D, 32-key tiles.
  Bodies.push_back(
      body("f16", "[2,12,77,64]", "[2,12,77,64]", "f16[2,1,1,77]", ""));
  Bodies.push_back(body("bf16", "[2,4,33,48]", "[2,4,33,48]", "bool[2,1,1,33]",
                        "is_causal = 1"));
  Bodies.push_back(body("f16", "[1,2,20,80]", "[1,2,20,80]", "", ""));
  Bodies.push_back(
      body("bf16", "[1,2,300,128]", "[1,2,300,128]", "bf16[1,2,300,300]", ""));
  Bodies.push_back("  input %q : f16[1,2,9,32]\n  input %k : f16[1,2,9,32]\n"
                   "  input %v : f16[1,2,9,24]\n"
                   "  %y = Attention(%q, %k, %v) {} @\"attn\"\n  output %y");
  expectEachCompiles(Bodies);
}

TEST(AttentionEmitter, HeadDimAbove128IsRefused) {
  auto G = solder::testing::parseBody(
      body("f32", "[1,1,4,256]", "[1,1,4,256]", "", "scale = 1.0"));
  ASSERT_TRUE(G);
  std::string E = solder::testing::emitErrorOf(*G);
  EXPECT_TRUE(contains(E, "Attention node 'attn'")) << E;
  EXPECT_TRUE(contains(E, "head dims 1 to 128, got 256")) << E;
}

} // namespace
