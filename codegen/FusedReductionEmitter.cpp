//===- FusedReductionEmitter.cpp - One row kernel for a reduction group ---===//
//
// Matches: a FusedGroup of kind reduction: exactly one reduction R
// (ReduceMean/Sum/Max, GlobalAverage/MaxPool, Softmax, LogSoftmax,
// LayerNormalization, RMSNormalization) whose reduced dims are a contiguous
// innermost suffix of its input X, a prologue (members before R computing
// X, and R's scale/bias, from the group's operands with broadcasting) and
// an epilogue (members after R, on its result).
// Produces: one kernel where a thread group owns a row (the kept dims) and
// strides over its L elements (the reduced dims), as ReductionEmitter.cpp:
//
//   for (row ...) {                         // one warp per row, L = 768
//     float xv[24];                         // this lane's elements of X
//     for (k < 24) { j = lane + k * 32; xv[k] = <prologue at (row, j)>;
//                    h[row * L + j] = ...;  // prologue results, stored once
//                    sum += xv[k]; }
//     sum = warp_reduce(sum); mean = sum / L;
//     for (k < 24) { d = xv[k] - mean; sq += d * d; }  // two-pass variance
//     ...
//     for (k < 24) { y = (xv[k] - mean) * inv * scale + bias;
//                    out[row * L + j] = <epilogue of y>; }
//   }
//
// Where the row splits evenly, each lane takes runs of V adjacent elements
// (j = jv * V + e): X-shaped reads, reads over the reduced dims (gamma,
// beta) and element results move as 4-16 byte vectors, loaded only in the
// passes that use them (other reads stay element loads).
// Every global element is read once when each thread's share of a row fits
// in 32 registers; longer rows recompute the prologue in each pass (reading
// memory again) rather than spill. Reduce ops run their epilogue once per
// row, by lane 0. Accumulation is in the compute type (float for 16-bit
// floats).
// Preconditions: static shapes. Errors name the group: a reduction over
// dims that are not an innermost suffix, results of neither the row nor
// the element shape, members that are not elementwise/indexing ops.
//
//===----------------------------------------------------------------------===//
#include "codegen/FusedValueEmitter.h"
#include "ir/FusedGroup.h"
#include "ir/OpRegistry.h"
#include "llvm/Support/raw_ostream.h"

