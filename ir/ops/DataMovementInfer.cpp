//===- DataMovementInfer.cpp - Shapes of data-movement ops
//-----------------===//
//
// Shape operands (Reshape's shape, Slice's starts...) are read when they are
// constants; otherwise the affected dims become unknown ("?"), to be resolved
// once symbols are bound and shape folding has run.
//
//===----------------------------------------------------------------------===//
#include "ir/ops/InferFunctions.h"
#include "ir/ops/InferUtils.h"
#include <algorithm>
#include <cmath>

namespace solder {
namespace infer {

static std::string shapeToString(llvm::ArrayRef<int64_t> S) {
  std::string R = "[";
  for (size_t I = 0; I < S.size(); ++I)
    R += (I ? "," : "") + std::to_string(S[I]);
  return R + "]";
}

llvm::Error reshape(InferContext &C) {
  const TensorType &X = C.operandType(0);
  const TensorType &S = C.operandType(1);
  if (S.rank() != 1)
    return C.error("shape operand must be 1-D, got " + typeToString(S));
  auto Target = constInts(C, 1);
  if (!Target) {
    auto Len = staticLength1D(S);
    if (!Len)
      return C.error("shape operand has unknown length");
    C.setResultType(0, TensorType(X.Elem, unknownShape(*Len)));
    return llvm::Error::success();
  }
  bool AllowZero = C.attrs().getInt("allowzero", 0);
  Shape Out;
  int InferIdx = -1;
  for (size_t I = 0; I < Target->size(); ++I) {
    int64_t D = (*Target)[I];
    if (D == -1) {
      if (InferIdx >= 0)
        return C.error("shape " + shapeToString(*Target) +
                       " has more than one -1");
      InferIdx = I;
      Out.push_back(Dim::unknown());
    } else if (D == 0 && !AllowZero) {
      if (I >= X.rank())
        return C.error("shape " + shapeToString(*Target) + " copies dim " +
                       llvm::Twine(I) + " of a rank-" + llvm::Twine(X.rank()) +
                       " input");
      Out.push_back(X.Dims[I]);
    } else if (D < 0) {
      return C.error("shape " + shapeToString(*Target) + " has a negative dim");
    } else if (D > MaxDimSize) {
      return C.error("shape " + shapeToString(*Target) + " has a dim above " +
                     "the limit of " + llvm::Twine(MaxDimSize));
    } else {
      Out.push_back(Dim(D));
    }
  }
  // Element counts: static parts on both sides, symbols cancelling out.
  int64_t InStatic = 1, OutStatic = 1;
  llvm::SmallVector<Dim, 4> InDyn, OutDyn;
  for (const Dim &D : X.Dims)
    D.isStatic() ? void(InStatic *= D.size()) : InDyn.push_back(D);
  for (size_t I = 0; I < Out.size(); ++I) {
    if (int(I) == InferIdx)
      continue;
    if (!Out[I].isStatic()) {
      OutDyn.push_back(Out[I]);
      continue;
    }
    // Each dim is at most MaxDimSize; the product must not overflow.
    if (Out[I].size() && OutStatic > MaxElementCount / Out[I].size())
      return C.error("shape " + shapeToString(*Target) + " has more than " +
                     llvm::Twine(MaxElementCount) + " elements");
    OutStatic *= Out[I].size();
  }
  // Remove symbols present on both sides.
  for (auto It = OutDyn.begin(); It != OutDyn.end();) {
    auto Match = std::find_if(InDyn.begin(), InDyn.end(), [&](const Dim &D) {
      return D.isSymbol() && D == *It;
    });
    if (Match != InDyn.end()) {
      InDyn.erase(Match);
      It = OutDyn.erase(It);
    } else {
      ++It;
    }
  }
  if (InDyn.empty() && OutDyn.empty()) {
    if (InferIdx >= 0) {
      if (OutStatic == 0 || InStatic % OutStatic != 0)
        return C.error("cannot reshape " + typeToString(X) + " to " +
                       shapeToString(*Target));
      Out[InferIdx] = Dim(InStatic / OutStatic);
    } else if (InStatic != OutStatic) {
      return C.error("cannot reshape " + typeToString(X) + " (" +
                     llvm::Twine(InStatic) + " elements) to " +
                     shapeToString(*Target) + " (" + llvm::Twine(OutStatic) +
                     " elements)");
    }
  } else if (InferIdx >= 0 && OutDyn.empty() && InDyn.size() == 1 &&
             OutStatic != 0 && InStatic % OutStatic == 0 &&
             InStatic / OutStatic == 1) {
    Out[InferIdx] = InDyn[0]; // e.g. [N,4] -> [-1,4]
  }
  C.setResultType(0, TensorType(X.Elem, Out));
  return llvm::Error::success();
}

llvm::Error flatten(InferContext &C) {
  const TensorType &X = C.operandType(0);
  int64_t Axis = C.attrs().getInt("axis", 1);
  if (Axis < 0)
    Axis += X.rank();
  if (Axis < 0 || Axis > int64_t(X.rank()))
    return C.error("axis " + llvm::Twine(C.attrs().getInt("axis", 1)) +
                   " out of range for " + typeToString(X));
  auto Product = [&](unsigned B, unsigned E) -> Dim {
    int64_t P = 1;
    if (E - B == 1)
      return X.Dims[B];
    for (unsigned I = B; I < E; ++I) {
      if (!X.Dims[I].isStatic())
        return Dim::unknown();
      P *= X.Dims[I].size();
    }
    return Dim(P);
  };
  C.setResultType(
      0, TensorType(X.Elem, {Product(0, Axis), Product(Axis, X.rank())}));
  return llvm::Error::success();
}

llvm::Error squeeze(InferContext &C) {
  const TensorType &X = C.operandType(0);
  llvm::SmallVector<bool, 8> Drop(X.rank(), false);
  if (C.hasOperand(1)) {
    auto Axes = constInts(C, 1);
    if (!Axes) {
      // Axes computed at run time: the rank is known from their count.
      auto Len = staticLength1D(C.operandType(1));
      if (!Len || *Len > int64_t(X.rank()))
        return C.error("axes must be a constant or have a static length");
      C.setResultType(0, TensorType(X.Elem, unknownShape(X.rank() - *Len)));
      return llvm::Error::success();
    }
    for (int64_t A : *Axes) {
      auto N = normalizeAxis(A, X.rank());
      if (!N)
        return C.error("axis " + llvm::Twine(A) + " out of range for " +
                       typeToString(X));
      const Dim &D = X.Dims[*N];
      if (D.isStatic() && D.size() != 1)
        return C.error("cannot squeeze dim " + llvm::Twine(*N) + " of " +
                       typeToString(X) + ": size is not 1");
      Drop[*N] = true;
    }
  } else {
    for (unsigned I = 0; I < X.rank(); ++I) {
      if (!X.Dims[I].isStatic())
        return C.error("squeeze without axes needs static dims, got " +
                       typeToString(X));
      Drop[I] = X.Dims[I].size() == 1;
    }
  }
  Shape Out;
  for (unsigned I = 0; I < X.rank(); ++I)
    if (!Drop[I])
      Out.push_back(X.Dims[I]);
  C.setResultType(0, TensorType(X.Elem, Out));
  return llvm::Error::success();
}

llvm::Error unsqueeze(InferContext &C) {
  const TensorType &X = C.operandType(0);
  auto Axes = constInts(C, 1);
  if (!Axes) {
    auto Len = staticLength1D(C.operandType(1));
    if (!Len)
      return C.error("axes must be a constant or have a static length");
    C.setResultType(0, TensorType(X.Elem, unknownShape(X.rank() + *Len)));
    return llvm::Error::success();
  }
  int64_t OutRank = X.rank() + Axes->size();
  llvm::SmallVector<bool, 8> IsNew(OutRank, false);
  for (int64_t A : *Axes) {
    auto N = normalizeAxis(A, OutRank);
    if (!N || IsNew[*N])
      return C.error("invalid or repeated axis " + llvm::Twine(A));
    IsNew[*N] = true;
  }
  Shape Out;
  unsigned Src = 0;
  for (int64_t I = 0; I < OutRank; ++I)
    Out.push_back(IsNew[I] ? Dim(1) : X.Dims[Src++]);
  C.setResultType(0, TensorType(X.Elem, Out));
  return llvm::Error::success();
}

llvm::Error transpose(InferContext &C) {
  const TensorType &X = C.operandType(0);
  std::vector<int64_t> Perm = C.attrs().getInts("perm");
  if (Perm.empty())
    for (int64_t I = int64_t(X.rank()) - 1; I >= 0; --I)
      Perm.push_back(I);
  if (Perm.size() != X.rank())
    return C.error("perm has " + llvm::Twine(Perm.size()) +
                   " entries for a rank-" + llvm::Twine(X.rank()) + " input");
  llvm::SmallVector<bool, 8> Seen(X.rank(), false);
  Shape Out;
  for (int64_t P : Perm) {
    auto N = normalizeAxis(P, X.rank());
    if (!N || Seen[*N])
      return C.error("perm is not a permutation");
    Seen[*N] = true;
    Out.push_back(X.Dims[*N]);
  }
  C.setResultType(0, TensorType(X.Elem, Out));
  return llvm::Error::success();
}

llvm::Error concat(InferContext &C) {
  const TensorType &X = C.operandType(0);
  auto Axis = normalizeAxis(C.attrs().getInt("axis", 0), X.rank());
  if (!Axis)
    return C.error("axis out of range for " + typeToString(X));
  Shape Out = X.Dims;
  for (unsigned I = 1; I < C.numOperands(); ++I) {
    const TensorType &T = C.operandType(I);
    if (T.Elem != X.Elem || T.rank() != X.rank())
      return C.error("operand " + llvm::Twine(I) + " " + typeToString(T) +
                     " does not match " + typeToString(X));
    for (unsigned D = 0; D < X.rank(); ++D) {
      if (D == *Axis) {
        if (Out[D].isStatic() && T.Dims[D].isStatic())
          Out[D] = Dim(Out[D].size() + T.Dims[D].size());
        else
          Out[D] = Dim::unknown();
      } else if (Out[D].isStatic() && T.Dims[D].isStatic() &&
                 Out[D].size() != T.Dims[D].size()) {
        return C.error("operand " + llvm::Twine(I) + " " + typeToString(T) +
                       " does not match " + typeToString(X) + " in dim " +
                       llvm::Twine(D));
      } else if (!Out[D].isStatic() && T.Dims[D].isStatic()) {
        Out[D] = T.Dims[D];
      }
    }
  }
  C.setResultType(0, TensorType(X.Elem, Out));
  return llvm::Error::success();
}

llvm::Error split(InferContext &C) {
  const TensorType &X = C.operandType(0);
  auto Axis = normalizeAxis(C.attrs().getInt("axis", 0), X.rank());
  if (!Axis)
    return C.error("axis out of range for " + typeToString(X));
  unsigned N = C.numResults();
  const Dim &D = X.Dims[*Axis];
  llvm::SmallVector<Dim, 4> Sizes;
  if (C.hasOperand(1)) {
    auto S = constInts(C, 1);
    if (!S) {
      for (unsigned I = 0; I < N; ++I) {
        Shape Out = X.Dims;
        Out[*Axis] = Dim::unknown();
        C.setResultType(I, TensorType(X.Elem, Out));
      }
      return llvm::Error::success();
    }
    if (S->size() != N)
      return C.error("split has " + llvm::Twine(S->size()) + " sizes for " +
                     llvm::Twine(N) + " results");
    int64_t Sum = 0;
    for (int64_t V : *S) {
      if (V < 0)
        return C.error("negative split size");
      // Hostile sizes must not overflow the sum (the fuzzer's find).
      if (V > MaxDimSize || Sum > MaxDimSize - V)
        return C.error("split sizes sum past " + llvm::Twine(MaxDimSize));
      Sum += V;
      Sizes.push_back(Dim(V));
    }
    if (D.isStatic() && Sum != D.size())
      return C.error("split sizes sum to " + llvm::Twine(Sum) +
                     " but the dim is " + llvm::Twine(D.size()));
  } else if (D.isStatic()) {
    // Equal parts; with num_outputs the last part may be smaller.
    int64_t Part = (D.size() + N - 1) / N;
    if (!C.attrs().has("num_outputs") && D.size() % N)
      return C.error("dim " + llvm::Twine(D.size()) +
                     " does not split evenly into " + llvm::Twine(N));
    for (unsigned I = 0; I < N; ++I)
      Sizes.push_back(
          Dim(std::max<int64_t>(0, std::min(Part, D.size() - I * Part))));
  } else {
    Sizes.assign(N, Dim::unknown());
  }
  for (unsigned I = 0; I < N; ++I) {
    Shape Out = X.Dims;
    Out[*Axis] = Sizes[I];
    C.setResultType(I, TensorType(X.Elem, Out));
  }
  return llvm::Error::success();
}

llvm::Error slice(InferContext &C) {
  const TensorType &X = C.operandType(0);
  auto Starts = constInts(C, 1), Ends = constInts(C, 2);
  std::optional<llvm::SmallVector<int64_t, 8>> Axes, Steps;
  if (C.hasOperand(3))
    Axes = constInts(C, 3);
  if (C.hasOperand(4))
    Steps = constInts(C, 4);
  if (!Starts || !Ends || (C.hasOperand(3) && !Axes) ||
      (C.hasOperand(4) && !Steps)) {
    // Non-constant bounds: which dims change is unknown unless axes are.
    Shape Out = X.Dims;
    if (Axes) {
      for (int64_t A : *Axes)
        if (auto N = normalizeAxis(A, X.rank()))
          Out[*N] = Dim::unknown();
    } else {
      Out = unknownShape(X.rank());
    }
    C.setResultType(0, TensorType(X.Elem, Out));
    return llvm::Error::success();
  }
  if (Starts->size() != Ends->size())
    return C.error("starts and ends differ in length");
  if (!Axes) {
    Axes.emplace();
    for (size_t I = 0; I < Starts->size(); ++I)
      Axes->push_back(I);
  }
  if (Axes->size() != Starts->size() ||
      (Steps && Steps->size() != Starts->size()))
    return C.error("starts, ends, axes and steps differ in length");
  Shape Out = X.Dims;
  llvm::SmallVector<bool, 8> Seen(X.rank(), false);
  for (size_t I = 0; I < Starts->size(); ++I) {
    auto A = normalizeAxis((*Axes)[I], X.rank());
    if (!A || Seen[*A])
      return C.error("invalid or repeated axis " + llvm::Twine((*Axes)[I]));
    Seen[*A] = true;
    int64_t Step = Steps ? (*Steps)[I] : 1;
    if (Step == 0)
      return C.error("step is 0");
    if (!X.Dims[*A].isStatic()) {
      int64_t S = (*Starts)[I], E = (*Ends)[I];
      // Whole-dim slices keep the symbol.
      Out[*A] = (Step == 1 && S == 0 && E >= (int64_t(1) << 62))
                    ? X.Dims[*A]
                    : Dim::unknown();
      continue;
    }
    int64_t Size = X.Dims[*A].size();
    int64_t S = (*Starts)[I], E = (*Ends)[I];
    if (S < 0)
      S += Size;
    if (E < 0)
      E += Size;
    int64_t Len;
    if (Step > 0) {
      S = std::clamp<int64_t>(S, 0, Size);
      E = std::clamp<int64_t>(E, 0, Size);
      Len = E > S ? (E - S + Step - 1) / Step : 0;
    } else {
      S = std::clamp<int64_t>(S, -1, Size - 1);
      E = std::clamp<int64_t>(E, -1, Size - 1);
      Len = S > E ? (S - E + (-Step) - 1) / (-Step) : 0;
    }
    Out[*A] = Dim(Len);
  }
  C.setResultType(0, TensorType(X.Elem, Out));
  return llvm::Error::success();
}

llvm::Error gather(InferContext &C) {
  const TensorType &X = C.operandType(0);
  const TensorType &Idx = C.operandType(1);
  if (Idx.Elem != DType::I64 && Idx.Elem != DType::I32)
    return C.error("indices must be i32 or i64");
  auto Axis = normalizeAxis(C.attrs().getInt("axis", 0), X.rank());
  if (!Axis)
    return C.error("axis out of range for " + typeToString(X));
  Shape Out(X.Dims.begin(), X.Dims.begin() + *Axis);
  Out.append(Idx.Dims.begin(), Idx.Dims.end());
  Out.append(X.Dims.begin() + *Axis + 1, X.Dims.end());
  C.setResultType(0, TensorType(X.Elem, Out));
  return llvm::Error::success();
}

llvm::Error gatherElements(InferContext &C) {
  const TensorType &X = C.operandType(0);
  const TensorType &Idx = C.operandType(1);
  if (Idx.rank() != X.rank())
    return C.error("indices rank differs from data rank");
  if (!normalizeAxis(C.attrs().getInt("axis", 0), X.rank()))
    return C.error("axis out of range for " + typeToString(X));
  C.setResultType(0, TensorType(X.Elem, Idx.Dims));
  return llvm::Error::success();
}

llvm::Error gatherND(InferContext &C) {
  const TensorType &X = C.operandType(0);
  const TensorType &Idx = C.operandType(1);
  if (Idx.Elem != DType::I64)
    return C.error("indices must be i64");
  int64_t B = C.attrs().getInt("batch_dims", 0);
  if (Idx.rank() < 1 || !Idx.Dims.back().isStatic())
    return C.error("indices need a static last dim, got " + typeToString(Idx));
  int64_t K = Idx.Dims.back().size();
  if (B < 0 || B >= int64_t(Idx.rank()) || B + K > int64_t(X.rank()))
    return C.error("batch_dims " + llvm::Twine(B) + " and index depth " +
                   llvm::Twine(K) + " do not fit data " + typeToString(X) +
                   " and indices " + typeToString(Idx));
  Shape Out(Idx.Dims.begin(), Idx.Dims.end() - 1);
  Out.append(X.Dims.begin() + B + K, X.Dims.end());
  C.setResultType(0, TensorType(X.Elem, Out));
  return llvm::Error::success();
}

llvm::Error expand(InferContext &C) {
  const TensorType &X = C.operandType(0);
  auto Target = constInts(C, 1);
  if (!Target) {
    auto Len = staticLength1D(C.operandType(1));
    if (!Len)
      return C.error("shape operand has unknown length");
    C.setResultType(
        0, TensorType(X.Elem, unknownShape(std::max<int64_t>(*Len, X.rank()))));
    return llvm::Error::success();
  }
  Shape T;
  for (int64_t D : *Target) {
    if (D < 0)
      return C.error("negative dim in expand shape");
    T.push_back(Dim(D));
  }
  Shape Out;
  std::string Err;
  if (!broadcastShapes(X.Dims, T, Out, Err))
    return C.error("cannot expand " + typeToString(X) + ": " + Err);
  C.setResultType(0, TensorType(X.Elem, Out));
  return llvm::Error::success();
}

llvm::Error tile(InferContext &C) {
  const TensorType &X = C.operandType(0);
  auto Reps = constInts(C, 1);
  if (!Reps) {
    C.setResultType(0, TensorType(X.Elem, unknownShape(X.rank())));
    return llvm::Error::success();
  }
  if (Reps->size() != X.rank())
    return C.error("repeats has " + llvm::Twine(Reps->size()) +
                   " entries for a rank-" + llvm::Twine(X.rank()) + " input");
  Shape Out;
  for (unsigned I = 0; I < X.rank(); ++I) {
    if ((*Reps)[I] < 0)
      return C.error("negative repeat");
    Out.push_back(X.Dims[I].isStatic() ? Dim(X.Dims[I].size() * (*Reps)[I])
                  : (*Reps)[I] == 1    ? X.Dims[I]
                                       : Dim::unknown());
  }
  C.setResultType(0, TensorType(X.Elem, Out));
  return llvm::Error::success();
}

llvm::Error pad(InferContext &C) {
  const TensorType &X = C.operandType(0);
  std::string Mode = C.attrs().getString("mode", "constant");
  if (Mode != "constant" && Mode != "reflect" && Mode != "edge" &&
      Mode != "wrap")
    return C.error("unknown pad mode '" + Mode + "'");
  auto Pads = constInts(C, 1);
  if (!Pads) {
    C.setResultType(0, TensorType(X.Elem, unknownShape(X.rank())));
    return llvm::Error::success();
  }
  llvm::SmallVector<int64_t, 8> Axes;
  if (C.hasOperand(3)) {
    auto A = constInts(C, 3);
    if (!A) {
      C.setResultType(0, TensorType(X.Elem, unknownShape(X.rank())));
      return llvm::Error::success();
    }
    for (int64_t V : *A) {
      auto N = normalizeAxis(V, X.rank());
      if (!N)
        return C.error("axis out of range");
      Axes.push_back(*N);
    }
  } else {
    for (unsigned I = 0; I < X.rank(); ++I)
      Axes.push_back(I);
  }
  if (Pads->size() != 2 * Axes.size())
    return C.error("pads has " + llvm::Twine(Pads->size()) +
                   " entries, expected " + llvm::Twine(2 * Axes.size()));
  Shape Out = X.Dims;
  for (size_t I = 0; I < Axes.size(); ++I) {
    int64_t Extra = (*Pads)[I] + (*Pads)[I + Axes.size()];
    Dim &D = Out[Axes[I]];
    if (D.isStatic()) {
      if (D.size() + Extra < 0)
        return C.error("pads remove more than the whole dim");
      D = Dim(D.size() + Extra);
    } else if (Extra != 0) {
      D = Dim::unknown();
    }
  }
  C.setResultType(0, TensorType(X.Elem, Out));
  return llvm::Error::success();
}

llvm::Error shape(InferContext &C) {
  int64_t R = C.operandType(0).rank();
  int64_t S = C.attrs().getInt("start", 0), E = C.attrs().getInt("end", R);
  if (S < 0)
    S += R;
  if (E < 0)
    E += R;
  S = std::clamp<int64_t>(S, 0, R);
  E = std::clamp<int64_t>(E, 0, R);
  C.setResultType(0,
                  TensorType(DType::I64, {Dim(std::max<int64_t>(0, E - S))}));
  return llvm::Error::success();
}

llvm::Error constantOfShape(InferContext &C) {
  DType Elem = DType::F32;
  if (const Attribute *V = C.attrs().find("value")) {
    if (V->kind() != AttrKind::Tensor || V->getTensor().numElements() != 1)
      return C.error("'value' must be a one-element tensor");
    Elem = V->getTensor().dtype();
  }
  if (C.operandType(0).Elem != DType::I64)
    return C.error("shape operand must be i64");
  auto Target = constInts(C, 0);
  if (!Target) {
    auto Len = staticLength1D(C.operandType(0));
    if (!Len)
      return C.error("shape operand has unknown length");
    C.setResultType(0, TensorType(Elem, unknownShape(*Len)));
    return llvm::Error::success();
  }
  Shape Out;
  for (int64_t D : *Target) {
    if (D < 0)
      return C.error("negative dim in shape");
    Out.push_back(Dim(D));
  }
  C.setResultType(0, TensorType(Elem, Out));
  return llvm::Error::success();
}

llvm::Error range(InferContext &C) {
  DType Elem = C.operandType(0).Elem;
  for (unsigned I = 0; I < 3; ++I)
    if (C.operandType(I).rank() != 0 || C.operandType(I).Elem != Elem)
      return C.error("start, limit and delta must be scalars of one type");
  const Tensor *S = C.constantOperand(0), *L = C.constantOperand(1),
               *D = C.constantOperand(2);
  if (!S || !L || !D) {
    C.setResultType(0, TensorType(Elem, {Dim::unknown()}));
    return llvm::Error::success();
  }
  double Delta = D->getDouble(0);
  if (Delta == 0)
    return C.error("delta is 0");
  double Count = std::ceil((L->getDouble(0) - S->getDouble(0)) / Delta);
  if (isInteger(Elem))
    Count = std::ceil(double(L->getInt64(0) - S->getInt64(0)) /
                      double(D->getInt64(0)));
  C.setResultType(0, TensorType(Elem, {Dim(int64_t(std::max(0.0, Count)))}));
  return llvm::Error::success();
}

} // namespace infer
} // namespace solder
