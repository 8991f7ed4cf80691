//===- AttentionKernelTest.cpp - The reference Attention kernel -----------===//
//
// Against a plain float implementation written here (scores, max-shifted
// softmax, weighted sum): additive and boolean masks broadcast over batch
// and heads, causal, grouped-query heads, the 3-D form equal to the 4-D
// form on split heads, a row with every key masked, f16 operands; and the
// errors for operands that do not fit.
//
//===----------------------------------------------------------------------===//
#include "NodeRunner.h"
#include "ir/OpKind.h"
#include <cmath>
#include <limits>

using namespace solder;
using namespace solder::testing;

namespace {

/// Q [B,Hq,Sq,D], K [B,Hkv,Sk,D], V [B,Hkv,Sk,Dv]; Mask as [B,Hq,Sq,Sk]
/// after broadcasting (empty: none), Keep alike for a bool mask.
std::vector<double> naive(const Tensor &Q, const Tensor &K, const Tensor &V,
                          double Scale, bool Causal,
                          const std::vector<double> &Mask,
                          const std::vector<bool> &Keep) {
  auto QD = Q.dims(), KD = K.dims(), VD = V.dims();
  int64_t B = QD[0], Hq = QD[1], Sq = QD[2], D = QD[3], Hkv = KD[1],
          Sk = KD[2], Dv = VD[3];
  std::vector<double> Out;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      for (int64_t i = 0; i < Sq; ++i) {
        int64_t kh = h / (Hq / Hkv);
        std::vector<double> S(Sk, -std::numeric_limits<double>::infinity());
        for (int64_t j = 0; j < Sk; ++j) {
          int64_t M = ((b * Hq + h) * Sq + i) * Sk + j;
          if ((Causal && j > i) || (!Keep.empty() && !Keep[M]))
            continue;
          double Dot = 0;
          for (int64_t d = 0; d < D; ++d)
            Dot += Q.getDouble(((b * Hq + h) * Sq + i) * D + d) *
                   K.getDouble(((b * Hkv + kh) * Sk + j) * D + d);
          S[j] = Dot * Scale + (Mask.empty() ? 0.0 : Mask[M]);
        }
        double Max = *std::max_element(S.begin(), S.end()), Sum = 0;
        for (double &X : S)
          Sum += X = std::isinf(Max) ? 0 : std::exp(X - Max);
        for (int64_t d = 0; d < Dv; ++d) {
          double Acc = 0;
          for (int64_t j = 0; j < Sk; ++j)
            Acc += S[j] * V.getDouble(((b * Hkv + kh) * Sk + j) * Dv + d);
          Out.push_back(Sum > 0 ? Acc / Sum : 0);
        }
      }
  return Out;
}

NodeRunner attention(double Scale, bool Causal = false) {
  return NodeRunner(OpKind::Attention)
      .attr("scale", float(Scale))
      .attr("is_causal", int64_t(Causal));
}

TEST(AttentionKernelTest, AdditiveMaskBroadcastOverHeads) {
  Tensor Q = randomFloats({2, 3, 5, 4}, 1), K = randomFloats({2, 3, 7, 4}, 2),
         V = randomFloats({2, 3, 7, 6}, 3), M = randomFloats({2, 1, 1, 7}, 4);
  std::vector<double> Full;
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t I = 0; I < 3 * 5; ++I)
      for (int64_t j = 0; j < 7; ++j)
        Full.push_back(M.getDouble(b * 7 + j));
  Tensor Y = attention(0.3).runOk({&Q, &K, &V, &M});
  EXPECT_EQ(dimsOf(Y), (std::vector<int64_t>{2, 3, 5, 6}));
  expectValues(Y, naive(Q, K, V, 0.3, false, Full, {}), 1e-5);
}

TEST(AttentionKernelTest, CausalWithBoolMaskAndGroupedHeads) {
  Tensor Q = randomFloats({1, 4, 6, 8}, 5), K = randomFloats({1, 2, 6, 8}, 6),
         V = randomFloats({1, 2, 6, 3}, 7);
  // Bool mask [6] over keys: key 4 masked for every query.
  Tensor M(DType::Bool, {6});
  std::vector<bool> Keep;
  for (int64_t J = 0; J < 6; ++J)
    M.mutableData<uint8_t>()[J] = J != 4;
  for (int64_t I = 0; I < 4 * 6; ++I)
    for (int64_t J = 0; J < 6; ++J)
      Keep.push_back(J != 4);
  Tensor Y = attention(0.5, true).runOk({&Q, &K, &V, &M});
  expectValues(Y, naive(Q, K, V, 0.5, true, {}, Keep), 1e-5);
}

