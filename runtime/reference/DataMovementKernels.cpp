//===- DataMovementKernels.cpp - Reference data-movement ops --------------===//
//
// Identity, Reshape, Flatten, Squeeze, Unsqueeze, Transpose, Concat, Split,
// Slice, Gather, GatherElements, Expand, Tile and Pad. They only move
// elements, so they work on every dtype by copying elements of the dtype's
// size. The view ops (Identity, Reshape, Flatten, Squeeze, Unsqueeze) share
// the input's storage. Transpose, Slice, Expand, Tile and Pad are one routine
// (copyMapped): per output axis, a table maps each output coordinate to an
// input offset (or to the pad value).
//
//===----------------------------------------------------------------------===//
#include "runtime/reference/Kernels.h"
#include <algorithm>
#include <cstring>
#include <vector>

namespace solder {
namespace ref {

namespace {

using Dims = llvm::SmallVector<int64_t, 6>;

int64_t product(llvm::ArrayRef<int64_t> D) {
  int64_t P = 1;
  for (int64_t X : D)
    P *= X;
  return P;
}

/// Maps Axis from [-Rank, Rank) into [0, Rank); false when out of range.
bool normalizeAxis(int64_t &Axis, int64_t Rank) {
  if (Axis < -Rank || Axis >= Rank)
    return false;
  if (Axis < 0)
    Axis += Rank;
  return true;
}

/// Row-major strides in elements.
Dims stridesOf(llvm::ArrayRef<int64_t> D) {
  Dims S(D.size(), 1);
  for (int I = int(D.size()) - 2; I >= 0; --I)
    S[I] = S[I + 1] * D[I + 1];
  return S;
}

llvm::Error checkSize(KernelContext &Ctx, llvm::ArrayRef<int64_t> D) {
  int64_t N = 1;
  for (int64_t X : D) {
    if (X < 0)
      return Ctx.error("negative dim " + llvm::Twine(X));
    if (X > MaxDimSize || (X && N > MaxElementCount / X))
      return Ctx.error("result too large");
    N *= X;
  }
  return llvm::Error::success();
}

/// Output element j along axis a comes from input offset Tables[a][j]
/// (summed over axes), or is Fill where any table entry is -1.
using OffsetTables = std::vector<std::vector<int64_t>>;

template <typename T>
void copyMappedTyped(const T *In, T *Out, const OffsetTables &Tables,
                     llvm::ArrayRef<int64_t> OutDims, T Fill) {
  unsigned R = OutDims.size();
  if (R == 0) {
    *Out = *In;
    return;
  }
  if (product(OutDims) == 0)
    return;
  Dims Idx(R, 0);
  const std::vector<int64_t> &Inner = Tables[R - 1];
  int64_t InnerN = OutDims[R - 1];
  while (true) {
    int64_t Base = 0;
    bool IsFill = false;
    for (unsigned A = 0; A + 1 < R; ++A) {
      int64_t O = Tables[A][Idx[A]];
      if (O < 0)
        IsFill = true;
      Base += O;
    }
    if (IsFill) {
      std::fill(Out, Out + InnerN, Fill);
    } else {
      const T *Src = In + Base;
      for (int64_t J = 0; J < InnerN; ++J)
        Out[J] = Inner[J] < 0 ? Fill : Src[Inner[J]];
    }
    Out += InnerN;
    int A = int(R) - 2;
    for (; A >= 0; --A) {
      if (++Idx[A] < OutDims[A])
        break;
      Idx[A] = 0;
    }
    if (A < 0)
      return;
  }
}

/// Builds the result of a table-driven copy; FillBytes (dtype-sized) is the
/// pad value, zero when null.
Tensor copyMapped(const Tensor &In, llvm::ArrayRef<int64_t> OutDims,
                  const OffsetTables &Tables, const void *FillBytes = nullptr) {
  Tensor Out(In.dtype(), OutDims);
  auto Run = [&](auto Zero) {
    using T = decltype(Zero);
    T Fill = Zero;
    if (FillBytes)
      std::memcpy(&Fill, FillBytes, sizeof(T));
    copyMappedTyped(In.data<T>(), Out.mutableData<T>(), Tables, OutDims, Fill);
  };
  bool Moved = withElementWord(In.dtype(), Run);
  assert(Moved && "unexpected element size");
  (void)Moved;
  return Out;
}

/// Axes operand values normalized against Rank, checked for duplicates.
llvm::Error readAxes(KernelContext &Ctx, const Tensor &AxesT, int64_t Rank,
                     llvm::SmallVectorImpl<int64_t> &Axes) {
  Axes.clear();
  for (int64_t A : AxesT.toInt64Vector()) {
    if (!normalizeAxis(A, Rank))
      return Ctx.error("axis " + llvm::Twine(A) + " out of range for rank " +
                       llvm::Twine(Rank));
    if (llvm::is_contained(Axes, A))
      return Ctx.error("axis " + llvm::Twine(A) + " repeated");
    Axes.push_back(A);
  }
  return llvm::Error::success();
}

} // namespace

llvm::Error evalIdentity(KernelContext &Ctx) {
  Ctx.Results[0] = *Ctx.in(0);
  return llvm::Error::success();
}

llvm::Error evalReshape(KernelContext &Ctx) {
  const Tensor &X = *Ctx.in(0);
  bool AllowZero = Ctx.attrs().getInt("allowzero", 0) != 0;
  Dims Shape;
  for (int64_t D : Ctx.in(1)->toInt64Vector())
    Shape.push_back(D);
  int Infer = -1;
  int64_t Known = 1;
  for (unsigned I = 0; I < Shape.size(); ++I) {
    if (Shape[I] == 0 && !AllowZero) {
      if (I >= X.rank())
        return Ctx.error("0 at index " + llvm::Twine(I) +
                         " copies a dim the input (rank " +
                         llvm::Twine(X.rank()) + ") lacks");
      Shape[I] = X.dims()[I];
    }
    if (Shape[I] == -1) {
      if (Infer >= 0)
        return Ctx.error("more than one -1 in the shape");
      Infer = I;
      continue;
    }
    if (Shape[I] < 0)
      return Ctx.error("invalid dim " + llvm::Twine(Shape[I]));
    Known *= Shape[I];
  }
  int64_t Total = X.numElements();
  if (Infer >= 0) {
    if (Known == 0 || Total % Known)
      return Ctx.error("cannot infer the -1 dim: " + llvm::Twine(Total) +
                       " elements into blocks of " + llvm::Twine(Known));
    Shape[Infer] = Total / Known;
  } else if (Known != Total) {
    return Ctx.error("shape has " + llvm::Twine(Known) +
                     " elements, input has " + llvm::Twine(Total));
  }
  Ctx.Results[0] = X.reshaped(Shape);
  return llvm::Error::success();
}

llvm::Error evalFlatten(KernelContext &Ctx) {
  const Tensor &X = *Ctx.in(0);
  int64_t Axis = Ctx.attrs().getInt("axis", 1), R = X.rank();
  if (Axis < -R || Axis > R)
    return Ctx.error("axis " + llvm::Twine(Axis) + " out of range");
  if (Axis < 0)
    Axis += R;
  int64_t Outer = product(X.dims().take_front(Axis));
  int64_t Inner = product(X.dims().drop_front(Axis));
  Ctx.Results[0] = X.reshaped({Outer, Inner});
  return llvm::Error::success();
}

llvm::Error evalSqueeze(KernelContext &Ctx) {
  const Tensor &X = *Ctx.in(0);
  Dims Axes;
  if (const Tensor *A = Ctx.in(1)) {
    if (auto E = readAxes(Ctx, *A, X.rank(), Axes))
      return E;
    for (int64_t Ax : Axes)
      if (X.dims()[Ax] != 1)
        return Ctx.error("cannot squeeze axis " + llvm::Twine(Ax) +
                         " of size " + llvm::Twine(X.dims()[Ax]));
  } else {
    for (unsigned I = 0; I < X.rank(); ++I)
      if (X.dims()[I] == 1)
        Axes.push_back(I);
  }
  Dims Out;
  for (unsigned I = 0; I < X.rank(); ++I)
    if (!llvm::is_contained(Axes, int64_t(I)))
      Out.push_back(X.dims()[I]);
  Ctx.Results[0] = X.reshaped(Out);
  return llvm::Error::success();
}

llvm::Error evalUnsqueeze(KernelContext &Ctx) {
  const Tensor &X = *Ctx.in(0);
  if (!Ctx.in(1))
    return Ctx.error("missing axes");
  int64_t OutRank = X.rank() + Ctx.in(1)->numElements();
  Dims Axes;
  if (auto E = readAxes(Ctx, *Ctx.in(1), OutRank, Axes))
    return E;
  Dims Out;
  unsigned Next = 0;
  for (int64_t I = 0; I < OutRank; ++I)
    Out.push_back(llvm::is_contained(Axes, I) ? 1 : X.dims()[Next++]);
  Ctx.Results[0] = X.reshaped(Out);
  return llvm::Error::success();
}

llvm::Error evalTranspose(KernelContext &Ctx) {
  const Tensor &X = *Ctx.in(0);
  unsigned R = X.rank();
  std::vector<int64_t> Perm = Ctx.attrs().getInts("perm");
  if (Perm.empty())
    for (unsigned I = 0; I < R; ++I)
      Perm.push_back(R - 1 - I);
  if (Perm.size() != R)
    return Ctx.error("perm has " + llvm::Twine(Perm.size()) +
                     " entries for rank " + llvm::Twine(R));
  std::vector<bool> Seen(R, false);
  for (int64_t &P : Perm) {
    if (!normalizeAxis(P, R) || Seen[P])
      return Ctx.error("perm is not a permutation");
    Seen[P] = true;
  }
  Dims Strides = stridesOf(X.dims()), Out;
  OffsetTables Tables;
  for (unsigned I = 0; I < R; ++I) {
    int64_t N = X.dims()[Perm[I]];
    Out.push_back(N);
    std::vector<int64_t> T(N);
    for (int64_t J = 0; J < N; ++J)
      T[J] = J * Strides[Perm[I]];
    Tables.push_back(std::move(T));
  }
  Ctx.Results[0] = copyMapped(X, Out, Tables);
  return llvm::Error::success();
}

llvm::Error evalConcat(KernelContext &Ctx) {
  if (Ctx.numIn() == 0 || !Ctx.in(0))
    return Ctx.error("no operands");
  const Tensor &First = *Ctx.in(0);
  int64_t R = First.rank(), Axis = Ctx.attrs().getInt("axis", 0);
  if (!normalizeAxis(Axis, R))
    return Ctx.error("axis out of range for rank " + llvm::Twine(R));
  Dims Out(First.dims().begin(), First.dims().end());
  Out[Axis] = 0;
  for (unsigned I = 0; I < Ctx.numIn(); ++I) {
    const Tensor *T = Ctx.in(I);
    if (!T || T->rank() != R || T->dtype() != First.dtype())
      return Ctx.error("operand " + llvm::Twine(I) +
                       " is missing or differs in rank or dtype");
    for (int64_t D = 0; D < R; ++D)
      if (D != Axis && T->dims()[D] != First.dims()[D])
        return Ctx.error("operand " + llvm::Twine(I) + " differs in dim " +
                         llvm::Twine(D));
    Out[Axis] += T->dims()[Axis];
  }
  Tensor Y(First.dtype(), Out);
  size_t ES = dtypeSize(First.dtype());
  int64_t Outer = product(llvm::ArrayRef<int64_t>(Out).take_front(Axis));
  int64_t Inner = product(llvm::ArrayRef<int64_t>(Out).drop_front(Axis + 1));
  size_t OutRow = size_t(Out[Axis] * Inner) * ES;
  char *Dst = static_cast<char *>(Y.mutableRawData());
  size_t Col = 0;
  for (unsigned I = 0; I < Ctx.numIn(); ++I) {
    const Tensor &T = *Ctx.in(I);
    size_t Row = size_t(T.dims()[Axis] * Inner) * ES;
    const char *Src = static_cast<const char *>(T.rawData());
    for (int64_t O = 0; O < Outer && Row; ++O)
      std::memcpy(Dst + O * OutRow + Col, Src + O * Row, Row);
    Col += Row;
  }
  Ctx.Results[0] = std::move(Y);
  return llvm::Error::success();
}

llvm::Error evalSplit(KernelContext &Ctx) {
  const Tensor &X = *Ctx.in(0);
  int64_t R = X.rank(), Axis = Ctx.attrs().getInt("axis", 0);
  if (!normalizeAxis(Axis, R))
    return Ctx.error("axis out of range for rank " + llvm::Twine(R));
  int64_t Dim = X.dims()[Axis];
  unsigned NOut = Ctx.Results.size();
  Dims Sizes;
  if (const Tensor *S = Ctx.in(1)) {
    for (int64_t V : S->toInt64Vector())
      Sizes.push_back(V);
  } else if (Ctx.attrs().has("num_outputs")) {
    int64_t Num = Ctx.attrs().getInt("num_outputs", 0);
    if (Num < 1)
      return Ctx.error("num_outputs must be positive");
    // ceil(dim / num) per chunk, the last one smaller.
    int64_t Chunk = (Dim + Num - 1) / Num, Left = Dim;
    for (int64_t I = 0; I < Num; ++I) {
      Sizes.push_back(std::min(Chunk, Left));
      Left -= Sizes.back();
    }
  } else {
    if (NOut == 0 || Dim % NOut)
      return Ctx.error("dim " + llvm::Twine(Dim) + " does not split into " +
                       llvm::Twine(NOut) + " equal parts");
    Sizes.assign(NOut, Dim / NOut);
  }
  if (Sizes.size() != NOut)
    return Ctx.error("split gives " + llvm::Twine(Sizes.size()) +
                     " parts for " + llvm::Twine(NOut) + " results");
  int64_t Sum = 0;
  for (int64_t S : Sizes) {
    if (S < 0)
      return Ctx.error("negative split size");
    Sum += S;
  }
  if (Sum != Dim)
    return Ctx.error("split sizes sum to " + llvm::Twine(Sum) +
                     ", the axis has " + llvm::Twine(Dim));
  size_t ES = dtypeSize(X.dtype());
  int64_t Outer = product(X.dims().take_front(Axis));
  int64_t Inner = product(X.dims().drop_front(Axis + 1));
  size_t InRow = size_t(Dim * Inner) * ES, Col = 0;
  const char *Src = static_cast<const char *>(X.rawData());
  for (unsigned I = 0; I < NOut; ++I) {
    Dims Out(X.dims().begin(), X.dims().end());
    Out[Axis] = Sizes[I];
    Tensor Y(X.dtype(), Out);
    size_t Row = size_t(Sizes[I] * Inner) * ES;
    char *Dst = static_cast<char *>(Y.mutableRawData());
    for (int64_t O = 0; O < Outer && Row; ++O)
      std::memcpy(Dst + O * Row, Src + O * InRow + Col, Row);
    Col += Row;
    Ctx.Results[I] = std::move(Y);
  }
  return llvm::Error::success();
}

llvm::Error evalSlice(KernelContext &Ctx) {
  const Tensor &X = *Ctx.in(0);
  int64_t R = X.rank();
  auto Starts = Ctx.in(1)->toInt64Vector(), Ends = Ctx.in(2)->toInt64Vector();
  size_t N = Starts.size();
  if (Ends.size() != N)
    return Ctx.error("starts and ends differ in length");
  Dims Axes;
  if (const Tensor *A = Ctx.in(3)) {
    if (auto E = readAxes(Ctx, *A, R, Axes))
      return E;
  } else {
    for (size_t I = 0; I < N; ++I)
      Axes.push_back(I);
  }
  llvm::SmallVector<int64_t, 8> Steps(N, 1);
  if (const Tensor *S = Ctx.in(4))
    Steps = S->toInt64Vector();
  if (Axes.size() != N || Steps.size() != N)
    return Ctx.error("starts, ends, axes and steps differ in length");
  Dims Start(R, 0), Step(R, 1), Out(X.dims().begin(), X.dims().end());
  for (size_t I = 0; I < N; ++I) {
    int64_t A = Axes[I], Dim = X.dims()[A], St = Steps[I];
    if (St == 0)
      return Ctx.error("step 0 on axis " + llvm::Twine(A));
    int64_t S = Starts[I], E = Ends[I];
    if (S < 0)
      S += Dim;
    if (E < 0)
      E += Dim;
    if (St > 0) {
      S = std::clamp<int64_t>(S, 0, Dim);
      E = std::clamp<int64_t>(E, 0, Dim);
      Out[A] = E > S ? (E - S + St - 1) / St : 0;
    } else {
      S = std::clamp<int64_t>(S, 0, Dim - 1);
      E = std::clamp<int64_t>(E, -1, Dim - 1);
      Out[A] = S > E ? (S - E - St - 1) / -St : 0;
    }
    Start[A] = S;
    Step[A] = St;
  }
  Dims Strides = stridesOf(X.dims());
  OffsetTables Tables(R);
  for (int64_t A = 0; A < R; ++A)
    for (int64_t J = 0; J < Out[A]; ++J)
      Tables[A].push_back((Start[A] + J * Step[A]) * Strides[A]);
  Ctx.Results[0] = copyMapped(X, Out, Tables);
  return llvm::Error::success();
}

llvm::Error evalGather(KernelContext &Ctx) {
  const Tensor &X = *Ctx.in(0), &Idx = *Ctx.in(1);
  int64_t R = X.rank(), Axis = Ctx.attrs().getInt("axis", 0);
  if (!normalizeAxis(Axis, R))
    return Ctx.error("axis out of range for rank " + llvm::Twine(R));
  int64_t Dim = X.dims()[Axis];
  Dims Out(X.dims().begin(), X.dims().begin() + Axis);
  Out.append(Idx.dims().begin(), Idx.dims().end());
  Out.append(X.dims().begin() + Axis + 1, X.dims().end());
  Tensor Y(X.dtype(), Out);
  size_t ES = dtypeSize(X.dtype());
  int64_t Outer = product(X.dims().take_front(Axis));
  size_t Row = size_t(product(X.dims().drop_front(Axis + 1))) * ES;
  int64_t NIdx = Idx.numElements();
  const char *Src = static_cast<const char *>(X.rawData());
  char *Dst = static_cast<char *>(Y.mutableRawData());
  for (int64_t J = 0; J < NIdx; ++J) {
    int64_t I = Idx.getInt64(J);
    if (I < -Dim || I >= Dim)
      return Ctx.error("index " + llvm::Twine(I) + " out of range [" +
                       llvm::Twine(-Dim) + ", " + llvm::Twine(Dim) + ")");
    if (I < 0)
      I += Dim;
    for (int64_t O = 0; O < Outer; ++O)
      std::memcpy(Dst + (O * NIdx + J) * Row, Src + (O * Dim + I) * Row, Row);
  }
  Ctx.Results[0] = std::move(Y);
  return llvm::Error::success();
}

llvm::Error evalGatherElements(KernelContext &Ctx) {
  const Tensor &X = *Ctx.in(0), &Idx = *Ctx.in(1);
  int64_t R = X.rank(), Axis = Ctx.attrs().getInt("axis", 0);
  if (!normalizeAxis(Axis, R))
    return Ctx.error("axis out of range for rank " + llvm::Twine(R));
  if (Idx.rank() != R)
    return Ctx.error("indices rank differs from data rank");
  for (int64_t D = 0; D < R; ++D)
    if (D != Axis && Idx.dims()[D] > X.dims()[D])
      return Ctx.error("indices dim " + llvm::Twine(D) +
                       " exceeds the data dim");
  int64_t Dim = X.dims()[Axis];
  Dims XS = stridesOf(X.dims());
  Tensor Y(X.dtype(), Idx.dims());
  size_t ES = dtypeSize(X.dtype());
  const char *Src = static_cast<const char *>(X.rawData());
  char *Dst = static_cast<char *>(Y.mutableRawData());
  Dims Pos(R, 0);
  for (int64_t J = 0, E = Idx.numElements(); J < E; ++J) {
    int64_t I = Idx.getInt64(J);
    if (I < -Dim || I >= Dim)
      return Ctx.error("index " + llvm::Twine(I) + " out of range [" +
                       llvm::Twine(-Dim) + ", " + llvm::Twine(Dim) + ")");
    if (I < 0)
      I += Dim;
    int64_t Off = 0;
    for (int64_t D = 0; D < R; ++D)
      Off += (D == Axis ? I : Pos[D]) * XS[D];
    std::memcpy(Dst + J * ES, Src + Off * ES, ES);
    for (int64_t D = R - 1; D >= 0; --D) {
      if (++Pos[D] < Idx.dims()[D])
        break;
      Pos[D] = 0;
    }
  }
  Ctx.Results[0] = std::move(Y);
  return llvm::Error::success();
}

namespace {

/// Tables reading X broadcast (or tiled, when Tile) to Out; X's dims are
/// right-aligned with Out's.
OffsetTables broadcastTables(llvm::ArrayRef<int64_t> XDims,
                             llvm::ArrayRef<int64_t> Out, bool Tile) {
  Dims XS = stridesOf(XDims);
  size_t Lead = Out.size() - XDims.size();
  OffsetTables Tables(Out.size());
  for (size_t A = 0; A < Out.size(); ++A) {
    Tables[A].resize(Out[A], 0);
    if (A < Lead)
      continue;
    int64_t N = XDims[A - Lead], S = XS[A - Lead];
    for (int64_t J = 0; J < Out[A]; ++J)
      Tables[A][J] = (Tile ? J % N : (N == 1 ? 0 : J)) * S;
  }
  return Tables;
}

} // namespace

llvm::Error evalExpand(KernelContext &Ctx) {
  const Tensor &X = *Ctx.in(0);
  auto Shape = Ctx.in(1)->toInt64Vector();
  size_t R = std::max<size_t>(Shape.size(), X.rank());
  Dims Out(R, 1);
  for (size_t I = 0; I < R; ++I) {
    int64_t A = I < X.rank() ? X.dims()[X.rank() - 1 - I] : 1;
    int64_t B = I < Shape.size() ? Shape[Shape.size() - 1 - I] : 1;
    if (A != B && A != 1 && B != 1)
      return Ctx.error("shape dim " + llvm::Twine(B) +
                       " does not broadcast with input dim " + llvm::Twine(A));
    Out[R - 1 - I] = A == 1 ? B : A;
  }
  if (auto E = checkSize(Ctx, Out))
    return E;
  Ctx.Results[0] = copyMapped(X, Out, broadcastTables(X.dims(), Out, false));
  return llvm::Error::success();
}

llvm::Error evalTile(KernelContext &Ctx) {
  const Tensor &X = *Ctx.in(0);
  auto Repeats = Ctx.in(1)->toInt64Vector();
  if (Repeats.size() != X.rank())
    return Ctx.error("repeats has " + llvm::Twine(Repeats.size()) +
                     " entries for rank " + llvm::Twine(X.rank()));
  Dims Out;
  for (unsigned I = 0; I < X.rank(); ++I) {
    if (Repeats[I] < 0)
      return Ctx.error("negative repeat");
    Out.push_back(X.dims()[I] * Repeats[I]);
  }
  if (auto E = checkSize(Ctx, Out))
    return E;
  Ctx.Results[0] = copyMapped(X, Out, broadcastTables(X.dims(), Out, true));
  return llvm::Error::success();
}

llvm::Error evalPad(KernelContext &Ctx) {
  const Tensor &X = *Ctx.in(0);
  int64_t R = X.rank();
  auto Pads = Ctx.in(1)->toInt64Vector();
  Dims Axes;
  if (const Tensor *A = Ctx.in(3)) {
    if (auto E = readAxes(Ctx, *A, R, Axes))
      return E;
  } else {
    for (int64_t I = 0; I < R; ++I)
      Axes.push_back(I);
  }
  size_t NA = Axes.size();
  if (Pads.size() != 2 * NA)
    return Ctx.error("pads has " + llvm::Twine(Pads.size()) + " entries for " +
                     llvm::Twine(NA) + " axes");
  std::string Mode = Ctx.attrs().getString("mode", "constant");
  if (Mode != "constant" && Mode != "reflect" && Mode != "edge" &&
      Mode != "wrap")
    return Ctx.error("unknown mode '" + Mode + "'");
  Dims Begin(R, 0), Out(X.dims().begin(), X.dims().end());
  for (size_t I = 0; I < NA; ++I) {
    Begin[Axes[I]] = Pads[I];
    Out[Axes[I]] += Pads[I] + Pads[I + NA];
    if (Out[Axes[I]] < 0)
      return Ctx.error("pads crop axis " + llvm::Twine(Axes[I]) +
                       " below size 0");
  }
  if (auto E = checkSize(Ctx, Out))
    return E;
  Dims XS = stridesOf(X.dims());
  OffsetTables Tables(R);
  for (int64_t A = 0; A < R; ++A) {
    int64_t N = X.dims()[A];
    for (int64_t J = 0; J < Out[A]; ++J) {
      int64_t C = J - Begin[A];
      if (C < 0 || C >= N) {
        if (Mode == "constant") {
          Tables[A].push_back(-1);
          continue;
        }
        if (N == 0)
          return Ctx.error("cannot " + Mode + "-pad an empty axis");
        if (Mode == "edge") {
          C = std::clamp<int64_t>(C, 0, N - 1);
        } else if (Mode == "wrap") {
          C = ((C % N) + N) % N;
        } else if (N == 1) {
          C = 0;
        } else { // reflect: period 2(N-1), mirrored about both ends
          int64_t P = 2 * (N - 1);
          C = ((C % P) + P) % P;
          if (C >= N)
            C = P - C;
        }
      }
      Tables[A].push_back(C * XS[A]);
    }
  }
  const void *Fill = nullptr;
  const Tensor *CV = Ctx.in(2);
  if (CV && CV->numElements() > 0) {
    if (CV->dtype() != X.dtype())
      return Ctx.error("constant_value dtype differs from the input's");
    Fill = CV->rawData();
  }
  Ctx.Results[0] = copyMapped(X, Out, Tables, Fill);
  return llvm::Error::success();
}

} // namespace ref
} // namespace solder
