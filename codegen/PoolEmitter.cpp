//===- PoolEmitter.cpp - Windowed pools, global pools and LRN -------------===//
//
// MaxPool (with the optional Indices result) and AveragePool run one thread
// per output element over 1 to 3 spatial dims, the window loops baked:
//
//   (plane, o0, o1) = coords(i);  h0 = o0 * stride0 - padBegin0; ...
//   for k0 < K0: p0 = h0 + k0 * dil0; skip p0 outside [0, I0); for k1 ...
//
// Padding never contributes a value: MaxPool ignores it, AveragePool counts
// it in the divisor only under count_include_pad (taps inside
// [-padBegin, In + padEnd)). The geometry follows ONNX (auto_pad, ceil_mode)
// exactly like shape inference and the reference kernels. The global pools
// are row reductions over the spatial dims; LRN sums squares over a channel
// window per element.
//
//===----------------------------------------------------------------------===//
#include "codegen/EmitterUtils.h"
#include "ir/Layout.h"
#include "ir/OpRegistry.h"
#include <algorithm>

namespace solder {
namespace codegen {

namespace {

struct Window {
  Dims In, Kernel, Stride, Dilation, PadBegin, PadEnd, Out;
};

llvm::Error readWindow(const Node &N, const Dims &XD, const Dims &YD,
                       Window &W) {
  unsigned R = XD.size() - 2;
  const AttrMap &A = N.attrs();
  std::vector<int64_t> K = A.getInts("kernel_shape");
  if (K.size() != R)
    return nodeError(N, "kernel_shape must have one entry per spatial dim");
  std::vector<int64_t> S = A.getInts("strides", std::vector<int64_t>(R, 1));
  std::vector<int64_t> D = A.getInts("dilations", std::vector<int64_t>(R, 1));
  std::vector<int64_t> P = A.getInts("pads", std::vector<int64_t>(2 * R, 0));
  if (S.size() != R || D.size() != R || P.size() != 2 * R)
    return nodeError(N, "strides/dilations/pads do not match the spatial dims");
  std::string AutoPad = A.getString("auto_pad", "NOTSET");
  bool Ceil = A.getInt("ceil_mode", 0) != 0;
  for (unsigned I = 0; I < R; ++I) {
    if (K[I] < 1 || S[I] < 1 || D[I] < 1)
      return nodeError(N, "kernel, strides and dilations must be positive");
    int64_t In = XD[2 + I], EffK = (K[I] - 1) * D[I] + 1, Out;
    int64_t PB = P[I], PE = P[I + R];
    if (AutoPad == "SAME_UPPER" || AutoPad == "SAME_LOWER") {
      Out = (In + S[I] - 1) / S[I];
      int64_t Total = std::max<int64_t>(0, (Out - 1) * S[I] + EffK - In);
      PB = AutoPad == "SAME_UPPER" ? Total / 2 : Total - Total / 2;
      PE = Total - PB;
    } else {
      if (AutoPad == "VALID")
        PB = PE = 0;
      else if (AutoPad != "NOTSET")
        return nodeError(N, "unknown auto_pad '" + AutoPad + "'");
      int64_t Span = In + PB + PE - EffK;
      if (Span < 0)
        return nodeError(N, "window larger than the padded input");
      Out = (Ceil ? (Span + S[I] - 1) / S[I] : Span / S[I]) + 1;
      if (Ceil && (Out - 1) * S[I] >= In + PB)
        --Out;
    }
    if (Out != YD[2 + I])
      return nodeError(N, "window geometry gives " + llvm::Twine(Out) +
                              " outputs in spatial dim " + llvm::Twine(I) +
                              " but the result type has " +
                              llvm::Twine(YD[2 + I]));
    W.In.push_back(In);
    W.Kernel.push_back(K[I]);
    W.Stride.push_back(S[I]);
    W.Dilation.push_back(D[I]);
    W.PadBegin.push_back(PB);
    W.PadEnd.push_back(PE);
    W.Out.push_back(Out);
  }
  return llvm::Error::success();
}

llvm::Error emitWindowPool(KernelBuilder &B) {
  const Node &N = B.node();
  bool IsMax = N.kind() == OpKind::MaxPool;
  const Value *X = N.operand(0), *Y = N.result(0);
  const Value *Indices = IsMax ? N.result(1) : nullptr;
  DType T = X->dtype();
  Dims XD = dimsOf(X), YD = dimsOf(Y);
  if (XD.size() < 3 || XD.size() > 5)
    return nodeError(N, "expects 1 to 3 spatial dims, got " +
                            typeToString(X->type()));
  bool Ok = isFloat(T) || (IsMax && (T == DType::I8 || T == DType::U8));
  if (!Ok)
    return nodeError(N, "code generation does not support " + N.opName() +
                            " on " + dtypeName(T));
  // Channels last (ir/Layout.h): the window is read over the NCHW view of
  // the dims; a thread's output element is (n, o..., c) and its taps are
  // Channels apart.
  bool Nhwc = isNhwc(N);
  if (Nhwc && (XD.size() != 4 || Indices))
    return nodeError(N, "an NHWC pool must be 2-D without Indices");
  int64_t Channels = Nhwc ? XD.back() : 1;
  if (Nhwc) {
    XD = permuteDims<int64_t>(XD, ToNchwPerm);
    YD = permuteDims<int64_t>(YD, ToNchwPerm);
  }
  Window W;
  if (auto E = readWindow(N, XD, YD, W))
    return E;
  int64_t StorageOrder = N.attrs().getInt("storage_order", 0);
  if (StorageOrder != 0 && StorageOrder != 1)
    return nodeError(N, "storage_order must be 0 or 1");
  bool IncludePad = N.attrs().getInt("count_include_pad", 0) != 0;
  unsigned R = W.In.size();
  int64_t InPlane = numElementsOf(W.In);
  Dims InStrides = rowMajorStrides(W.In);
  // Column-major spatial index for storage_order = 1.
  Dims ColStrides(R, 1);
  for (unsigned I = 1; I < R; ++I)
    ColStrides[I] = ColStrides[I - 1] * W.In[I - 1];

  std::string Out = B.addOutput(Y);
  std::string IdxOut = Indices ? B.addOutput(Indices) : "";
  std::string In = B.addInput(X);
  CudaPrinter &P = B.p();
  std::string Acc = computeTypeName(T).str();
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(YD));
  Dims Grid = {Nhwc ? YD[0]
                    : numElementsOf(llvm::ArrayRef<int64_t>(YD).take_front(2))};
  Grid.append(W.Out.begin(), W.Out.end());
  if (Nhwc)
    Grid.push_back(Channels);
  std::vector<std::string> C = emitCoords(B, "i", Grid);
  std::vector<std::string> H(R);
  for (unsigned I = 0; I < R; ++I)
    H[I] = B.let("h", C[I + 1] + " * " + B.lit(W.Stride[I]) + " - " +
                          B.lit(W.PadBegin[I]));
  std::string Plane =
      C[0] == "0" ? "0" : C[0] + " * " + B.lit(InPlane * Channels);
  if (Nhwc && C.back() != "0")
    Plane += " + " + C.back();
  P.line("const " + P.storageType(T) + " *x = " + In + " + " + Plane + ";");
  for (int64_t &S : InStrides)
    S *= Channels;
  if (IsMax) {
    P.line(Acc + " best = " + lowestLiteral(T) + ";");
    P.line("idx_t bestIdx = -1;");
  } else {
    P.line(Acc + " sum = " + computeLiteral(T, 0) + ";");
    // Divisor: taps inside the input (or the padded input) per dim.
    P.line("idx_t count = 1;");
    for (unsigned I = 0; I < R; ++I) {
      int64_t Lo = IncludePad ? -W.PadBegin[I] : 0;
      int64_t Hi = IncludePad ? W.In[I] + W.PadEnd[I] : W.In[I];
      std::string Nm = P.uniqueName("n");
      P.line("idx_t " + Nm + " = 0;");
      {
        auto L = P.scope("for (int k = 0; k < " + std::to_string(W.Kernel[I]) +
                         "; ++k)");
        P.line("const idx_t p = " + H[I] + " + k * " + B.lit(W.Dilation[I]) +
               ";");
        P.line(Nm + " += (p >= " + B.lit(Lo) + " && p < " + B.lit(Hi) + ");");
      }
      P.line("count *= " + Nm + ";");
    }
  }
  std::vector<CudaPrinter::Scope> Loops;
  std::vector<std::string> Pos(R);
  for (unsigned I = 0; I < R; ++I) {
    std::string K = "k" + std::to_string(I);
    Loops.push_back(P.scope("for (int " + K + " = 0; " + K + " < " +
                            std::to_string(W.Kernel[I]) + "; ++" + K + ")"));
    Pos[I] = "p" + std::to_string(I);
    P.line("const idx_t " + Pos[I] + " = " + H[I] + " + " + K + " * " +
           B.lit(W.Dilation[I]) + ";");
    P.line("if (" + Pos[I] + " < 0 || " + Pos[I] + " >= " + B.lit(W.In[I]) +
           ") continue;");
  }
  std::string Idx, ColIdx;
  for (unsigned I = 0; I < R; ++I) {
    Idx += (I ? " + " : "") + Pos[I] + " * " + B.lit(InStrides[I]);
    ColIdx += (I ? " + " : "") + Pos[I] + " * " + B.lit(ColStrides[I]);
  }
  P.line("const idx_t idx = " + Idx + ";");
  P.line("const " + Acc + " v = " + loadExpr(T, "x[idx]") + ";");
  if (IsMax) {
    auto If = P.scope("if (bestIdx < 0 || v > best)");
    P.line("best = v;");
    P.line(std::string("bestIdx = ") + (StorageOrder ? ColIdx : "idx") + ";");
  } else {
    P.line("sum += v;");
  }
  while (!Loops.empty())
    Loops.pop_back();
  if (IsMax) {
    P.line(Out + "[i] = " + storeExpr(Y->dtype(), "best") + ";");
    if (Indices)
      P.line(IdxOut + "[i] = (long long)(" + Plane +
             ") + (long long)(bestIdx < 0 ? 0 : bestIdx);");
  } else {
    P.line(Out + "[i] = " +
           storeExpr(Y->dtype(),
                     "count ? sum / (" + Acc + ")count : (" + Acc + ")0") +
           ";");
  }
  return llvm::Error::success();
}

llvm::Error emitGlobalPool(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0);
  if (!isFloat(X->dtype()))
    return nodeError(N, "code generation does not support " + N.opName() +
                            " on " + dtypeName(X->dtype()));
  unsigned Rank = X->type().rank();
  if (Rank < 2)
    return nodeError(N, "expects rank >= 2");
  llvm::SmallVector<bool, 6> Reduced(Rank, true);
  Reduced[0] = Reduced[1] = false;
  return emitRowReduce(B, X, N.result(0), Reduced,
                       N.kind() == OpKind::GlobalMaxPool ? ReduceKind::Max
                                                         : ReduceKind::Mean);
}

llvm::Error emitLRN(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0), *Y = N.result(0);
  DType T = X->dtype();
  if (!isFloat(T))
    return nodeError(N,
                     "code generation does not support LRN on " + dtypeName(T));
  Dims XD = dimsOf(X);
  if (XD.size() < 2)
    return nodeError(N, "expects rank >= 2");
  const AttrMap &A = N.attrs();
  float Alpha = A.getFloat("alpha", 1e-4f), Beta = A.getFloat("beta", 0.75f),
        Bias = A.getFloat("bias", 1.0f);
  int64_t Size = A.getInt("size", 0);
  if (Size < 1)
    return nodeError(N, "size must be positive");
  // The window of channel c is [c - floor((size-1)/2), c + ceil((size-1)/2)].
  int64_t Before = (Size - 1) / 2, After = Size - 1 - Before;
  int64_t Ch = XD[1];
  int64_t Spatial = numElementsOf(llvm::ArrayRef<int64_t>(XD).drop_front(2));
  std::string Out = B.addOutput(Y);
  std::string In = B.addInput(X);
  CudaPrinter &P = B.p();
  std::string Acc = computeTypeName(T).str();
  std::string F = computeDType(T) == DType::F64 ? "" : "f";
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(XD));
  std::vector<std::string> C = emitCoords(B, "i", {XD[0], Ch, Spatial});
  std::string Base = B.let("base", "i - " + C[1] + " * " + B.lit(Spatial));
  P.line("const idx_t lo = " + C[1] + " < " + B.lit(Before) + " ? 0 : " + C[1] +
         " - " + B.lit(Before) + ";");
  P.line("const idx_t hi = " + C[1] + " + " + B.lit(After) + " < " +
         B.lit(Ch - 1) + " ? " + C[1] + " + " + B.lit(After) + " : " +
         B.lit(Ch - 1) + ";");
  P.line(Acc + " sq = " + computeLiteral(T, 0) + ";");
  {
    auto L = P.scope("for (idx_t j = lo; j <= hi; ++j)");
    P.line("const " + Acc + " v = " +
           loadExpr(T, In + "[" + Base + " + j * " + B.lit(Spatial) + "]") +
           ";");
    P.line("sq += v * v;");
  }
  P.line(Out + "[i] = " +
         storeExpr(Y->dtype(), loadExpr(T, In + "[i]") + " / pow" + F + "(" +
                                   computeLiteral(T, Bias) + " + " +
                                   computeLiteral(T, Alpha) + " / " +
                                   computeLiteral(T, double(Size)) + " * sq, " +
                                   computeLiteral(T, Beta) + ")") +
         ";");
  return llvm::Error::success();
}

} // namespace

llvm::Error emitPool(KernelBuilder &B) {
  switch (B.node().kind()) {
  case OpKind::MaxPool:
  case OpKind::AveragePool:
    return emitWindowPool(B);
  case OpKind::GlobalAveragePool:
  case OpKind::GlobalMaxPool:
    return emitGlobalPool(B);
  case OpKind::LRN:
    return emitLRN(B);
  default:
    break;
  }
  return nodeError(B.node(), "is not a pool");
}

} // namespace codegen
} // namespace solder
