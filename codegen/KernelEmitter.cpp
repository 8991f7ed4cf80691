//===- KernelEmitter.cpp - One CUDA kernel per IR node
//---------------------===//
//
// The dispatch from a node to its family emitter, the checks every kernel
// needs first (static shapes, no fused bodies), and the KernelBuilder and
// index helpers the families share.
//
// Index arithmetic: a linear index i over baked dims [D0, D1, D2] becomes
// coordinates by repeated div/mod from the innermost dim,
//
//   c2 = i % D2;  r = i / D2;  c1 = r % D1;  c0 = r / D1;
//
// and an operand's offset is sum(c_d * stride_d). Dims of size 1 are dropped
// and neighbours merged when every stride set is contiguous across them, so
// a plain same-shape elementwise kernel does no div/mod at all.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelEmitter.h"
#include "codegen/EmitterUtils.h"
#include "codegen/LibraryEpilogue.h"
#include "ir/FusedGroup.h"
#include "ir/OpRegistry.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <cassert>

namespace solder {

using namespace codegen;

//===----------------------------------------------------------------------===//
// KernelNamer
//===----------------------------------------------------------------------===//

KernelNamer::KernelNamer(const Graph &G) {
  unsigned I = 0;
  for (const auto &N : G.nodes())
    Index[N.get()] = I++;
}

std::string KernelNamer::nameFor(const Node &N) {
  return nameFor(N, N.opName().lower());
}

std::string KernelNamer::nameFor(const Node &N, llvm::StringRef Op) {
  auto It = Index.find(&N);
  std::string Base =
      "solder_" +
      (It == Index.end() ? std::string("x") : std::to_string(It->second)) +
      "_" + Op.str();
  std::string Name = Base;
  for (unsigned K = 1; Used.count(Name); ++K)
    Name = Base + "_" + std::to_string(K);
  Used.insert(Name);
  return Name;
}

namespace codegen {

//===----------------------------------------------------------------------===//
// Shape helpers
//===----------------------------------------------------------------------===//

Dims dimsOf(const Value *V) {
  Dims D;
  for (int64_t S : V->type().staticDims())
    D.push_back(S);
  return D;
}

int64_t numElementsOf(llvm::ArrayRef<int64_t> D) {
  int64_t P = 1;
  for (int64_t S : D)
    P *= S;
  return P;
}

Dims rowMajorStrides(llvm::ArrayRef<int64_t> D) {
  Dims S(D.size(), 1);
  for (int I = int(D.size()) - 2; I >= 0; --I)
    S[I] = S[I + 1] * D[I + 1];
  return S;
}

Dims broadcastStrides(llvm::ArrayRef<int64_t> In, llvm::ArrayRef<int64_t> Out) {
  assert(In.size() <= Out.size() && "operand of higher rank than the result");
  Dims InStrides = rowMajorStrides(In);
  Dims S(Out.size(), 0);
  size_t Shift = Out.size() - In.size();
  for (size_t I = 0; I < In.size(); ++I)
    S[I + Shift] = In[I] == 1 && Out[I + Shift] != 1 ? 0 : InStrides[I];
  return S;
}

std::optional<int64_t> normalizeAxis(int64_t Axis, int64_t Rank) {
  if (Axis < -Rank || Axis >= Rank)
    return std::nullopt;
  return Axis < 0 ? Axis + Rank : Axis;
}

llvm::Error nodeError(const Node &N, const llvm::Twine &Msg) {
  return makeError(N.describe() + ": " + Msg);
}

llvm::Expected<llvm::SmallVector<int64_t, 8>>
constInts(const Node &N, unsigned I, const char *What) {
  const Value *V = N.operand(I);
  if (!V || !V->constant())
    return nodeError(N, llvm::Twine(What) +
                            " must be a constant for code generation");
  return V->constant()->toInt64Vector();
}

//===----------------------------------------------------------------------===//
// KernelBuilder
//===----------------------------------------------------------------------===//

// A grid-stride loop index stays below Count + MaxGridBlocks * BlockSize;
// 32-bit indices are used when that stays below 2^31.
static bool needsWideIndex(const Node &N, const CodegenOptions &Opts) {
  if (Opts.Force64BitIndex)
    return true;
  int64_t Limit = (int64_t(1) << 31) - 1 -
                  int64_t(Opts.MaxGridBlocks) * int64_t(Opts.BlockSize);
  auto Big = [&](const Value *V) {
    return V && V->type().isStatic() && V->type().numElements() > Limit;
  };
  for (const Value *V : N.operands())
    if (Big(V))
      return true;
  for (const Value *V : N.results())
    if (Big(V))
      return true;
  return false;
}

KernelBuilder::KernelBuilder(const Node &N, const CodegenOptions &Opts,
                             std::string Name)
    : N(N), Opts(Opts) {
  K.Name = std::move(Name);
  IdxT = needsWideIndex(N, Opts) ? "long long" : "int";
  K.NodeNames.push_back(N.name().empty() ? N.describe() : N.name());
  std::string S;
  llvm::raw_string_ostream OS(S);
  OS << N.opName() << ' ';
  bool First = true;
  for (const Value *V : N.operands()) {
    OS << (First ? "" : ", ");
    First = false;
    if (V)
      printType(OS, V->type());
    else
      OS << "-";
  }
  OS << " -> ";
  First = true;
  for (const Value *V : N.results()) {
    OS << (First ? "" : ", ");
    First = false;
    if (V)
      printType(OS, V->type());
    else
      OS << "-";
  }
  K.Summary = OS.str();
}

std::string KernelBuilder::addOutput(const Value *V) {
  assert(NumIn == 0 && "outputs are registered before inputs");
  std::string Name = "out" + std::to_string(NumOut++);
  Params.push_back(P.storageType(V->dtype()) + " *" + Name);
  K.Outputs.push_back(V);
  return Name;
}

std::string KernelBuilder::addInput(const Value *V) {
  std::string Name = "in" + std::to_string(NumIn++);
  Params.push_back("const " + P.storageType(V->dtype()) + " *" + Name);
  K.Inputs.push_back(V);
  return Name;
}

std::string KernelBuilder::addTensorMap(unsigned Input,
                                        const TensorMapShape &Shape) {
  assert(Input < K.Inputs.size() && "a tensor map of an unregistered input");
  std::string Name = "tmap" + std::to_string(MapParams.size());
  KernelTensorMap Map;
  static_cast<TensorMapShape &>(Map) = Shape;
  Map.Input = Input;
  P.declare(
      "solder_tmap_t",
      "struct __align__(64) solder_tmap_t { unsigned long long v[16]; };");
  MapParams.push_back("const __grid_constant__ solder_tmap_t " + Name);
  K.TensorMaps.push_back(Map);
  return Name;
}

/// Where beginKernel leaves room for the count parameters, which loops
/// printed after it register; finish() fills it in.
static const char CountsMark[] = "/*solder:counts*/";

std::string KernelBuilder::addCount(int64_t V) {
  std::string Name = "cnt" + std::to_string(CountParams.size());
  CountParams.push_back("const long long " + Name);
  K.Counts.push_back(V);
  return "(idx_t)" + Name;
}

std::string KernelBuilder::addScratch(uint32_t Bytes) {
  assert(ScratchParam.empty() && Bytes && "one scratch parameter");
  K.ScratchBytes = Bytes;
  ScratchParam = "unsigned *scratch";
  return "scratch";
}

CudaPrinter::Scope KernelBuilder::beginKernel() {
  P.declare("idx_t", "typedef " + IdxT + " idx_t;");
  std::string Sig = "extern \"C\" __global__ void __launch_bounds__(" +
                    std::to_string(Opts.BlockSize) + ") " +
                    (Attributes.empty() ? "" : Attributes + " ") + K.Name + "(";
  // Every pointer is `__restrict__`: no two of a step's buffers overlap
  // where one is written (the plan builder checks it, and the runtime
  // refuses caller-bound buffers that overlap). Without it a load after a
  // store (a LayerNorm's gamma after the previous element's store) waits
  // for the store: row kernels measured 2x slower.
  for (size_t I = 0; I < Params.size(); ++I) {
    std::string Param = Params[I];
    Param.replace(Param.rfind(" *"), 2, " *__restrict__ ");
    Sig += (I ? ", " : "") + Param;
  }
  // Blocks of other SMs write it: not __restrict__ (no load may be
  // cached or reordered past the waits).
  if (!ScratchParam.empty())
    Sig += (Params.empty() ? "" : ", ") + ScratchParam;
  for (const std::string &M : MapParams)
    Sig += ", " + M;
  Sig += std::string(CountsMark) + ")";
  P.line(summaryComment(K.Summary));
  CudaPrinter::Scope Body = P.scope(Sig);
  if (Opts.DependentLaunch && Opts.SmVersion >= 90) {
    P.declare("solder_grid_wait",
              "__device__ __forceinline__ void solder_launch_dependents() {\n"
              "#if __CUDA_ARCH__ >= 900\n"
              "  asm volatile(\"griddepcontrol.launch_dependents;\");\n"
              "#endif\n"
              "}\n"
              "__device__ __forceinline__ void solder_grid_wait() {\n"
              "#if __CUDA_ARCH__ >= 900\n"
              "  asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");\n"
              "#endif\n"
              "}");
    // With OwnWait the body lets the next kernel launch and waits before
    // it reads what the previous grid wrote, each where it chooses.
    // Otherwise the next kernel may start launching now: its own wait
    // holds it until this grid has finished and its writes are visible.
    if (!OwnWait) {
      P.line("solder_launch_dependents();");
      P.line("solder_grid_wait();");
    }
    K.DependentLaunch = true;
  }
  return Body;
}

bool KernelBuilder::waitForPreviousGridInBody() {
  OwnWait = true;
  return Opts.DependentLaunch && Opts.SmVersion >= 90;
}

std::string KernelBuilder::lit(int64_t V) const {
  if (IdxT == "int")
    return V < 0 ? "(" + std::to_string(V) + ")" : std::to_string(V);
  return V < 0 ? "(" + std::to_string(V) + "LL)" : std::to_string(V) + "LL";
}

void KernelBuilder::setLaunch(int64_t Count, int64_t PerBlock) {
  int64_t Blocks = (Count + PerBlock - 1) / PerBlock;
  Blocks = std::clamp<int64_t>(Blocks, 1, Opts.MaxGridBlocks);
  K.Grid = {unsigned(Blocks), 1, 1};
  K.Block = {Opts.BlockSize, 1, 1};
}

void KernelBuilder::setDynamicShared(unsigned Bytes) {
  K.DynamicSharedBytes = Bytes;
}

void KernelBuilder::setGrid(std::array<unsigned, 3> Grid, unsigned Threads) {
  assert(Threads <= Opts.BlockSize && "above the kernel's launch bounds");
  K.Grid = Grid;
  K.Block = {Threads, 1, 1};
}

CudaPrinter::Scope KernelBuilder::gridStrideLoop(llvm::StringRef Var,
                                                 int64_t Count) {
  setLaunch(Count, Opts.BlockSize);
  return P.scope("for (idx_t " + Var +
                 " = (idx_t)(blockIdx.x * blockDim.x + threadIdx.x); " + Var +
                 " < " + addCount(Count) + "; " + Var +
                 " += (idx_t)(gridDim.x * blockDim.x))");
}

std::string KernelBuilder::let(llvm::StringRef Base, const llvm::Twine &Expr) {
  std::string Name = P.uniqueName(Base);
  P.line("const idx_t " + Name + " = " + Expr + ";");
  return Name;
}

void KernelBuilder::describeGroup(int64_t Id,
                                  std::vector<std::string> NodeNames,
                                  std::string Summary) {
  K.GroupId = Id;
  K.NodeNames = std::move(NodeNames);
  K.Summary = std::move(Summary);
}

GeneratedKernel KernelBuilder::finish() {
  K.Source = P.finish();
  // (Every other parameter was registered before beginKernel.)
  const bool Others =
      !Params.empty() || !ScratchParam.empty() || !MapParams.empty();
  std::string Counts;
  for (const std::string &C : CountParams)
    Counts += (Counts.empty() && !Others ? "" : ", ") + C;
  size_t At = K.Source.find(CountsMark);
  if (At != std::string::npos)
    K.Source.replace(At, sizeof(CountsMark) - 1, Counts);
  return std::move(K);
}

//===----------------------------------------------------------------------===//
// Index arithmetic
//===----------------------------------------------------------------------===//

namespace {
struct MergedDim {
  int64_t Size;
  Dims Strides; // one per stride set
};
} // namespace

std::vector<std::string> emitOffsets(KernelBuilder &B, llvm::StringRef Var,
                                     llvm::ArrayRef<int64_t> Shape,
                                     llvm::ArrayRef<Dims> Strides) {
  size_t NumSets = Strides.size();
  // Innermost first.
  std::vector<MergedDim> Ms;
  for (int D = int(Shape.size()) - 1; D >= 0; --D) {
    if (Shape[D] == 1)
      continue;
    MergedDim M{Shape[D], {}};
    for (const Dims &S : Strides)
      M.Strides.push_back(S[D]);
    if (!Ms.empty()) {
      MergedDim &In = Ms.back();
      bool Contiguous = true;
      for (size_t K = 0; K < NumSets; ++K)
        Contiguous &= M.Strides[K] == In.Strides[K] * In.Size;
      if (Contiguous) {
        In.Size *= M.Size;
        continue;
      }
    }
    Ms.push_back(std::move(M));
  }
  std::vector<std::string> Out(NumSets, "0");
  if (Ms.empty())
    return Out;
  auto Term = [&](const std::string &C, int64_t S) -> std::string {
    if (S == 0)
      return "";
    if (S == 1)
      return C;
    return C + " * " + B.lit(S);
  };
  if (Ms.size() == 1) {
    for (size_t K = 0; K < NumSets; ++K) {
      int64_t S = Ms[0].Strides[K];
      Out[K] = S == 0   ? "0"
               : S == 1 ? Var.str()
                        : "(" + Term(Var.str(), S) + ")";
    }
    return Out;
  }
  std::vector<std::string> Coords(Ms.size());
  std::string Rem = Var.str();
  for (size_t D = 0; D + 1 < Ms.size(); ++D) {
    Coords[D] = B.let("c", Rem + " % " + B.lit(Ms[D].Size));
    // The outermost coordinate is the last quotient.
    Rem =
        B.let(D + 2 == Ms.size() ? "c" : "r", Rem + " / " + B.lit(Ms[D].Size));
  }
  Coords.back() = Rem;
  for (size_t K = 0; K < NumSets; ++K) {
    std::string Sum;
    for (size_t D = Ms.size(); D-- > 0;) {
      std::string T = Term(Coords[D], Ms[D].Strides[K]);
      if (!T.empty())
        Sum += (Sum.empty() ? "" : " + ") + T;
    }
    Out[K] = Sum.empty() ? "0" : B.let("off", Sum);
  }
  return Out;
}

std::vector<std::string> emitCoords(KernelBuilder &B, llvm::StringRef Var,
                                    llvm::ArrayRef<int64_t> Shape) {
  std::vector<std::string> C(Shape.size(), "0");
  // The outermost non-unit dim takes the final quotient.
  int Outer = -1;
  for (size_t D = 0; D < Shape.size(); ++D)
    if (Shape[D] != 1) {
      Outer = int(D);
      break;
    }
  if (Outer < 0)
    return C;
  std::string Rem = Var.str();
  for (int D = int(Shape.size()) - 1; D > Outer; --D) {
    if (Shape[D] == 1)
      continue;
    C[D] = B.let("c", Rem + " % " + B.lit(Shape[D]));
    Rem = B.let("r", Rem + " / " + B.lit(Shape[D]));
  }
  C[Outer] = Rem;
  return C;
}

} // namespace codegen

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

