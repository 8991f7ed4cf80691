//===- NeuralNetInfer.cpp - Shapes of contractions, pools, reductions
//------===//
#include "ir/Layout.h"
#include "ir/ops/InferFunctions.h"
#include "ir/ops/InferUtils.h"
#include <algorithm>

namespace solder {
namespace infer {

llvm::Error reduce(InferContext &C) {
  const TensorType &X = C.operandType(0);
  bool KeepDims = C.attrs().getInt("keepdims", 1);
  llvm::SmallVector<bool, 8> Reduced(X.rank(), false);
  bool HaveAxes = false;
  if (C.hasOperand(1)) {
    auto Axes = constInts(C, 1);
    if (!Axes) {
      // Axes computed at run time: with keepdims the rank stays; without,
      // it drops by their count (an empty list may mean "all" or "none").
      auto Len = staticLength1D(C.operandType(1));
      if (KeepDims) {
        C.setResultType(0, TensorType(X.Elem, unknownShape(X.rank())));
        return llvm::Error::success();
      }
      if (!Len || *Len == 0 || *Len > int64_t(X.rank()))
        return C.error("axes must be a constant or have a static non-zero "
                       "length when keepdims is 0");
      C.setResultType(0, TensorType(X.Elem, unknownShape(X.rank() - *Len)));
      return llvm::Error::success();
    }
    HaveAxes = !Axes->empty();
    for (int64_t A : *Axes) {
      auto N = normalizeAxis(A, X.rank());
      if (!N)
        return C.error("axis " + llvm::Twine(A) + " out of range for " +
                       typeToString(X));
      Reduced[*N] = true;
    }
  }
  if (!HaveAxes) {
    if (C.attrs().getInt("noop_with_empty_axes", 0)) {
      C.setResultType(0, X);
      return llvm::Error::success();
    }
    Reduced.assign(X.rank(), true);
  }
  Shape Out;
  for (unsigned I = 0; I < X.rank(); ++I) {
    if (!Reduced[I])
      Out.push_back(X.Dims[I]);
    else if (KeepDims)
      Out.push_back(Dim(1));
  }
  C.setResultType(0, TensorType(X.Elem, Out));
  return llvm::Error::success();
}

/// ArgMax/ArgMin: the reduced dim dropped or kept as 1; always i64.
llvm::Error argReduce(InferContext &C) {
  const TensorType &X = C.operandType(0);
  if (X.rank() == 0)
    return C.error("input must have rank >= 1");
  if (X.Elem == DType::Bool)
    return C.error("input must be numeric, got bool");
  auto Axis = normalizeAxis(C.attrs().getInt("axis", 0), X.rank());
  if (!Axis)
    return C.error("axis " + llvm::Twine(C.attrs().getInt("axis", 0)) +
                   " out of range for " + typeToString(X));
  Shape Out;
  for (unsigned I = 0; I < X.rank(); ++I) {
    if (I != *Axis)
      Out.push_back(X.Dims[I]);
    else if (C.attrs().getInt("keepdims", 1))
      Out.push_back(Dim(1));
  }
  C.setResultType(0, TensorType(DType::I64, Out));
  return llvm::Error::success();
}

llvm::Error layerNorm(InferContext &C) {
  const TensorType &X = C.operandType(0);
  auto Axis = normalizeAxis(C.attrs().getInt("axis", -1), X.rank());
  if (!Axis)
    return C.error("axis out of range for " + typeToString(X));
  C.setResultType(0, X);
  Shape Stat = X.Dims;
  for (unsigned I = *Axis; I < X.rank(); ++I)
    Stat[I] = Dim(1);
  // stash_type 1 (the default) keeps the statistics in f32.
  DType StatType = C.attrs().getInt("stash_type", 1) == 1 ? DType::F32 : X.Elem;
  C.setResultType(1, TensorType(StatType, Stat));
  C.setResultType(2, TensorType(StatType, Stat));
  return llvm::Error::success();
}

llvm::Error rmsNorm(InferContext &C) {
  const TensorType &X = C.operandType(0);
  if (!normalizeAxis(C.attrs().getInt("axis", -1), X.rank()))
    return C.error("axis out of range for " + typeToString(X));
  if (!isFloat(X.Elem))
    return C.error("expects a float input, got " + typeToString(X));
  C.setResultType(0, X);
  return llvm::Error::success();
}

llvm::Error globalPool(InferContext &C) {
  const TensorType &X = C.operandType(0);
  if (X.rank() < 3)
    return C.error("input must be N x C x spatial..., got " + typeToString(X));
  Shape Out(X.Dims.begin(), X.Dims.begin() + 2);
  Out.append(X.rank() - 2, Dim(1));
  C.setResultType(0, TensorType(X.Elem, Out));
  return llvm::Error::success();
}

namespace {
TensorType toNchw(const TensorType &T) {
  return TensorType(T.Elem, permuteDims<Dim>(T.Dims, ToNchwPerm));
}
TensorType toNhwc(const TensorType &T) {
  return TensorType(T.Elem, permuteDims<Dim>(T.Dims, ToNhwcPerm));
}

/// The window geometry shared by Conv and the pools, with ONNX defaults.
struct Window {
  llvm::SmallVector<int64_t, 3> Kernel, Strides, Dilations, Pads;
  std::string AutoPad;
};

llvm::Error readWindow(InferContext &C, unsigned Spatial,
                       llvm::ArrayRef<int64_t> KernelFromWeights, Window &W) {
  std::vector<int64_t> K = C.attrs().getInts("kernel_shape");
  if (K.empty())
    K.assign(KernelFromWeights.begin(), KernelFromWeights.end());
  if (K.size() != Spatial)
    return C.error("kernel_shape has " + llvm::Twine(K.size()) + " dims for " +
                   llvm::Twine(Spatial) + " spatial dims");
  W.Kernel.assign(K.begin(), K.end());
  auto Get = [&](const char *Name, size_t N, int64_t Def,
                 llvm::SmallVectorImpl<int64_t> &Out) -> llvm::Error {
    std::vector<int64_t> V = C.attrs().getInts(Name);
    if (V.empty())
      V.assign(N, Def);
    if (V.size() != N)
      return C.error(llvm::Twine(Name) + " has " + llvm::Twine(V.size()) +
                     " entries, expected " + llvm::Twine(N));
    Out.assign(V.begin(), V.end());
    return llvm::Error::success();
  };
  if (auto E = Get("strides", Spatial, 1, W.Strides))
    return E;
  if (auto E = Get("dilations", Spatial, 1, W.Dilations))
    return E;
  if (auto E = Get("pads", 2 * Spatial, 0, W.Pads))
    return E;
  for (unsigned I = 0; I < Spatial; ++I) {
    if (W.Strides[I] <= 0 || W.Dilations[I] <= 0 || W.Kernel[I] <= 0)
      return C.error("kernel, strides and dilations must be positive");
    // Hostile values must not overflow the size arithmetic below.
    if (W.Strides[I] > MaxDimSize || W.Dilations[I] > MaxDimSize ||
        W.Kernel[I] - 1 > (MaxDimSize - 1) / W.Dilations[I])
      return C.error("kernel, strides or dilations past the dim limit (" +
                     llvm::Twine(MaxDimSize) + ")");
  }
  for (int64_t P : W.Pads)
    if (P < -MaxDimSize || P > MaxDimSize)
      return C.error("pads past the dim limit (" + llvm::Twine(MaxDimSize) +
                     ")");
  W.AutoPad = C.attrs().getString("auto_pad", "NOTSET");
  if (W.AutoPad != "NOTSET" && W.AutoPad != "SAME_UPPER" &&
      W.AutoPad != "SAME_LOWER" && W.AutoPad != "VALID")
    return C.error("unknown auto_pad '" + W.AutoPad + "'");
  return llvm::Error::success();
}

/// Output size of one spatial dim of a forward window op.
llvm::Expected<Dim> windowOut(InferContext &C, const Window &W, unsigned I,
                              const Dim &In, bool CeilMode) {
  if (!In.isStatic())
    return Dim::unknown();
  int64_t N = In.size(), K = (W.Kernel[I] - 1) * W.Dilations[I] + 1,
          S = W.Strides[I];
  int64_t Out;
  if (W.AutoPad == "SAME_UPPER" || W.AutoPad == "SAME_LOWER") {
    Out = (N + S - 1) / S;
  } else {
    int64_t Pads =
        W.AutoPad == "VALID" ? 0 : W.Pads[I] + W.Pads[I + W.Kernel.size()];
    int64_t Span = N + Pads - K;
    if (Span < 0)
      return C.error("window of size " + llvm::Twine(K) +
                     " is larger than the padded input (" +
                     llvm::Twine(N + Pads) + ") in spatial dim " +
                     llvm::Twine(I));
    Out = (CeilMode ? (Span + S - 1) / S : Span / S) + 1;
    // A ceil-mode window must start inside the input or left padding.
    if (CeilMode && (Out - 1) * S >= N + W.Pads[I])
      --Out;
  }
  return Dim(Out);
}
} // namespace

llvm::Error conv(InferContext &C) {
  bool Nhwc = false;
  if (auto E = checkLayout(C.node(), C.operandType(0).rank(), Nhwc))
    return C.error(llvm::toString(std::move(E)));
  // Channels-last operands are checked and computed in NCHW order.
  TensorType X = C.operandType(0), Wt = C.operandType(1);
  if (Nhwc) {
    if (Wt.rank() != 4)
      return C.error("NHWC weights must be [M, kH, kW, C/group], got " +
                     typeToString(Wt));
    X = toNchw(X);
    Wt = toNchw(Wt);
  }
  if (X.rank() < 3 || Wt.rank() != X.rank())
    return C.error("expects input N x C x spatial... and weights of the same "
                   "rank, got " +
                   typeToString(X) + " and " + typeToString(Wt));
  if (Wt.Elem != X.Elem)
    return C.error("weights are " + dtypeName(Wt.Elem) + ", input is " +
                   dtypeName(X.Elem));
  unsigned Spatial = X.rank() - 2;
  int64_t Group = C.attrs().getInt("group", 1);
  if (Group <= 0 || Group > MaxDimSize)
    return C.error("group must be positive and within the dim limit (" +
                   llvm::Twine(MaxDimSize) + ")");
  if (Wt.Dims[1].isStatic() && Wt.Dims[1].size() > MaxDimSize / Group)
    return C.error("group times the weights' channels is past the dim limit");
  if (X.Dims[1].isStatic() && Wt.Dims[1].isStatic() &&
      X.Dims[1].size() != Wt.Dims[1].size() * Group)
    return C.error("input has " + llvm::Twine(X.Dims[1].size()) +
                   " channels but weights expect " +
                   llvm::Twine(Wt.Dims[1].size() * Group) + " (" +
                   typeToString(Wt) + ", group " + llvm::Twine(Group) + ")");
  if (!Wt.isStatic())
    return C.error("weights must have a static shape");
  llvm::SmallVector<int64_t, 3> KW;
  for (unsigned I = 0; I < Spatial; ++I)
    KW.push_back(Wt.Dims[2 + I].size());
  Window W;
  if (auto E = readWindow(C, Spatial, KW, W))
    return E;
  Shape Out = {X.Dims[0], Wt.Dims[0]};
  for (unsigned I = 0; I < Spatial; ++I) {
    auto D = windowOut(C, W, I, X.Dims[2 + I], false);
    if (!D)
      return D.takeError();
    Out.push_back(*D);
  }
  TensorType R(X.Elem, Out);
  C.setResultType(0, Nhwc ? toNhwc(R) : R);
  return llvm::Error::success();
}

llvm::Error convTranspose(InferContext &C) {
  const TensorType &X = C.operandType(0), &Wt = C.operandType(1);
  if (X.rank() < 3 || Wt.rank() != X.rank() || !Wt.isStatic())
    return C.error("expects input N x C x spatial... and static weights of "
                   "the same rank, got " +
                   typeToString(X) + " and " + typeToString(Wt));
  unsigned Spatial = X.rank() - 2;
  int64_t Group = C.attrs().getInt("group", 1);
  if (Group <= 0 || Group > MaxDimSize)
    return C.error("group must be positive and within the dim limit (" +
                   llvm::Twine(MaxDimSize) + ")");
  if (X.Dims[1].isStatic() && X.Dims[1].size() != Wt.Dims[0].size())
    return C.error("input channels differ from the weights' first dim");
  llvm::SmallVector<int64_t, 3> KW;
  for (unsigned I = 0; I < Spatial; ++I)
    KW.push_back(Wt.Dims[2 + I].size());
  Window W;
  if (auto E = readWindow(C, Spatial, KW, W))
    return E;
  std::vector<int64_t> OutPad = C.attrs().getInts("output_padding");
  std::vector<int64_t> OutShape = C.attrs().getInts("output_shape");
  if (OutPad.empty())
    OutPad.assign(Spatial, 0);
  if (OutPad.size() != Spatial)
    return C.error("output_padding has the wrong length");
  // output_shape holds the spatial dims, maybe after N and C.
  if (!OutShape.empty() && OutShape.size() < Spatial)
    return C.error("output_shape has " + llvm::Twine(OutShape.size()) +
                   " dims for " + llvm::Twine(Spatial) + " spatial ones");
  for (int64_t D : OutShape)
    if (D < 0 || D > MaxDimSize)
      return C.error("output_shape has a negative dim or one past " +
                     llvm::Twine(MaxDimSize));
  for (int64_t P : OutPad)
    if (P < -MaxDimSize || P > MaxDimSize)
      return C.error("output_padding past the dim limit");
  if (Wt.Dims[1].size() > MaxDimSize / Group)
    return C.error("group times the weights' channels is past the dim limit");
  Shape Out = {X.Dims[0], Dim(Wt.Dims[1].size() * Group)};
  for (unsigned I = 0; I < Spatial; ++I) {
    if (!OutShape.empty()) {
      Out.push_back(Dim(OutShape[OutShape.size() - Spatial + I]));
      continue;
    }
    const Dim &In = X.Dims[2 + I];
    if (!In.isStatic()) {
      Out.push_back(Dim::unknown());
      continue;
    }
    int64_t K = (W.Kernel[I] - 1) * W.Dilations[I] + 1;
    if (In.size() > MaxDimSize / W.Strides[I])
      return C.error("output size past the dim limit (" +
                     llvm::Twine(MaxDimSize) + ")");
    int64_t O;
    if (W.AutoPad == "SAME_UPPER" || W.AutoPad == "SAME_LOWER")
      O = In.size() * W.Strides[I];
    else
      O = W.Strides[I] * (In.size() - 1) + OutPad[I] + K -
          (W.AutoPad == "VALID" ? 0 : W.Pads[I] + W.Pads[I + Spatial]);
    if (O < 0)
      return C.error("negative output size");
    Out.push_back(Dim(O));
  }
  C.setResultType(0, TensorType(X.Elem, Out));
  return llvm::Error::success();
}

llvm::Error matMul(InferContext &C) {
  TensorType A = C.operandType(0), B = C.operandType(1);
  if (A.Elem != B.Elem)
    return C.error("operands are " + dtypeName(A.Elem) + " and " +
                   dtypeName(B.Elem));
  if (A.rank() == 0 || B.rank() == 0)
    return C.error("operands must have rank >= 1");
  bool VecA = A.rank() == 1, VecB = B.rank() == 1;
  if (VecA)
    A.Dims.insert(A.Dims.begin(), Dim(1));
  if (VecB)
    B.Dims.push_back(Dim(1));
  const Dim &KA = A.Dims[A.rank() - 1], &KB = B.Dims[B.rank() - 2];
  if (KA.isStatic() && KB.isStatic() && KA.size() != KB.size())
    return C.error("inner dims differ: " + typeToString(C.operandType(0)) +
                   " x " + typeToString(C.operandType(1)));
  Shape Batch;
  std::string Err;
  if (!broadcastShapes(llvm::ArrayRef<Dim>(A.Dims).drop_back(2),
                       llvm::ArrayRef<Dim>(B.Dims).drop_back(2), Batch, Err))
    return C.error("batch dims do not broadcast: " + Err);
  Shape Out = Batch;
  if (!VecA)
    Out.push_back(A.Dims[A.rank() - 2]);
  if (!VecB)
    Out.push_back(B.Dims[B.rank() - 1]);
  C.setResultType(0, TensorType(A.Elem, Out));
  return llvm::Error::success();
}

llvm::Error gemm(InferContext &C) {
  const TensorType &A = C.operandType(0), &B = C.operandType(1);
  if (A.rank() != 2 || B.rank() != 2)
    return C.error("operands must be 2-D, got " + typeToString(A) + " and " +
                   typeToString(B));
  bool TA = C.attrs().getInt("transA", 0), TB = C.attrs().getInt("transB", 0);
  Dim M = A.Dims[TA ? 1 : 0], KA = A.Dims[TA ? 0 : 1];
  Dim KB = B.Dims[TB ? 1 : 0], N = B.Dims[TB ? 0 : 1];
  if (KA.isStatic() && KB.isStatic() && KA.size() != KB.size())
    return C.error("inner dims differ: " + typeToString(A) + " x " +
                   typeToString(B));
  Shape Out = {M, N};
  if (C.hasOperand(2)) {
    Shape Tmp;
    std::string Err;
    if (!broadcastShapes(Out, C.operandType(2).Dims, Tmp, Err) ||
        Tmp.size() != 2)
      return C.error("C " + typeToString(C.operandType(2)) +
                     " does not broadcast to the result");
  }
  C.setResultType(0, TensorType(A.Elem, Out));
  return llvm::Error::success();
}

llvm::Error pool(InferContext &C) {
  bool Nhwc = false;
  if (auto E = checkLayout(C.node(), C.operandType(0).rank(), Nhwc))
    return C.error(llvm::toString(std::move(E)));
  TensorType X = C.operandType(0);
  if (Nhwc) {
    if (C.numResults() > 1)
      return C.error("an NHWC MaxPool has no Indices result");
    X = toNchw(X);
  }
  if (X.rank() < 3)
    return C.error("input must be N x C x spatial..., got " + typeToString(X));
  unsigned Spatial = X.rank() - 2;
  Window W;
  if (auto E = readWindow(C, Spatial, {}, W))
    return E;
  bool Ceil = C.attrs().getInt("ceil_mode", 0);
  Shape Out = {X.Dims[0], X.Dims[1]};
  for (unsigned I = 0; I < Spatial; ++I) {
    auto D = windowOut(C, W, I, X.Dims[2 + I], Ceil);
    if (!D)
      return D.takeError();
    Out.push_back(*D);
  }
  TensorType R(X.Elem, Out);
  C.setResultType(0, Nhwc ? toNhwc(R) : R);
  C.setResultType(1, TensorType(DType::I64, Out));
  return llvm::Error::success();
}

} // namespace infer
} // namespace solder
