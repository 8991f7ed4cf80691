//===- ReductionEmitter.cpp - Row reductions and normalizations -----------===//
//
// The Reduce* ops over any axes, ArgMax/ArgMin (one thread per line),
// Softmax, LogSoftmax, LayerNormalization and RMSNormalization share one
// shape: the input's dims split into kept dims (rows, in the result's
// order) and reduced dims (the elements of a row). A group of threads owns a
// row and strides over its elements; partial results combine with warp shuffles
// (and shared memory across warps):
//
//   row length <= 16    one thread per row, no cross-thread step
//   row length <= 1024  one warp per row (8 rows per block)
//   longer              one block per row
//
// Rows advance in a grid-stride loop that is uniform per group, so the
// block-wide step's __syncthreads is never divergent. f16/bf16 accumulate in
// float, f64 in double.
//
//===----------------------------------------------------------------------===//
#include "codegen/EmitterUtils.h"
#include "ir/OpRegistry.h"

namespace solder {
namespace codegen {

const char *const ReduceHelpers =
    R"(template <typename T> __device__ __forceinline__ T solder_max(T a, T b) {
  // NaN-propagating, like numpy's max.
  return (a > b || a != a) ? a : b;
}
struct SolderSum {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a + b; }
};
struct SolderMax {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return solder_max(a, b); }
};
template <typename T, typename Op> __device__ __forceinline__ T solder_warp_reduce(T v, Op op) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
// Every thread of the block must call this; all get the block's result.
template <typename T, typename Op> __device__ T solder_block_reduce(T v, Op op) {
  __shared__ T part[32];
  v = solder_warp_reduce(v, op);
  __syncthreads(); // part[] may still be read from a previous call
  if ((threadIdx.x & 31) == 0)
    part[threadIdx.x >> 5] = v;
  __syncthreads();
  if (threadIdx.x == 0) {
    T w = part[0];
    for (unsigned k = 1; k < (blockDim.x + 31) / 32; ++k)
      w = op(w, part[k]);
    part[0] = w;
  }
  __syncthreads();
  return part[0];
})";

RowPlan planRows(llvm::ArrayRef<int64_t> XDims, llvm::ArrayRef<bool> Reduced,
                 unsigned BlockSize) {
  RowPlan R;
  Dims Strides = rowMajorStrides(XDims);
  for (size_t D = 0; D < XDims.size(); ++D) {
    if (Reduced[D]) {
      R.RedDims.push_back(XDims[D]);
      R.RedStrides.push_back(Strides[D]);
      R.Len *= XDims[D];
    } else {
      R.KeptDims.push_back(XDims[D]);
      R.KeptStrides.push_back(Strides[D]);
      R.Rows *= XDims[D];
    }
  }
  R.Group = R.Len <= 16 ? 1 : R.Len <= 1024 ? 32 : BlockSize;
  return R;
}

RowKernel::RowKernel(KernelBuilder &B, const RowPlan &Plan) : B(B), Plan(Plan) {
  B.p().declare("reduce", ReduceHelpers);
  unsigned PerBlock = B.opts().BlockSize / Plan.Group;
  B.setLaunch(Plan.Rows, PerBlock);
  if (Plan.Group > 1)
    B.p().line("const int lane = threadIdx.x % " + std::to_string(Plan.Group) +
               ";");
  Lane = Plan.Group > 1 ? "lane" : "0";
  std::string First = PerBlock == 1 ? "(idx_t)blockIdx.x"
                      : Plan.Group == 1
                          ? "(idx_t)(blockIdx.x * " + std::to_string(PerBlock) +
                                " + threadIdx.x)"
                          : "(idx_t)(blockIdx.x * " + std::to_string(PerBlock) +
                                " + threadIdx.x / " +
                                std::to_string(Plan.Group) + ")";
  Loop.emplace(B.p().scope(
      "for (idx_t row = " + First + "; row < " + B.addCount(Plan.Rows) +
      "; row += (idx_t)(gridDim.x * " + std::to_string(PerBlock) + "))"));
  Base = emitOffsets(B, "row", Plan.KeptDims, {Plan.KeptStrides})[0];
}

CudaPrinter::Scope RowKernel::elements(std::vector<std::string> &Offsets,
                                       llvm::ArrayRef<Dims> ExtraStrides) {
  auto S = B.p().scope("for (idx_t j = " + Lane + "; j < " + B.lit(Plan.Len) +
                       "; j += " + std::to_string(Plan.Group) + ")");
  std::vector<Dims> Sets = {Plan.RedStrides};
  Sets.insert(Sets.end(), ExtraStrides.begin(), ExtraStrides.end());
  Offsets = emitOffsets(B, "j", Plan.RedDims, Sets);
  if (Base != "0")
    Offsets[0] = Base + " + " + Offsets[0];
  return S;
}

