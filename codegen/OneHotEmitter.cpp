//===- OneHotEmitter.cpp - OneHot kernels ---------------------------------===//
//
// OneHot(indices, depth, values) {axis}: one thread per output element.
// The result's dims split into [Outer, Depth, Inner] around the axis;
// element i reads the index at (i / (Depth * Inner)) * Inner + i % Inner,
// wraps a negative one by Depth and stores values[1] where it equals
// (i / Inner) % Depth, values[0] elsewhere. Depth must be a constant (it
// decides the result's shape); values are read from their buffer, copied
// in their storage type, so every dtype works.
//
//===----------------------------------------------------------------------===//
#include "codegen/EmitterUtils.h"

namespace solder {
namespace codegen {

llvm::Error emitOneHot(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *I = N.operand(0), *V = N.operand(2), *Y = N.result(0);
  DType IT = I->dtype();
  if (IT == DType::Bool)
    return nodeError(N, "indices must be numeric, got bool");
  auto DepthV = constInts(N, 1, "depth");
  if (!DepthV)
    return DepthV.takeError();
  if (DepthV->size() != 1 || (*DepthV)[0] < 1)
    return nodeError(N, "depth must be one positive value");
  int64_t Depth = (*DepthV)[0];
  Dims YD = dimsOf(Y);
  auto Axis = normalizeAxis(N.attrs().getInt("axis", -1), YD.size());
  if (!Axis)
    return nodeError(N, "axis out of range for " + typeToString(Y->type()));
  int64_t Inner = 1;
  for (size_t D = *Axis + 1; D < YD.size(); ++D)
    Inner *= YD[D];
  // Size-0 dims run no iteration; 1 keeps the printed % and / valid.
  Inner = std::max<int64_t>(Inner, 1);
  std::string Out = B.addOutput(Y);
  std::string Idx = B.addInput(I);
  std::string Vals = B.addInput(V);
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(YD));
  std::string Inr = B.let("inner", "i % " + B.lit(Inner));
  std::string K = B.let("k", "(i / " + B.lit(Inner) + ") % " + B.lit(Depth));
  std::string Src =
      "(i / " + B.lit(Depth * Inner) + ") * " + B.lit(Inner) + " + " + Inr;
  // Float indices truncate toward zero, like a cast to int64; the range
  // check comes first so that no conversion overflows.
  std::string Load = loadExpr(IT, Idx + "[" + Src + "]");
  std::string Raw = B.p().uniqueName("raw");
  B.p().line("const " + computeTypeName(IT) + " " + Raw + " = " + Load + ";");
  std::string DepthLit = computeLiteral(IT, double(Depth));
  B.p().line("long long hot = -1;");
  if (isInteger(IT) && !isSigned(IT)) {
    B.p().line("if (" + Raw + " < " + DepthLit + ") hot = (long long)" + Raw +
               ";");
  } else {
    // (-depth - 1, depth) truncates to [-depth, depth - 1].
    auto In = B.p().scope("if (" + Raw + " > -" + DepthLit + " - 1 && " + Raw +
                          " < " + DepthLit + ")");
    B.p().line("hot = (long long)" + Raw + ";");
    B.p().line("if (hot < 0) hot += " + B.lit(Depth) + ";");
  }
  B.p().line(Out + "[i] = " + K + " == hot ? " + Vals + "[1] : " + Vals +
             "[0];");
  return llvm::Error::success();
}

} // namespace codegen
} // namespace solder