namespace solder {
namespace codegen {

namespace {

enum class RowOp { Sum, Mean, Max, Softmax, LogSoftmax, LayerNorm, RMSNorm };

/// Each thread keeps its share of a row in registers up to this many
/// elements.
constexpr int64_t MaxCachedPerThread = 32;

/// Which dims of X the reduction R reduces, or an error naming the group.
llvm::Expected<llvm::SmallVector<bool, 6>>
reducedDims(const Node &Group, const Node &R, RowOp &Op) {
  const Value *X = R.operand(0);
  int64_t Rank = X->type().rank();
  llvm::SmallVector<bool, 6> Reduced(Rank, false);
  auto FromAxis = [&](int64_t First) -> llvm::Error {
    auto A = normalizeAxis(First, Rank);
    if (!A)
      return groupError(Group, &R, "axis out of range");
    for (int64_t D = *A; D < Rank; ++D)
      Reduced[D] = true;
    return llvm::Error::success();
  };
  switch (R.kind()) {
  case OpKind::ReduceMean:
  case OpKind::ReduceSum:
  case OpKind::ReduceMax: {
    Op = R.kind() == OpKind::ReduceMean  ? RowOp::Mean
         : R.kind() == OpKind::ReduceSum ? RowOp::Sum
                                         : RowOp::Max;
    bool HaveAxes = false;
    if (R.numOperands() > 1 && R.operand(1)) {
      const Tensor *T = constantOf(Group, R.operand(1));
      if (!T)
        return groupError(Group, &R,
                          "axes must be a constant for code generation");
      for (int64_t Ax : T->toInt64Vector()) {
        auto D = normalizeAxis(Ax, Rank);
        if (!D)
          return groupError(Group, &R,
                            "axis " + llvm::Twine(Ax) + " out of range");
        Reduced[*D] = true;
        HaveAxes = true;
      }
    }
    if (!HaveAxes) {
      if (R.attrs().getInt("noop_with_empty_axes", 0))
        return groupError(Group, &R, "a reduction over no axes is not fused");
      Reduced.assign(Rank, true);
    }
    break;
  }
  case OpKind::GlobalAveragePool:
  case OpKind::GlobalMaxPool:
    Op = R.kind() == OpKind::GlobalAveragePool ? RowOp::Mean : RowOp::Max;
    if (Rank < 2)
      return groupError(Group, &R, "expects an input of rank >= 2");
    // The spatial dims (none for rank 2).
    for (int64_t D = 2; D < Rank; ++D)
      Reduced[D] = true;
    break;
  case OpKind::Softmax:
  case OpKind::LogSoftmax: {
    Op = R.kind() == OpKind::Softmax ? RowOp::Softmax : RowOp::LogSoftmax;
    auto A = normalizeAxis(R.attrs().getInt("axis", -1), Rank);
    if (!A)
      return groupError(Group, &R, "axis out of range");
    Reduced[*A] = true;
    break;
  }
  case OpKind::LayerNormalization:
  case OpKind::RMSNormalization:
    Op = R.kind() == OpKind::LayerNormalization ? RowOp::LayerNorm
                                                : RowOp::RMSNorm;
    if (auto E = FromAxis(R.attrs().getInt("axis", -1)))
      return std::move(E);
    break;
  default:
    return groupError(Group, &R, "is not a reduction code generation fuses");
  }
  // A contiguous innermost suffix, size-1 dims counting either way.
  Dims XD = dimsOf(X);
  int64_t First = Rank;
  for (int64_t D = 0; D < Rank; ++D)
    if (Reduced[D] && XD[D] != 1) {
      First = D;
      break;
    }
  for (int64_t D = First; D < Rank; ++D) {
    if (!Reduced[D] && XD[D] != 1) {
      std::string Axes;
      for (int64_t K = 0; K < Rank; ++K)
        if (Reduced[K])
          Axes += (Axes.empty() ? "" : ", ") + std::to_string(K);
      return groupError(Group, &R,
                        "reduction axis not innermost: reduces axes [" + Axes +
                            "] of " + typeToString(X->type()) +
                            "; a fused row kernel needs the reduced dims to "
                            "be the innermost ones");
    }
    Reduced[D] = true;
  }
  for (int64_t D = 0; D < First; ++D)
    Reduced[D] = false;
  return Reduced;
}

bool producesElements(RowOp Op) {
  return Op == RowOp::Softmax || Op == RowOp::LogSoftmax ||
         Op == RowOp::LayerNorm || Op == RowOp::RMSNorm;
}

} // namespace

llvm::Expected<GeneratedKernel> emitFusedReduction(const Node &Group,
                                                   const CodegenOptions &Opts,
                                                   KernelNamer &Names) {
  std::vector<const Node *> All;
  for (const auto &N : Group.body()->nodes())
    All.push_back(N.get());
  return emitFusedReduction(Group, All, Opts, Names);
}

llvm::Expected<GeneratedKernel>
emitFusedReduction(const Node &Group, llvm::ArrayRef<const Node *> Members,
                   const CodegenOptions &Opts, KernelNamer &Names) {
  GroupInfo Info = groupInfo(Group);
  const Graph *Body = Group.body();
  std::vector<const Node *> Nodes;
  const Node *R = nullptr;
  size_t RPos = 0;
  for (const Node *N : Members) {
    if (N->graph() != Body)
      return groupError(Group, N, "internal: not a node of the group's body");
    const OpInfo &OI = getOpInfo(N->kind());
    if (OI.Fusion == FusionKind::Reduction) {
      if (R)
        return groupError(Group, N,
                          "a second reduction (after " + R->describe() +
                              "); a row kernel has exactly one");
      R = N;
      RPos = Nodes.size();
    } else if (!OI.ComposableIndexing) {
      return groupError(Group, N, "cannot be fused into a reduction kernel");
    }
    Nodes.push_back(N);
  }
  if (!R)
    return groupError(Group, nullptr, "has no reduction member");
  if (auto E = checkGroupStatic(Group, Nodes))
    return std::move(E);
  RowOp Op;
  auto ReducedOr = reducedDims(Group, *R, Op);
  if (!ReducedOr)
    return ReducedOr.takeError();
  const Value *X = R->operand(0);
  DType T = X->dtype();
  if (T == DType::Bool || (producesElements(Op) && !isFloat(T)))
    return groupError(Group, R,
                      "code generation does not support " + R->opName() +
                          " on " + dtypeName(T));
  Dims XD = dimsOf(X);
  RowPlan Plan = planRows(XD, *ReducedOr, Opts.BlockSize);
  if (Plan.Len == 0 || Plan.Rows == 0)
    return groupError(Group, R, "empty rows are not supported");

  // Results: prologue values and elementwise results of X's shape are
  // stored per element, reduced values (and LayerNorm's statistics) per row.
  auto PosOf = [&](const Node *N) {
    return size_t(std::find(Nodes.begin(), Nodes.end(), N) - Nodes.begin());
  };
  struct Result {
    const Value *Body, *Outer;
    bool PerRow;
  };
  std::vector<Result> Results;
  for (size_t J = 0; J < Body->outputs().size(); ++J) {
    const Value *V = Body->outputs()[J];
    const Node *N = V->producer();
    if (!N)
      return groupError(Group, nullptr,
                        "result '" + V->name() +
                            "' is not computed by a member");
    // A contraction's rest kernel writes only what its nodes compute.
    if (PosOf(N) == Nodes.size())
      continue;
    bool IsStat = N == R && V != R->result(0);
    bool Before = PosOf(N) < RPos;
    bool ElementShaped = dimsOf(V) == XD;
    bool RowShaped = V->type().numElements() == Plan.Rows;
    bool PerRow;
    if (Before || (!IsStat && producesElements(Op)))
      PerRow = false;
    else
      PerRow = true;
    if ((PerRow && !RowShaped) || (!PerRow && !ElementShaped))
      return groupError(Group, nullptr,
                        "result '" + V->name() + "' of type " +
                            typeToString(V->type()) + " has neither the " +
                            (PerRow ? "row" : "element") + " shape of " +
                            R->describe() + " over " + typeToString(X->type()));
    Results.push_back({V, Group.result(J), PerRow});
  }
  if (Results.empty())
    return groupError(Group, nullptr,
                      "the kernel's nodes compute none of the group's results");
  std::vector<const Value *> Roots = {R->result(0)};
  for (const Result &Res : Results)
    Roots.push_back(Res.Body);
  llvm::DenseSet<const Node *> All(Nodes.begin(), Nodes.end());
  std::vector<const Value *> Reads = externalReads(Group, Roots, All);

  CodegenOptions O = groupOptions(Group, Opts);
  bool IsEpilogue = Info.Kind == GroupKind::Contraction;
  KernelBuilder B(
      Group, O,
      Names.nameFor(Group, "g" + std::to_string(Info.Id) +
                               (IsEpilogue ? "_epilogue" : "_reduction")));
  CudaPrinter &P = B.p();
  std::vector<std::string> OutParams;
  std::vector<const Value *> InOuter, OutOuter;
  for (const Result &Res : Results) {
    OutParams.push_back(B.addOutput(Res.Outer));
    OutOuter.push_back(Res.Outer);
  }
  std::vector<std::string> InParams;
  for (const Value *V : Reads) {
    InOuter.push_back(outerValue(Group, V));
    InParams.push_back(B.addInput(InOuter.back()));
  }
  std::vector<std::string> NodeNames;
  for (const Node *N : Nodes)
    NodeNames.push_back(memberName(*N));
  B.describeGroup(
      Info.Id, std::move(NodeNames),
      groupSummary(Group, IsEpilogue ? "contraction epilogue" : "reduction",
                   Nodes, InOuter, OutOuter));
  bool Perturb = Opts.PerturbGroupId >= 0 && Opts.PerturbGroupId == Info.Id;

  const std::string Acc = computeTypeName(T).str();
  const std::string F = computeDType(T) == DType::F64 ? "" : "f";
  const int64_t G = Plan.Group, L = Plan.Len;
  const int64_t PerThread = (L + G - 1) / G;
  // Reduce ops read each element once anyway; the others make two or three
  // passes over the row.
  const bool MultiPass = producesElements(Op);
  const bool Cached = MultiPass && PerThread <= MaxCachedPerThread;
  const std::string LenLit = computeLiteral(T, double(L));

  // Vector accesses: each thread takes runs of V adjacent elements of the
  // row, so reads of X's shape (offset row * L + j) and of the reduced dims'
  // shape (gamma, beta: offset j) and the element results move 4-16 bytes
  // (V elements) per access. Other reads stay element loads at their
  // coordinates. A hand-written kernel of this form for BERT-base's
  // LayerNorm (128 x 768 f16, H100) took 1.75 us against 2.9 with element
  // loads; the generated one made BERT-base b1 0.424 -> 0.410 ms.
  enum class Access { Element, Full, Reduced };
  std::vector<Access> ReadAccess(Reads.size(), Access::Element);
  unsigned V = 0;
  {
    unsigned MinSize = 16;
    bool Any = false;
    for (size_t I = 0; I < Reads.size(); ++I) {
      const Value *RV = Reads[I];
      Dims D = dimsOf(RV);
      if (D == XD) {
        ReadAccess[I] = Access::Full;
      } else if (RV->type().numElements() == L && D.size() <= XD.size()) {
        bool Match = true;
        for (size_t K = 0; K < D.size(); ++K) {
          size_t XI = XD.size() - D.size() + K;
          Match &= (*ReducedOr)[XI] ? D[K] == XD[XI] : D[K] == 1;
        }
        if (Match)
          ReadAccess[I] = Access::Reduced;
      }
      if (ReadAccess[I] != Access::Element) {
        MinSize = std::min<unsigned>(MinSize, dtypeSize(RV->dtype()));
        Any = true;
      }
    }
    for (const Result &Res : Results)
      if (!Res.PerRow)
        MinSize = std::min<unsigned>(MinSize, dtypeSize(Res.Body->dtype()));
    if (Any && MinSize >= 2) {
      V = 16 / MinSize;
      while (V >= 2 && L % (int64_t(G) * V) != 0)
        V /= 2;
      // Every vector access must be at least 4 bytes (one 32-bit word).
      if (V < 2 || V * MinSize < 4)
        V = 0;
    }
  }

  llvm::Error Err = [&]() -> llvm::Error {
    auto Kernel = B.beginKernel();
    RowKernel RK(B, Plan);
    FusedValueEmitter VE(B, Group, Nodes);
    for (size_t I = 0; I < Reads.size(); ++I)
      VE.setParam(Reads[I], InParams[I]);
    Coords KeptC = VE.delinearize("row", Plan.KeptDims, /*CountDims=*/true);
    std::string Lane = RK.lane();

    // Inside a vector pass, element results go to per-thread staging
    // arrays (st<I>[e]) stored as vectors after the pass's element loop.
    bool InVector = false;
    std::vector<bool> Staged(Results.size(), false);
    // Stores result Index (storage value Val) at Offset, perturbed if asked.
    auto Store = [&](size_t Index, std::string Val, const std::string &Offset) {
      const Value *BV = Results[Index].Body;
      if (Perturb && Index == 0)
        Val = emitPerturbation(P, BV->dtype(), Val);
      std::string Target = OutParams[Index] + "[" + Offset + "]";
      if (InVector && !Results[Index].PerRow) {
        Target = "st" + std::to_string(Index) + "[e]";
        Staged[Index] = true;
      }
      P.line(Target + " = " + storeExpr(BV->dtype(), Val) + ";");
    };
    // The vector type moving Bytes (4, 8 or a multiple of 16) and how many.
    auto VectorOf = [](unsigned Bytes) -> std::pair<std::string, unsigned> {
      if (Bytes >= 16)
        return {"uint4", Bytes / 16};
      return {Bytes == 8 ? "uint2" : "unsigned", 1};
    };
    // Lines declaring `<Vec> Name_raw[n]` and `<T> *Name` over it and, for
    // a load, copying the V elements at From (an element pointer) into it.
    auto VectorLines = [&](const std::string &Name, DType Ty,
                           const std::string &From, bool Load) {
      auto [Vec, N] = VectorOf(V * dtypeSize(Ty));
      std::string Raw = Name + "_raw", Const = Load ? "const " : "";
      std::vector<std::string> Lines = {Vec + " " + Raw + "[" +
                                        std::to_string(N) + "];"};
      for (unsigned C = 0; Load && C < N; ++C)
        Lines.push_back(Raw + "[" + std::to_string(C) +
                        "] = reinterpret_cast<const " + Vec + " *>(" + From +
                        ")[" + std::to_string(C) + "];");
      std::string T = P.storageType(Ty);
      Lines.push_back(Const + T + " *" + Name + " = reinterpret_cast<" + Const +
                      T + " *>(" + Raw + ");");
      return Lines;
    };

    // Where pass 1 caches this thread's current element of X.
    std::string XSlot = "k";
    // Prints a loop over this thread's elements of the row; F gets the
    // element's X value (or "" when it must be computed), its coordinates
    // over X and its offset in X-shaped buffers.
    auto ForElements =
        [&](bool First,
            llvm::function_ref<llvm::Error(const std::string &, const Coords &,
                                           const std::string &)>
                Fn) -> llvm::Error {
      std::optional<CudaPrinter::Scope> Loop, Guard, Inner;
      std::string J = "j";
      std::string RowBase = Plan.Rows == 1 ? "" : "row * " + B.lit(L) + " + ";
      // Vector passes: where the loads go, once the pass shows which
      // vectors it uses.
      size_t LoadMark = 0;
      unsigned LoadLevel = 0;
      if (V) {
        if (Cached) {
          P.line("#pragma unroll");
          Loop.emplace(P.scope("for (int kv = 0; kv < " +
                               std::to_string(PerThread / V) + "; ++kv)"));
          std::string Step = G == 1 ? "kv" : "kv * " + std::to_string(G);
          P.line("const idx_t jv = " +
                 (Lane == "0" ? Step : Lane + " + " + Step) + ";");
        } else {
          Loop.emplace(P.scope("for (idx_t jv = " + Lane + "; jv < " +
                               B.lit(L / V) + "; jv += " + std::to_string(G) +
                               ")"));
        }
        LoadMark = P.mark();
        LoadLevel = P.indentLevel();
        P.line("#pragma unroll");
        Inner.emplace(
            P.scope("for (int e = 0; e < " + std::to_string(V) + "; ++e)"));
        P.line("const idx_t j = jv * " + std::to_string(V) + " + e;");
      } else if (Cached) {
        P.line("#pragma unroll");
        Loop.emplace(P.scope("for (int k = 0; k < " +
                             std::to_string(PerThread) + "; ++k)"));
        std::string Step = G == 1 ? "k" : "k * " + std::to_string(G);
        P.line("const idx_t j = " + (Lane == "0" ? Step : Lane + " + " + Step) +
               ";");
        if (L % G != 0)
          Guard.emplace(P.scope("if (j < " + B.lit(L) + ")"));
      } else {
        Loop.emplace(P.scope("for (idx_t j = " + Lane + "; j < " + B.lit(L) +
                             "; j += " + std::to_string(G) + ")"));
      }
      VE.pushScope();
      Coords RedC = VE.delinearize(J, Plan.RedDims);
      Coords XC(XD.size(), "0");
      size_t KI = 0, RI = 0;
      for (size_t D = 0; D < XD.size(); ++D)
        XC[D] = (*ReducedOr)[D] ? RedC[RI++] : KeptC[KI++];
      std::string Offset =
          Plan.Rows == 1 ? "j" : "(row * " + B.lit(L) + " + j)";
      VE.registerLinear(XD, XC, Offset);
      std::string XV;
      XSlot = V ? "kv * " + std::to_string(V) + " + e" : "k";
      if (Cached && !First) {
        XV = "xv[" + XSlot + "]";
        VE.remember(X, XC, XV);
      }
      if (V) {
        // The loaded vectors are what those reads give at these coordinates
        // (any other access to them loads its element from memory).
        for (size_t I = 0; I < Reads.size(); ++I) {
          if (ReadAccess[I] == Access::Element)
            continue;
          Coords RC = XC;
          if (ReadAccess[I] == Access::Reduced) {
            Dims D = dimsOf(Reads[I]);
            RC.assign(XC.end() - D.size(), XC.end());
            for (size_t K = 0; K < D.size(); ++K)
              if (D[K] == 1)
                RC[K] = "0";
          }
          VE.remember(
              Reads[I], RC,
              loadExpr(Reads[I]->dtype(), "ld" + std::to_string(I) + "[e]"));
        }
      }
      InVector = V != 0;
      std::fill(Staged.begin(), Staged.end(), false);
      llvm::Error E = Fn(XV, XC, Offset);
      InVector = false;
      VE.popScope();
      if (V) {
        Guard.reset();
        Inner.reset();
        // Loads of the vectors the pass used, staging for what it stored.
        std::string Used = P.printedSince(LoadMark).str();
        std::vector<std::string> Lines;
        for (size_t I = 0; I < Reads.size(); ++I) {
          std::string Name = "ld" + std::to_string(I);
          if (ReadAccess[I] == Access::Element ||
              Used.find(Name + "[e]") == std::string::npos)
            continue;
          std::string At = (ReadAccess[I] == Access::Full ? RowBase : "") +
                           "jv * " + std::to_string(V);
          for (std::string &Line :
               VectorLines(Name, Reads[I]->dtype(), InParams[I] + " + " + At,
                           /*Load=*/true))
            Lines.push_back(std::move(Line));
        }
        for (size_t I = 0; I < Results.size(); ++I) {
          if (!Staged[I])
            continue;
          for (std::string &Line :
               VectorLines("st" + std::to_string(I), Results[I].Body->dtype(),
                           "", /*Load=*/false))
            Lines.push_back(std::move(Line));
          auto [Vec, N] = VectorOf(V * dtypeSize(Results[I].Body->dtype()));
          std::string To = "reinterpret_cast<" + Vec + " *>(" + OutParams[I] +
                           " + " + RowBase + "jv * " + std::to_string(V) + ")";
          for (unsigned C = 0; C < N; ++C)
            P.line(To + "[" + std::to_string(C) + "] = st" + std::to_string(I) +
                   "_raw[" + std::to_string(C) + "];");
        }
        P.insertLines(LoadMark, LoadLevel, Lines);
      }
      return E;
    };

    // Pass 1: X (cached when it fits), prologue results, first statistic.
    if (Cached)
      P.line(Acc + " xv[" + std::to_string(PerThread) + "];");
    std::string Stat;
    switch (Op) {
    case RowOp::Sum:
    case RowOp::Mean:
    case RowOp::LayerNorm:
      Stat = "sum";
      P.line(Acc + " sum = " + computeLiteral(T, 0) + ";");
      break;
    case RowOp::Max:
    case RowOp::Softmax:
    case RowOp::LogSoftmax:
      Stat = "mx";
      P.line(Acc + " mx = " + lowestLiteral(T) + ";");
      break;
    case RowOp::RMSNorm:
      Stat = "sq";
      P.line(Acc + " sq = " + computeLiteral(T, 0) + ";");
      break;
    }
    if (auto E = ForElements(true,
                             [&](const std::string &, const Coords &XC,
                                 const std::string &Offset) -> llvm::Error {
                               auto XV = VE.compute(X, XC);
                               if (!XV)
                                 return XV.takeError();
                               if (Cached)
                                 P.line("xv[" + XSlot + "] = " + *XV + ";");
                               for (size_t I = 0; I < Results.size(); ++I) {
                                 const Node *N = Results[I].Body->producer();
                                 if (Results[I].PerRow || PosOf(N) >= RPos)
                                   continue;
                                 auto V = VE.compute(Results[I].Body, XC);
                                 if (!V)
                                   return V.takeError();
                                 Store(I, *V, Offset);
                               }
                               if (Stat == "mx")
                                 P.line("mx = solder_max(mx, " + *XV + ");");
                               else if (Stat == "sq")
                                 P.line("sq += " + *XV + " * " + *XV + ";");
                               else
                                 P.line("sum += " + *XV + ";");
                               return llvm::Error::success();
                             }))
      return E;
    RK.combine(Stat, Stat == "mx" ? "SolderMax" : "SolderSum");

    // The per-row statistics and the reduced value.
    std::string Reduced;
    auto XOf = [&](const std::string &XV,
                   const Coords &XC) -> llvm::Expected<std::string> {
      if (!XV.empty())
        return XV;
      return VE.compute(X, XC);
    };
    switch (Op) {
    case RowOp::Sum:
      Reduced = "sum";
      break;
    case RowOp::Mean:
      P.line("const " + Acc + " mean = sum / " + LenLit + ";");
      Reduced = "mean";
      break;
    case RowOp::Max:
      Reduced = "mx";
      break;
    case RowOp::Softmax:
    case RowOp::LogSoftmax: {
      P.line(Acc + " sum = " + computeLiteral(T, 0) + ";");
      if (auto E =
              ForElements(false,
                          [&](const std::string &XV, const Coords &XC,
                              const std::string &) -> llvm::Error {
                            auto V = XOf(XV, XC);
                            if (!V)
                              return V.takeError();
                            P.line("sum += exp" + F + "(" + *V + " - mx);");
                            return llvm::Error::success();
                          }))
        return E;
      RK.combine("sum", "SolderSum");
      if (Op == RowOp::LogSoftmax)
        P.line("const " + Acc + " lse = mx + log" + F + "(sum);");
      else
        P.line("const " + Acc + " inv = " + computeLiteral(T, 1) + " / sum;");
      break;
    }
    case RowOp::LayerNorm: {
      P.line("const " + Acc + " mean = sum / " + LenLit + ";");
      // Two passes (mean, then squared deviations) for stability.
      P.line(Acc + " sq = " + computeLiteral(T, 0) + ";");
      if (auto E =
              ForElements(false,
                          [&](const std::string &XV, const Coords &XC,
                              const std::string &) -> llvm::Error {
                            auto V = XOf(XV, XC);
                            if (!V)
                              return V.takeError();
                            P.line("const " + Acc + " d = " + *V + " - mean;");
                            P.line("sq += d * d;");
                            return llvm::Error::success();
                          }))
        return E;
      RK.combine("sq", "SolderSum");
      [[fallthrough]];
    }
    case RowOp::RMSNorm: {
      float Eps = R->attrs().getFloat("epsilon", 1e-5f);
      P.line("const " + Acc + " inv = " + computeLiteral(T, 1) + " / sqrt" + F +
             "(sq / " + LenLit + " + " + computeLiteral(T, Eps) + ");");
      break;
    }
    }

    // Element results: R's result at each element, then the epilogue.
    if (producesElements(Op)) {
      const Value *Y = R->result(0);
      if (auto E = ForElements(
              false,
              [&](const std::string &XV, const Coords &XC,
                  const std::string &Offset) -> llvm::Error {
                auto XE = XOf(XV, XC);
                if (!XE)
                  return XE.takeError();
                std::string Val;
                switch (Op) {
                case RowOp::Softmax:
                  Val = "exp" + F + "(" + *XE + " - mx) * inv";
                  break;
                case RowOp::LogSoftmax:
                  Val = *XE + " - lse";
                  break;
                default: {
                  auto Sc = VE.broadcastCoords(*R, R->operand(1), XD, XC);
                  if (!Sc)
                    return Sc.takeError();
                  auto S = VE.compute(R->operand(1), *Sc);
                  if (!S)
                    return S.takeError();
                  Val = Op == RowOp::LayerNorm
                            ? "(" + *XE + " - mean) * inv * " + *S
                            : *XE + " * inv * " + *S;
                  if (Op == RowOp::LayerNorm && R->numOperands() > 2 &&
                      R->operand(2)) {
                    auto Bc = VE.broadcastCoords(*R, R->operand(2), XD, XC);
                    if (!Bc)
                      return Bc.takeError();
                    auto Bv = VE.compute(R->operand(2), *Bc);
                    if (!Bv)
                      return Bv.takeError();
                    Val += " + " + *Bv;
                  }
                }
                }
                std::string YN = P.uniqueName("y");
                P.line("const " + computeTypeName(Y->dtype()) + " " + YN +
                       " = " + Val + ";");
                VE.remember(Y, XC, YN);
                for (size_t I = 0; I < Results.size(); ++I) {
                  const Node *N = Results[I].Body->producer();
                  if (Results[I].PerRow || PosOf(N) < RPos)
                    continue;
                  auto V = VE.compute(Results[I].Body, XC);
                  if (!V)
                    return V.takeError();
                  Store(I, *V, Offset);
                }
                return llvm::Error::success();
              }))
        return E;
    }

    // Row results, once per row: the reduced value and its epilogue, or
    // LayerNorm's Mean and InvStdDev.
    bool AnyPerRow = false;
    for (const Result &Res : Results)
      AnyPerRow |= Res.PerRow;
    if (AnyPerRow) {
      std::optional<CudaPrinter::Scope> If;
      if (Lane != "0")
        If.emplace(P.scope("if (lane == 0)"));
      VE.pushScope();
      auto RememberRow = [&](const Value *V, const std::string &E) {
        if (V)
          VE.remember(V, VE.delinearize("row", dimsOf(V)), E);
      };
      if (producesElements(Op)) {
        if (Op == RowOp::LayerNorm) {
          RememberRow(R->result(1), "mean");
          if (R->numResults() > 2)
            RememberRow(R->result(2), "inv");
        }
      } else {
        RememberRow(R->result(0), Reduced);
      }
      for (size_t I = 0; I < Results.size(); ++I) {
        if (!Results[I].PerRow)
          continue;
        const Value *V = Results[I].Body;
        auto E = VE.compute(V, VE.delinearize("row", dimsOf(V)));
        if (!E) {
          VE.popScope();
          return E.takeError();
        }
        Store(I, *E, "row");
      }
      VE.popScope();
    }
    RK.close();
    return llvm::Error::success();
  }();
  if (Err)
    return std::move(Err);
  return B.finish();
}

} // namespace codegen
} // namespace solder
