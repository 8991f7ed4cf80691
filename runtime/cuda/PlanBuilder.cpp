//===- PlanBuilder.cpp - From a compiled Graph to a Plan ------------------===//
//
// How a graph becomes steps, in node order:
//
//   view (Reshape, Flatten, ...)        -> no step: result aliases operand
//   MatMul / Gemm                       -> cuBLASLt step (+ helper kernel
//                                          copying a broadcast C into Y)
//   Conv / ConvTranspose                -> cuDNN step (+ helper bias kernel)
//   FusedGroup "contraction"            -> the library step with the
//                                          epilogue it absorbs
//                                          (matchLibraryEpilogue), then the
//                                          rest kernel, if any
//   anything a generated kernel writes  -> that kernel's launch (loop and
//                                          reduction groups included)
//
// A contraction group whose library call leaves a rest writes the body
// value the rest kernel reads (LibraryResult) to a temporary in the arena;
// otherwise the library call writes the group's result directly. Body
// inputs and outputs stand for the group's operands and results.
//
// Every node with steps also gets a Plan::Groups entry (fused groups with
// their id, unfused nodes as "single" with id -1) naming its steps and
// where its operands and results live, for reports and `solder compare`.
//
// Graph outputs are written in place: the value (or the value a view of it
// aliases) is located in the caller's output buffer. An output that is a
// graph input, a constant, or already placed in another output gets a copy
// step at the end.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/PlanBuilder.h"
#include "codegen/ConvGraphEpilogue.h"
#include "codegen/GeneratedKernel.h"
#include "codegen/KernelEmitter.h"
#include "codegen/LibraryEpilogue.h"
#include "ir/AttentionSpec.h"
#include "ir/ConvPads.h"
#include "ir/FusedGroup.h"
#include "ir/Layout.h"
#include "ir/OpRegistry.h"
#include "ir/Printer.h"
#include "ir/StridedView.h"
#include "runtime/cuda/CudnnAttention.h"
#include "runtime/cuda/KernelCompiler.h"
#include "runtime/cuda/MemoryPlanner.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <optional>

using namespace llvm;

namespace solder {

uint64_t PlanTensor::numElements() const {
  uint64_t N = 1;
  for (int64_t D : Dims)
    N *= uint64_t(D);
  return N;
}

namespace {

Error planError(const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), Msg);
}

bool isLibraryOp(OpKind K) {
  return K == OpKind::MatMul || K == OpKind::Gemm || K == OpKind::Conv ||
         K == OpKind::ConvTranspose;
}

//===----------------------------------------------------------------------===//
// Runtime helper kernels: bias add after a convolution, broadcast copy of a
// Gemm's C. Their shapes are baked in like generated kernels; the name
// encodes every parameter, so equal kernels are compiled once.
//===----------------------------------------------------------------------===//

StringRef cType(DType T) {
  switch (T) {
  case DType::F64:
    return "double";
  case DType::F16:
    return "__half";
  case DType::BF16:
    return "__nv_bfloat16";
  default:
    return "float";
  }
}

std::string preamble(DType T) {
  std::string S = "// solder runtime helper kernel\n";
  if (T == DType::F16)
    S += "#include <cuda_fp16.h>\n";
  if (T == DType::BF16)
    S += "#include <cuda_bf16.h>\n";
  return S;
}

/// Expression converting an element to float/double and back.
std::string toWide(DType T, StringRef E) {
  if (T == DType::F16)
    return ("__half2float(" + E + ")").str();
  if (T == DType::BF16)
    return ("__bfloat162float(" + E + ")").str();
  return E.str();
}
std::string fromWide(DType T, StringRef E) {
  if (T == DType::F16)
    return ("__float2half(" + E + ")").str();
  if (T == DType::BF16)
    return ("__float2bfloat16(" + E + ")").str();
  return E.str();
}

constexpr unsigned HelperBlock = 256;

std::array<unsigned, 3> gridFor(uint64_t Total) {
  uint64_t Blocks =
      std::max<uint64_t>(1, (Total + HelperBlock - 1) / HelperBlock);
  return {unsigned(Blocks), 1, 1};
}

/// y[n, c, i] += bias[c] over y of N x C x Inner.
PlanKernel biasAddKernel(DType T, int64_t N, int64_t C, int64_t Inner) {
  PlanKernel K;
  K.Name = formatv("solder_rt_bias_{0}_{1}_{2}_{3}", dtypeName(T), N, C, Inner);
  int64_t Total = N * C * Inner;
  K.Source = preamble(T) +
             formatv("extern \"C\" __global__ void {0}({1} *__restrict__ y, "
                     "const {1} *__restrict__ b) {{\n"
                     "  long long i = (long long)blockIdx.x * blockDim.x + "
                     "threadIdx.x;\n"
                     "  if (i >= {2}LL) return;\n"
                     "  long long c = (i / {3}LL) % {4}LL;\n"
                     "  y[i] = {5};\n"
                     "}\n",
                     K.Name, cType(T), Total, Inner, C,
                     fromWide(T, toWide(T, "y[i]") + " + " + toWide(T, "b[c]")))
                 .str();
  K.Grid = gridFor(Total);
  K.Block = {HelperBlock, 1, 1};
  K.Summary = formatv("bias add {0}[{1},{2},{3}]", dtypeName(T), N, C, Inner);
  return K;
}

/// y[r, c] = src[r * SR + c * SC] over y of Rows x Cols.
PlanKernel broadcastCopyKernel(DType T, int64_t Rows, int64_t Cols, int64_t SR,
                               int64_t SC) {
  PlanKernel K;
  K.Name = formatv("solder_rt_bcast_{0}_{1}_{2}_{3}_{4}", dtypeName(T), Rows,
                   Cols, SR, SC);
  int64_t Total = Rows * Cols;
  K.Source = preamble(T) +
             formatv("extern \"C\" __global__ void {0}({1} *__restrict__ y, "
                     "const {1} *__restrict__ s) {{\n"
                     "  long long i = (long long)blockIdx.x * blockDim.x + "
                     "threadIdx.x;\n"
                     "  if (i >= {2}LL) return;\n"
                     "  long long r = i / {3}LL, c = i % {3}LL;\n"
                     "  y[i] = s[r * {4}LL + c * {5}LL];\n"
                     "}\n",
                     K.Name, cType(T), Total, Cols, SR, SC)
                 .str();
  K.Grid = gridFor(Total);
  K.Block = {HelperBlock, 1, 1};
  K.Summary = formatv("broadcast copy {0}[{1},{2}]", dtypeName(T), Rows, Cols);
  return K;
}

//===----------------------------------------------------------------------===//
// The builder.
//===----------------------------------------------------------------------===//

/// A step before buffers are placed: the values it reads and writes.
struct ProtoStep {
  PlanStep::Kind K;
  uint32_t Index;
  std::string Label;
  std::vector<const Value *> Args; // kernel parameters
  std::vector<const Value *> Reads, Writes;
  int OutputIndex = -1; // copy into this graph output
  int64_t GroupId = -1;
  uint32_t ScratchBytes = 0; // kernel scratch after the Args
};

struct GemmValues {
  const Value *A = nullptr, *B = nullptr, *Bias = nullptr, *C = nullptr,
              *D = nullptr;
  /// Byte offsets into A, B and D where the operands' views start.
  uint64_t OffsetA = 0, OffsetB = 0, OffsetD = 0;
};
struct ConvValues {
  const Value *X = nullptr, *W = nullptr, *Y = nullptr;
  /// Fused calls: the bias (null with ZeroBias: the builder places zeros)
  /// and z.
  const Value *Bias = nullptr, *Z = nullptr;
  bool ZeroBias = false;
  /// Graph calls: per graph tensor, the value an Operand tensor reads.
  std::vector<const Value *> GraphReads;
};