void RowKernel::combine(llvm::StringRef V, llvm::StringRef Op) {
  if (Plan.Group == 1)
    return;
  const char *Fn =
      Plan.Group == 32 ? "solder_warp_reduce" : "solder_block_reduce";
  B.p().line(V + " = " + Fn + "(" + V + ", " + Op + "());");
}

namespace {

bool isFloatish(DType T) { return isFloat(T); }

} // namespace

/// Helpers only the newer Reduce* kinds and ArgMax/ArgMin use, declared
/// apart so that only their kernels carry them.
static const char *const MoreReduceHelpers =
    R"(template <typename T> __device__ __forceinline__ T solder_min(T a, T b) {
  // NaN-propagating, like numpy's min.
  return (a < b || a != a) ? a : b;
}
template <typename T> __device__ __forceinline__ T solder_abs(T a) { return a < T(0) ? -a : a; }
struct SolderMin {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return solder_min(a, b); }
};
struct SolderProd {
  template <typename T> __device__ __forceinline__ T operator()(T a, T b) const { return a * b; }
};
// Whether v (at a later index) replaces best as ArgMax's/ArgMin's pick: a NaN
// wins over numbers (numpy), ties keep the first index unless Last.
template <bool Max, bool Last, typename T> __device__ __forceinline__ bool solder_arg_better(T v, T best) {
  if (best != best) return Last && v != v;
  if (v != v) return true;
  if (v == best) return Last;
  return Max ? v > best : v < best;
})";

/// mx = the row's maximum (NaN if it holds one), combined across the row's
/// threads: the first pass of Softmax and LogSumExp.
static void emitRowMax(CudaPrinter &P, RowKernel &R, DType T,
                       const std::string &In) {
  P.line(computeTypeName(T).str() + " mx = " + lowestLiteral(T) + ";");
  {
    std::vector<std::string> Off;
    auto L = R.elements(Off);
    P.line("mx = solder_max(mx, " + loadExpr(T, In + "[" + Off[0] + "]") +
           ");");
  }
  R.combine("mx", "SolderMax");
}

namespace {
/// One Reduce* kind as code: the accumulator's start, how an element v
/// folds in, the cross-thread combiner, and the row's final value.
struct RowReduceRule {
  std::string Init, Step, Combine, Finish;
};
} // namespace

static RowReduceRule rowReduceRule(ReduceKind Kind, DType T, int64_t Len) {
  std::string F = computeDType(T) == DType::F64 ? "" : "f";
  std::string Zero = computeLiteral(T, 0);
  switch (Kind) {
  case ReduceKind::Sum:
    return {Zero, "acc += v;", "SolderSum", "acc"};
  case ReduceKind::Mean:
    return {Zero, "acc += v;", "SolderSum",
            "acc / " + computeLiteral(T, double(Len))};
  case ReduceKind::Max:
    return {lowestLiteral(T), "acc = solder_max(acc, v);", "SolderMax", "acc"};
  case ReduceKind::Min:
    return {highestLiteral(T), "acc = solder_min(acc, v);", "SolderMin", "acc"};
  case ReduceKind::Prod:
    return {computeLiteral(T, 1), "acc *= v;", "SolderProd", "acc"};
  case ReduceKind::L1:
    return {Zero, "acc += solder_abs(v);", "SolderSum", "acc"};
  case ReduceKind::L2:
    return {Zero, "acc += v * v;", "SolderSum", "sqrt" + F + "(acc)"};
  case ReduceKind::SumSquare:
    return {Zero, "acc += v * v;", "SolderSum", "acc"};
  case ReduceKind::LogSum:
    return {Zero, "acc += v;", "SolderSum", "log" + F + "(acc)"};
  case ReduceKind::LogSumExp:
    return {Zero, "acc += exp" + F + "(v - shift);", "SolderSum",
            "shift + log" + F + "(acc)"};
  }
  return {};
}

