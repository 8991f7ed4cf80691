//===- AttentionInfer.cpp - Shape inference of Attention ------------------===//
//
// Checks what can be checked of Attention's operands with symbolic dims
// (ranks, head counts dividing hidden sizes, matching head dims, a mask
// that broadcasts to [B, Hq, Sq, Sk]) and gives the result type; the
// semantics are in ir/Ops.def and ir/AttentionSpec.h.
//
//===----------------------------------------------------------------------===//
#include "ir/DType.h"
#include "ir/ops/InferFunctions.h"
#include "ir/ops/InferUtils.h"

namespace solder {
namespace infer {

namespace {
/// Two dims that are both static and differ.
bool conflict(const Dim &A, const Dim &B) {
  return A.isStatic() && B.isStatic() && A.size() != B.size();
}

/// Hidden / Heads when Hidden is static, else unknown; nullopt when Heads
/// does not divide it.
std::optional<Dim> perHead(const Dim &Hidden, int64_t Heads) {
  if (!Hidden.isStatic())
    return Dim::unknown();
  if (Hidden.size() % Heads)
    return std::nullopt;
  return Dim(Hidden.size() / Heads);
}
} // namespace

llvm::Error attention(InferContext &C) {
  const TensorType &Q = C.operandType(0), &K = C.operandType(1),
                   &V = C.operandType(2);
  if (!isFloat(Q.Elem) || K.Elem != Q.Elem || V.Elem != Q.Elem)
    return C.error("Q, K and V must have one float type, got " +
                   typeToString(Q) + ", " + typeToString(K) + ", " +
                   typeToString(V));
  if (Q.rank() != K.rank() || Q.rank() != V.rank() ||
      (Q.rank() != 3 && Q.rank() != 4))
    return C.error("Q, K and V must all be 3-D or all 4-D, got " +
                   typeToString(Q) + ", " + typeToString(K) + ", " +
                   typeToString(V));
  int64_t QHeads = C.attrs().getInt("q_num_heads", 0);
  int64_t KvHeads = C.attrs().getInt("kv_num_heads", 0);
  bool ThreeD = Q.rank() == 3;
  // [B, Hq, Sq, D] etc. in the 4-D form; recovered from hidden sizes in
  // the 3-D form.
  Dim B = Q.Dims[0], Hq, Hkv, Sq, Sk, D, Dk, Dv, SkV;
  if (ThreeD) {
    if (QHeads <= 0 || KvHeads <= 0)
      return C.error("3-D Q, K and V need q_num_heads and kv_num_heads");
    Hq = Dim(QHeads);
    Hkv = Dim(KvHeads);
    Sq = Q.Dims[1];
    Sk = K.Dims[1];
    SkV = V.Dims[1];
    auto QD = perHead(Q.Dims[2], QHeads), KD = perHead(K.Dims[2], KvHeads),
         VD = perHead(V.Dims[2], KvHeads);
    if (!QD || !KD || !VD)
      return C.error("hidden sizes " + typeToString(Q) + ", " +
                     typeToString(K) + ", " + typeToString(V) +
                     " do not split into " + llvm::Twine(QHeads) + " and " +
                     llvm::Twine(KvHeads) + " heads");
    D = *QD;
    Dk = *KD;
    Dv = *VD;
  } else {
    Hq = Q.Dims[1];
    Hkv = K.Dims[1];
    Sq = Q.Dims[2];
    Sk = K.Dims[2];
    SkV = V.Dims[2];
    D = Q.Dims[3];
    Dk = K.Dims[3];
    Dv = V.Dims[3];
    if (conflict(K.Dims[1], V.Dims[1]))
      return C.error("K and V have different head counts: " + typeToString(K) +
                     ", " + typeToString(V));
  }
  if (conflict(B, K.Dims[0]) || conflict(B, V.Dims[0]))
    return C.error("Q, K and V have different batch sizes");
  if (conflict(D, Dk))
    return C.error("Q and K have different head sizes: " + typeToString(Q) +
                   ", " + typeToString(K));
  if (conflict(Sk, SkV))
    return C.error("K and V have different sequence lengths: " +
                   typeToString(K) + ", " + typeToString(V));
  if (Hq.isStatic() && Hkv.isStatic() &&
      (Hkv.size() == 0 || Hq.size() % Hkv.size()))
    return C.error("the query heads (" + llvm::Twine(Hq.size()) +
                   ") are not a multiple of the key/value heads (" +
                   llvm::Twine(Hkv.size()) + ")");
  if (C.hasOperand(3)) {
    const TensorType &M = C.operandType(3);
    // An f32 mask with reduced Q: fp16 plans keep the additive mask's
    // -3.4e38 in fp32 (precision-conversion), the kernel adds in fp32.
    if (M.Elem != DType::Bool && M.Elem != Q.Elem && M.Elem != DType::F32)
      return C.error("the mask must be bool, f32 or Q's type " +
                     dtypeName(Q.Elem) + ", got " + typeToString(M));
    const Dim Full[4] = {B, Hq, Sq, Sk};
    bool Fits = M.rank() <= 4;
    for (unsigned I = 0; Fits && I < M.rank(); ++I) {
      const Dim &MD = M.Dims[M.rank() - 1 - I];
      const Dim &T = Full[3 - I];
      Fits = !(MD.isStatic() && MD.size() != 1 && conflict(MD, T));
    }
    if (!Fits)
      return C.error("the mask " + typeToString(M) +
                     " does not broadcast to [batch, heads, q_len, kv_len]");
  }
  Shape Out;
  if (ThreeD) {
    Dim Hidden = Dv.isStatic() ? Dim(QHeads * Dv.size()) : Dim::unknown();
    Out = {B, Sq, Hidden};
  } else {
    Out = {B, Hq, Sq, Dv};
  }
  C.setResultType(0, TensorType(Q.Elem, Out));
  return llvm::Error::success();
}

} // namespace infer
} // namespace solder