TEST(AttentionKernelTest, ThreeDimensionalFormSplitsAndMergesHeads) {
  Tensor Q4 = randomFloats({2, 2, 3, 4}, 8), K4 = randomFloats({2, 2, 5, 4}, 9),
         V4 = randomFloats({2, 2, 5, 4}, 10);
  // [B,H,S,D] -> [B,S,H*D].
  auto Merge = [](const Tensor &T) {
    auto D = T.dims();
    Tensor Out(DType::F32, {D[0], D[2], D[1] * D[3]});
    for (int64_t b = 0; b < D[0]; ++b)
      for (int64_t h = 0; h < D[1]; ++h)
        for (int64_t s = 0; s < D[2]; ++s)
          for (int64_t d = 0; d < D[3]; ++d)
            Out.setDouble(((b * D[2] + s) * D[1] + h) * D[3] + d,
                          T.getDouble(((b * D[1] + h) * D[2] + s) * D[3] + d));
    return Out;
  };
  Tensor Q3 = Merge(Q4), K3 = Merge(K4), V3 = Merge(V4);
  Tensor Y3 = attention(0.25)
                  .attr("q_num_heads", int64_t(2))
                  .attr("kv_num_heads", int64_t(2))
                  .runOk({&Q3, &K3, &V3});
  Tensor Y4 = attention(0.25).runOk({&Q4, &K4, &V4});
  expectNear(Y3, Merge(Y4), 1e-6);
}

TEST(AttentionKernelTest, RowWithEveryKeyMaskedIsZeroOrUniform) {
  Tensor Q = randomFloats({1, 1, 2, 4}, 11), K = randomFloats({1, 1, 3, 4}, 12),
         V = randomFloats({1, 1, 3, 2}, 13);
  // Bool: query 0 sees nothing -> zeros.
  Tensor B(DType::Bool, {2, 3});
  for (int64_t I = 0; I < 6; ++I)
    B.mutableData<uint8_t>()[I] = I >= 3;
  Tensor Y = attention(1).runOk({&Q, &K, &V, &B});
  EXPECT_EQ(Y.getDouble(0), 0.0);
  EXPECT_EQ(Y.getDouble(1), 0.0);
  // Additive with a finite "-inf" on every key: uniform, as the unfused
  // softmax gives.
  Tensor A = make(DType::F32, {3}, {-3.4e38, -3.4e38, -3.4e38});
  Tensor U = attention(1).runOk({&Q, &K, &V, &A});
  for (int64_t d = 0; d < 2; ++d) {
    double Mean = (V.getDouble(d) + V.getDouble(2 + d) + V.getDouble(4 + d)) / 3;
    EXPECT_NEAR(U.getDouble(d), Mean, 1e-6);
  }
}

TEST(AttentionKernelTest, HalfOperandsComputeInDouble) {
  Tensor Qf = randomFloats({1, 2, 4, 8}, 14), Kf = randomFloats({1, 2, 4, 8}, 15),
         Vf = randomFloats({1, 2, 4, 8}, 16);
  auto Half = [](const Tensor &T) {
    Tensor H(DType::F16, T.dims());
    for (int64_t I = 0; I < T.numElements(); ++I)
      H.setDouble(I, T.getDouble(I));
    return H;
  };
  Tensor Q = Half(Qf), K = Half(Kf), V = Half(Vf);
  Tensor Y = attention(0.35).runOk({&Q, &K, &V});
  EXPECT_EQ(Y.dtype(), DType::F16);
  expectValues(Y, naive(Q, K, V, 0.35, false, {}, {}), 2e-3);
}

TEST(AttentionKernelTest, OperandsThatDoNotFitAreErrors) {
  Tensor Q = randomFloats({1, 2, 4, 8}, 1), K = randomFloats({1, 2, 4, 6}, 2),
         V = randomFloats({1, 2, 4, 8}, 3), K3 = randomFloats({1, 4, 16}, 4),
         Kh = randomFloats({1, 3, 4, 8}, 5), Kok = randomFloats({1, 2, 4, 8}, 6),
         M = randomFloats({3, 4}, 7);
  attention(1).expectError({&Q, &K, &V}, "different head sizes");
  attention(1).expectError({&Q, &K3, &V}, "3-D or all 4-D");
  attention(1).expectError({&Q, &Kh, &V}, "different head counts");
  attention(1).expectError({&Q, &Kok, &V, &M}, "does not broadcast");
  Tensor Q3 = randomFloats({1, 4, 15}, 8), V3 = randomFloats({1, 4, 16}, 9);
  attention(1)
      .attr("q_num_heads", int64_t(2))
      .attr("kv_num_heads", int64_t(2))
      .expectError({&Q3, &K3, &V3}, "do not split into the heads");
  attention(1).expectError({&Q3, &K3, &V3}, "need q_num_heads");
}

} // namespace