llvm::Error emitRowReduce(KernelBuilder &B, const Value *X, const Value *Y,
                          llvm::ArrayRef<bool> Reduced, ReduceKind Kind) {
  const Node &N = B.node();
  DType T = X->dtype();
  if (T == DType::Bool)
    return nodeError(N, "code generation does not support " + N.opName() +
                            " on bool");
  bool NeedsFloat = Kind == ReduceKind::L2 || Kind == ReduceKind::LogSum ||
                    Kind == ReduceKind::LogSumExp;
  if (NeedsFloat && !isFloat(T))
    return nodeError(N, "code generation does not support " + N.opName() +
                            " on " + dtypeName(T));
  RowPlan Plan = planRows(dimsOf(X), Reduced, B.opts().BlockSize);
  RowReduceRule Rule = rowReduceRule(Kind, T, Plan.Len);
  bool Original = Kind == ReduceKind::Sum || Kind == ReduceKind::Mean ||
                  Kind == ReduceKind::Max;
  if (!Original)
    B.p().declare("reduce-more", MoreReduceHelpers);
  std::string Out = B.addOutput(Y);
  std::string In = B.addInput(X);
  CudaPrinter &P = B.p();
  std::string Acc = computeTypeName(T).str();
  auto Kernel = B.beginKernel();
  RowKernel R(B, Plan);
  if (Kind == ReduceKind::LogSumExp) {
    // Sums exp(x - max) so large inputs do not overflow; an infinite max
    // (or an empty row's -inf) shifts by 0, which keeps the result exact.
    emitRowMax(P, R, T, In);
    P.line("const " + Acc + " shift = isinf(mx) ? " + computeLiteral(T, 0) +
           " : mx;");
  }
  P.line(Acc + " acc = " + Rule.Init + ";");
  {
    std::vector<std::string> Off;
    auto L = R.elements(Off);
    P.line("const " + Acc + " v = " + loadExpr(T, In + "[" + Off[0] + "]") +
           ";");
    P.line(Rule.Step);
  }
  R.combine("acc", Rule.Combine);
  if (Rule.Finish != "acc")
    P.line("acc = " + Rule.Finish + ";");
  std::string Store = Out + "[row] = " + storeExpr(Y->dtype(), "acc") + ";";
  if (R.lane() == "0")
    P.line(Store);
  else
    P.line("if (lane == 0) " + Store);
  R.close();
  return llvm::Error::success();
}

static llvm::Error emitReduceOp(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0);
  unsigned Rank = X->type().rank();
  llvm::SmallVector<bool, 6> Reduced(Rank, false);
  bool HaveAxes = false;
  if (const Value *A = N.operand(1)) {
    const Tensor *T = A->constant();
    if (!T)
      return nodeError(N, "axes must be a constant for code generation");
    for (int64_t Ax : T->toInt64Vector()) {
      auto D = normalizeAxis(Ax, Rank);
      if (!D)
        return nodeError(N, "axis " + llvm::Twine(Ax) + " out of range");
      Reduced[*D] = true;
      HaveAxes = true;
    }
  }
  if (!HaveAxes && !N.attrs().getInt("noop_with_empty_axes", 0))
    Reduced.assign(Rank, true);
  auto Kind = reduceKindOf(N.kind());
  assert(Kind && "emitReduceOp called on a node that is not a Reduce*");
  return emitRowReduce(B, X, N.result(0), Reduced, *Kind);
}

/// ArgMax/ArgMin: one thread walks each line, so the (value, index) pair
/// needs no cross-thread combine; the lines exports reduce (class scores,
/// token logits) are short next to the number of rows.
static llvm::Error emitArgReduce(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0), *Y = N.result(0);
  DType T = X->dtype();
  if (T == DType::Bool)
    return nodeError(N, "code generation does not support " + N.opName() +
                            " on bool");
  Dims XDims = dimsOf(X);
  int64_t AxisAttr = N.attrs().getInt("axis", 0);
  auto Axis = normalizeAxis(AxisAttr, XDims.size());
  if (!Axis)
    return nodeError(N, "axis " + llvm::Twine(AxisAttr) + " out of range for " +
                            typeToString(X->type()));
  llvm::SmallVector<bool, 6> Reduced(XDims.size(), false);
  Reduced[*Axis] = true;
  RowPlan Plan = planRows(XDims, Reduced, B.opts().BlockSize);
  if (Plan.Len == 0 && Plan.Rows > 0)
    return nodeError(
        N, "cannot take the arg" +
               llvm::Twine(N.kind() == OpKind::ArgMax ? "max" : "min") +
               " of an empty axis");
  Plan.Group = 1;
  B.p().declare("reduce-more", MoreReduceHelpers);
  std::string Out = B.addOutput(Y);
  std::string In = B.addInput(X);
  CudaPrinter &P = B.p();
  std::string Acc = computeTypeName(T).str();
  std::string Better =
      std::string("solder_arg_better<") +
      (N.kind() == OpKind::ArgMax ? "true" : "false") + ", " +
      (N.attrs().getInt("select_last_index", 0) ? "true" : "false") + ">";
  auto Kernel = B.beginKernel();
  RowKernel R(B, Plan);
  P.line(Acc + " best = " + computeLiteral(T, 0) + ";");
  P.line("long long best_at = -1;");
  {
    std::vector<std::string> Off;
    auto L = R.elements(Off);
    P.line("const " + Acc + " v = " + loadExpr(T, In + "[" + Off[0] + "]") +
           ";");
    P.line("if (best_at < 0 || " + Better + "(v, best)) {");
    P.line("  best = v;");
    P.line("  best_at = (long long)j;");
    P.line("}");
  }
  P.line(Out + "[row] = " + storeExpr(Y->dtype(), "best_at") + ";");
  R.close();
  return llvm::Error::success();
}