struct AttentionValues {
  const Value *Q = nullptr, *K = nullptr, *V = nullptr, *Bias = nullptr,
              *O = nullptr;
  /// Byte offsets into Q, K and V where the parts start.
  uint64_t OffsetQ = 0, OffsetK = 0, OffsetV = 0;
};

/// A Plan::Groups entry before buffers are placed.
struct ProtoGroup {
  PlanGroup G;
  std::vector<const Value *> Operands, Results;
};

GemmConfig::Epilogue gemmEpilogue(bool Bias, EpilogueActivation A) {
  switch (A) {
  case EpilogueActivation::None:
    return Bias ? GemmConfig::Epilogue::Bias : GemmConfig::Epilogue::None;
  case EpilogueActivation::Relu:
    return Bias ? GemmConfig::Epilogue::ReluBias : GemmConfig::Epilogue::Relu;
  case EpilogueActivation::GeluTanh:
    return Bias ? GemmConfig::Epilogue::GeluBias : GemmConfig::Epilogue::Gelu;
  }
  return GemmConfig::Epilogue::None;
}

class Builder {
public:
  Builder(const Graph &G, const PlanOptions &Opts) : G(G), Opts(Opts) {}
  Expected<Plan> build();

private:
  Error checkStatic();
  Error scheduleNode(const Node &N);
  Error scheduleKernel(unsigned KI);
  /// The library step(s) of N; with E, N is a contraction group's anchor
  /// and the call also does what E absorbed, writing E->LibraryResult.
  Error addLibraryNode(const Node &N, const LibraryEpilogue *E);
  Error addMatMul(const Node &N, const LibraryEpilogue *E);
  std::pair<const Value *, std::optional<StridedView>>
  readView(const Value *X, const LibraryEpilogue *E);
  Error addGemm(const Node &N, const LibraryEpilogue *E);
  /// Conv, or ConvTranspose (cuDNN backward data) when Transpose.
  Error addConv(const Node &N, bool Transpose, const LibraryEpilogue *E);
  /// C's type, layout, dims, pads, strides, dilations and groups for
  /// Conv/ConvTranspose N reading X and W and writing Y.
  Error convGeometry(const Node &N, bool Transpose, const Value *X,
                     const Value *W, const Value *Y, ConvConfig &C);
  /// The step of convolution C: it reads CV's X, W, bias, z and graph
  /// operands and writes its Y.
  void addConvStep(const Node &N, ConvConfig C, ConvValues CV);
  /// The steps of a contraction group; RunsAs says how it runs.
  Error addContractionGroup(const Node &Group, std::string &RunsAs);
  /// Attention node N as one cuDNN call, when the options ask for it and
  /// cuDNN takes it; else Why says why not (empty when not asked).
  Error addCudnnAttention(const Node &N, bool &Added, std::string &Why);
  /// The library call plus its rest kernel.
  Error addLibraryGroup(const Node &Group, std::string &RunsAs);
  /// A convolution group as one cuDNN operation graph.
  Error addConvGraph(const Node &Group, std::string &RunsAs);
  void addGemmEpilogue(GemmConfig &C, GemmValues &GV, const LibraryEpilogue *E);
  void recordGroup(const Node &N, size_t FirstStep, std::string RunsAs);
  std::optional<BufferRef> placedRef(const Value *V);
  void addHelperKernel(PlanKernel K, const Value *Out, const Value *In,
                       const Node &N, bool ReadsOut);
  Error placeBuffers();
  BufferRef ref(const Value *V);

  const Value *outer(const Value *V) const {
    auto It = Subst.find(V);
    return It == Subst.end() ? V : It->second;
  }
  const Value *root(const Value *V) const {
    V = outer(V);
    for (auto It = Alias.find(V); It != Alias.end(); It = Alias.find(V))
      V = It->second;
    return V;
  }
  SmallVector<int64_t, 4> dims(const Value *V) const {
    return V->type().staticDims();
  }

  const Graph &G;
  const PlanOptions &Opts;
  Plan P;
  std::vector<ProtoStep> Steps;
  std::vector<GemmValues> GemmVals;
  std::vector<ConvValues> ConvVals;
  std::vector<AttentionValues> AttnVals;
  std::vector<const Value *> CopySrc;
  DenseMap<const Value *, const Value *> Alias; // view result -> operand
  DenseMap<const Value *, const Value *> Subst; // body input -> outer value
  std::vector<GeneratedKernel> Gen;
  DenseMap<const Value *, unsigned> KernelOf;
  std::vector<bool> Scheduled;
  /// Body values a library step writes (a contraction group's temporary).
  DenseSet<const Value *> LibraryWritten;
  std::vector<ProtoGroup> Groups;
  /// Contraction groups that run as one generated GEMM.
  std::set<int64_t> GemmGroups;
  std::set<int64_t> ConvGraphs;
  StringMap<unsigned> KernelByName;
  DenseMap<const Value *, BufferRef> Loc;
};

Error Builder::checkStatic() {
  auto Check = [&](const Value *V, const Twine &What) -> Error {
    if (V->type().isStatic())
      return Error::success();
    return planError(What + " '" + V->name() + "' has type " +
                     typeToString(V->type()) +
                     ": every shape must be static to build a GPU plan "
                     "(bind symbols with --shape)");
  };
  for (const Value *V : G.inputs())
    if (Error E = Check(V, "input"))
      return E;
  for (const auto &N : G.nodes())
    for (const Value *R : N->results())
      if (R)
        if (Error E = Check(R, N->describe() + ": result"))
          return E;
  return Error::success();
}

void Builder::addHelperKernel(PlanKernel K, const Value *Out, const Value *In,
                              const Node &N, bool ReadsOut) {
  auto [It, New] = KernelByName.try_emplace(K.Name, P.Kernels.size());
  if (New) {
    K.NodeNames.push_back(N.name());
    P.Kernels.push_back(std::move(K));
  }
  ProtoStep S;
  S.K = PlanStep::Kind::Kernel;
  S.Index = It->second;
  S.Label = N.describe() + " (" + P.Kernels[It->second].Summary + ")";
  S.Args = {Out, In};
  S.Reads = {In};
  if (ReadsOut)
    S.Reads.push_back(Out);
  S.Writes = {Out};
  Steps.push_back(std::move(S));
}

void Builder::addGemmEpilogue(GemmConfig &C, GemmValues &GV,
                              const LibraryEpilogue *E) {
  EpilogueActivation Act = EpilogueActivation::None;
  if (E) {
    C.Alpha *= E->Alpha;
    if (E->Bias)
      GV.Bias = outer(E->Bias);
    if (E->Residual) {
      // The matcher took the residual only with cuBLASLt's C free.
      assert(C.CFrom == GemmConfig::CSource::None && "C is taken");
      C.CFrom = GemmConfig::CSource::Separate;
      C.Beta = 1.0f;
      GV.C = outer(E->Residual);
    }
    Act = E->Activation;
  }
  C.Epi = gemmEpilogue(GV.Bias != nullptr, Act);
}

/// The group operand a matmul operand X is read from through E's prologue
/// layout ops, and X's view of it.
std::pair<const Value *, std::optional<StridedView>>
Builder::readView(const Value *X, const LibraryEpilogue *E) {
  SmallVector<const Node *, 4> Chain;
  while (E && X->producer() && llvm::is_contained(E->Prologue, X->producer())) {
    Chain.push_back(X->producer());
    X = X->producer()->operand(0);
  }
  return {outer(X), viewReadThrough(dims(X), llvm::reverse(Chain))};
}

