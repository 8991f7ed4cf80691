//===- DataMovementEmitter.cpp - Copy, gather and fill kernels ------------===//
//
// Injective ops: each output element is one input element (or a baked
// value). One thread per output element (per input element for Split, so
// one kernel writes all parts), elements copied in their storage type.
// Transpose, Expand and Slice are affine: out[i] = in[base + sum c_d * s_d]
// with baked (possibly negative or zero) strides. Concat and Split pick the
// operand along the axis with a baked if-chain; Gather, GatherElements,
// GatherND, Pad and Tile compute source coordinates per dim; Trilu keeps
// or zeroes each element by its row and column.
// ConstantOfShape, Range and Shape fill from baked values.
//
// Shape-like operands (Slice's starts, Pad's pads, Trilu's k...) must
// be constants: their values are baked into the kernel.
//
//===----------------------------------------------------------------------===//
#include "codegen/EmitterUtils.h"
#include "ir/OpRegistry.h"
#include <algorithm>

namespace solder {
namespace codegen {

namespace {

/// out[i] = in[affine offset of i]; Strides over Y's dims, Base added.
llvm::Error emitAffineCopy(KernelBuilder &B, const Value *X, const Value *Y,
                           const Dims &Strides, int64_t Base) {
  std::string Out = B.addOutput(Y);
  std::string In = B.addInput(X);
  Dims YDims = dimsOf(Y);
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(YDims));
  std::string Off = emitOffsets(B, "i", YDims, {Strides})[0];
  if (Base != 0)
    Off = B.lit(Base) + " + " + Off;
  B.p().line(Out + "[i] = " + In + "[" + Off + "];");
  return llvm::Error::success();
}

llvm::Error emitTranspose(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0);
  Dims XStrides = rowMajorStrides(dimsOf(X));
  std::vector<int64_t> Perm = N.attrs().getInts("perm");
  if (Perm.empty())
    for (int64_t I = XStrides.size() - 1; I >= 0; --I)
      Perm.push_back(I);
  Dims S;
  for (int64_t P : Perm) {
    auto A = normalizeAxis(P, XStrides.size());
    if (!A)
      return nodeError(N, "perm is not a permutation");
    S.push_back(XStrides[*A]);
  }
  return emitAffineCopy(B, X, N.result(0), S, 0);
}

llvm::Error emitExpand(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0), *Y = N.result(0);
  Dims XD = dimsOf(X), YD = dimsOf(Y);
  if (XD.size() > YD.size())
    return nodeError(N, "result rank is below the input rank");
  return emitAffineCopy(B, X, Y, broadcastStrides(XD, YD), 0);
}

llvm::Error emitSlice(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0), *Y = N.result(0);
  Dims XD = dimsOf(X), YD = dimsOf(Y);
  auto Starts = constInts(N, 1, "starts");
  if (!Starts)
    return Starts.takeError();
  auto Ends = constInts(N, 2, "ends");
  if (!Ends)
    return Ends.takeError();
  llvm::SmallVector<int64_t, 8> Axes, Steps;
  if (N.operand(3)) {
    auto A = constInts(N, 3, "axes");
    if (!A)
      return A.takeError();
    Axes = *A;
  } else {
    for (size_t I = 0; I < Starts->size(); ++I)
      Axes.push_back(I);
  }
  if (N.operand(4)) {
    auto S = constInts(N, 4, "steps");
    if (!S)
      return S.takeError();
    Steps = *S;
  } else {
    Steps.assign(Starts->size(), 1);
  }
  if (Axes.size() != Starts->size() || Steps.size() != Starts->size())
    return nodeError(N, "starts, ends, axes and steps differ in length");
  Dims XStrides = rowMajorStrides(XD);
  Dims S = XStrides;
  int64_t Base = 0;
  for (size_t I = 0; I < Axes.size(); ++I) {
    auto A = normalizeAxis(Axes[I], XD.size());
    if (!A || Steps[I] == 0)
      return nodeError(N, "invalid axis or step");
    int64_t Size = XD[*A], St = (*Starts)[I], Step = Steps[I];
    if (St < 0)
      St += Size;
    // Same clamping as shape inference (ONNX Slice).
    St = Step > 0 ? std::clamp<int64_t>(St, 0, Size)
                  : std::clamp<int64_t>(St, -1, Size - 1);
    if (YD[*A] > 0)
      Base += St * XStrides[*A];
    S[*A] = XStrides[*A] * Step;
  }
  return emitAffineCopy(B, X, Y, S, Base);
}