static llvm::Error emitSoftmax(KernelBuilder &B) {
  const Node &N = B.node();
  const Value *X = N.operand(0), *Y = N.result(0);
  DType T = X->dtype();
  if (!isFloatish(T))
    return nodeError(N, "code generation does not support " + N.opName() +
                            " on " + dtypeName(T));
  Dims XDims = dimsOf(X);
  auto Axis = normalizeAxis(N.attrs().getInt("axis", -1), XDims.size());
  if (!Axis)
    return nodeError(N, "axis out of range for " + typeToString(X->type()));
  llvm::SmallVector<bool, 6> Reduced(XDims.size(), false);
  Reduced[*Axis] = true;
  RowPlan Plan = planRows(XDims, Reduced, B.opts().BlockSize);
  std::string Out = B.addOutput(Y);
  std::string In = B.addInput(X);
  CudaPrinter &P = B.p();
  std::string Acc = computeTypeName(T).str();
  std::string F = computeDType(T) == DType::F64 ? "" : "f";
  bool Log = N.kind() == OpKind::LogSoftmax;
  auto Kernel = B.beginKernel();
  RowKernel R(B, Plan);
  emitRowMax(P, R, T, In);
  P.line(Acc + " sum = " + computeLiteral(T, 0) + ";");
  {
    std::vector<std::string> Off;
    auto L = R.elements(Off);
    P.line("sum += exp" + F + "(" + loadExpr(T, In + "[" + Off[0] + "]") +
           " - mx);");
  }
  R.combine("sum", "SolderSum");
  if (Log)
    P.line("const " + Acc + " lse = mx + log" + F + "(sum);");
  else
    P.line("const " + Acc + " inv = " + computeLiteral(T, 1) + " / sum;");
  {
    std::vector<std::string> Off;
    auto L = R.elements(Off);
    std::string X0 = loadExpr(T, In + "[" + Off[0] + "]");
    std::string V = Log ? X0 + " - lse" : "exp" + F + "(" + X0 + " - mx) * inv";
    P.line(Out + "[" + Off[0] + "] = " + storeExpr(Y->dtype(), V) + ";");
  }
  R.close();
  return llvm::Error::success();
}