Error Builder::addMatMul(const Node &N, const LibraryEpilogue *E) {
  auto [A, AV] = readView(N.operand(0), E);
  auto [B, BV] = readView(N.operand(1), E);
  // The result is written through E's trailing layout ops, if any.
  const Value *Last = E ? E->LibraryResult : N.result(0);
  if (E && !E->ResultLayout.empty())
    Last = E->ResultLayout.back()->result(0);
  const Value *Y = outer(Last);
  std::optional<StridedView> DV =
      E ? viewWrittenThrough(dims(Last), E->ResultLayout)
        : StridedView::contiguous(dims(Last));
  DType T = Y->dtype();
  if (!isFloat(T))
    return planError(N.describe() + ": MatMul of " + dtypeName(T) +
                     " is not supported on the GPU (float types only)");
  if (!AV || !BV || !DV)
    return planError(N.describe() + ": an operand's layout ops do not form "
                                    "a strided view");
  SmallVector<int64_t, 4> AD = dims(N.operand(0)), BD = dims(N.operand(1));
  if (AD.empty() || BD.empty())
    return planError(N.describe() + ": MatMul of a scalar");
  // Vectors are matrices with a unit dim (dropped from the result).
  auto Unit = [](std::optional<StridedView> &V, size_t At) {
    if (!V)
      return;
    SmallVector<int64_t, 6> D(V->Dims.begin(), V->Dims.end());
    D.insert(D.begin() + At, 1);
    V = reshapeView(*V, D);
  };
  if (AD.size() == 1) {
    Unit(AV, 0);
    Unit(DV, DV->Dims.size() - (BD.size() == 1 ? 0 : 1));
  }
  if (BD.size() == 1 && DV) {
    Unit(BV, 1);
    Unit(DV, DV->Dims.size());
  }
  std::optional<GemmGeometry> Geo;
  if (AV && BV && DV)
    Geo = matmulGeometry(*AV, *BV, *DV);
  if (!Geo)
    return planError(N.describe() +
                     ": cuBLASLt cannot express this matmul's operand layouts "
                     "or batch broadcast (" +
                     typeToString(N.operand(0)->type()) + " x " +
                     typeToString(N.operand(1)->type()) + ")");
  if (Geo->pointerArrays() && E &&
      (E->Bias || E->Residual || E->Activation != EpilogueActivation::None))
    return planError(N.describe() + ": a pointer-array batched matmul with a "
                                    "bias, residual or activation epilogue");

  GemmConfig C;
  C.Elem = T;
  C.AllowTF32 = Opts.AllowTF32;
  C.TransA = Geo->TransA;
  C.TransB = Geo->TransB;
  C.M = Geo->M;
  C.N = Geo->N;
  C.K = Geo->K;
  C.Lda = Geo->Lda;
  C.Ldb = Geo->Ldb;
  C.Ldd = Geo->Ldd;
  C.Batch = Geo->Batch;
  C.StrideA = Geo->StrideA;
  C.StrideB = Geo->StrideB;
  C.StrideD = Geo->StrideD;
  C.BatchDims.assign(Geo->BatchDims.begin(), Geo->BatchDims.end());
  C.BatchStrideA.assign(Geo->BatchStrideA.begin(), Geo->BatchStrideA.end());
  C.BatchStrideB.assign(Geo->BatchStrideB.begin(), Geo->BatchStrideB.end());
  C.BatchStrideD.assign(Geo->BatchStrideD.begin(), Geo->BatchStrideD.end());
  // cuBLASLt's A is our B (see GemmGeometry).
  GemmValues GV{B, A, nullptr, nullptr, Y};
  uint64_t Elem = dtypeSize(T);
  GV.OffsetA = uint64_t(Geo->OffsetA) * Elem;
  GV.OffsetB = uint64_t(Geo->OffsetB) * Elem;
  GV.OffsetD = uint64_t(Geo->OffsetD) * Elem;
  addGemmEpilogue(C, GV, E);
  GemmVals.push_back(GV);
  ProtoStep S;
  S.K = PlanStep::Kind::Gemm;
  S.Index = P.Gemms.size();
  S.Label = N.describe() + formatv(" (matmul {0}x{1}x{2} batch {3}{4})", C.N,
                                   C.M, C.K, C.Batch,
                                   C.pointerArrays() ? ", pointer arrays" : "")
                               .str();
  S.Reads = {A, B};
  for (const Value *V : {GV.Bias, GV.C})
    if (V)
      S.Reads.push_back(V);
  S.Writes = {Y};
  P.Gemms.push_back(C);
  Steps.push_back(std::move(S));
  return Error::success();
}

Error Builder::addGemm(const Node &N, const LibraryEpilogue *E) {
  const Value *A = outer(N.operand(0)), *B = outer(N.operand(1));
  const Value *Cv = N.operand(2) ? outer(N.operand(2)) : nullptr;
  const Value *Y = outer(E ? E->LibraryResult : N.result(0));
  DType T = Y->dtype();
  if (!isFloat(T))
    return planError(N.describe() + ": Gemm of " + dtypeName(T) +
                     " is not supported on the GPU (float types only)");
  const AttrMap &At = N.attrs();
  float Alpha = At.getFloat("alpha", 1.0f), Beta = At.getFloat("beta", 1.0f);
  bool TA = At.getInt("transA", 0), TB = At.getInt("transB", 0);
  SmallVector<int64_t, 4> AD = dims(A), BD = dims(B), YD = dims(Y);
  if (AD.size() != 2 || BD.size() != 2 || YD.size() != 2)
    return planError(N.describe() + ": Gemm operands must be 2-D");
  int64_t M = TA ? AD[1] : AD[0], K = TA ? AD[0] : AD[1];
  int64_t N2 = TB ? BD[0] : BD[1];

  GemmConfig C;
  C.Elem = T;
  C.AllowTF32 = Opts.AllowTF32;
  C.M = N2;
  C.N = M;
  C.K = K;
  C.TransA = TB;
  C.Lda = TB ? K : N2;
  C.TransB = TA;
  C.Ldb = TA ? M : K;
  C.Ldd = N2;
  C.Alpha = Alpha;
  GemmValues GV{B, A, nullptr, nullptr, Y};
  if (gemmHasC(N)) {
    SmallVector<int64_t, 4> CD = dims(Cv);
    if (gemmCIsBiasVector(N)) {
      C.Beta = 0.0f;
      GV.Bias = Cv;
    } else {
      // Copy broadcast C into Y, then accumulate onto it with beta.
      int64_t CR = 1, CC = 1;
      if (CD.size() == 1)
        CC = CD[0];
      if (CD.size() == 2) {
        CR = CD[0];
        CC = CD[1];
      }
      int64_t SR = CR == 1 ? 0 : CC, SC = CC == 1 ? 0 : 1;
      addHelperKernel(broadcastCopyKernel(T, M, N2, SR, SC), Y, Cv, N,
                      /*ReadsOut=*/false);
      C.CFrom = GemmConfig::CSource::InPlace;
      C.Beta = Beta;
    }
  }
  addGemmEpilogue(C, GV, E);
  GemmVals.push_back(GV);
  ProtoStep S;
  S.K = PlanStep::Kind::Gemm;
  S.Index = P.Gemms.size();
  S.Label = N.describe() + formatv(" (gemm {0}x{1}x{2})", M, N2, K).str();
  S.Reads = {A, B};
  for (const Value *V : {GV.Bias, GV.C})
    if (V)
      S.Reads.push_back(V);
  if (C.CFrom == GemmConfig::CSource::InPlace)
    S.Reads.push_back(Y);
  S.Writes = {Y};
  P.Gemms.push_back(C);
  Steps.push_back(std::move(S));
  return Error::success();
}

