//===- FusedValueEmitter.cpp - Body values of a fused group at coordinates ===//
//
// Coordinates are inline index expressions rather than locals, so the ones
// a kernel never uses cost nothing, and they are canonical (the same
// non-unit dims and linear index give the same strings), which lets the
// memo and the "this is just the linear index" shortcut match by string:
// a kernel input of the loop domain's shape is read at `in0[i]`, never
// through div/mod.
//
//===----------------------------------------------------------------------===//
#include "codegen/FusedValueEmitter.h"
#include "ir/FusedGroup.h"
#include "ir/OpRegistry.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cassert>
#include <cctype>

namespace solder {
namespace codegen {

//===----------------------------------------------------------------------===//
// Group-level helpers
//===----------------------------------------------------------------------===//

llvm::SmallVector<unsigned, 4> dataOperands(const Node &N) {
  switch (N.kind()) {
  case OpKind::Reshape:
  case OpKind::Squeeze:
  case OpKind::Unsqueeze:
  case OpKind::Expand:
  case OpKind::Slice:
  case OpKind::Dropout:
  case OpKind::Identity:
  case OpKind::Flatten:
  case OpKind::Transpose:
  case OpKind::ReduceMean:
  case OpKind::ReduceSum:
  case OpKind::ReduceMax:
    return {0};
  default:
    break;
  }
  llvm::SmallVector<unsigned, 4> All;
  for (unsigned I = 0; I < N.numOperands(); ++I)
    if (N.operand(I))
      All.push_back(I);
  return All;
}

static int bodyInputIndex(const Node &Group, const Value *V) {
  llvm::ArrayRef<Value *> Ins = Group.body()->inputs();
  for (size_t I = 0; I < Ins.size(); ++I)
    if (Ins[I] == V)
      return int(I);
  return -1;
}

const Tensor *constantOf(const Node &Group, const Value *V) {
  if (!V)
    return nullptr;
  if (const Tensor *T = V->constant())
    return T;
  int I = bodyInputIndex(Group, V);
  if (I >= 0 && unsigned(I) < Group.numOperands() && Group.operand(I))
    return Group.operand(I)->constant();
  return nullptr;
}

const Value *outerValue(const Node &Group, const Value *V) {
  int I = bodyInputIndex(Group, V);
  return I >= 0 ? Group.operand(I) : V;
}

std::vector<const Value *>
externalReads(const Node &Group, llvm::ArrayRef<const Value *> Roots,
              const llvm::DenseSet<const Node *> &Computable) {
  llvm::DenseSet<const Value *> Seen, Read;
  std::vector<const Value *> Stack(Roots.begin(), Roots.end());
  while (!Stack.empty()) {
    const Value *V = Stack.back();
    Stack.pop_back();
    if (!V || !Seen.insert(V).second || V->constant())
      continue;
    const Node *N = V->producer();
    if (!N || !Computable.count(N)) {
      Read.insert(V);
      continue;
    }
    for (unsigned I : dataOperands(*N))
      Stack.push_back(N->operand(I));
  }
  std::vector<const Value *> Out;
  const Graph *Body = Group.body();
  for (const Value *V : Body->inputs())
    if (Read.count(V))
      Out.push_back(V);
  for (const auto &N : Body->nodes())
    for (const Value *V : N->results())
      if (V && Read.count(V))
        Out.push_back(V);
  return Out;
}

llvm::Error groupError(const Node &Group, const Node *Member,
                       const llvm::Twine &Msg) {
  GroupInfo Info = groupInfo(Group);
  std::string Where = "fused group " + std::to_string(Info.Id) + " (" +
                      groupKindName(Info.Kind).str() + ")";
  if (Member)
    Where += ", " + Member->describe();
  return makeError(Where + ": " + Msg);
}

llvm::Error checkGroupStatic(const Node &Group,
                             llvm::ArrayRef<const Node *> Nodes) {
  auto Check = [&](const Value *V) -> llvm::Error {
    if (!V || V->type().isStatic())
      return llvm::Error::success();
    return groupError(Group, nullptr,
                      "code generation needs static shapes, '" + V->name() +
                          "' has type " + typeToString(V->type()) +
                          " (bind its symbols with --shape)");
  };
  for (const Value *V : Group.operands())
    if (auto E = Check(V))
      return E;
  for (const Value *V : Group.results())
    if (auto E = Check(V))
      return E;
  for (const Node *N : Nodes) {
    for (const Value *V : N->operands())
      if (auto E = Check(V))
        return E;
    for (const Value *V : N->results())
      if (auto E = Check(V))
        return E;
  }
  return llvm::Error::success();
}

CodegenOptions groupOptions(const Node &Group, const CodegenOptions &Opts) {
  CodegenOptions O = Opts;
  // Same bound as the single-node kernels: an index plus a grid stride
  // stays below 2^31.
  int64_t Limit = (int64_t(1) << 31) - 1 -
                  int64_t(Opts.MaxGridBlocks) * int64_t(Opts.BlockSize);
  auto Big = [&](const Value *V) {
    return V && V->type().isStatic() && V->type().numElements() > Limit;
  };
  for (const auto &N : Group.body()->nodes()) {
    for (const Value *V : N->operands())
      O.Force64BitIndex |= Big(V);
    for (const Value *V : N->results())
      O.Force64BitIndex |= Big(V);
  }
  return O;
}

std::string groupSummary(const Node &Group, llvm::StringRef Role,
                         llvm::ArrayRef<const Node *> Nodes,
                         llvm::ArrayRef<const Value *> Inputs,
                         llvm::ArrayRef<const Value *> Outputs) {
  GroupInfo Info = groupInfo(Group);
  std::string S;
  llvm::raw_string_ostream OS(S);
  OS << "group " << Info.Id << " (" << Role << "): ";
  for (size_t I = 0; I < Nodes.size(); ++I)
    OS << (I ? ", " : "") << Nodes[I]->opName();
  OS << ' ';
  for (size_t I = 0; I < Inputs.size(); ++I) {
    OS << (I ? ", " : "");
    printType(OS, Inputs[I]->type());
  }
  OS << " -> ";
  for (size_t I = 0; I < Outputs.size(); ++I) {
    OS << (I ? ", " : "");
    printType(OS, Outputs[I]->type());
  }
  return OS.str();
}

std::string emitPerturbation(CudaPrinter &P, DType T, const std::string &V) {
  std::string Name = P.uniqueName("perturbed");
  std::string CT = computeTypeName(T).str();
  if (isFloat(T)) {
    std::string Abs = computeDType(T) == DType::F64 ? "fabs" : "fabsf";
    P.line("const " + CT + " " + Name + " = " + V + " + " +
           computeLiteral(T, 1e-2) + " * " + Abs + "(" + V + ") + " +
           computeLiteral(T, 1e-3) + ";");
  } else if (T == DType::Bool) {
    P.line("const bool " + Name + " = !" + V + ";");
  } else {
    P.line("const " + CT + " " + Name + " = " + V + " + (" + CT + ")1;");
  }
  return Name;
}

llvm::Error FusedValueEmitter::storeResults(
    llvm::ArrayRef<const Value *> Results, const Coords &C, bool Perturb,
    llvm::function_ref<std::string(size_t)> Target) {
  for (size_t R = 0; R < Results.size(); ++R) {
    std::string To = Target(R);
    if (To.empty())
      continue;
    auto V = compute(Results[R], C);
    if (!V)
      return V.takeError();
    std::string Val = *V;
    if (Perturb && R == 0)
      Val = emitPerturbation(P, Results[R]->dtype(), Val);
    P.line(To + " = " + storeExpr(Results[R]->dtype(), Val) + ";");
  }
  return llvm::Error::success();
}

//===----------------------------------------------------------------------===//
// FusedValueEmitter
//===----------------------------------------------------------------------===//

namespace {

std::string joinCoords(const Coords &C) {
  std::string S;
  for (const std::string &X : C)
    S += X + ",";
  return S;
}

/// The key of C over D for linear-index lookups: only the non-unit dims.
std::string linearKey(llvm::ArrayRef<int64_t> D, const Coords &C) {
  std::string S;
  for (size_t I = 0; I < D.size(); ++I)
    if (D[I] != 1)
      S += std::to_string(D[I]) + ":" + C[I] + ";";
  return S;
}

/// Wraps E in parentheses unless it is already an atom.
std::string atom(const std::string &E) {
  bool Simple = std::all_of(E.begin(), E.end(), [](char Ch) {
    return std::isalnum((unsigned char)Ch) || Ch == '_' || Ch == '[' ||
           Ch == ']';
  });
  if (Simple)
    return E;
  if (E.front() == '(' && E.back() == ')') {
    // Only when the outer parentheses match each other.
    int Depth = 0;
    for (size_t I = 0; I < E.size(); ++I) {
      Depth += E[I] == '(' ? 1 : E[I] == ')' ? -1 : 0;
      if (Depth == 0 && I + 1 < E.size())
        return "(" + E + ")";
    }
    return E;
  }
  return "(" + E + ")";
}

} // namespace

FusedValueEmitter::FusedValueEmitter(KernelBuilder &B, const Node &Group,
                                     llvm::ArrayRef<const Node *> Nodes)
    : B(B), P(B.p()), Group(Group), Computable(Nodes.begin(), Nodes.end()) {
  Scopes.emplace_back();
}

const std::string *FusedValueEmitter::lookup(const Key &K) const {
  for (auto It = Scopes.rbegin(); It != Scopes.rend(); ++It) {
    auto F = It->Values.find(K);
    if (F != It->Values.end())
      return &F->second;
  }
  return nullptr;
}

const std::string *FusedValueEmitter::lookupLinear(const std::string &K) const {
  for (auto It = Scopes.rbegin(); It != Scopes.rend(); ++It) {
    auto F = It->Linear.find(K);
    if (F != It->Linear.end())
      return &F->second;
  }
  return nullptr;
}

void FusedValueEmitter::remember(const Value *V, const Coords &C,
                                 std::string Expr) {
  Scopes.back().Values[{V, joinCoords(C)}] = std::move(Expr);
}

void FusedValueEmitter::registerLinear(llvm::ArrayRef<int64_t> D,
                                       const Coords &C, std::string Lin) {
  Scopes.back().Linear[linearKey(D, C)] = std::move(Lin);
}

std::string FusedValueEmitter::count(int64_t V) {
  auto [It, New] = Counts.try_emplace(V);
  if (New)
    It->second = B.addCount(V);
  return It->second;
}

Coords FusedValueEmitter::delinearize(const std::string &Lin,
                                      llvm::ArrayRef<int64_t> D,
                                      bool CountDims) {
  Coords C(D.size(), "0");
  std::string L = atom(Lin);
  int Outer = -1;
  for (size_t I = 0; I < D.size() && Outer < 0; ++I)
    if (D[I] != 1)
      Outer = int(I);
  auto Dim = [&](int64_t V) {
    return CountDims && B.opts().ShapeParams ? count(V) : B.lit(V);
  };
  int64_t Stride = 1;
  for (int I = int(D.size()) - 1; I >= 0; --I) {
    if (D[I] == 1)
      continue;
    std::string Q = Stride == 1 ? L : L + " / " + Dim(Stride);
    if (I == Outer)
      C[I] = Stride == 1 ? L : "(" + Q + ")";
    else
      C[I] = "(" + Q + " % " + Dim(D[I]) + ")";
    Stride *= D[I];
  }
  registerLinear(D, C, L);
  return C;
}

std::string FusedValueEmitter::linearize(const Coords &C,
                                         llvm::ArrayRef<int64_t> D) {
  if (const std::string *L = lookupLinear(linearKey(D, C)))
    return *L;
  Dims S = rowMajorStrides(D);
  std::vector<std::string> Terms;
  for (size_t I = 0; I < D.size(); ++I) {
    if (D[I] == 1 || C[I] == "0")
      continue;
    Terms.push_back(S[I] == 1 ? C[I] : C[I] + " * " + B.lit(S[I]));
  }
  if (Terms.empty())
    return "0";
  if (Terms.size() == 1)
    return atom(Terms[0]);
  std::string Sum;
  for (const std::string &T : Terms)
    Sum += (Sum.empty() ? "" : " + ") + T;
  std::string Name = B.let("lin", Sum);
  registerLinear(D, C, Name);
  return Name;
}

std::string FusedValueEmitter::offsetOf(const Value *V, const Coords &C) {
  return linearize(C, dimsOf(V));
}

llvm::Expected<std::string> FusedValueEmitter::compute(const Value *V,
                                                       const Coords &C) {
  assert(V && "computing an absent value");
  if (C.size() != V->type().rank())
    return error(V->producer(), "internal: coordinates of rank " +
                                    llvm::Twine(C.size()) + " for '" +
                                    V->name() + "' of rank " +
                                    llvm::Twine(V->type().rank()));
  Key K{V, joinCoords(C)};
  if (const std::string *Hit = lookup(K))
    return *Hit;
  auto PIt = Params.find(V);
  if (PIt != Params.end()) {
    std::string Name = P.uniqueName("x");
    P.line("const " + computeTypeName(V->dtype()) + " " + Name + " = " +
           loadExpr(V->dtype(), PIt->second + "[" + offsetOf(V, C) + "]") +
           ";");
    remember(V, C, Name);
    return Name;
  }
  if (const Tensor *T = V->constant()) {
    if (T->numElements() == 1)
      if (auto L = scalarLiteral(V))
        return *L;
    // A small non-scalar constant read as data (the body holds small
    // integer constants; see ir/FusedGroup.h): a table in the kernel.
    DType D = T->dtype();
    if (D == DType::F16 || D == DType::BF16 || T->numElements() > 4096)
      return error(nullptr, "constant '" + V->name() + "' of type " +
                                typeToString(V->type()) +
                                " cannot be baked into a fused kernel");
    std::string Table = "ctab_" + std::to_string(Tables.size());
    auto [It, New] = Tables.try_emplace(V, Table);
    if (New) {
      std::string Text = "static __device__ const " + P.storageType(D) + " " +
                         Table + "[" + std::to_string(T->numElements()) +
                         "] = {";
      for (int64_t I = 0; I < T->numElements(); ++I)
        Text += (I ? ", " : "") + storageLiteral(D, isInteger(D)
                                                        ? double(T->getInt64(I))
                                                        : T->getDouble(I));
      P.declare(Table, Text + "};");
    }
    std::string Name = P.uniqueName("x");
    P.line("const " + computeTypeName(D) + " " + Name + " = " +
           loadExpr(D, It->second + "[" + offsetOf(V, C) + "]") + ";");
    remember(V, C, Name);
    return Name;
  }
  const Node *N = V->producer();
  if (!N || !Computable.count(N))
    return error(N, "internal: '" + V->name() +
                        "' is neither computed nor read by this kernel");
  auto R = computeNode(*N, V->resultIndex(), C);
  if (!R)
    return R.takeError();
  remember(V, C, *R);
  return *R;
}

llvm::Expected<Coords>
FusedValueEmitter::broadcastCoords(const Node &N, const Value *Op,
                                   llvm::ArrayRef<int64_t> ResDims,
                                   const Coords &C) {
  Dims OD = dimsOf(Op);
  if (OD.size() > ResDims.size())
    return error(&N, "operand '" + Op->name() +
                         "' has a higher rank than the result");
  size_t Shift = ResDims.size() - OD.size();
  Coords OC(OD.size(), "0");
  for (size_t I = 0; I < OD.size(); ++I) {
    if (OD[I] == 1)
      continue;
    if (OD[I] != ResDims[I + Shift])
      return error(&N, "operand '" + Op->name() + "' of type " +
                           typeToString(Op->type()) +
                           " does not broadcast to the result");
    OC[I] = C[I + Shift];
  }
  return OC;
}

llvm::Expected<std::string> FusedValueEmitter::computeNode(const Node &N,
                                                           unsigned Result,
                                                           const Coords &C) {
  switch (N.kind()) {
  case OpKind::Identity:
    return compute(N.operand(0), C);
  case OpKind::Dropout:
    // Inference: the data passes through and the mask keeps everything.
    if (Result == 1)
      return std::string("true");
    return compute(N.operand(0), C);
  case OpKind::Reshape:
  case OpKind::Flatten:
  case OpKind::Squeeze:
  case OpKind::Unsqueeze:
    return reshape(N, C);
  case OpKind::Transpose:
    return transpose(N, C);
  case OpKind::Expand: {
    auto OC = broadcastCoords(N, N.operand(0), dimsOf(N.result(0)), C);
    if (!OC)
      return OC.takeError();
    return compute(N.operand(0), *OC);
  }
  case OpKind::Slice:
    return slice(N, C);
  case OpKind::Concat:
    return concat(N, C);
  case OpKind::Gather:
    return gather(N, C);
  default:
    break;
  }
  FusionKind F = getOpInfo(N.kind()).Fusion;
  if (F == FusionKind::Elementwise || F == FusionKind::Broadcast)
    return elementwise(N, C);
  if (F == FusionKind::Reduction)
    return error(&N, "its result is read at elements of another row (a row "
                     "kernel's epilogue must stay within the row)");
  return error(&N, N.opName() + " cannot be computed inside a fused kernel");
}

llvm::Expected<std::string> FusedValueEmitter::elementwise(const Node &N,
                                                           const Coords &C) {
  const Value *Y = N.result(0);
  Dims YD = dimsOf(Y);
  bool IsBatchNorm = N.kind() == OpKind::BatchNormalization;
  bool IsCast = N.kind() == OpKind::Cast;
  if (!IsCast && !hasExprRule(N.kind(), exprOperandDType(N)))
    return error(&N, "code generation does not support " + N.opName() + " on " +
                         dtypeName(exprOperandDType(N)));
  std::vector<std::string> Args(N.numOperands());
  for (unsigned I = 0; I < N.numOperands(); ++I) {
    const Value *Op = N.operand(I);
    if (!Op)
      continue;
    Coords OC;
    if (IsBatchNorm && I > 0) {
      // Per-channel vectors along dim 1.
      Dims OD = dimsOf(Op);
      if (OD.size() != 1 || YD.size() < 2 || (OD[0] != YD[1] && OD[0] != 1))
        return error(&N, "operand " + llvm::Twine(I) + " has type " +
                             typeToString(Op->type()) +
                             ", expected one value per channel");
      OC = {OD[0] == 1 ? "0" : C[1]};
    } else {
      auto BC = broadcastCoords(N, Op, YD, C);
      if (!BC)
        return BC.takeError();
      OC = std::move(*BC);
    }
    auto A = compute(Op, OC);
    if (!A)
      return A.takeError();
    Args[I] = *A;
  }
  std::string Expr;
  if (IsCast) {
    Expr = loadExpr(Y->dtype(),
                    castToStorage(N.operand(0)->dtype(), Y->dtype(), Args[0]));
  } else {
    auto E = elementwiseExpr(N, Args);
    if (!E)
      return E.takeError();
    Expr = *E;
  }
  std::string Name = P.uniqueName("t");
  P.line("const " + computeTypeName(Y->dtype()) + " " + Name + " = " + Expr +
         ";");
  return Name;
}

llvm::Expected<std::string> FusedValueEmitter::reshape(const Node &N,
                                                       const Coords &C) {
  const Value *X = N.operand(0);
  Dims XD = dimsOf(X), YD = dimsOf(N.result(0));
  Dims XN, YN;
  for (int64_t D : XD)
    if (D != 1)
      XN.push_back(D);
  for (int64_t D : YD)
    if (D != 1)
      YN.push_back(D);
  if (XN == YN) {
    // Only size-1 dims differ: the non-unit coordinates carry over.
    Coords NonUnit;
    for (size_t I = 0; I < YD.size(); ++I)
      if (YD[I] != 1)
        NonUnit.push_back(C[I]);
    Coords XC(XD.size(), "0");
    size_t K = 0;
    for (size_t I = 0; I < XD.size(); ++I)
      if (XD[I] != 1)
        XC[I] = NonUnit[K++];
    return compute(X, XC);
  }
  std::string Lin = linearize(C, YD);
  return compute(X, delinearize(Lin, XD));
}

llvm::Expected<std::string> FusedValueEmitter::transpose(const Node &N,
                                                         const Coords &C) {
  const Value *X = N.operand(0);
  size_t Rank = X->type().rank();
  std::vector<int64_t> Perm = N.attrs().getInts("perm");
  if (Perm.empty())
    for (int64_t I = Rank - 1; I >= 0; --I)
      Perm.push_back(I);
  if (Perm.size() != Rank)
    return error(&N, "perm is not a permutation");
  Coords XC(Rank, "");
  for (size_t K = 0; K < Rank; ++K) {
    auto A = normalizeAxis(Perm[K], Rank);
    if (!A || !XC[*A].empty())
      return error(&N, "perm is not a permutation");
    XC[*A] = C[K];
  }
  Dims XD = dimsOf(X);
  for (size_t I = 0; I < Rank; ++I)
    if (XD[I] == 1)
      XC[I] = "0";
  return compute(X, XC);
}

llvm::Expected<std::string> FusedValueEmitter::slice(const Node &N,
                                                     const Coords &C) {
  const Value *X = N.operand(0);
  Dims XD = dimsOf(X), YD = dimsOf(N.result(0));
  auto Ints =
      [&](unsigned I,
          const char *What) -> llvm::Expected<llvm::SmallVector<int64_t, 8>> {
    const Tensor *T = constantOf(Group, N.operand(I));
    if (!T)
      return error(&N, llvm::Twine(What) +
                           " must be a constant for code generation");
    llvm::SmallVector<int64_t, 8> V;
    for (int64_t X : T->toInt64Vector())
      V.push_back(X);
    return V;
  };
  auto Starts = Ints(1, "starts");
  if (!Starts)
    return Starts.takeError();
  auto Ends = Ints(2, "ends");
  if (!Ends)
    return Ends.takeError();
  llvm::SmallVector<int64_t, 8> Axes, Steps;
  if (N.operand(3)) {
    auto A = Ints(3, "axes");
    if (!A)
      return A.takeError();
    Axes = *A;
  } else {
    for (size_t I = 0; I < Starts->size(); ++I)
      Axes.push_back(I);
  }
  if (N.numOperands() > 4 && N.operand(4)) {
    auto S = Ints(4, "steps");
    if (!S)
      return S.takeError();
    Steps = *S;
  } else {
    Steps.assign(Starts->size(), 1);
  }
  if (Axes.size() != Starts->size() || Steps.size() != Starts->size())
    return error(&N, "starts, ends, axes and steps differ in length");
  Coords XC = C;
  for (size_t I = 0; I < Axes.size(); ++I) {
    auto A = normalizeAxis(Axes[I], XD.size());
    if (!A || Steps[I] == 0)
      return error(&N, "invalid axis or step");
    int64_t Size = XD[*A], St = (*Starts)[I], Step = Steps[I];
    if (St < 0)
      St += Size;
    // Same clamping as shape inference (ONNX Slice).
    St = Step > 0 ? std::clamp<int64_t>(St, 0, Size)
                  : std::clamp<int64_t>(St, -1, Size - 1);
    std::string Pos = Step == 1 ? C[*A] : C[*A] + " * " + B.lit(Step);
    if (St != 0)
      Pos = B.lit(St) + " + " + Pos;
    XC[*A] = atom(Pos);
  }
  for (size_t I = 0; I < XD.size(); ++I)
    if (XD[I] == 1)
      XC[I] = "0";
  return compute(X, XC);
}

llvm::Expected<std::string> FusedValueEmitter::concat(const Node &N,
                                                      const Coords &C) {
  const Value *Y = N.result(0);
  Dims YD = dimsOf(Y);
  auto Axis = normalizeAxis(N.attrs().getInt("axis", 0), YD.size());
  if (!Axis)
    return error(&N, "axis out of range");
  struct Part {
    const Value *V;
    int64_t Begin, Size;
  };
  std::vector<Part> Parts;
  int64_t Begin = 0;
  for (const Value *V : N.operands()) {
    int64_t Size = dimsOf(V)[*Axis];
    if (Size != 0)
      Parts.push_back({V, Begin, Size});
    Begin += Size;
  }
  if (Parts.empty())
    return error(&N, "every operand is empty");
  std::string Name = P.uniqueName("s");
  P.line(computeTypeName(Y->dtype()) + " " + Name + ";");
  const std::string &A = C[*Axis];
  for (size_t K = 0; K < Parts.size(); ++K) {
    const Part &Pt = Parts[K];
    std::string Header;
    if (Parts.size() == 1)
      Header = "";
    else if (K == 0)
      Header = "if (" + A + " < " + B.lit(Pt.Begin + Pt.Size) + ")";
    else if (K + 1 < Parts.size())
      Header = "else if (" + A + " < " + B.lit(Pt.Begin + Pt.Size) + ")";
    else
      Header = "else";
    Coords OC = C;
    OC[*Axis] = Pt.Begin ? "(" + A + " - " + B.lit(Pt.Begin) + ")" : A;
    if (Pt.Size == 1)
      OC[*Axis] = "0";
    auto S = P.scope(Header.empty() ? "" : Header);
    pushScope();
    auto V = compute(Pt.V, OC);
    popScope();
    if (!V)
      return V.takeError();
    P.line(Name + " = " + *V + ";");
  }
  return Name;
}

llvm::Expected<std::string> FusedValueEmitter::gather(const Node &N,
                                                      const Coords &C) {
  const Value *X = N.operand(0), *Idx = N.operand(1), *Y = N.result(0);
  Dims XD = dimsOf(X), ID = dimsOf(Idx);
  auto Axis = normalizeAxis(N.attrs().getInt("axis", 0), XD.size());
  if (!Axis)
    return error(&N, "axis out of range");
  if (Idx->dtype() != DType::I64 && Idx->dtype() != DType::I32)
    return error(&N, "indices must be i32 or i64");
  Coords IC(C.begin() + *Axis, C.begin() + *Axis + ID.size());
  auto K = compute(Idx, IC);
  if (!K)
    return K.takeError();
  // In a dynamic model's variants the axis's size is a parameter: a
  // Gather from a [B*S] tensor (a flattened mask) is then the same kernel
  // at every shape.
  int64_t Size = XD[*Axis];
  std::string SizeP = Size != 1 && B.opts().ShapeParams
                          ? count(Size)
                          : std::to_string(Size) + "LL";
  std::string KN = P.uniqueName("g");
  P.line("long long " + KN + " = (long long)" + *K + ";");
  P.line("if (" + KN + " < 0) " + KN + " += " + SizeP + ";");
  // An index out of range is invalid input; like the standalone Gather
  // kernel, read nothing and give 0 rather than fault.
  std::string Name = P.uniqueName("s");
  P.line(computeTypeName(Y->dtype()) + " " + Name + " = " +
         computeLiteral(Y->dtype(), 0) + ";");
  Coords XC(C.begin(), C.begin() + *Axis);
  XC.push_back(Size == 1 ? "0" : "((idx_t)" + KN + ")");
  XC.insert(XC.end(), C.begin() + *Axis + ID.size(), C.end());
  auto S = P.scope("if (" + KN + " >= 0 && " + KN + " < " + SizeP + ")");
  pushScope();
  auto V = compute(X, XC);
  popScope();
  if (!V)
    return V.takeError();
  P.line(Name + " = " + *V + ";");
  return Name;
}

} // namespace codegen
} // namespace solder
