//===- StridedView.cpp - Tensors as strided views of a buffer -------------===//
#include "ir/StridedView.h"
#include "ir/Layout.h"
#include <algorithm>
#include <numeric>

namespace solder {

namespace {

using llvm::ArrayRef;
using llvm::SmallVector;

int64_t product(ArrayRef<int64_t> D) {
  return std::accumulate(D.begin(), D.end(), int64_t(1),
                         std::multiplies<int64_t>());
}

bool isReshapeLike(OpKind K) {
  return K == OpKind::Reshape || K == OpKind::Flatten || K == OpKind::Squeeze ||
         K == OpKind::Unsqueeze;
}

bool validPerm(ArrayRef<int64_t> Perm, unsigned Rank) {
  if (Perm.size() != Rank)
    return false;
  SmallVector<bool, 6> Seen(Rank, false);
  for (int64_t P : Perm) {
    if (P < 0 || P >= int64_t(Rank) || Seen[P])
      return false;
    Seen[P] = true;
  }
  return true;
}

/// Start and step per dim of a Slice's operand (start 0, step 1 for dims it
/// does not slice), checked against its result dims.
struct SliceDim {
  int64_t Start = 0, Step = 1;
};
std::optional<SmallVector<SliceDim, 6>> sliceDims(const Node &N) {
  const Value *X = N.operand(0), *Y = N.result(0);
  if (!X || !Y || !X->type().isStatic() || !Y->type().isStatic())
    return std::nullopt;
  auto XD = X->type().staticDims(), YD = Y->type().staticDims();
  auto Ints = [&](unsigned I) -> std::optional<SmallVector<int64_t, 6>> {
    if (I >= N.numOperands() || !N.operand(I))
      return SmallVector<int64_t, 6>();
    const Tensor *T = N.operand(I)->constant();
    if (!T)
      return std::nullopt;
    auto V = T->toInt64Vector();
    return SmallVector<int64_t, 6>(V.begin(), V.end());
  };
  auto Starts = Ints(1), Ends = Ints(2), Axes = Ints(3), Steps = Ints(4);
  if (!Starts || !Ends || !Axes || !Steps || Starts->size() != Ends->size())
    return std::nullopt;
  if (Axes->empty())
    for (size_t I = 0; I < Starts->size(); ++I)
      Axes->push_back(I);
  if (Steps->empty())
    Steps->assign(Starts->size(), 1);
  if (Axes->size() != Starts->size() || Steps->size() != Starts->size())
    return std::nullopt;
  SmallVector<SliceDim, 6> Out(XD.size());
  for (size_t I = 0; I < Axes->size(); ++I) {
    int64_t A = (*Axes)[I] < 0 ? (*Axes)[I] + int64_t(XD.size()) : (*Axes)[I];
    int64_t Step = (*Steps)[I];
    if (A < 0 || A >= int64_t(XD.size()) || Step <= 0)
      return std::nullopt;
    int64_t D = XD[A];
    auto Clamp = [&](int64_t V) {
      if (V < 0)
        V += D;
      return std::clamp<int64_t>(V, 0, D);
    };
    Out[A].Start = Clamp((*Starts)[I]);
    Out[A].Step = Step;
  }
  // The result dims are shape inference's; the view must agree with them.
  for (size_t A = 0; A < XD.size(); ++A)
    if (YD[A] > 0 && Out[A].Start + (YD[A] - 1) * Out[A].Step >= XD[A])
      return std::nullopt;
  return Out;
}

} // namespace

StridedView StridedView::contiguous(ArrayRef<int64_t> Dims) {
  StridedView V;
  V.Dims.assign(Dims.begin(), Dims.end());
  V.Strides.assign(Dims.size(), 1);
  for (size_t I = Dims.size(); I-- > 1;)
    V.Strides[I - 1] = V.Strides[I] * std::max<int64_t>(Dims[I], 1);
  return V;
}

std::optional<StridedView> reshapeView(const StridedView &V,
                                       ArrayRef<int64_t> NewDims) {
  int64_t Total = product(V.Dims);
  if (Total <= 0 || Total != product(NewDims))
    return std::nullopt;
  // Size-1 dims carry no layout: match the others run by run.
  SmallVector<size_t, 6> In, Out;
  for (size_t I = 0; I < V.Dims.size(); ++I)
    if (V.Dims[I] != 1)
      In.push_back(I);
  for (size_t J = 0; J < NewDims.size(); ++J)
    if (NewDims[J] != 1)
      Out.push_back(J);
  StridedView R;
  R.Offset = V.Offset;
  R.Dims.assign(NewDims.begin(), NewDims.end());
  R.Strides.assign(NewDims.size(), 0);
  size_t I = 0, J = 0;
  while (I < In.size() && J < Out.size()) {
    size_t GI = I, GJ = J;
    int64_t PIn = V.Dims[In[I++]], POut = NewDims[Out[J++]];
    while (PIn != POut) {
      if (PIn < POut) {
        if (I == In.size())
          return std::nullopt;
        PIn *= V.Dims[In[I++]];
      } else {
        if (J == Out.size())
          return std::nullopt;
        POut *= NewDims[Out[J++]];
      }
    }
    // The input run must be one contiguous block to be re-split.
    for (size_t K = GI; K + 1 < I; ++K)
      if (V.Strides[In[K]] != V.Strides[In[K + 1]] * V.Dims[In[K + 1]])
        return std::nullopt;
    int64_t S = V.Strides[In[I - 1]];
    for (size_t K = J; K-- > GJ;) {
      R.Strides[Out[K]] = S;
      S *= NewDims[Out[K]];
    }
  }
  if (I != In.size() || J != Out.size())
    return std::nullopt;
  // Size-1 dims get the stride a contiguous layout would give them.
  int64_t Natural = 1;
  for (size_t K = NewDims.size(); K-- > 0;) {
    if (NewDims[K] != 1)
      Natural = R.Strides[K] * NewDims[K];
    else
      R.Strides[K] = Natural;
  }
  return R;
}

bool isStridedViewOp(const Node &N) {
  OpKind K = N.kind();
  if (!isReshapeLike(K) && K != OpKind::Transpose && K != OpKind::Slice)
    return false;
  if (N.numResults() != 1 || !N.result(0) || !N.operand(0) ||
      !N.result(0)->type().isStatic() || !N.operand(0)->type().isStatic())
    return false;
  if (K == OpKind::Transpose)
    return validPerm(transposePerm(N, N.operand(0)->type().rank()),
                     N.operand(0)->type().rank());
  if (K == OpKind::Slice)
    return sliceDims(N).has_value();
  return true;
}

std::optional<StridedView> viewOfResult(const Node &N,
                                        const StridedView &Operand) {
  if (!isStridedViewOp(N))
    return std::nullopt;
  auto YD = N.result(0)->type().staticDims();
  if (isReshapeLike(N.kind()))
    return reshapeView(Operand, YD);
  StridedView R;
  R.Offset = Operand.Offset;
  if (N.kind() == OpKind::Transpose) {
    for (int64_t P : transposePerm(N, Operand.Dims.size())) {
      R.Dims.push_back(Operand.Dims[P]);
      R.Strides.push_back(Operand.Strides[P]);
    }
    return R;
  }
  auto SD = sliceDims(N);
  if (!SD || SD->size() != Operand.Dims.size())
    return std::nullopt;
  R.Dims.assign(YD.begin(), YD.end());
  for (size_t A = 0; A < SD->size(); ++A) {
    R.Offset += (*SD)[A].Start * Operand.Strides[A];
    R.Strides.push_back(Operand.Strides[A] * (*SD)[A].Step);
  }
  return R;
}

std::optional<StridedView> viewOfOperand(const Node &N,
                                         const StridedView &Result) {
  if (!isStridedViewOp(N) || N.kind() == OpKind::Slice)
    return std::nullopt;
  auto XD = N.operand(0)->type().staticDims();
  if (isReshapeLike(N.kind()))
    return reshapeView(Result, XD);
  auto Perm = transposePerm(N, XD.size());
  StridedView O;
  O.Offset = Result.Offset;
  O.Dims.assign(XD.size(), 0);
  O.Strides.assign(XD.size(), 0);
  for (size_t I = 0; I < Perm.size(); ++I) {
    O.Dims[Perm[I]] = Result.Dims[I];
    O.Strides[Perm[I]] = Result.Strides[I];
  }
  return O;
}

namespace {

/// A row-major [Rows, Cols] matrix with strides (SR, SC), as cuBLASLt's
/// column-major operand: either [Cols, Rows] with ld SR (not transposed,
/// needs unit SC) or [Rows, Cols] with ld SC (transposed, needs unit SR).
struct ColMajor {
  bool Transposed = false;
  int64_t Ld = 0;
};
std::optional<ColMajor> asColMajor(int64_t Rows, int64_t Cols, int64_t SR,
                                   int64_t SC) {
  if (Cols == 1 || SC == 1) {
    int64_t Ld = Rows == 1 ? Cols : SR;
    if (Ld >= Cols && Ld > 0)
      return ColMajor{false, Ld};
  }
  if (Rows == 1 || SR == 1) {
    int64_t Ld = Cols == 1 ? Rows : SC;
    if (Ld >= Rows && Ld > 0)
      return ColMajor{true, Ld};
  }
  return std::nullopt;
}

/// Batch strides of V against D's batch dims (broadcast dims get 0).
std::optional<SmallVector<int64_t, 4>> batchStrides(const StridedView &V,
                                                    ArrayRef<int64_t> Batch) {
  size_t R = V.Dims.size() - 2;
  if (R > Batch.size())
    return std::nullopt;
  SmallVector<int64_t, 4> S(Batch.size(), 0);
  for (size_t T = Batch.size() - R, I = 0; I < R; ++I, ++T) {
    if (V.Dims[I] == Batch[T])
      S[T] = Batch[T] == 1 ? 0 : V.Strides[I];
    else if (V.Dims[I] != 1)
      return std::nullopt;
  }
  return S;
}

/// Whether dims with these strides (outer first) form one evenly strided
/// run, ignoring size-1 dims; Inner gets the innermost stride.
bool mergeable(ArrayRef<int64_t> Dims, ArrayRef<int64_t> Strides,
               int64_t &Inner) {
  int64_t Prev = -1;
  for (size_t I = Dims.size(); I-- > 0;) {
    if (Dims[I] == 1)
      continue;
    if (Prev >= 0 && Strides[I] != Strides[Prev] * Dims[Prev])
      return false;
    if (Prev < 0)
      Inner = Strides[I];
    Prev = I;
  }
  return true;
}

} // namespace

std::optional<GemmGeometry> matmulGeometry(const StridedView &A,
                                           const StridedView &B,
                                           const StridedView &D) {
  if (A.Dims.size() < 2 || B.Dims.size() < 2 || D.Dims.size() < 2)
    return std::nullopt;
  for (const StridedView *V : {&A, &B, &D})
    for (int64_t S : V->Strides)
      if (S < 0)
        return std::nullopt;
  size_t RA = A.Dims.size() - 2, RB = B.Dims.size() - 2, RD = D.Dims.size() - 2;
  int64_t M = D.Dims[RD], N = D.Dims[RD + 1], K = A.Dims[RA + 1];
  if (A.Dims[RA] != M || B.Dims[RB] != K || B.Dims[RB + 1] != N || M <= 0 ||
      N <= 0 || K <= 0)
    return std::nullopt;
  ArrayRef<int64_t> Batch = ArrayRef<int64_t>(D.Dims).take_front(RD);
  auto SA = batchStrides(A, Batch), SB = batchStrides(B, Batch);
  if (!SA || !SB)
    return std::nullopt;
  SmallVector<int64_t, 4> SD(D.Strides.begin(), D.Strides.begin() + RD);

  GemmGeometry G;
  G.M = N;
  G.K = K;
  G.OffsetA = B.Offset;
  G.OffsetB = A.Offset;
  G.OffsetD = D.Offset;
  // cuBLASLt's A is our B [K, N]; its B is our A [M, K]; D is [M, N].
  auto CA = asColMajor(K, N, B.Strides[RB], B.Strides[RB + 1]);
  auto CB = asColMajor(M, K, A.Strides[RA], A.Strides[RA + 1]);
  auto CD = asColMajor(M, N, D.Strides[RD], D.Strides[RD + 1]);
  if (!CA || !CB || !CD || CD->Transposed)
    return std::nullopt;
  G.TransA = CA->Transposed;
  G.TransB = CB->Transposed;
  G.Lda = CA->Ld;
  G.Ldb = CB->Ld;
  G.Ldd = CD->Ld;
  G.N = M;

  int64_t BatchCount = 1;
  for (int64_t X : Batch)
    BatchCount *= X;
  // B shared by every batch and A, D row-major with rows evenly strided
  // across batches: one GEMM with Batch * M rows.
  bool BShared = llvm::all_of(*SB, [](int64_t S) { return S == 0; });
  if (BatchCount > 1 && BShared && !G.TransB) {
    SmallVector<int64_t, 6> Dims(Batch.begin(), Batch.end());
    Dims.push_back(M);
    SmallVector<int64_t, 6> StA(SA->begin(), SA->end()),
        StD(SD.begin(), SD.end());
    StA.push_back(A.Strides[RA]);
    StD.push_back(D.Strides[RD]);
    int64_t LdA = G.Ldb, LdD = G.Ldd;
    if (mergeable(Dims, StA, LdA) && mergeable(Dims, StD, LdD) && LdA >= K &&
        LdD >= N && llvm::all_of(*SA, [](int64_t S) { return S != 0; })) {
      G.N = M * BatchCount;
      G.Ldb = LdA;
      G.Ldd = LdD;
      return G;
    }
  }
  // Collapse the batch dims that step evenly in every operand.
  struct Dim {
    int64_t Size, A, B, D;
  };
  SmallVector<Dim, 4> Dims;
  for (size_t T = 0; T < Batch.size(); ++T) {
    if (Batch[T] == 1)
      continue;
    Dim X{Batch[T], (*SB)[T], (*SA)[T], SD[T]}; // cuBLASLt's A is our B
    if (!Dims.empty()) {
      Dim &P = Dims.back();
      if (P.A == X.A * X.Size && P.B == X.B * X.Size && P.D == X.D * X.Size) {
        P = Dim{P.Size * X.Size, X.A, X.B, X.D};
        continue;
      }
    }
    Dims.push_back(X);
  }
  G.Batch = BatchCount;
  if (Dims.size() <= 1) {
    if (!Dims.empty()) {
      G.StrideA = Dims[0].A;
      G.StrideB = Dims[0].B;
      G.StrideD = Dims[0].D;
    }
    return G;
  }
  for (const Dim &X : Dims) {
    G.BatchDims.push_back(X.Size);
    G.BatchStrideA.push_back(X.A);
    G.BatchStrideB.push_back(X.B);
    G.BatchStrideD.push_back(X.D);
  }
  return G;
}

} // namespace solder