/// Symmetric per-dim pads of a conv-like node, or an error.
Error symmetricPads(const Node &N, ArrayRef<int64_t> Begin,
                    ArrayRef<int64_t> End, std::vector<int> &Pads) {
  for (size_t I = 0; I < Begin.size(); ++I) {
    if (Begin[I] != End[I] || Begin[I] < 0) {
      std::string Text;
      raw_string_ostream OS(Text);
      OS << "[";
      for (size_t J = 0; J < Begin.size(); ++J)
        OS << (J ? "," : "") << Begin[J];
      for (size_t J = 0; J < End.size(); ++J)
        OS << "," << End[J];
      OS << "]";
      return planError(N.describe() + ": asymmetric pads " + OS.str() +
                       " are not supported by the cuDNN path");
    }
    Pads.push_back(int(Begin[I]));
  }
  return Error::success();
}

Error Builder::convGeometry(const Node &N, bool Transpose, const Value *X,
                            const Value *W, const Value *Y, ConvConfig &C) {
  const char *Op = Transpose ? "ConvTranspose" : "Conv";
  DType T = Y->dtype();
  if (T != DType::F32 && T != DType::F16 && T != DType::BF16 && T != DType::F64)
    return planError(N.describe() + ": " + Op + " of " + dtypeName(T) +
                     " is not supported on the GPU");
  SmallVector<int64_t, 4> XD = dims(X), WD = dims(W), YD = dims(Y);
  // cuDNN takes NCHW-ordered dims with NHWC strides and a KRSC filter.
  bool Nhwc = isNhwc(N);
  if (Nhwc) {
    if (XD.size() != 4 || WD.size() != 4 || YD.size() != 4)
      return planError(N.describe() + ": an NHWC convolution must be 2-D");
    XD = permuteDims<int64_t>(XD, ToNchwPerm);
    WD = permuteDims<int64_t>(WD, ToNchwPerm);
    YD = permuteDims<int64_t>(YD, ToNchwPerm);
  }
  if (XD.size() < 3 || XD.size() > 5 || WD.size() != XD.size())
    return planError(N.describe() + ": only 1-D, 2-D and 3-D " +
                     (Transpose ? "transposed convolutions" : "convolutions") +
                     " run on the GPU");
  unsigned R = XD.size() - 2;
  const AttrMap &At = N.attrs();
  std::vector<int64_t> Strides =
      At.getInts("strides", std::vector<int64_t>(R, 1));
  std::vector<int64_t> Dil =
      At.getInts("dilations", std::vector<int64_t>(R, 1));
  ConvPads Pads = effectiveConvPads(N, ArrayRef<int64_t>(XD).drop_front(2),
                                    ArrayRef<int64_t>(WD).drop_front(2),
                                    ArrayRef<int64_t>(YD).drop_front(2));
  C.Elem = T;
  C.Transpose = Transpose;
  C.Nhwc = Nhwc;
  C.AllowTF32 = Opts.AllowTF32;
  // For ConvTranspose, the extra output_padding rows belong to no window of
  // the equivalent forward convolution: cuDNN fills them from the (zero)
  // contributions as long as the forward shape rule still holds, which it
  // checks.
  if (Error E = symmetricPads(N, Pads.Begin, Pads.End, C.Pads))
    return E;
  C.Strides.assign(Strides.begin(), Strides.end());
  C.Dilations.assign(Dil.begin(), Dil.end());
  C.Groups = int(At.getInt("group", 1));
  C.XDims.assign(XD.begin(), XD.end());
  C.WDims.assign(WD.begin(), WD.end());
  C.YDims.assign(YD.begin(), YD.end());
  if (R == 1) { // cuDNN wants at least 2 spatial dims: add a unit height
    C.XDims.insert(C.XDims.begin() + 2, 1);
    C.WDims.insert(C.WDims.begin() + 2, 1);
    C.YDims.insert(C.YDims.begin() + 2, 1);
    C.Pads.insert(C.Pads.begin(), 0);
    C.Strides.insert(C.Strides.begin(), 1);
    C.Dilations.insert(C.Dilations.begin(), 1);
  }
  return Error::success();
}

void Builder::addConvStep(const Node &N, ConvConfig C, ConvValues CV) {
  ProtoStep S;
  S.K = PlanStep::Kind::Conv;
  S.Index = P.Convs.size();
  S.Label = N.describe() + (C.Transpose ? " (conv-transpose " : " (conv ") +
            (C.Nhwc ? "NHWC " : "") + typeToString(CV.X->type()) + " * " +
            typeToString(CV.W->type()) + ")";
  S.Reads = {CV.X, CV.W};
  for (const Value *V : {CV.Bias, CV.Z})
    if (V)
      S.Reads.push_back(V);
  for (const Value *V : CV.GraphReads)
    if (V)
      S.Reads.push_back(V);
  S.Writes = {CV.Y};
  ConvVals.push_back(std::move(CV));
  P.Convs.push_back(std::move(C));
  Steps.push_back(std::move(S));
}

Error Builder::addConv(const Node &N, bool Transpose,
                       const LibraryEpilogue *E) {
  const Value *X = outer(N.operand(0)), *W = outer(N.operand(1));
  const Value *Bv = N.operand(2) ? outer(N.operand(2)) : nullptr;
  const Value *Y = outer(E ? E->LibraryResult : N.result(0));
  // The matcher takes a bias Add only when the node has no bias of its own.
  if (E && E->Bias)
    Bv = outer(E->Bias);
  ConvConfig C;
  if (Error Err = convGeometry(N, Transpose, X, W, Y, C))
    return Err;
  ConvValues CV;
  CV.X = X;
  CV.W = W;
  CV.Y = Y;
  // Inside a contraction group, bias, z and ReLU go into one
  // cudnnConvolutionBiasActivationForward (which needs a bias: zeros when
  // the model has none). Alone, a Conv keeps the plain call and the bias
  // kernel, so --no-fusion runs every op by itself; except an NHWC one
  // (fp16/bf16 plans), which takes the same call with the identity
  // activation for its own bias: a separate bias kernel cost ResNet-50
  // fp16 b32 5% of its run.
  bool Fused = !Transpose && C.Elem != DType::F64 &&
               ((E && (Bv || E->Residual ||
                       E->Activation != EpilogueActivation::None)) ||
                (C.Nhwc && Bv));
  if (Fused) {
    C.Fused = true;
    CV.Bias = Bv;
    CV.ZeroBias = !Bv;
    Bv = nullptr;
    if (E && E->Residual) {
      C.HasZ = true;
      C.Alpha2 = 1.0f;
      CV.Z = outer(E->Residual);
    }
    if (E && E->Activation == EpilogueActivation::Relu)
      C.Act = ConvConfig::Activation::Relu;
  }
  // The bias kernel's geometry (NCHW-ordered dims; a unit height added to
  // a 1-D convolution changes no product).
  std::vector<int64_t> YD = C.YDims;
  DType T = C.Elem;
  bool Nhwc = C.Nhwc;
  addConvStep(N, std::move(C), std::move(CV));
  if (Bv) {
    int64_t Inner = 1;
    for (size_t I = 2; I < YD.size(); ++I)
      Inner *= YD[I];
    // NHWC: the channel is the innermost dim.
    PlanKernel K = Nhwc ? biasAddKernel(T, YD[0] * Inner, YD[1], 1)
                        : biasAddKernel(T, YD[0], YD[1], Inner);
    addHelperKernel(std::move(K), Y, Bv, N, /*ReadsOut=*/true);
  }
  return Error::success();
}

