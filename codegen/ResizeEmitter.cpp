//===- ResizeEmitter.cpp - Resize kernels ---------------------------------===//
//
// Resize runs one thread per output element over the tap tables of
// ir/ResizeSpec.h, baked into the source as file-scope arrays per resized
// axis (source index and weight per output position and tap, and where
// tf_crop_and_resize extrapolates, a flag): the kernel nests one loop per
// resized axis over its taps and sums weight products times source
// elements in the compute type (float for f16/bf16). Axes kept as they are
// add their coordinate to the base offset. The tables are the reference
// kernel's, so both pick the same sources and weights; roi, scales and
// sizes must therefore be constants.
//
//===----------------------------------------------------------------------===//
#include "codegen/EmitterUtils.h"
#include "ir/ResizeSpec.h"

namespace solder {
namespace codegen {

llvm::Error checkResizeOperands(const Node &N) {
  for (unsigned I = 1; I < 4 && I < N.numOperands(); ++I)
    if (N.operand(I) && !N.operand(I)->constant())
      return nodeError(N, "roi, scales and sizes must be a constant (or fold "
                          "to one) for a static output shape; '" +
                              N.operand(I)->name() +
                              "' is computed at run "
                              "time");
  return llvm::Error::success();
}

/// "{a, b, c}" of Values printed by Print.
template <typename T, typename PrintFn>
static std::string arrayLiteral(const std::vector<T> &Values, PrintFn Print) {
  std::string S = "{";
  for (size_t I = 0; I < Values.size(); ++I)
    S += (I ? ", " : "") + Print(Values[I]);
  return S + "}";
}

llvm::Error emitResize(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0), *Y = N.result(0);
  DType T = X->dtype();
  if (!isFloat(T))
    return nodeError(N, "code generation does not support Resize on " +
                            dtypeName(T));
  if (auto E = checkResizeOperands(N))
    return E;
  auto Constant = [&](unsigned I) -> const Tensor * {
    return I < N.numOperands() && N.operand(I) ? N.operand(I)->constant()
                                               : nullptr;
  };
  Dims XD = dimsOf(X);
  auto Spec = resolveResize(N, XD, Constant(1), Constant(2), Constant(3));
  if (!Spec)
    return Spec.takeError();
  Dims YD = dimsOf(Y), InStrides = rowMajorStrides(XD),
       OutStrides = rowMajorStrides(YD);
  CudaPrinter &P = B.p();
  std::string Acc = computeTypeName(T).str();
  DType WeightType = computeDType(T);
  std::string Out = B.addOutput(Y);
  std::string In = B.addInput(X);
  struct Table {
    size_t Axis;
    std::string Idx, W, Ext;
  };
  std::vector<Table> Tables;
  for (size_t D = 0; D < XD.size(); ++D) {
    const ResizeAxisTaps &Taps = Spec->Axes[D];
    if (Taps.isIdentity())
      continue;
    Table Tb{D, P.uniqueName("resize_idx"), P.uniqueName("resize_w"), ""};
    P.declare(Tb.Idx, "__device__ const long long " + Tb.Idx + "[] = " +
                          arrayLiteral(Taps.Index,
                                       [](int64_t V) {
                                         return std::to_string(V) + "LL";
                                       }) +
                          ";");
    P.declare(Tb.W, "__device__ const " + Acc + " " + Tb.W + "[] = " +
                        arrayLiteral(Taps.Weight,
                                     [&](double V) {
                                       return computeLiteral(WeightType, V);
                                     }) +
                        ";");
    if (llvm::is_contained(Taps.Extrapolated, true)) {
      Tb.Ext = P.uniqueName("resize_ext");
      P.declare(Tb.Ext,
                "__device__ const bool " + Tb.Ext + "[] = " +
                    arrayLiteral(Taps.Extrapolated,
                                 [](bool V) {
                                   return std::string(V ? "true" : "false");
                                 }) +
                    ";");
    }
    Tables.push_back(Tb);
  }
  auto Kernel = B.beginKernel();
  auto Loop = B.gridStrideLoop("i", numElementsOf(YD));
  std::vector<std::string> Coord(XD.size());
  std::string Base;
  for (size_t D = 0; D < XD.size(); ++D) {
    if (YD[D] == 1)
      Coord[D] = "0";
    else
      Coord[D] =
          B.let("o", "(i / " + B.lit(OutStrides[D]) + ") % " + B.lit(YD[D]));
    bool Resized =
        llvm::any_of(Tables, [&](const Table &Tb) { return Tb.Axis == D; });
    if (!Resized && Coord[D] != "0")
      Base +=
          (Base.empty() ? "" : " + ") + Coord[D] + " * " + B.lit(InStrides[D]);
  }
  for (const Table &Tb : Tables)
    if (!Tb.Ext.empty())
      P.line("if (" + Tb.Ext + "[" + Coord[Tb.Axis] + "]) { " + Out + "[i] = " +
             storeExpr(T, computeLiteral(T, Spec->ExtrapolationValue)) +
             "; continue; }");
  P.line(Acc + " acc = " + computeLiteral(T, 0) + ";");
  std::vector<CudaPrinter::Scope> Loops;
  std::string Weight, Offset = Base.empty() ? "0" : Base;
  for (const Table &Tb : Tables) {
    unsigned Nt = Spec->Axes[Tb.Axis].TapsPerOut;
    std::string Tap = P.uniqueName("t");
    Loops.push_back(P.scope("for (int " + Tap + " = 0; " + Tap + " < " +
                            std::to_string(Nt) + "; ++" + Tap + ")"));
    std::string At = Coord[Tb.Axis] + " * " + std::to_string(Nt) + " + " + Tap;
    std::string W = P.uniqueName("w");
    P.line("const " + Acc + " " + W + " = " + Tb.W + "[" + At + "];");
    Weight += (Weight.empty() ? "" : " * ") + W;
    Offset += " + " + Tb.Idx + "[" + At + "] * " + B.lit(InStrides[Tb.Axis]);
  }
  std::string Src = loadExpr(T, In + "[" + Offset + "]");
  P.line("acc += " + (Weight.empty() ? Src : Weight + " * " + Src) + ";");
  while (!Loops.empty())
    Loops.pop_back();
  P.line(Out + "[i] = " + storeExpr(T, "acc") + ";");
  return llvm::Error::success();
}

} // namespace codegen
} // namespace solder
