//===- ScatterEmitter.cpp - ScatterElements and ScatterND kernels ---------===//
//
// One thread per output element starts from data and walks, in update
// order, every update that could land on it (ScatterElements: the line of
// updates through its coordinates along the axis; ScatterND: every index
// tuple), applying those that do: reduction none keeps the last, add, mul,
// max and min combine in the compute type as the reference does. Walking
// in order makes duplicate indices deterministic and equal to the
// reference without atomics; the cost is elements x candidates, fine for
// the few updates exports scatter, slow for large ones. Indices outside
// [-dim, dim) match nothing here (the reference reports them).
//
//===----------------------------------------------------------------------===//
#include "codegen/EmitterUtils.h"

namespace solder {
namespace codegen {

namespace {

/// How `acc` takes `x` under reduction R; empty for an unknown R.
std::string combineLine(const std::string &R) {
  if (R == "none")
    return "acc = x;";
  if (R == "add")
    return "acc = acc + x;";
  if (R == "mul")
    return "acc = acc * x;";
  if (R == "max") // std::max's choice, as the reference
    return "acc = acc < x ? x : acc;";
  if (R == "min")
    return "acc = x < acc ? x : acc;";
  return "";
}

/// What both ops start from: their buffers, types, data dims and the
/// reduction's combine line.
struct ScatterParts {
  std::string Out, Data, Idx, Upd, Line;
  DType T, IT;
  Dims DD;
};

llvm::Expected<ScatterParts> beginScatter(KernelBuilder &B) {
  const Node &N = B.node();
  ScatterParts S;
  S.T = N.operand(0)->dtype();
  S.IT = N.operand(1)->dtype();
  S.DD = dimsOf(N.operand(0));
  std::string R = N.attrs().getString("reduction", "none");
  S.Line = combineLine(R);
  if (S.Line.empty())
    return nodeError(N, "reduction '" + R + "' is not supported");
  if (S.T == DType::Bool && R != "none")
    return nodeError(N, "code generation does not support " + N.opName() +
                            " reduction '" + R + "' on bool");
  S.Out = B.addOutput(N.result(0));
  S.Data = B.addInput(N.operand(0));
  S.Idx = B.addInput(N.operand(1));
  S.Upd = B.addInput(N.operand(2));
  return S;
}

/// acc's declaration: data[i] in T's compute type.
std::string accDecl(DType T, const std::string &Data) {
  return computeTypeName(T).str() + " acc = " + loadExpr(T, Data + "[i]") + ";";
}

} // namespace

llvm::Error emitScatterElements(KernelBuilder &B) {
  const Node &N = B.node();
  auto SP = beginScatter(B);
  if (!SP)
    return SP.takeError();
  const auto &[Out, Data, Idx, Upd, Line, T, IT, DD] = *SP;
  Dims UD = dimsOf(N.operand(2));
  auto Axis = normalizeAxis(N.attrs().getInt("axis", 0), DD.size());
  if (!Axis)
    return nodeError(N, "axis out of range");
  Dims DS = rowMajorStrides(DD), US = rowMajorStrides(UD);
  CudaPrinter &P = B.p();
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(DD));
  std::vector<std::string> C(DD.size());
  for (size_t D = 0; D < DD.size(); ++D)
    C[D] = B.let("c", "(i / " + B.lit(DS[D]) + ") % " +
                          B.lit(std::max<int64_t>(DD[D], 1)));
  P.line(accDecl(T, Data));
  std::string Inside = "true", Base = "0";
  for (size_t D = 0; D < DD.size(); ++D) {
    if (int64_t(D) == *Axis)
      continue;
    Inside += " && " + C[D] + " < " + B.lit(UD[D]);
    Base += " + " + C[D] + " * " + B.lit(US[D]);
  }
  {
    auto If = P.scope("if (" + Inside + ")");
    auto J = P.scope("for (idx_t j = 0; j < " + B.lit(UD[*Axis]) + "; ++j)");
    P.line("const idx_t u = " + Base + " + j * " + B.lit(US[*Axis]) + ";");
    P.line("long long at = (long long)" + loadExpr(IT, Idx + "[u]") + ";");
    P.line("if (at < 0) at += " + B.lit(DD[*Axis]) + ";");
    auto Hit = P.scope("if (at == (long long)" + C[*Axis] + ")");
    P.line("const " + computeTypeName(T) + " x = " + loadExpr(T, Upd + "[u]") +
           ";");
    P.line(Line);
  }
  P.line(Out + "[i] = " + storeExpr(T, "acc") + ";");
  return llvm::Error::success();
}

llvm::Error emitScatterND(KernelBuilder &B) {
  const Node &N = B.node();
  auto SP = beginScatter(B);
  if (!SP)
    return SP.takeError();
  const auto &[Out, Data, Idx, Upd, Line, T, IT, DD] = *SP;
  Dims ID = dimsOf(N.operand(1));
  int64_t K = ID.back(), Slice = 1;
  for (size_t D = K; D < DD.size(); ++D)
    Slice *= DD[D];
  int64_t Tuples = K ? numElementsOf(ID) / K : 0;
  Slice = std::max<int64_t>(Slice, 1); // keeps the printed % and / valid
  Dims DS = rowMajorStrides(DD);
  CudaPrinter &P = B.p();
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(DD));
  std::string Head = B.let("head", "i / " + B.lit(Slice));
  std::string Rest = B.let("rest", "i % " + B.lit(Slice));
  P.line(accDecl(T, Data));
  {
    auto For = P.scope("for (idx_t t = 0; t < " + B.lit(Tuples) + "; ++t)");
    P.line("long long h = 0;");
    for (int64_t D = 0; D < K; ++D) {
      std::string V = P.uniqueName("at");
      P.line("long long " + V + " = (long long)" +
             loadExpr(IT, Idx + "[t * " + B.lit(K) + " + " + B.lit(D) + "]") +
             ";");
      P.line("if (" + V + " < 0) " + V + " += " + B.lit(DD[D]) + ";");
      P.line("h += " + V + " * " + B.lit(DS[D] / Slice) + ";");
    }
    auto Hit = P.scope("if (h == (long long)" + Head + ")");
    P.line("const " + computeTypeName(T) + " x = " +
           loadExpr(T, Upd + "[t * " + B.lit(Slice) + " + " + Rest + "]") +
           ";");
    P.line(Line);
  }
  P.line(Out + "[i] = " + storeExpr(T, "acc") + ";");
  return llvm::Error::success();
}

} // namespace codegen
} // namespace solder