Error Builder::addLibraryNode(const Node &N, const LibraryEpilogue *E) {
  switch (N.kind()) {
  case OpKind::MatMul:
    return addMatMul(N, E);
  case OpKind::Gemm:
    return addGemm(N, E);
  case OpKind::Conv:
    return addConv(N, /*Transpose=*/false, E);
  case OpKind::ConvTranspose:
    return addConv(N, /*Transpose=*/true, E);
  default:
    return planError(N.describe() + ": not a library op");
  }
}

Error Builder::addContractionGroup(const Node &Group, std::string &RunsAs) {
  int64_t Id = groupInfo(Group).Id;
  auto Note = Opts.GemmNotes.find(Id);
  std::string Tuned =
      Note == Opts.GemmNotes.end() ? "" : " (" + Note->second + ")";
  // A convolution group tuning kept on cuDNN's fused call says why too.
  if (auto Conv = Opts.ConvGraphNotes.find(Id);
      Tuned.empty() && Conv != Opts.ConvGraphNotes.end())
    Tuned = " (" + Conv->second + ")";
  if (ConvGraphs.count(Id)) {
    if (Error E = addConvGraph(Group, RunsAs))
      return E;
    RunsAs += Tuned;
    return Error::success();
  }
  if (GemmGroups.count(Id)) {
    // Split: the GEMM writes normSplitValue (its product plus bias), a
    // row kernel reads it and computes the group's results.
    const Value *X =
        Opts.SplitNormGroups.count(Id) ? normSplitValue(Group) : nullptr;
    auto It = KernelOf.find(X ? X : Group.result(0));
    if (It == KernelOf.end())
      return planError(Group.describe() +
                       ": no generated GEMM kernel was emitted for the group");
    RunsAs = "generated tensor-core GEMM " + Gen[It->second].Name;
    if (!X) {
      RunsAs += Tuned;
      return scheduleKernel(It->second);
    }
    if (Error E = scheduleKernel(It->second))
      return E;
    LibraryWritten.insert(X);
    auto Row = KernelOf.find(Group.result(0));
    if (Row == KernelOf.end())
      return planError(Group.describe() +
                       ": no row kernel was emitted after the group's GEMM");
    RunsAs += " + generated kernel " + Gen[Row->second].Name + Tuned;
    return scheduleKernel(Row->second);
  }
  if (forcesGeneratedGemm(Opts.Gemm)) {
    std::string Why = generatedGemmUnsupported(Group, smVersionOf(Opts.Arch));
    if (!Why.empty())
      Tuned = " (no generated GEMM: " + Why + ")";
  }
  if (Error E = addLibraryGroup(Group, RunsAs))
    return E;
  RunsAs += Tuned;
  return Error::success();
}

Error Builder::addConvGraph(const Node &Group, std::string &RunsAs) {
  ConvGraphLowering L = lowerConvGraph(Group);
  if (!L.Anchor)
    return planError(Group.describe() + ": " + L.Why);
  // The convolution's geometry as the fused call has it; the graph is its
  // epilogue and writes the group's result.
  const Node &N = *L.Anchor;
  ConvValues CV;
  CV.X = outer(N.operand(0));
  CV.W = outer(N.operand(1));
  CV.Y = outer(Group.body()->outputs()[0]);
  ConvConfig C;
  if (Error E = convGeometry(N, /*Transpose=*/false, CV.X, CV.W,
                             outer(N.result(0)), C))
    return E;
  if (!C.Nhwc || C.XDims.size() != 4)
    return planError(Group.describe() +
                     ": a convolution graph must be a 2-D NHWC forward conv");
  C.Graph = true;
  C.GraphTensors = L.Tensors;
  C.GraphOps = L.Ops;
  auto Engine = Opts.ConvGraphEngines.find(groupInfo(Group).Id);
  C.GraphEngine = Engine == Opts.ConvGraphEngines.end() ? -1 : Engine->second;
  for (const Value *V : L.Reads)
    CV.GraphReads.push_back(V ? outer(V) : nullptr);
  addConvStep(N, std::move(C), std::move(CV));
  RunsAs = L.Description;
  return Error::success();
}

Error Builder::addLibraryGroup(const Node &Group, std::string &RunsAs) {
  LibraryEpilogue E = matchLibraryEpilogue(Group);
  if (!E.Anchor)
    return planError(Group.describe() +
                     ": a contraction group whose body does not start with "
                     "a Conv, ConvTranspose, MatMul or Gemm");
  if (Error Err = addLibraryNode(*E.Anchor, &E))
    return Err;
  RunsAs = E.Description;
  if (E.Rest.empty()) {
    const Value *Written = E.ResultLayout.empty()
                               ? E.LibraryResult
                               : E.ResultLayout.back()->result(0);
    if (Written->graph() != &G && !Subst.count(Written))
      return planError(Group.describe() + ": the library call computes '" +
                       Written->name() + "', which is not the group's result");
    return Error::success();
  }
  LibraryWritten.insert(E.LibraryResult);
  auto It = KernelOf.find(Group.result(0));
  if (It == KernelOf.end()) {
    std::string Rest;
    for (const Node *N : E.Rest)
      Rest += (Rest.empty() ? "" : ", ") + memberName(*N);
    return planError(Group.describe() + ": the library call (" + E.Description +
                     ") leaves " + Rest +
                     " for a generated kernel, but code generation emitted "
                     "none for the group");
  }
  RunsAs += " + generated kernel " + Gen[It->second].Name;
  return scheduleKernel(It->second);
}

Error Builder::scheduleKernel(unsigned KI) {
  if (Scheduled[KI])
    return Error::success();
  Scheduled[KI] = true;
  const GeneratedKernel &GK = Gen[KI];
  // Body values a kernel reads are group operands, constants, or what a
  // contraction group's library step wrote before it.
  for (const Value *In : GK.Inputs) {
    if (!In || In->graph() == &G || In->isConstant() || Subst.count(In) ||
        LibraryWritten.count(In))
      continue;
    return planError("kernel " + GK.Name + " reads '" + In->name() +
                     "', which no step produces");
  }
  PlanKernel K;
  K.Name = GK.Name;
  K.Source = GK.Source;
  K.Grid = GK.Grid;
  K.Block = GK.Block;
  K.DynamicSharedBytes = GK.DynamicSharedBytes;
  K.NodeNames = GK.NodeNames;
  K.Summary = GK.Summary;
  K.GroupId = GK.GroupId;
  K.DependentLaunch = GK.DependentLaunch;
  K.Cooperative = GK.Cooperative;
  K.Counts = GK.Counts;
  // The step's arguments are the kernel's outputs, then its inputs (then
  // its scratch).
  for (const KernelTensorMap &M : GK.TensorMaps) {
    PlanTensorMap T;
    static_cast<TensorMapShape &>(T) = M;
    T.Arg = uint32_t(GK.Outputs.size() + M.Input);
    K.TensorMaps.push_back(T);
  }
  ProtoStep S;
  S.K = PlanStep::Kind::Kernel;
  S.Index = P.Kernels.size();
  S.Label =
      "kernel " + GK.Name + (GK.Summary.empty() ? "" : " (" + GK.Summary + ")");
  for (const Value *V : GK.Outputs) {
    S.Args.push_back(outer(V));
    S.Writes.push_back(outer(V));
  }
  for (const Value *V : GK.Inputs) {
    S.Args.push_back(outer(V));
    S.Reads.push_back(outer(V));
  }
  S.ScratchBytes = GK.ScratchBytes;
  // Generated kernels take every pointer as __restrict__: a buffer written
  // must be no other argument's. Distinct roots are distinct memory (their
  // lifetimes overlap at this step, so the planner separates them).
  for (const Value *W : S.Writes)
    for (const Value *A : S.Args)
      if (A != W && root(A) == root(W))
        return planError("kernel " + GK.Name + " would write '" + W->name() +
                         "' over its argument '" + A->name() + "'");
  KernelByName[K.Name] = P.Kernels.size();
  P.Kernels.push_back(std::move(K));
  Steps.push_back(std::move(S));
  return Error::success();
}

