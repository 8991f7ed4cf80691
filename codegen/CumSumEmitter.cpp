//===- CumSumEmitter.cpp - Running sums along one axis --------------------===//
//
// CumSum(X, axis) {exclusive, reverse} runs one thread per line: X's dims
// split into [Outer, Len, Inner] around the axis, and line l starts at
// (l / Inner) * Len * Inner + l % Inner and steps by Inner, forwards or
// (reverse) backwards, writing each running sum (with exclusive, the sum
// before the element). Neighbouring threads own neighbouring lines, so their
// loads coalesce when Inner > 1. Floats accumulate in float (f16/bf16 too)
// or double and each output is rounded once; integers accumulate in the
// unsigned type of their width, so they wrap without undefined behaviour.
// The axis must be a constant: it decides the launch.
//
//===----------------------------------------------------------------------===//
#include "codegen/EmitterUtils.h"

namespace solder {
namespace codegen {

/// The accumulator of T: its compute type for floats, the unsigned type of
/// its compute width for integers; empty when CumSum does not take T.
static std::string accumulatorType(DType T) {
  switch (T) {
  case DType::F32:
  case DType::F16:
  case DType::BF16:
  case DType::F64:
    return computeTypeName(T).str();
  case DType::I32:
  case DType::U32:
    return "unsigned int";
  case DType::I64:
  case DType::U64:
    return "unsigned long long";
  default:
    return "";
  }
}

llvm::Error emitCumSum(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0), *Y = N.result(0);
  DType T = X->dtype();
  std::string Acc = accumulatorType(T);
  if (Acc.empty())
    return nodeError(N, "code generation does not support CumSum on " +
                            dtypeName(T));
  auto AxisV = constInts(N, 1, "axis");
  if (!AxisV)
    return AxisV.takeError();
  Dims XD = dimsOf(X);
  std::optional<int64_t> Axis;
  if (AxisV->size() == 1)
    Axis = normalizeAxis((*AxisV)[0], XD.size());
  if (!Axis)
    return nodeError(N, "axis must be a scalar in [-rank, rank)");
  int64_t Len = XD[*Axis];
  int64_t Inner =
      numElementsOf(llvm::ArrayRef<int64_t>(XD).drop_front(*Axis + 1));
  int64_t Lines = Len == 0 ? 0 : numElementsOf(XD) / Len;
  bool Exclusive = N.attrs().getInt("exclusive", 0) != 0;
  bool Reverse = N.attrs().getInt("reverse", 0) != 0;

  std::string Out = B.addOutput(Y);
  std::string In = B.addInput(X);
  CudaPrinter &P = B.p();
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("l", Lines);
  std::string Base =
      Inner == 1
          ? B.let("base", "l * " + B.lit(Len))
          : B.let("base", "(l / " + B.lit(Inner) + ") * " + B.lit(Len * Inner) +
                              " + l % " + B.lit(Inner));
  P.line(Acc + " acc = 0;");
  auto Steps = P.scope("for (idx_t j = 0; j < " + B.lit(Len) + "; ++j)");
  std::string Pos = Reverse ? "(" + B.lit(Len - 1) + " - j)" : "j";
  std::string Off =
      B.let("o", Base + " + " + Pos + (Inner == 1 ? "" : " * " + B.lit(Inner)));
  std::string Add =
      "acc += (" + Acc + ")" + loadExpr(T, In + "[" + Off + "]") + ";";
  std::string Store =
      Out + "[" + Off +
      "] = " + storeExpr(T, "(" + computeTypeName(T).str() + ")acc") + ";";
  P.line(Exclusive ? Store : Add);
  P.line(Exclusive ? Add : Store);
  return llvm::Error::success();
}

} // namespace codegen
} // namespace solder
