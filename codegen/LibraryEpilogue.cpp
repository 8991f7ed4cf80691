//===- LibraryEpilogue.cpp - What a library call absorbs of a group -------===//
//
// Walks the chain after the anchor and absorbs nodes while the library's
// fixed formula (see the header) can still express them, in the order the
// library applies them. The first node it cannot take ends the prefix:
// everything from there on is the rest kernel's.
//
//===----------------------------------------------------------------------===//
#include "codegen/LibraryEpilogue.h"
#include "ir/Layout.h"
#include "ir/OpRegistry.h"
#include "ir/StridedView.h"
#include "ir/Tensor.h"
#include <cstdio>

namespace solder {

namespace {

enum class Library : uint8_t { CublasLt, CudnnConv, CudnnConvTranspose };

bool epilogueDType(DType T) {
  return T == DType::F32 || T == DType::F16 || T == DType::BF16;
}

/// Static dims of V, or empty with Ok false.
bool staticDims(const Value *V, llvm::SmallVectorImpl<int64_t> &Dims) {
  if (!V->type().isStatic())
    return false;
  Dims = V->type().staticDims();
  return true;
}

/// V broadcasts along every dim of Result except Axis (counted in Result's
/// dims), where it has Result's extent; V's rank may be lower (aligned
/// right) but must still cover Axis.
bool isAxisVector(const Value *V, const Value *Result, unsigned Axis) {
  llvm::SmallVector<int64_t, 4> VD, RD;
  if (!staticDims(V, VD) || !staticDims(Result, RD) || VD.size() > RD.size())
    return false;
  size_t Lead = RD.size() - VD.size();
  if (Axis < Lead)
    return false;
  for (size_t I = 0; I < VD.size(); ++I) {
    int64_t Want = Lead + I == Axis ? RD[Axis] : 1;
    if (VD[I] != Want)
      return false;
  }
  return true;
}

/// The operand of binary node X that is not Prev, or null when X does not
/// read Prev exactly once.
const Value *otherOperand(const Node &X, const Value *Prev) {
  if (X.numOperands() != 2)
    return nullptr;
  bool First = X.operand(0) == Prev, Second = X.operand(1) == Prev;
  if (First == Second)
    return nullptr;
  const Value *O = First ? X.operand(1) : X.operand(0);
  // The library reads it from memory before the call: a group operand or a
  // constant, never a value the body computes.
  if (!O || O->producer())
    return nullptr;
  return O;
}

struct Matcher {
  const Node &Anchor;
  Library Lib;
  LibraryEpilogue &E;
  bool BiasFree = true, ResidualFree = true, CanScale = false;

  /// Whether X (consuming Prev, the value the library writes so far) can
  /// be folded in; updates E when so.
  bool absorb(const Node &X, const Value *Prev) {
    // The library writes one tensor of Prev's type: X must keep it.
    if (X.numResults() != 1 || !X.result(0) ||
        !(X.result(0)->type() == Prev->type()))
      return false;
    if (E.Activation != EpilogueActivation::None)
      return false; // nothing follows the activation
    switch (X.kind()) {
    case OpKind::Mul:
    case OpKind::Div:
      return absorbScale(X, Prev);
    case OpKind::Add:
      return absorbAdd(X, Prev);
    case OpKind::Relu:
      if (Lib == Library::CudnnConvTranspose)
        return false;
      E.Activation = EpilogueActivation::Relu;
      return true;
    case OpKind::Gelu: {
      if (Lib != Library::CublasLt)
        return false;
      // erf GELU in f16/bf16 takes cuBLASLt's tanh form: the two differ
      // by at most 4.7e-4 (at x = -2.70), less than f16's rounding of a
      // value near 1, so the result is that of the exact one rounded.
      DType T = Prev->dtype();
      if (X.attrs().getString("approximate", "none") != "tanh" &&
          T != DType::F16 && T != DType::BF16)
        return false;
      E.Activation = EpilogueActivation::GeluTanh;
      return true;
    }
    default:
      return false;
    }
  }