bool isHandledWithoutKernel(const Node &N) {
  const OpInfo &Info = getOpInfo(N.kind());
  return Info.IsView || Info.Fusion == FusionKind::Contraction ||
         isReadThroughByAttention(N);
}

static llvm::Error checkStatic(const Node &N) {
  auto Check = [&](const Value *V, const char *Role) -> llvm::Error {
    if (!V || V->type().isStatic())
      return llvm::Error::success();
    return nodeError(N, llvm::Twine("code generation needs static shapes, ") +
                            Role + " '" + V->name() + "' has type " +
                            typeToString(V->type()) +
                            " (bind its symbols with --shape)");
  };
  for (const Value *V : N.operands())
    if (auto E = Check(V, "operand"))
      return E;
  for (const Value *V : N.results())
    if (auto E = Check(V, "result"))
      return E;
  return llvm::Error::success();
}

llvm::Expected<std::optional<GeneratedKernel>>
emitKernel(const Node &N, const CodegenOptions &Opts, KernelNamer &Names) {
  if (isFusedGroup(N)) {
    if (Opts.BlockSize == 0 || Opts.BlockSize % 32 || Opts.BlockSize > 1024)
      return nodeError(N, "block size must be a multiple of 32 up to 1024");
    std::optional<GeneratedKernel> K;
    switch (groupInfo(N).Kind) {
    case GroupKind::Contraction:
      return std::nullopt;
    case GroupKind::Loop: {
      std::vector<const Node *> Nodes;
      for (const auto &M : N.body()->nodes())
        Nodes.push_back(M.get());
      auto L = emitFusedKernel(N, Nodes, Opts, Names);
      if (!L)
        return L.takeError();
      K = std::move(*L);
      break;
    }
    case GroupKind::Reduction: {
      auto R = emitFusedReduction(N, Opts, Names);
      if (!R)
        return R.takeError();
      K = std::move(*R);
      break;
    }
    }
    return K;
  }
  if (N.body())
    return nodeError(N, "nodes with a body are not supported by code "
                        "generation");
  if (isHandledWithoutKernel(N))
    return std::nullopt;
  if (N.kind() == OpKind::Resize) // says more than "needs static shapes"
    if (auto E = checkResizeOperands(N))
      return E;
  if (auto E = checkStatic(N))
    return E;
  if (Opts.BlockSize == 0 || Opts.BlockSize % 32 || Opts.BlockSize > 1024)
    return nodeError(N, "block size must be a multiple of 32 up to 1024");
  KernelBuilder B(N, Opts, Names.nameFor(N));
  llvm::Error E = llvm::Error::success();
  switch (N.kind()) {
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
  case OpKind::LayerNormalization:
  case OpKind::RMSNormalization:
    E = emitReduction(B);
    break;
  case OpKind::MaxPool:
  case OpKind::AveragePool:
  case OpKind::GlobalAveragePool:
  case OpKind::GlobalMaxPool:
  case OpKind::LRN:
    E = emitPool(B);
    break;
  case OpKind::CumSum:
    E = emitCumSum(B);
    break;
  case OpKind::OneHot:
    E = emitOneHot(B);
    break;
  case OpKind::Resize:
    E = emitResize(B);
    break;
  case OpKind::TopK:
    E = emitTopK(B);
    break;
  case OpKind::Attention:
    E = emitAttention(B);
    break;
  case OpKind::ScatterElements:
    E = emitScatterElements(B);
    break;
  case OpKind::ScatterND:
    E = emitScatterND(B);
    break;
  default:
    switch (getOpInfo(N.kind()).Fusion) {
    case FusionKind::Elementwise:
    case FusionKind::Broadcast:
      E = emitElementwise(B);
      break;
    case FusionKind::Reduction: // the Reduce* ops, ArgMax and ArgMin
      E = emitReduction(B);
      break;
    default:
      E = emitDataMovement(B);
      break;
    }
  }
  if (E)
    return E;
  return std::optional<GeneratedKernel>(B.finish());
}