/// LayerNormalization, and RMSNormalization (no mean subtracted, no bias,
/// no Mean/InvStdDev results): Y = X / sqrt(mean(X^2) + eps) * scale.
static llvm::Error emitLayerNorm(KernelBuilder &B) {
  const Node &N = B.node();
  bool IsRms = N.kind() == OpKind::RMSNormalization;
  const Value *X = N.operand(0), *Scale = N.operand(1);
  const Value *Bias = IsRms ? nullptr : N.operand(2);
  DType T = X->dtype();
  if (!isFloatish(T))
    return nodeError(N, "code generation does not support " + N.opName() +
                            " on " + dtypeName(T));
  Dims XDims = dimsOf(X);
  auto Axis = normalizeAxis(N.attrs().getInt("axis", -1), XDims.size());
  if (!Axis)
    return nodeError(N, "axis out of range for " + typeToString(X->type()));
  llvm::SmallVector<bool, 6> Reduced(XDims.size(), false);
  for (size_t D = *Axis; D < XDims.size(); ++D)
    Reduced[D] = true;
  Dims NormDims(XDims.begin() + *Axis, XDims.end());
  // Scale and B broadcast against the normalized dims.
  auto ParamStrides = [&](const Value *V, Dims &S) -> llvm::Error {
    Dims D = dimsOf(V);
    while (D.size() > NormDims.size() && D.front() == 1)
      D.erase(D.begin());
    Shape Tmp;
    std::string Err;
    Shape A(D.begin(), D.end()), Bs(NormDims.begin(), NormDims.end());
    if (D.size() > NormDims.size() || !broadcastShapes(A, Bs, Tmp, Err) ||
        Tmp != Bs)
      return nodeError(N, "operand '" + V->name() + "' of type " +
                              typeToString(V->type()) +
                              " does not broadcast to the normalized dims");
    S = broadcastStrides(D, NormDims);
    return llvm::Error::success();
  };
  std::vector<Dims> Extra;
  Dims S;
  if (auto E = ParamStrides(Scale, S))
    return E;
  Extra.push_back(S);
  if (Bias) {
    if (auto E = ParamStrides(Bias, S))
      return E;
    Extra.push_back(S);
  }
  RowPlan Plan = planRows(XDims, Reduced, B.opts().BlockSize);
  const Value *Y = N.result(0);
  const Value *MeanV = IsRms ? nullptr : N.result(1);
  const Value *InvV = IsRms ? nullptr : N.result(2);
  std::string Out = B.addOutput(Y);
  std::string MeanOut = MeanV ? B.addOutput(MeanV) : "";
  std::string InvOut = InvV ? B.addOutput(InvV) : "";
  std::string In = B.addInput(X);
  std::string ScaleIn = B.addInput(Scale);
  std::string BiasIn = Bias ? B.addInput(Bias) : "";
  CudaPrinter &P = B.p();
  std::string Acc = computeTypeName(T).str();
  std::string F = computeDType(T) == DType::F64 ? "" : "f";
  std::string Len = computeLiteral(T, double(Plan.Len));
  float Eps = N.attrs().getFloat("epsilon", 1e-5f);
  auto Kernel = B.beginKernel();
  RowKernel R(B, Plan);
  if (IsRms) {
    P.line("const " + Acc + " mean = " + computeLiteral(T, 0) + ";");
  } else {
    P.line(Acc + " sum = " + computeLiteral(T, 0) + ";");
    {
      std::vector<std::string> Off;
      auto L = R.elements(Off);
      P.line("sum += " + loadExpr(T, In + "[" + Off[0] + "]") + ";");
    }
    R.combine("sum", "SolderSum");
    P.line("const " + Acc + " mean = sum / " + Len + ";");
  }
  // Two passes (mean, then squared deviations) for stability.
  P.line(Acc + " sq = " + computeLiteral(T, 0) + ";");
  {
    std::vector<std::string> Off;
    auto L = R.elements(Off);
    P.line("const " + Acc + " d = " + loadExpr(T, In + "[" + Off[0] + "]") +
           " - mean;");
    P.line("sq += d * d;");
  }
  R.combine("sq", "SolderSum");
  P.line("const " + Acc + " inv = " + computeLiteral(T, 1) + " / sqrt" + F +
         "(sq / " + Len + " + " + computeLiteral(T, Eps) + ");");
  {
    std::vector<std::string> Off;
    auto L = R.elements(Off, Extra);
    std::string V = "(" + loadExpr(T, In + "[" + Off[0] + "]") +
                    " - mean) * inv * " +
                    loadExpr(Scale->dtype(), ScaleIn + "[" + Off[1] + "]");
    if (Bias)
      V += " + " + loadExpr(Bias->dtype(), BiasIn + "[" + Off[2] + "]");
    P.line(Out + "[" + Off[0] + "] = " + storeExpr(Y->dtype(), V) + ";");
  }
  if (MeanV || InvV) {
    std::optional<CudaPrinter::Scope> If;
    if (R.lane() != "0")
      If.emplace(P.scope("if (lane == 0)"));
    if (MeanV)
      P.line(MeanOut + "[row] = " +
             castToStorage(computeDType(T), MeanV->dtype(), "mean") + ";");
    if (InvV)
      P.line(InvOut + "[row] = " +
             castToStorage(computeDType(T), InvV->dtype(), "inv") + ";");
  }
  R.close();
  return llvm::Error::success();
}

llvm::Error emitReduction(KernelBuilder &B) {
  if (isReduceOp(B.node().kind()))
    return emitReduceOp(B);
  switch (B.node().kind()) {
  case OpKind::ArgMax:
  case OpKind::ArgMin:
    return emitArgReduce(B);
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
    return emitSoftmax(B);
  case OpKind::LayerNormalization:
  case OpKind::RMSNormalization:
    return emitLayerNorm(B);
  default:
    break;
  }
  return nodeError(B.node(), "is not a reduction");
}

} // namespace codegen
} // namespace solder