void Builder::recordGroup(const Node &N, size_t FirstStep, std::string RunsAs) {
  if (Steps.size() == FirstStep)
    return;
  ProtoGroup PG;
  if (isFusedGroup(N)) {
    GroupInfo Info = groupInfo(N);
    PG.G.Id = Info.Id;
    PG.G.Kind = groupKindName(Info.Kind).str();
    PG.G.Members = Info.Members;
  } else if (N.kind() == OpKind::Attention) {
    // attention-recognition's op: a group of the ONNX nodes it replaced.
    AttentionGroup AG = attentionGroup(N);
    PG.G.Id = AG.Id;
    PG.G.Kind = "attention";
    PG.G.Members = std::move(AG.Members);
  } else {
    PG.G.Kind = "single";
    PG.G.Members = {memberName(N)};
  }
  for (size_t I = FirstStep; I < Steps.size(); ++I) {
    Steps[I].GroupId = PG.G.Id;
    PG.G.Steps.push_back(uint32_t(I));
    if (RunsAs.empty())
      RunsAs = Steps[I].Label;
  }
  PG.G.RunsAs = std::move(RunsAs);
  for (const Value *V : N.operands()) {
    if (!V)
      continue;
    // An attention kernel reading through a Slice or Split reads its input
    // (the part has no buffer).
    if (const Node *P = V->producer(); P && isReadThroughByAttention(*P))
      V = P->operand(0);
    // A deferred LayerNorm's statistics this group's GEMM computes are its
    // results (what it writes), not operands.
    if (const Node *P = V->producer();
        P && statsNormOf(*P) && isFusedGroup(N)) {
      auto It = KernelOf.find(V);
      if (It != KernelOf.end() && Gen[It->second].GroupId == PG.G.Id) {
        PG.Results.push_back(V);
        continue;
      }
    }
    PG.Operands.push_back(V);
  }
  for (const Value *V : N.results())
    if (V)
      PG.Results.push_back(V);
  Groups.push_back(std::move(PG));
}

Error Builder::addCudnnAttention(const Node &N, bool &Added, std::string &Why) {
  int64_t Id = attentionGroup(N).Id;
  bool Want = Opts.Attention == AttentionKernels::Cudnn;
  auto Choice = Opts.AttentionChoices.find(Id);
  if (Opts.Attention == AttentionKernels::Auto &&
      Choice != Opts.AttentionChoices.end())
    Want = Choice->second;
  if (!Want)
    return Error::success();
  Expected<AttentionSpec> SOr = resolveAttention(N);
  if (!SOr)
    return SOr.takeError();
  const AttentionSpec &S = *SOr;
  AttentionConfig C;
  C.Elem = N.operand(0)->dtype();
  C.Batch = S.Batch;
  C.QHeads = S.QHeads;
  C.KvHeads = S.KvHeads;
  C.QLen = S.QLen;
  C.KvLen = S.KvLen;
  C.HeadDim = S.HeadDim;
  C.VHeadDim = S.VHeadDim;
  C.Scale = float(S.Scale);
  C.Causal = S.Causal;
  if (S.Mask == AttentionSpec::MaskKind::Bool) {
    Why = "a boolean mask";
    return Error::success();
  }
  AttentionValues AV;
  if (S.Mask == AttentionSpec::MaskKind::Additive) {
    C.BiasElem = N.operand(3)->dtype();
    if (C.BiasElem != C.Elem && C.BiasElem != DType::F32) {
      Why = "a mask of type " + dtypeName(C.BiasElem).str();
      return Error::success();
    }
    C.HasBias = true;
    int64_t Full[4] = {S.Batch, S.QHeads, S.QLen, S.KvLen};
    for (int I = 0; I < 4; ++I)
      C.BiasDims[I] = S.MaskStrides[I] ? Full[I] : 1;
    // A broadcast dim gets the stride a packed tensor of these dims has.
    int64_t Packed = 1;
    for (int I = 3; I >= 0; --I) {
      C.BiasStrides[I] = S.MaskStrides[I] ? S.MaskStrides[I] : Packed;
      Packed *= C.BiasDims[I];
    }
    AV.Bias = N.operand(3);
  }
  std::array<AttentionOperandLayout, 3> L = attentionOperandLayouts(N, S);
  C.QStrides = L[0].Strides;
  C.KStrides = L[1].Strides;
  C.VStrides = L[2].Strides;
  C.OStrides = S.outStrides();
  uint64_t Elem = dtypeSize(C.Elem);
  AV.Q = L[0].Src;
  AV.K = L[1].Src;
  AV.V = L[2].Src;
  AV.O = N.result(0);
  AV.OffsetQ = uint64_t(L[0].Offset) * Elem;
  AV.OffsetK = uint64_t(L[1].Offset) * Elem;
  AV.OffsetV = uint64_t(L[2].Offset) * Elem;
  // The checks see the part offsets (buffers start 256-byte aligned, so
  // they decide cuDNN's alignment); placement adds them to the buffers'
  // own offsets later.
  C.Q.Offset = AV.OffsetQ;
  C.K.Offset = AV.OffsetK;
  C.V.Offset = AV.OffsetV;
  Why = cudnnAttentionUnsupported(C);
  if (!Why.empty())
    return Error::success();
  C.Q.Offset = C.K.Offset = C.V.Offset = 0;
  ProtoStep St;
  St.K = PlanStep::Kind::Attention;
  St.Index = P.Attentions.size();
  St.Label = N.describe() +
             formatv(" (cuDNN attention B={0} H={1} Sq={2} Sk={3} D={4})",
                     S.Batch, S.QHeads, S.QLen, S.KvLen, S.HeadDim)
                 .str();
  St.Reads = {AV.Q, AV.K, AV.V};
  if (AV.Bias)
    St.Reads.push_back(AV.Bias);
  St.Writes = {AV.O};
  P.Attentions.push_back(C);
  AttnVals.push_back(AV);
  Steps.push_back(std::move(St));
  Added = true;
  return Error::success();
}