llvm::Error emitConcat(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *Y = N.result(0);
  Dims YD = dimsOf(Y);
  auto Axis = normalizeAxis(N.attrs().getInt("axis", 0), YD.size());
  if (!Axis)
    return nodeError(N, "axis out of range");
  int64_t Inner =
      numElementsOf(llvm::ArrayRef<int64_t>(YD).drop_front(*Axis + 1));
  int64_t Total = YD[*Axis];
  std::string Out = B.addOutput(Y);
  struct Part {
    std::string Param;
    int64_t Begin, Size;
  };
  std::vector<Part> Parts;
  int64_t Begin = 0;
  for (const Value *V : N.operands()) {
    int64_t Size = dimsOf(V)[*Axis];
    if (numElementsOf(dimsOf(V)) != 0)
      Parts.push_back({B.addInput(V), Begin, Size});
    Begin += Size;
  }
  CudaPrinter &P = B.p();
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(YD));
  std::string In = "0", T = "i";
  if (Inner != 1) {
    In = B.let("inner", "i % " + B.lit(Inner));
    T = B.let("t", "i / " + B.lit(Inner));
  }
  std::string A = B.let("a", T + " % " + B.lit(Total));
  std::string Outer = B.let("outer", T + " / " + B.lit(Total));
  for (size_t K = 0; K < Parts.size(); ++K) {
    const Part &Pt = Parts[K];
    std::string Src = "(" + Outer + " * " + B.lit(Pt.Size) + " + " + A +
                      (Pt.Begin ? " - " + B.lit(Pt.Begin) : "") + ")";
    if (Inner != 1)
      Src = Src + " * " + B.lit(Inner) + " + " + In;
    std::string Stmt = "out0[i] = " + Pt.Param + "[" + Src + "];";
    if (K + 1 == Parts.size())
      P.line((K ? "else " : "") + Stmt);
    else
      P.line(std::string(K ? "else " : "") + "if (" + A + " < " +
             B.lit(Pt.Begin + Pt.Size) + ") " + Stmt);
  }
  (void)Out;
  return llvm::Error::success();
}

llvm::Error emitSplit(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0);
  Dims XD = dimsOf(X);
  auto Axis = normalizeAxis(N.attrs().getInt("axis", 0), XD.size());
  if (!Axis)
    return nodeError(N, "axis out of range");
  int64_t Inner =
      numElementsOf(llvm::ArrayRef<int64_t>(XD).drop_front(*Axis + 1));
  int64_t Total = XD[*Axis];
  struct Part {
    std::string Param;
    int64_t Begin, Size;
  };
  std::vector<Part> Parts;
  int64_t Begin = 0;
  for (const Value *R : N.results()) {
    if (!R)
      return nodeError(N, "every Split result must exist");
    int64_t Size = dimsOf(R)[*Axis];
    Parts.push_back(
        {numElementsOf(dimsOf(R)) ? B.addOutput(R) : "", Begin, Size});
    Begin += Size;
  }
  if (Begin != Total)
    return nodeError(N, "split sizes do not add up to the input dim");
  std::string In = B.addInput(X);
  CudaPrinter &P = B.p();
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(XD));
  std::string InnerV = "0", T = "i";
  if (Inner != 1) {
    InnerV = B.let("inner", "i % " + B.lit(Inner));
    T = B.let("t", "i / " + B.lit(Inner));
  }
  std::string A = B.let("a", T + " % " + B.lit(Total));
  std::string Outer = B.let("outer", T + " / " + B.lit(Total));
  bool First = true;
  for (size_t K = 0; K < Parts.size(); ++K) {
    const Part &Pt = Parts[K];
    if (Pt.Size == 0)
      continue;
    std::string Dst = "(" + Outer + " * " + B.lit(Pt.Size) + " + " + A +
                      (Pt.Begin ? " - " + B.lit(Pt.Begin) : "") + ")";
    if (Inner != 1)
      Dst = Dst + " * " + B.lit(Inner) + " + " + InnerV;
    std::string Stmt = Pt.Param + "[" + Dst + "] = " + In + "[i];";
    bool Last = Pt.Begin + Pt.Size == Total;
    if (Last)
      P.line((First ? "" : "else ") + Stmt);
    else
      P.line(std::string(First ? "" : "else ") + "if (" + A + " < " +
             B.lit(Pt.Begin + Pt.Size) + ") " + Stmt);
    First = false;
  }
  return llvm::Error::success();
}