  bool absorbScale(const Node &X, const Value *Prev) {
    // alpha scales the product only: not once a bias or C is added.
    if (!CanScale || !E.Absorbed.empty())
      return false;
    const Value *O = otherOperand(X, Prev);
    if (!O)
      return false;
    std::optional<double> S = constScalar(O);
    if (!S)
      return false;
    if (X.kind() == OpKind::Div) {
      if (X.operand(0) != Prev || *S == 0)
        return false;
      E.Alpha *= float(1.0 / *S);
    } else {
      E.Alpha *= float(*S);
    }
    return true;
  }

  bool absorbAdd(const Node &X, const Value *Prev) {
    const Value *O = otherOperand(X, Prev);
    if (!O || O->dtype() != Prev->dtype())
      return false;
    unsigned Rank = Prev->type().rank();
    // Matmul: one value per column (the last dim); conv: per channel (dim 1,
    // or the last dim when NHWC).
    bool Vector = false;
    if (Lib == Library::CublasLt) {
      llvm::SmallVector<int64_t, 4> RD;
      Vector = Rank >= 1 && staticDims(Prev, RD) && RD.back() > 1 &&
               isAxisVector(O, Prev, Rank - 1);
    } else {
      Vector = Rank >= 3 && isAxisVector(O, Prev, channelAxis(Anchor));
    }
    if (Vector && BiasFree) {
      E.Bias = O;
      BiasFree = false;
      return true;
    }
    if (Lib == Library::CudnnConvTranspose || !ResidualFree)
      return false;
    llvm::SmallVector<int64_t, 4> OD;
    if (!(O->type() == Prev->type()) || !staticDims(O, OD))
      return false;
    E.Residual = O;
    ResidualFree = false;
    return true;
  }
};

std::string describe(const LibraryEpilogue &E, Library Lib) {
  const Node &A = *E.Anchor;
  bool Act = E.Activation != EpilogueActivation::None;
  if (Lib == Library::CublasLt) {
    bool Bias = E.Bias || (A.kind() == OpKind::Gemm && gemmCIsBiasVector(A));
    std::string S =
        A.kind() == OpKind::Gemm ? "cuBLASLt gemm" : "cuBLASLt matmul";
    if (E.Alpha != 1.0f) {
      char Buf[32];
      std::snprintf(Buf, sizeof(Buf), "%g", double(E.Alpha));
      S += std::string(" + alpha ") + Buf;
    }
    if (Bias || Act) {
      std::string Epi = E.Activation == EpilogueActivation::Relu       ? "RELU"
                        : E.Activation == EpilogueActivation::GeluTanh ? "GELU"
                                                                       : "";
      if (Bias)
        Epi += Epi.empty() ? "BIAS" : "_BIAS";
      S += " + " + Epi + " epilogue";
    }
    if (E.Residual)
      S += " + residual (beta C)";
    return S;
  }
  bool OwnBias = A.numOperands() > 2 && A.operand(2);
  if (Lib == Library::CudnnConvTranspose)
    return std::string("cuDNN conv-transpose") +
           (OwnBias || E.Bias ? " + bias kernel" : "");
  const char *Conv = isNhwc(A) ? "cuDNN conv NHWC" : "cuDNN conv";
  if (!OwnBias && !E.Bias && !E.Residual && !Act)
    return Conv;
  std::string S = std::string(Conv) + "+bias";
  if (E.Residual)
    S += "+residual";
  if (Act)
    S += "+ReLU";
  return S + " (cudnnConvolutionBiasActivationForward)";
}

} // namespace

bool gemmHasC(const Node &Gemm) {
  return Gemm.numOperands() > 2 && Gemm.operand(2) &&
         Gemm.attrs().getFloat("beta", 1.0f) != 0.0f;
}

bool gemmCIsBiasVector(const Node &Gemm) {
  if (!gemmHasC(Gemm) || Gemm.attrs().getFloat("beta", 1.0f) != 1.0f)
    return false;
  const Value *C = Gemm.operand(2), *Y = Gemm.result(0);
  if (Y->dtype() == DType::F64 || !C->type().isStatic() ||
      !Y->type().isStatic() || Y->type().rank() != 2)
    return false;
  auto CD = C->type().staticDims();
  int64_t N = Y->type().staticDims()[1];
  return N > 1 && ((CD.size() == 1 && CD[0] == N) ||
                   (CD.size() == 2 && CD[0] == 1 && CD[1] == N));
}

LibraryEpilogue matchLibraryEpilogue(const Node &Group) {
  LibraryEpilogue E;
  const Graph *Body = Group.body();
  if (!Body)
    return E;
  std::vector<const Node *> Nodes;
  for (const auto &N : Body->nodes())
    Nodes.push_back(N.get());
  // The anchor is the first contraction of the body, after nothing but
  // the layout ops a matmul reads through; anything else (a group the
  // fusion passes did not build) runs entirely in the rest.
  size_t AI = 0;
  while (AI < Nodes.size() && isStridedViewOp(*Nodes[AI]))
    ++AI;
  if (AI == Nodes.size() ||
      getOpInfo(Nodes[AI]->kind()).Fusion != FusionKind::Contraction ||
      (AI > 0 && Nodes[AI]->kind() != OpKind::MatMul)) {
    E.Rest = Nodes;
    E.Description = "?";
    return E;
  }
  E.Prologue.assign(Nodes.begin(), Nodes.begin() + AI);
  const Node &A = *Nodes[AI];
  E.Anchor = &A;
  E.LibraryResult = A.result(0);
  Library Lib = A.kind() == OpKind::Conv ? Library::CudnnConv
                : A.kind() == OpKind::ConvTranspose
                    ? Library::CudnnConvTranspose
                    : Library::CublasLt;
  Matcher M{A, Lib, E};
  bool OwnBias = A.numOperands() > 2 && A.operand(2);
  switch (A.kind()) {
  case OpKind::Gemm:
    M.CanScale = !gemmHasC(A);
    M.BiasFree = !gemmCIsBiasVector(A);
    M.ResidualFree = !gemmHasC(A) || gemmCIsBiasVector(A);
    break;
  case OpKind::MatMul:
    M.CanScale = true;
    break;
  default:
    M.BiasFree = !OwnBias;
    break;
  }
  size_t Next = AI + 1;
  if (epilogueDType(A.result(0)->dtype())) {
    for (; Next < Nodes.size(); ++Next) {
      const Value *Prev = E.LibraryResult;
      // Prev must feed only this node: the library writes the fused value,
      // never the intermediate.
      if (Prev->uses().size() != 1 || Body->isOutput(Prev) ||
          !M.absorb(*Nodes[Next], Prev))
        break;
      E.Absorbed.push_back(Nodes[Next]);
      E.LibraryResult = Nodes[Next]->result(0);
    }
  }
  E.Rest.assign(Nodes.begin() + Next, Nodes.end());
  // A matmul writes through trailing layout ops when they are all that is
  // left: a chain from the library's result to the group's result.
  // Not with a residual: cuBLASLt reads C in D's layout.
  if (A.kind() == OpKind::MatMul && !E.Rest.empty() && !E.Residual) {
    const Value *V = E.LibraryResult;
    bool Chain = true;
    for (const Node *N : E.Rest) {
      Chain = Chain && isStridedViewOp(*N) && N->kind() != OpKind::Slice &&
              N->operand(0) == V && V->uses().size() == 1 && !Body->isOutput(V);
      V = N->result(0);
    }
    if (Chain && Body->outputs().size() == 1 && Body->isOutput(V)) {
      E.ResultLayout = E.Rest;
      E.Rest.clear();
    }
  }
  E.Description = describe(E, Lib);
  return E;
}

} // namespace solder