Error Builder::scheduleNode(const Node &N) {
  const OpInfo &Info = getOpInfo(N.kind());
  if (Info.IsView && !N.body()) {
    Alias[N.result(0)] = outer(N.operand(0));
    return Error::success();
  }
  // The attention kernels read the packed tensor through this Slice/Split.
  if (isReadThroughByAttention(N))
    return Error::success();
  size_t First = Steps.size();
  if (isLibraryOp(N.kind()) && !N.body()) {
    if (Error E = addLibraryNode(N, nullptr))
      return E;
    recordGroup(N, First, "");
    return Error::success();
  }
  if (Graph *Body = N.body()) {
    // Body inputs and outputs stand for the fused node's operands and
    // results, in order.
    ArrayRef<Value *> BodyIns = Body->inputs();
    for (unsigned I = 0; I < BodyIns.size(); ++I)
      if (I < N.numOperands() && N.operand(I))
        Subst[BodyIns[I]] = N.operand(I);
    ArrayRef<Value *> BodyOuts = Body->outputs();
    for (unsigned J = 0; J < BodyOuts.size(); ++J)
      if (J < N.numResults() && N.result(J))
        Subst[BodyOuts[J]] = N.result(J);
  }
  if (isFusedGroup(N) && groupInfo(N).Kind == GroupKind::Contraction) {
    std::string RunsAs;
    if (Error E = addContractionGroup(N, RunsAs))
      return E;
    recordGroup(N, First, std::move(RunsAs));
    return Error::success();
  }
  std::string RunsAs, NotCudnn;
  if (N.kind() == OpKind::Attention) {
    bool Added = false;
    if (Error E = addCudnnAttention(N, Added, NotCudnn))
      return E;
    if (Added) {
      std::string How = "cuDNN fused attention (SDPA)";
      auto Note = Opts.AttentionNotes.find(attentionGroup(N).Id);
      if (Note != Opts.AttentionNotes.end())
        How += " (" + Note->second + ")";
      recordGroup(N, First, How);
      return Error::success();
    }
  }
  bool Covered = false;
  for (const Value *R : N.results()) {
    if (!R)
      continue;
    auto It = KernelOf.find(R);
    if (It == KernelOf.end())
      continue;
    Covered = true;
    // A deferred LayerNorm's statistics, computed by the generated GEMM
    // that reads them first (emitGraphKernels): that group schedules it.
    const GeneratedKernel &K = Gen[It->second];
    if (statsNormOf(N) && K.GroupId >= 0 &&
        (!isFusedGroup(N) || K.GroupId != groupInfo(N).Id)) {
      RunsAs = "in group " + std::to_string(K.GroupId) + "'s generated GEMM " +
               K.Name;
      continue;
    }
    if (!Scheduled[It->second])
      RunsAs +=
          (RunsAs.empty() ? "generated kernel " : ", ") + Gen[It->second].Name;
    if (Error E = scheduleKernel(It->second))
      return E;
  }
  // A node whose results are all empty has nothing to write: codegen
  // leaves it out (e.g. a Split into zero-size parts).
  bool AllEmpty = llvm::all_of(N.results(), [](const Value *R) {
    return !R || (R->type().isStatic() && R->type().numElements() == 0);
  });
  if (!Covered && !AllEmpty)
    return planError(N.describe() +
                     ": no generated kernel implements it on the GPU");
  if (!NotCudnn.empty())
    RunsAs += " (not cuDNN: " + NotCudnn + ")";
  else if (auto Note = Opts.AttentionNotes.find(attentionGroup(N).Id);
           N.kind() == OpKind::Attention && Note != Opts.AttentionNotes.end())
    RunsAs += " (" + Note->second + ")";
  recordGroup(N, First, std::move(RunsAs));
  return Error::success();
}

std::optional<BufferRef> Builder::placedRef(const Value *V) {
  auto It = Loc.find(root(V));
  if (It == Loc.end())
    return std::nullopt;
  return It->second;
}

BufferRef Builder::ref(const Value *V) {
  const Value *R = root(V);
  auto It = Loc.find(R);
  assert(It != Loc.end() && "every root is placed before refs are taken");
  return It->second;
}

Error Builder::placeBuffers() {
  // Weights: each constant read by a step, once, 256-byte aligned.
  auto PlaceConstant = [&](const Value *R) {
    if (Loc.count(R))
      return;
    const Tensor &T = *R->constant();
    uint64_t Off = P.Weights.append(T.bytes(), T.keepAlive());
    Loc[R] = {BufferSpace::Weights, 0, Off};
  };
  for (unsigned I = 0; I < G.inputs().size(); ++I)
    Loc[G.inputs()[I]] = {BufferSpace::Input, uint32_t(I), 0};

  // Outputs written in place where possible, copied otherwise.
  for (unsigned J = 0; J < G.outputs().size(); ++J) {
    const Value *O = G.outputs()[J];
    const Value *R = root(O);
    bool InPlace = !R->isConstant() && !R->isGraphInput() && !Loc.count(R);
    if (InPlace) {
      Loc[R] = {BufferSpace::Output, uint32_t(J), 0};
      continue;
    }
    ProtoStep S;
    S.K = PlanStep::Kind::Copy;
    S.Index = P.Copies.size();
    S.Label = "copy to output '" + O->name() + "'";
    S.Reads = {O};
    S.OutputIndex = int(J);
    CopyConfig C;
    C.Bytes = O->type().numElements() * dtypeSize(O->dtype());
    P.Copies.push_back(C);
    CopySrc.push_back(O);
    Steps.push_back(std::move(S));
  }

  // Lifetimes of the arena roots.
  DenseMap<const Value *, unsigned> BufferOf;
  std::vector<const Value *> Roots;
  std::vector<BufferLifetime> Life;
  for (unsigned SI = 0; SI < Steps.size(); ++SI) {
    const ProtoStep &S = Steps[SI];
    auto Touch = [&](const Value *V, bool Write) -> Error {
      const Value *R = root(V);
      if (R->isConstant()) {
        PlaceConstant(R);
        return Error::success();
      }
      if (Loc.count(R))
        return Error::success();
      auto [It, New] = BufferOf.try_emplace(R, Roots.size());
      if (New) {
        if (!Write)
          return planError("step '" + S.Label + "' reads '" + R->name() +
                           "' before any step writes it");
        Roots.push_back(R);
        BufferLifetime L;
        L.Bytes = R->type().numElements() * dtypeSize(R->dtype());
        L.FirstStep = L.LastStep = unsigned(SI);
        Life.push_back(L);
      }
      Life[It->second].LastStep = unsigned(SI);
      return Error::success();
    };
    for (const Value *V : S.Writes)
      if (Error E = Touch(V, true))
        return E;
    for (const Value *V : S.Reads)
      if (Error E = Touch(V, false))
        return E;
  }
  MemoryPlan MP = planMemory(Life);
  P.ArenaBytes = MP.ArenaBytes;
  P.NaiveArenaBytes = MP.NaiveBytes;
  for (size_t I = 0; I < Roots.size(); ++I) {
    Loc[Roots[I]] = {BufferSpace::Arena, 0, MP.Offsets[I]};
    P.Buffers.push_back({Roots[I]->name(), MP.Offsets[I], Life[I].Bytes,
                         Life[I].FirstStep, Life[I].LastStep});
  }

  // Resolve every step's values to buffers.
  for (ProtoStep &S : Steps) {
    PlanStep PS;
    PS.K = S.K;
    PS.Index = S.Index;
    PS.Label = S.Label;
    PS.GroupId = S.GroupId;
    switch (S.K) {
    case PlanStep::Kind::Kernel:
      for (const Value *V : S.Args)
        PS.Args.push_back(ref(V));
      if (S.ScratchBytes) {
        PS.Args.push_back({BufferSpace::Scratch, 0, P.ScratchBytes});
        P.ScratchBytes += (uint64_t(S.ScratchBytes) + 255) / 256 * 256;
      }
      break;
    case PlanStep::Kind::Gemm: {
      GemmConfig &C = P.Gemms[S.Index];
      const GemmValues &GV = GemmVals[S.Index];
      C.A = ref(GV.A);
      C.B = ref(GV.B);
      C.D = ref(GV.D);
      C.A.Offset += GV.OffsetA;
      C.B.Offset += GV.OffsetB;
      C.D.Offset += GV.OffsetD;
      if (GV.Bias)
        C.BiasVec = ref(GV.Bias);
      if (GV.C)
        C.C = ref(GV.C);
      break;
    }
    case PlanStep::Kind::Conv: {
      ConvConfig &C = P.Convs[S.Index];
      const ConvValues &CV = ConvVals[S.Index];
      C.X = ref(CV.X);
      C.W = ref(CV.W);
      C.Y = ref(CV.Y);
      if (CV.Bias)
        C.Bias = ref(CV.Bias);
      if (CV.ZeroBias) {
        uint64_t Bytes = uint64_t(C.YDims[1]) * dtypeSize(C.Elem);
        C.Bias = {BufferSpace::Weights, 0,
                  P.Weights.appendCopy(std::string(Bytes, '\0'))};
      }
      if (CV.Z)
        C.Z = ref(CV.Z);
      C.GraphReads.assign(CV.GraphReads.size(), BufferRef());
      for (size_t I = 0; I < CV.GraphReads.size(); ++I)
        if (CV.GraphReads[I])
          C.GraphReads[I] = ref(CV.GraphReads[I]);
      break;
    }
    case PlanStep::Kind::Attention: {
      AttentionConfig &C = P.Attentions[S.Index];
      const AttentionValues &AV = AttnVals[S.Index];
      C.Q = ref(AV.Q);
      C.K = ref(AV.K);
      C.V = ref(AV.V);
      C.O = ref(AV.O);
      C.Q.Offset += AV.OffsetQ;
      C.K.Offset += AV.OffsetK;
      C.V.Offset += AV.OffsetV;
      if (AV.Bias)
        C.Bias = ref(AV.Bias);
      break;
    }
    case PlanStep::Kind::Copy: {
      CopyConfig &C = P.Copies[S.Index];
      C.Src = ref(CopySrc[S.Index]);
      C.Dst = {BufferSpace::Output, uint32_t(S.OutputIndex), 0};
      break;
    }
    }
    P.Steps.push_back(std::move(PS));
  }

  // Where each group's operands and results live. Constants baked into
  // kernels are placed too, so every one can be read back; a value with
  // no buffer at all (an empty tensor) is left out.
  for (ProtoGroup &PG : Groups) {
    auto Values = [&](ArrayRef<const Value *> Vs, std::vector<PlanValue> &Out) {
      for (const Value *V : Vs) {
        if (root(V)->isConstant())
          PlaceConstant(root(V));
        std::optional<BufferRef> R = placedRef(V);
        if (!R)
          continue;
        SmallVector<int64_t, 4> D = dims(V);
        Out.push_back({V->name(), V->dtype(), {D.begin(), D.end()}, *R});
      }
    };
    Values(PG.Operands, PG.G.Operands);
    Values(PG.Results, PG.G.Results);
    P.Groups.push_back(std::move(PG.G));
  }
  return Error::success();
}