llvm::Error emitGather(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0), *Idx = N.operand(1), *Y = N.result(0);
  Dims XD = dimsOf(X);
  auto Axis = normalizeAxis(N.attrs().getInt("axis", 0), XD.size());
  if (!Axis)
    return nodeError(N, "axis out of range");
  if (Idx->dtype() != DType::I64 && Idx->dtype() != DType::I32)
    return nodeError(N, "indices must be i32 or i64");
  int64_t Inner =
      numElementsOf(llvm::ArrayRef<int64_t>(XD).drop_front(*Axis + 1));
  int64_t AxisSize = XD[*Axis];
  int64_t Q = numElementsOf(dimsOf(Idx));
  std::string Out = B.addOutput(Y);
  std::string In = B.addInput(X);
  std::string IdxIn = B.addInput(Idx);
  CudaPrinter &P = B.p();
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(dimsOf(Y)));
  std::string InnerV = "0", T = "i";
  if (Inner != 1) {
    InnerV = B.let("inner", "i % " + B.lit(Inner));
    T = B.let("t", "i / " + B.lit(Inner));
  }
  std::string QV = B.let("q", T + " % " + B.lit(Q));
  std::string Outer = B.let("outer", T + " / " + B.lit(Q));
  P.line("long long k = (long long)" + IdxIn + "[" + QV + "];");
  P.line("if (k < 0) k += " + std::to_string(AxisSize) + "LL;");
  // An index out of range is invalid input; read nothing and write 0
  // rather than fault.
  std::string Src = "(" + Outer + " * " + B.lit(AxisSize) + " + (idx_t)k)";
  if (Inner != 1)
    Src += " * " + B.lit(Inner) + " + " + InnerV;
  P.line(Out + "[i] = (k >= 0 && k < " + std::to_string(AxisSize) + "LL) ? " +
         In + "[" + Src + "] : " + storageLiteral(Y->dtype(), 0) + ";");
  return llvm::Error::success();
}

llvm::Error emitGatherElements(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0), *Idx = N.operand(1), *Y = N.result(0);
  Dims XD = dimsOf(X), ID = dimsOf(Idx);
  auto Axis = normalizeAxis(N.attrs().getInt("axis", 0), XD.size());
  if (!Axis || ID.size() != XD.size())
    return nodeError(N, "axis out of range or ranks differ");
  if (Idx->dtype() != DType::I64 && Idx->dtype() != DType::I32)
    return nodeError(N, "indices must be i32 or i64");
  Dims XS = rowMajorStrides(XD);
  int64_t AxisStride = XS[*Axis], AxisSize = XD[*Axis];
  XS[*Axis] = 0;
  std::string Out = B.addOutput(Y);
  std::string In = B.addInput(X);
  std::string IdxIn = B.addInput(Idx);
  CudaPrinter &P = B.p();
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(ID));
  std::string Off = emitOffsets(B, "i", ID, {XS})[0];
  P.line("long long k = (long long)" + IdxIn + "[i];");
  P.line("if (k < 0) k += " + std::to_string(AxisSize) + "LL;");
  P.line(Out + "[i] = (k >= 0 && k < " + std::to_string(AxisSize) + "LL) ? " +
         In + "[" + Off + " + (idx_t)k * " + B.lit(AxisStride) +
         "] : " + storageLiteral(Y->dtype(), 0) + ";");
  return llvm::Error::success();
}

