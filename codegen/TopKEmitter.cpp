//===- TopKEmitter.cpp - TopK kernels -------------------------------------===//
//
// TopK(X, K) {axis, largest}: one thread per input element counts the
// elements of its line that come before it (better value, or an equal
// value at a lower index; NaN ranks above every number, as in the
// reference) and, when that rank is below K, writes its value and index at
// that rank. Ranks are distinct, so every output slot is written once and
// the result is sorted whatever `sorted` says. A line costs Len^2
// comparisons spread over Len threads: fine for the short lines exports
// take the top-k of (class scores), slow for very long ones. K must be a
// constant: it decides the result's shape.
//
//===----------------------------------------------------------------------===//
#include "codegen/EmitterUtils.h"

namespace solder {
namespace codegen {

static const char *const TopKHelpers =
    R"(// Whether (a at ia) comes before (b at ib) in TopK's order.
template <bool Largest, typename T>
__device__ __forceinline__ bool solder_topk_before(T a, long long ia, T b, long long ib) {
  const bool an = a != a, bn = b != b;
  const bool above = (an || bn) ? (an && !bn) : a > b;
  const bool below = (an || bn) ? (bn && !an) : b > a;
  if (Largest ? above : below) return true;
  if (Largest ? below : above) return false;
  return ia < ib;
})";

llvm::Error emitTopK(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0), *Vals = N.result(0);
  const Value *Idx = N.numResults() > 1 ? N.result(1) : nullptr;
  DType T = X->dtype();
  if (T == DType::Bool)
    return nodeError(N, "code generation does not support TopK on bool");
  auto KV = constInts(N, 1, "k");
  if (!KV)
    return KV.takeError();
  Dims XD = dimsOf(X);
  auto Axis = normalizeAxis(N.attrs().getInt("axis", -1), XD.size());
  if (!Axis)
    return nodeError(N, "axis out of range for " + typeToString(X->type()));
  int64_t K = (*KV)[0], Len = XD[*Axis], Inner = 1;
  for (size_t D = *Axis + 1; D < XD.size(); ++D)
    Inner *= XD[D];
  Inner = std::max<int64_t>(Inner, 1); // keeps the printed % and / valid
  bool Largest = N.attrs().getInt("largest", 1) != 0;
  CudaPrinter &P = B.p();
  P.declare("topk", TopKHelpers);
  std::string VOut = B.addOutput(Vals);
  std::string IOut = Idx ? B.addOutput(Idx) : "";
  std::string In = B.addInput(X);
  std::string CT = computeTypeName(T).str();
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(XD));
  std::string Inr = B.let("inner", "i % " + B.lit(Inner));
  std::string Pos = B.let("pos", "(i / " + B.lit(Inner) + ") % " + B.lit(Len));
  std::string Line = B.let("line", "(i / " + B.lit(Len * Inner) + ") * " +
                                       B.lit(Len * Inner) + " + " + Inr);
  P.line("const " + CT + " v = " + loadExpr(T, In + "[i]") + ";");
  P.line("long long rank = 0;");
  {
    auto J = P.scope("for (idx_t j = 0; j < " + B.lit(Len) + "; ++j)");
    P.line("const " + CT + " u = " +
           loadExpr(T, In + "[" + Line + " + j * " + B.lit(Inner) + "]") + ";");
    P.line("rank += solder_topk_before<" +
           std::string(Largest ? "true" : "false") +
           ">(u, (long long)j, v, (long long)" + Pos + ");");
  }
  auto If = P.scope("if (rank < " + B.lit(K) + ")");
  std::string At =
      B.let("at", "(i / " + B.lit(Len * Inner) + ") * " + B.lit(K * Inner) +
                      " + rank * " + B.lit(Inner) + " + " + Inr);
  P.line(VOut + "[" + At + "] = " + In + "[i];");
  if (Idx)
    P.line(IOut + "[" + At + "] = (long long)" + Pos + ";");
  return llvm::Error::success();
}

} // namespace codegen
} // namespace solder
