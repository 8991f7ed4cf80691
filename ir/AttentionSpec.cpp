//===- AttentionSpec.cpp - The geometry of one Attention node -------------===//
#include "ir/AttentionSpec.h"
#include "ir/FusedGroup.h"
#include "ir/OpRegistry.h"
#include "llvm/ADT/Twine.h"
#include <cmath>

namespace solder {

std::array<int64_t, 4> AttentionSpec::strides(int64_t Heads, int64_t Len,
                                              int64_t Dim) const {
  if (ThreeD)
    return {Len * Heads * Dim, Dim, Heads * Dim, 1};
  return {Heads * Len * Dim, Len * Dim, Dim, 1};
}

double AttentionSpec::flops() const {
  return 2.0 * double(Batch) * double(QHeads) * double(QLen) * double(KvLen) *
         double(HeadDim + VHeadDim);
}

AttentionGroup attentionGroup(const Node &N) {
  AttentionGroup G;
  G.Id = N.attrs().getInt("id", -1);
  if (const Attribute *M = N.attrs().find("members"))
    G.Members = M->getStrings();
  if (G.Members.empty())
    G.Members = {memberName(N)};
  return G;
}

llvm::Expected<AttentionSpec> resolveAttention(const Node &N,
                                               const AttentionOperandDims &D) {
  auto Fail = [&](const llvm::Twine &Msg) {
    return makeError("Attention node '" + N.name() + "': " + Msg);
  };
  size_t Rank = D.Q.size();
  if ((Rank != 3 && Rank != 4) || D.K.size() != Rank || D.V.size() != Rank)
    return Fail("Q, K and V must all be 3-D or all 4-D");
  AttentionSpec S;
  S.ThreeD = Rank == 3;
  S.Batch = D.Q[0];
  int64_t KHeadDim, VLen;
  if (S.ThreeD) {
    S.QHeads = N.attrs().getInt("q_num_heads", 0);
    S.KvHeads = N.attrs().getInt("kv_num_heads", 0);
    if (S.QHeads <= 0 || S.KvHeads <= 0)
      return Fail("3-D operands need q_num_heads and kv_num_heads");
    if (D.Q[2] % S.QHeads || D.K[2] % S.KvHeads || D.V[2] % S.KvHeads)
      return Fail("the hidden sizes do not split into the heads");
    S.QLen = D.Q[1];
    S.KvLen = D.K[1];
    VLen = D.V[1];
    S.HeadDim = D.Q[2] / S.QHeads;
    KHeadDim = D.K[2] / S.KvHeads;
    S.VHeadDim = D.V[2] / S.KvHeads;
  } else {
    S.QHeads = D.Q[1];
    S.KvHeads = D.K[1];
    if (D.V[1] != S.KvHeads)
      return Fail("K and V have different head counts");
    S.QLen = D.Q[2];
    S.KvLen = D.K[2];
    VLen = D.V[2];
    S.HeadDim = D.Q[3];
    KHeadDim = D.K[3];
    S.VHeadDim = D.V[3];
  }
  if (D.K[0] != S.Batch || D.V[0] != S.Batch)
    return Fail("Q, K and V have different batch sizes");
  if (KHeadDim != S.HeadDim)
    return Fail("Q and K have different head sizes");
  if (VLen != S.KvLen)
    return Fail("K and V have different sequence lengths");
  if (S.KvHeads <= 0 || S.QHeads % S.KvHeads)
    return Fail("the query heads are not a multiple of the key/value heads");
  float DefaultScale =
      S.HeadDim > 0 ? float(1.0 / std::sqrt(double(S.HeadDim))) : 1.0f;
  S.Scale = N.attrs().getFloat("scale", DefaultScale);
  S.Causal = N.attrs().getInt("is_causal", 0) != 0;
  if (D.HasMask) {
    S.Mask = D.BoolMask ? AttentionSpec::MaskKind::Bool
                        : AttentionSpec::MaskKind::Additive;
    const int64_t Full[4] = {S.Batch, S.QHeads, S.QLen, S.KvLen};
    if (D.Mask.size() > 4)
      return Fail("the mask has more than 4 dims");
    int64_t Stride = 1;
    for (size_t I = 0; I < D.Mask.size(); ++I) {
      unsigned Axis = 3 - I;
      int64_t Size = D.Mask[D.Mask.size() - 1 - I];
      if (Size != 1 && Size != Full[Axis])
        return Fail("the mask does not broadcast to [batch, heads, q_len, "
                    "kv_len]");
      S.MaskStrides[Axis] = Size == 1 ? 0 : Stride;
      Stride *= Size;
    }
  }
  return S;
}

llvm::Expected<AttentionSpec> resolveAttention(const Node &N) {
  AttentionOperandDims D;
  auto DimsOf = [&](unsigned I, llvm::SmallVector<int64_t, 4> &Out) {
    const TensorType &T = N.operand(I)->type();
    for (const Dim &X : T.Dims)
      Out.push_back(X.size());
  };
  for (unsigned I = 0; I < N.numOperands(); ++I)
    if (N.operand(I) && !N.operand(I)->type().isStatic())
      return makeError("Attention node '" + N.name() +
                       "': every shape must be static");
  if (N.numOperands() < 3 || !N.operand(0) || !N.operand(1) || !N.operand(2))
    return makeError("Attention node '" + N.name() + "': needs Q, K and V");
  DimsOf(0, D.Q);
  DimsOf(1, D.K);
  DimsOf(2, D.V);
  if (N.numOperands() > 3 && N.operand(3)) {
    D.HasMask = true;
    D.BoolMask = N.operand(3)->dtype() == DType::Bool;
    DimsOf(3, D.Mask);
  }
  return resolveAttention(N, D);
}

} // namespace solder