llvm::Error emitGatherND(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0), *Idx = N.operand(1), *Y = N.result(0);
  Dims XD = dimsOf(X), ID = dimsOf(Idx);
  int64_t Batch = N.attrs().getInt("batch_dims", 0);
  if (ID.empty() || Batch < 0 || Batch >= int64_t(ID.size()) ||
      Batch + ID.back() > int64_t(XD.size()))
    return nodeError(N, "batch_dims and index depth do not fit the data");
  if (Idx->dtype() != DType::I64 && Idx->dtype() != DType::I32)
    return nodeError(N, "indices must be i32 or i64");
  // Out = indices.shape[:-1] + data.shape[batch + depth:]; each index tuple
  // (depth entries) picks a slice of Inner elements inside its batch.
  int64_t Depth = ID.back();
  llvm::ArrayRef<int64_t> XA(XD);
  int64_t Inner = numElementsOf(XA.drop_front(Batch + Depth));
  int64_t Tuples = numElementsOf(llvm::ArrayRef<int64_t>(ID).drop_back());
  int64_t Batches = numElementsOf(XA.take_front(Batch));
  int64_t BatchSize = numElementsOf(XA.drop_front(Batch));
  Dims XS = rowMajorStrides(XD);
  std::string Out = B.addOutput(Y);
  std::string In = B.addInput(X);
  std::string IdxIn = B.addInput(Idx);
  CudaPrinter &P = B.p();
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(dimsOf(Y)));
  std::string InnerV = "0", T = "i";
  if (Inner != 1) {
    InnerV = B.let("inner", "i % " + B.lit(Inner));
    T = B.let("t", "i / " + B.lit(Inner));
  }
  std::string Off = "0";
  if (Batches > 1)
    Off = "(" + T + " / " + B.lit(Tuples / Batches) + ") * " + B.lit(BatchSize);
  P.line("idx_t off = " + Off + " + " + InnerV + ";");
  P.line("bool ok = true;");
  for (int64_t M = 0; M < Depth; ++M) {
    int64_t Size = XD[Batch + M];
    std::string K = "k" + std::to_string(M);
    P.line("long long " + K + " = (long long)" + IdxIn + "[" + T + " * " +
           B.lit(Depth) + " + " + B.lit(M) + "];");
    P.line("if (" + K + " < 0) " + K + " += " + std::to_string(Size) + "LL;");
    P.line("ok = ok && " + K + " >= 0 && " + K + " < " + std::to_string(Size) +
           "LL;");
    P.line("off += (idx_t)" + K + " * " + B.lit(XS[Batch + M]) + ";");
  }
  // Out-of-range tuples are invalid input: write 0 rather than fault.
  P.line(Out + "[i] = ok ? " + In + "[off] : " + storageLiteral(Y->dtype(), 0) +
         ";");
  return llvm::Error::success();
}