/// The generated GEMM group that computes the statistics of deferred
/// LayerNorm R itself (deferredStatsGroup), or null: R's first reader (Pos:
/// each node's place in G), if it runs as a generated GEMM. PlanBuilder
/// schedules that kernel at the reader's place, so every later reader of
/// the statistics finds them written.
static const Node *
statsConsumer(const Graph &G, const Node &R, const CodegenOptions &Opts,
              const llvm::DenseMap<const Node *, size_t> &Pos) {
  const Node *First = nullptr;
  for (const Value *V : R.results()) {
    if (V && G.isOutput(V))
      return nullptr; // (only the statistics are results: statsNormOf)
    for (const Use &U : V ? V->uses() : llvm::ArrayRef<Use>())
      if (!First || Pos.lookup(U.User) < Pos.lookup(First))
        First = U.User;
  }
  if (!First || !isFusedGroup(*First) ||
      groupInfo(*First).Kind != GroupKind::Contraction ||
      !Opts.GeneratedGemmGroups.count(groupInfo(*First).Id) ||
      Opts.SplitNormGroups.count(groupInfo(*First).Id) ||
      deferredStatsGroup(*First) != &R)
    return nullptr;
  return First;
}

llvm::Expected<std::vector<GeneratedKernel>>
emitGraphKernels(const Graph &G, const CodegenOptions &Opts) {
  KernelNamer Names(G);
  std::vector<GeneratedKernel> Out;
  // Generated GEMMs emitted early, where the LayerNorm whose statistics
  // they compute stood (its own kernel then not emitted).
  llvm::DenseSet<const Node *> Early;
  llvm::DenseMap<const Node *, size_t> Pos;
  if (Opts.SmVersion >= 90 && !Opts.GeneratedGemmGroups.empty())
    for (const auto &N : G.nodes())
      Pos[N.get()] = Pos.size();
  for (const auto &N : G.nodes()) {
    if (Early.count(N.get()))
      continue;
    if (!Pos.empty() && statsNormOf(*N))
      if (const Node *C = statsConsumer(G, *N, Opts, Pos)) {
        auto K = emitGeneratedGemm(*C, Opts, Names, N.get());
        if (K) {
          Out.push_back(std::move(*K));
          Early.insert(C);
          continue;
        }
        // This GEMM's loop cannot: the group runs its own kernel.
        llvm::consumeError(K.takeError());
      }
    if (isFusedGroup(*N) && groupInfo(*N).Kind == GroupKind::Contraction) {
      // The library call runs the anchor and what it absorbs; one
      // generated kernel runs the rest of the chain.
      if (Opts.GeneratedGemmGroups.count(groupInfo(*N).Id)) {
        auto K = emitGeneratedGemm(*N, Opts, Names);
        if (!K)
          return K.takeError();
        Out.push_back(std::move(*K));
        // Split: the members after the GEMM's part (the residual add and
        // the normalization), as the library path's row kernel runs them,
        // reading the value the GEMM wrote.
        if (const Value *X = Opts.SplitNormGroups.count(groupInfo(*N).Id)
                                 ? normSplitValue(*N)
                                 : nullptr) {
          std::vector<const Node *> Rest;
          bool After = false;
          for (const auto &M : N->body()->nodes()) {
            if (After)
              Rest.push_back(M.get());
            After |= M.get() == X->producer();
          }
          auto R = emitFusedReduction(*N, Rest, Opts, Names);
          if (!R)
            return R.takeError();
          Out.push_back(std::move(*R));
        }
        continue;
      }
      if (Opts.ConvGraphGroups.count(groupInfo(*N).Id))
        continue; // cuDNN runs the whole chain
      LibraryEpilogue Split = matchLibraryEpilogue(*N);
      if (!Split.Anchor)
        return nodeError(*N, "contraction group without a contraction");
      if (Split.Rest.empty())
        continue;
      // A rest holding a row normalization (norm-epilogue-fusion's
      // groups) is a row kernel; otherwise a loop.
      bool RowRest = llvm::any_of(Split.Rest, [](const Node *M) {
        return getOpInfo(M->kind()).Fusion == FusionKind::Reduction;
      });
      auto K = RowRest ? emitFusedReduction(*N, Split.Rest, Opts, Names)
                       : emitFusedKernel(*N, Split.Rest, Opts, Names);
      if (!K)
        return K.takeError();
      Out.push_back(std::move(*K));
      continue;
    }
    auto K = emitKernel(*N, Opts, Names);
    if (!K)
      return K.takeError();
    if (*K)
      Out.push_back(std::move(**K));
  }
  return Out;
}

} // namespace solder
