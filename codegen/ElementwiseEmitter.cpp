//===- ElementwiseEmitter.cpp - Unary, broadcast and variadic kernels -----===//
//
// One thread per output element in a grid-stride loop. Each operand is read
// at its broadcast offset (numpy rules, strides baked; BatchNormalization's
// per-channel operands broadcast along dim 1), loaded into its compute
// type, combined by the expression table, and stored with one rounding.
// Constant scalar operands (x * 0.5, Clip bounds) are baked in as literals
// and get no parameter.
//
// When every pointer operand has the result's shape and all buffers share
// one element size of 2, 4 or 8 bytes dividing the element count, the loop
// moves 16 bytes per access (uint4) and computes the lanes in an unrolled
// inner loop:
//
//   for (v = tid; v < N / 8; v += stride) {        // f16: 8 lanes
//     const uint4 raw0 = ((const uint4 *)in0)[v];
//     ... q[k] = __float2half_rn(f(__half2float(p0[k]))) ...
//     ((uint4 *)out0)[v] = rawOut;
//   }
//
//===----------------------------------------------------------------------===//
#include "codegen/EmitterUtils.h"
#include "ir/OpRegistry.h"
#include <cmath>

namespace solder {
namespace codegen {

namespace {

/// How one operand of the kernel is read.
struct OperandRead {
  const Value *V = nullptr; ///< null for an absent optional operand
  std::string Literal;      ///< set when baked in
  std::string Param;        ///< set when read from memory
  Dims Strides;             ///< over the result's dims
};

} // namespace

std::optional<std::string> scalarLiteral(const Value *V) {
  const Tensor *T = V->constant();
  if (!T || T->numElements() != 1)
    return std::nullopt;
  DType D = T->dtype();
  if (D == DType::Bool)
    return computeLiteral(D, T->getDouble(0));
  if (isInteger(D)) {
    int64_t I = T->getInt64(0);
    const int64_t Exact = int64_t(1) << 53; // beyond, double drops bits
    if (I > Exact || I < -Exact)
      return std::nullopt;
    return computeLiteral(D, double(I));
  }
  return computeLiteral(D, T->getDouble(0));
}

llvm::Error emitElementwise(KernelBuilder &B) {
  const Node &N = B.node();
  CudaPrinter &P = B.p();
  const Value *Y = N.result(0);
  Dims YDims = dimsOf(Y);
  int64_t Count = numElementsOf(YDims);
  OpKind Op = N.kind();
  bool IsBatchNorm = Op == OpKind::BatchNormalization;
  bool IsCast = Op == OpKind::Cast;
  bool IsCopy = Op == OpKind::Dropout || Op == OpKind::Identity;

  // Check the op/dtype combination before printing anything.
  if (!IsCast && !IsCopy && !hasExprRule(Op, exprOperandDType(N)))
    return nodeError(N, "code generation does not support " + N.opName() +
                            " on " + dtypeName(exprOperandDType(N)));
  if (IsBatchNorm && YDims.size() < 2)
    return nodeError(N, "expects an input of rank >= 2, got " +
                            typeToString(Y->type()));

  // Operands: Dropout reads only its data; the rest read every operand.
  unsigned NumOperands = IsCopy ? 1 : N.numOperands();
  std::vector<OperandRead> Reads(NumOperands);
  std::vector<std::string> OutParams;
  for (const Value *R : N.results())
    if (R)
      OutParams.push_back(B.addOutput(R));
  for (unsigned I = 0; I < NumOperands; ++I) {
    OperandRead &Rd = Reads[I];
    Rd.V = N.operand(I);
    if (!Rd.V)
      continue;
    Dims D = dimsOf(Rd.V);
    if (!IsCopy && !IsCast)
      if (auto L = scalarLiteral(Rd.V)) {
        Rd.Literal = *L;
        continue;
      }
    if (IsBatchNorm && I > 0) {
      if (D.size() != 1 || D[0] != YDims[1])
        return nodeError(N, "operand " + llvm::Twine(I) + " has type " +
                                typeToString(Rd.V->type()) + ", expected " +
                                llvm::Twine(YDims[1]) + " channels");
      Rd.Strides.assign(YDims.size(), 0);
      Rd.Strides[1] = YDims[1] == 1 ? 0 : 1;
    } else {
      if (D.size() > YDims.size())
        return nodeError(N, "operand " + llvm::Twine(I) +
                                " has a higher rank than the result");
      Rd.Strides = broadcastStrides(D, YDims);
    }
    Rd.Param = B.addInput(Rd.V);
  }

  // Vectorize when all pointers walk the result's layout with one size.
  Dims Contig = rowMajorStrides(YDims);
  unsigned ElemSize = dtypeSize(Y->dtype());
  bool Vector = B.opts().Vectorize && Count > 0 && ElemSize >= 2;
  for (const Value *R : N.results())
    if (R)
      Vector &= dtypeSize(R->dtype()) == ElemSize;
  for (const OperandRead &Rd : Reads)
    if (!Rd.Param.empty()) {
      Vector &= dtypeSize(Rd.V->dtype()) == ElemSize;
      for (size_t D = 0; D < YDims.size(); ++D)
        Vector &= YDims[D] == 1 || Rd.Strides[D] == Contig[D];
    }
  unsigned Lanes = Vector ? 16 / ElemSize : 1;
  Vector &= Count % Lanes == 0;
  if (!Vector)
    Lanes = 1;

  auto Kernel = B.beginKernel();

  // Prints the computation of one element given, for each operand
  // parameter, the storage expression of its element; returns the
  // storage values of the results.
  auto EmitElement = [&](llvm::ArrayRef<std::string> Storage)
      -> llvm::Expected<std::vector<std::string>> {
    std::vector<std::string> Args(NumOperands);
    for (unsigned I = 0; I < NumOperands; ++I) {
      const OperandRead &Rd = Reads[I];
      if (!Rd.V)
        continue;
      if (!Rd.Literal.empty()) {
        Args[I] = Rd.Literal;
        continue;
      }
      if (IsCopy) {
        Args[I] = Storage[I];
        continue;
      }
      std::string X = P.uniqueName("x");
      P.line("const " + computeTypeName(Rd.V->dtype()) + " " + X + " = " +
             loadExpr(Rd.V->dtype(), Storage[I]) + ";");
      Args[I] = X;
    }
    if (IsCopy) {
      std::vector<std::string> Vals = {Args[0]};
      if (N.result(1)) // Dropout's mask: all kept
        Vals.push_back("true");
      return Vals;
    }
    if (IsCast)
      return std::vector<std::string>{
          castToStorage(Reads[0].V->dtype(), Y->dtype(), Args[0])};
    auto Expr = elementwiseExpr(N, Args);
    if (!Expr)
      return Expr.takeError();
    return std::vector<std::string>{storeExpr(Y->dtype(), *Expr)};
  };

  if (Vector) {
    auto Loop = B.gridStrideLoop("v", Count / Lanes);
    std::vector<std::string> Lane(NumOperands);
    for (unsigned I = 0; I < NumOperands; ++I) {
      const OperandRead &Rd = Reads[I];
      if (Rd.Param.empty())
        continue;
      std::string Raw = "raw" + std::to_string(I);
      std::string Ptr = "p" + std::to_string(I);
      std::string T = P.storageType(Rd.V->dtype());
      P.line("const uint4 " + Raw + " = reinterpret_cast<const uint4 *>(" +
             Rd.Param + ")[v];");
      P.line("const " + T + " *" + Ptr + " = reinterpret_cast<const " + T +
             " *>(&" + Raw + ");");
      Lane[I] = Ptr + "[k]";
    }
    std::vector<std::string> OutPtr;
    unsigned RIdx = 0;
    for (const Value *R : N.results()) {
      if (!R)
        continue;
      std::string T = P.storageType(R->dtype());
      std::string Raw = "rawOut" + std::to_string(RIdx);
      std::string Ptr = "q" + std::to_string(RIdx);
      P.line("uint4 " + Raw + ";");
      P.line(T + " *" + Ptr + " = reinterpret_cast<" + T + " *>(&" + Raw +
             ");");
      OutPtr.push_back(Ptr);
      ++RIdx;
    }
    P.line("#pragma unroll");
    {
      auto Inner =
          P.scope("for (int k = 0; k < " + std::to_string(Lanes) + "; ++k)");
      auto Vals = EmitElement(Lane);
      if (!Vals)
        return Vals.takeError();
      for (size_t R = 0; R < OutPtr.size(); ++R)
        P.line(OutPtr[R] + "[k] = " + (*Vals)[R] + ";");
    }
    for (size_t R = 0; R < OutParams.size(); ++R)
      P.line("reinterpret_cast<uint4 *>(" + OutParams[R] + ")[v] = rawOut" +
             std::to_string(R) + ";");
    return llvm::Error::success();
  }

  auto Loop = B.gridStrideLoop("i", Count);
  std::vector<Dims> StrideSets;
  std::vector<unsigned> SetOf(NumOperands, ~0u);
  for (unsigned I = 0; I < NumOperands; ++I)
    if (!Reads[I].Param.empty()) {
      SetOf[I] = StrideSets.size();
      StrideSets.push_back(Reads[I].Strides);
    }
  std::vector<std::string> Offsets = emitOffsets(B, "i", YDims, StrideSets);
  std::vector<std::string> Storage(NumOperands);
  for (unsigned I = 0; I < NumOperands; ++I)
    if (SetOf[I] != ~0u)
      Storage[I] = Reads[I].Param + "[" + Offsets[SetOf[I]] + "]";
  auto Vals = EmitElement(Storage);
  if (!Vals)
    return Vals.takeError();
  for (size_t R = 0; R < OutParams.size(); ++R)
    P.line(OutParams[R] + "[i] = " + (*Vals)[R] + ";");
  return llvm::Error::success();
}

} // namespace codegen
} // namespace solder