llvm::Error emitPad(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0), *Y = N.result(0);
  Dims XD = dimsOf(X), YD = dimsOf(Y);
  std::string Mode = N.attrs().getString("mode", "constant");
  if (Mode != "constant" && Mode != "reflect" && Mode != "edge" &&
      Mode != "wrap")
    return nodeError(N, "unknown pad mode '" + Mode + "'");
  auto Pads = constInts(N, 1, "pads");
  if (!Pads)
    return Pads.takeError();
  llvm::SmallVector<int64_t, 8> Axes;
  if (N.operand(3)) {
    auto A = constInts(N, 3, "axes");
    if (!A)
      return A.takeError();
    for (int64_t V : *A) {
      auto D = normalizeAxis(V, XD.size());
      if (!D)
        return nodeError(N, "axis out of range");
      Axes.push_back(*D);
    }
  } else {
    for (size_t I = 0; I < XD.size(); ++I)
      Axes.push_back(I);
  }
  if (Pads->size() != 2 * Axes.size())
    return nodeError(N, "pads and axes differ in length");
  Dims Before(XD.size(), 0);
  for (size_t I = 0; I < Axes.size(); ++I)
    Before[Axes[I]] = (*Pads)[I];
  bool Constant = Mode == "constant";
  if (!Constant && numElementsOf(XD) == 0 && numElementsOf(YD) != 0)
    return nodeError(N, "cannot pad an empty input in " + Mode + " mode");
  std::string Out = B.addOutput(Y);
  std::string In = B.addInput(X);
  std::string Fill = storageLiteral(Y->dtype(), 0);
  if (Constant && N.operand(2)) {
    const Value *CV = N.operand(2);
    if (const Tensor *T = CV->constant())
      Fill =
          T->numElements() ? storageLiteral(Y->dtype(), T->getDouble(0)) : Fill;
    else
      Fill = B.addInput(CV) + "[0]";
  }
  CudaPrinter &P = B.p();
  Dims XS = rowMajorStrides(XD);
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(YD));
  std::vector<std::string> C = emitCoords(B, "i", YD);
  std::string Inside, Off;
  for (size_t D = 0; D < XD.size(); ++D) {
    bool Padded = Before[D] != 0 || XD[D] != YD[D];
    std::string S = C[D];
    if (Padded) {
      S = P.uniqueName("s");
      P.line("idx_t " + S + " = " + C[D] + " - " + B.lit(Before[D]) + ";");
      int64_t Sz = XD[D];
      if (Constant) {
        Inside += (Inside.empty() ? "" : " && ") +
                  ("(" + S + " >= 0 && " + S + " < " + B.lit(Sz) + ")");
      } else if (Mode == "edge") {
        P.line(S + " = " + S + " < 0 ? 0 : (" + S + " >= " + B.lit(Sz) + " ? " +
               B.lit(Sz - 1) + " : " + S + ");");
      } else if (Mode == "wrap") {
        P.line(S + " = ((" + S + " % " + B.lit(Sz) + ") + " + B.lit(Sz) +
               ") % " + B.lit(Sz) + ";");
      } else if (Sz == 1) { // reflect of a single element
        P.line(S + " = 0;");
      } else {
        // Reflection without repeating the edge has period 2 * (size - 1).
        int64_t Period = 2 * (Sz - 1);
        P.line("if (" + S + " < 0) " + S + " = -" + S + ";");
        P.line(S + " = " + S + " % " + B.lit(Period) + ";");
        P.line("if (" + S + " >= " + B.lit(Sz) + ") " + S + " = " +
               B.lit(Period) + " - " + S + ";");
      }
    }
    if (XS[D] != 0 && XD[D] != 1)
      Off += (Off.empty() ? "" : " + ") + S + " * " + B.lit(XS[D]);
  }
  if (Off.empty())
    Off = "0";
  if (Inside.empty())
    P.line(Out + "[i] = " + In + "[" + Off + "];");
  else
    P.line(Out + "[i] = (" + Inside + ") ? " + In + "[" + Off + "] : " + Fill +
           ";");
  return llvm::Error::success();
}

llvm::Error emitTile(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0), *Y = N.result(0);
  Dims XD = dimsOf(X), YD = dimsOf(Y);
  if (XD.size() != YD.size())
    return nodeError(N, "result rank differs from the input rank");
  std::string Out = B.addOutput(Y);
  std::string In = B.addInput(X);
  Dims XS = rowMajorStrides(XD);
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(YD));
  std::vector<std::string> C = emitCoords(B, "i", YD);
  std::string Off;
  for (size_t D = 0; D < XD.size(); ++D) {
    if (XD[D] == 1)
      continue;
    std::string S =
        YD[D] == XD[D] ? C[D] : "(" + C[D] + " % " + B.lit(XD[D]) + ")";
    Off += (Off.empty() ? "" : " + ") + S + " * " + B.lit(XS[D]);
  }
  B.p().line(Out + "[i] = " + In + "[" + (Off.empty() ? "0" : Off) + "];");
  return llvm::Error::success();
}