Expected<Plan> Builder::build() {
  if (Error E = checkStatic())
    return std::move(E);
  P.ModelName = G.name();
  for (const Value *V : G.inputs()) {
    SmallVector<int64_t, 4> D = dims(V);
    P.Inputs.push_back({V->name(), V->dtype(), {D.begin(), D.end()}});
  }
  for (const Value *V : G.outputs()) {
    if (!V->type().isStatic())
      return planError("output '" + V->name() + "' has no static shape");
    SmallVector<int64_t, 4> D = dims(V);
    P.Outputs.push_back({V->name(), V->dtype(), {D.begin(), D.end()}});
  }
  PrintOptions PO;
  PO.ElideLargeConstants = true;
  P.IrText = graphToString(G, PO);

  GemmGroups = generatedGemmGroups(G, Opts);
  ConvGraphs = convGraphGroups(G, Opts);
  CodegenOptions CO;
  CO.ConvGraphGroups = ConvGraphs;
  CO.SmVersion = smVersionOf(Opts.Arch);
  CO.PerturbGroupId = Opts.PerturbGroupId;
  CO.GeneratedGemmGroups = GemmGroups;
  CO.PreferWgmma = Opts.Gemm == GemmKernels::Wgmma;
  CO.DependentLaunch = Opts.DependentLaunch;
  CO.SplitNormGroups = Opts.SplitNormGroups;
  CO.ShapeParams = Opts.ShapeParams;
  Expected<std::vector<GeneratedKernel>> K = emitGraphKernels(G, CO);
  if (!K)
    return K.takeError();
  Gen = std::move(*K);
  Scheduled.assign(Gen.size(), false);
  for (unsigned I = 0; I < Gen.size(); ++I)
    for (const Value *V : Gen[I].Outputs)
      KernelOf[V] = unsigned(I);

  for (const auto &N : G.nodes())
    if (Error E = scheduleNode(*N))
      return std::move(E);
  if (Error E = placeBuffers())
    return std::move(E);
  P.Arch = Opts.Arch;
  P.Prec = Opts.Prec;
  return std::move(P);
}

} // namespace

std::set<int64_t> generatedGemmGroups(const Graph &G, const PlanOptions &Opts) {
  std::set<int64_t> Out;
  if (Opts.Gemm == GemmKernels::Library)
    return Out;
  unsigned Sm = smVersionOf(Opts.Arch);
  for (const auto &N : G.nodes()) {
    if (!isFusedGroup(*N) || groupInfo(*N).Kind != GroupKind::Contraction)
      continue;
    int64_t Id = groupInfo(*N).Id;
    bool Want = forcesGeneratedGemm(Opts.Gemm);
    auto Choice = Opts.GemmChoices.find(Id);
    if (Opts.Gemm == GemmKernels::Auto && Choice != Opts.GemmChoices.end())
      Want = Choice->second;
    if (Want && generatedGemmUnsupported(*N, Sm).empty())
      Out.insert(Id);
  }
  return Out;
}

std::set<int64_t> convGraphGroups(const Graph &G, const PlanOptions &Opts) {
  std::set<int64_t> Out;
  if (Opts.Conv == ConvEpilogues::Fused)
    return Out;
  for (const auto &N : G.nodes()) {
    if (!isFusedGroup(*N) || groupInfo(*N).Kind != GroupKind::Contraction)
      continue;
    int64_t Id = groupInfo(*N).Id;
    bool Want = Opts.Conv == ConvEpilogues::Graph;
    auto Choice = Opts.ConvGraphChoices.find(Id);
    if (Opts.Conv == ConvEpilogues::Auto &&
        Choice != Opts.ConvGraphChoices.end())
      Want = Choice->second;
    if (Want && lowerConvGraph(*N).Anchor)
      Out.insert(Id);
  }
  return Out;
}

Expected<Plan> buildPlan(const Graph &G, const PlanOptions &Opts) {
  if (Opts.Arch.empty())
    return planError("no target architecture given (e.g. sm_90)");
  Builder B(G, Opts);
  return B.build();
}

} // namespace solder

namespace solder {

Error compilePlanKernels(Plan &P, const PlanOptions &Opts) {
  if (Opts.Arch.empty())
    return planError("no target architecture given (e.g. sm_90)");
  if (P.Arch != Opts.Arch) {
    for (PlanKernel &K : P.Kernels)
      K.Cubin.clear();
    P.Arch = Opts.Arch;
  }
  return compileCubins(P.Kernels, P.Arch, Opts.CacheDir, Opts.Progress);
}

} // namespace solder