llvm::Error emitTrilu(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0), *Y = N.result(0);
  Dims XD = dimsOf(X);
  if (XD.size() < 2)
    return nodeError(N, "input must have rank >= 2");
  int64_t K = 0;
  if (N.operand(1)) {
    auto KV = constInts(N, 1, "k");
    if (!KV)
      return KV.takeError();
    if (KV->size() != 1)
      return nodeError(N, "k must be a scalar");
    K = (*KV)[0];
  }
  bool Upper = N.attrs().getInt("upper", 1) != 0;
  // Size-0 matrices run no iteration; 1 keeps the printed % and / valid.
  int64_t Rows = std::max<int64_t>(XD[XD.size() - 2], 1);
  int64_t Cols = std::max<int64_t>(XD.back(), 1);
  // c - r lies in [1 - Rows, Cols - 1], so clamping k to [-Rows, Cols]
  // changes no comparison and keeps it within the index type.
  K = std::clamp<int64_t>(K, -Rows, Cols);
  std::string Out = B.addOutput(Y);
  std::string In = B.addInput(X);
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(XD));
  std::string C = B.let("c", "i % " + B.lit(Cols));
  std::string R = B.let("r", "(i / " + B.lit(Cols) + ") % " + B.lit(Rows));
  B.p().line(Out + "[i] = " + C + " - " + R + (Upper ? " >= " : " <= ") +
             B.lit(K) + " ? " + In + "[i] : " + storageLiteral(Y->dtype(), 0) +
             ";");
  return llvm::Error::success();
}

llvm::Error emitConstantOfShape(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *Y = N.result(0);
  double V = 0;
  if (const Attribute *A = N.attrs().find("value"))
    if (A->kind() == AttrKind::Tensor && A->getTensor().numElements() == 1)
      V = A->getTensor().getDouble(0);
  std::string Out = B.addOutput(Y);
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(dimsOf(Y)));
  B.p().line(Out + "[i] = " + storageLiteral(Y->dtype(), V) + ";");
  return llvm::Error::success();
}

llvm::Error emitRange(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *Y = N.result(0);
  DType T = Y->dtype();
  if (T == DType::Bool || T == DType::F16 || T == DType::BF16)
    return nodeError(N, "code generation does not support Range on " +
                            dtypeName(T));
  std::string Out = B.addOutput(Y);
  // Start and delta baked when constant, else read from their buffers.
  auto Scalar = [&](unsigned I) {
    const Value *V = N.operand(I);
    if (const Tensor *C = V->constant())
      return isInteger(T) ? computeLiteral(T, double(C->getInt64(0)))
                          : computeLiteral(T, C->getDouble(0));
    return loadExpr(T, B.addInput(V) + "[0]");
  };
  std::string Start = Scalar(0);
  std::string Delta = Scalar(2);
  std::string CT = computeTypeName(T).str();
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(dimsOf(Y)));
  B.p().line(Out + "[i] = " +
             storeExpr(T, Start + " + (" + CT + ")i * " + Delta) + ";");
  return llvm::Error::success();
}

llvm::Error emitShape(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *Y = N.result(0);
  Dims XD = dimsOf(N.operand(0));
  int64_t R = XD.size();
  int64_t S = N.attrs().getInt("start", 0), E = N.attrs().getInt("end", R);
  if (S < 0)
    S += R;
  if (E < 0)
    E += R;
  S = std::clamp<int64_t>(S, 0, R);
  E = std::clamp<int64_t>(E, 0, R);
  std::string Out = B.addOutput(Y);
  CudaPrinter &P = B.p();
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", std::max<int64_t>(0, E - S));
  for (int64_t I = S; I < E; ++I)
    P.line("if (i == " + B.lit(I - S) + ") " + Out +
           "[i] = " + std::to_string(XD[I]) + "LL;");
  return llvm::Error::success();
}

} // namespace

llvm::Error emitDataMovement(KernelBuilder &B) {
  switch (B.node().kind()) {
  case OpKind::Transpose:
    return emitTranspose(B);
  case OpKind::Expand:
    return emitExpand(B);
  case OpKind::Slice:
    return emitSlice(B);
  case OpKind::Concat:
    return emitConcat(B);
  case OpKind::Split:
    return emitSplit(B);
  case OpKind::Gather:
    return emitGather(B);
  case OpKind::GatherElements:
    return emitGatherElements(B);
  case OpKind::GatherND:
    return emitGatherND(B);
  case OpKind::Pad:
    return emitPad(B);
  case OpKind::Tile:
    return emitTile(B);
  case OpKind::Trilu:
    return emitTrilu(B);
  case OpKind::ConstantOfShape:
    return emitConstantOfShape(B);
  case OpKind::Range:
    return emitRange(B);
  case OpKind::Shape:
    return emitShape(B);
  default:
    break;
  }
  return nodeError(B.node(),
                   "code generation does not support " + B.node().opName());
}

} // namespace codegen
} // namespace solder
