//===- CompiledModel.cpp - Compiling a model and loading it onto the GPU --===//
//
// Loading a model onto the device (once, shared by its contexts):
//   - recompile kernels whose cubins are for another architecture;
//   - upload the weights blob into one device buffer;
//   - load each cubin as a cudaLibrary and look its kernel up;
//   - choose cuBLASLt algorithms (heuristics) and cuDNN algorithms
//     (measured, cached per configuration), and the workspace they need.
//
//===----------------------------------------------------------------------===//
#include "codegen/NvrtcCompiler.h"
#include "frontend/OnnxImporter.h"
#include "passes/Pipeline.h"
#include "runtime/cuda/CudaLibraries.h"
#include "runtime/cuda/CudaSupport.h"
#include "runtime/cuda/DynamicPlanFile.h"
#include "runtime/cuda/GemmTuning.h"
#include "runtime/cuda/LibraryCalls.h"
#include "runtime/cuda/MemoryPlanner.h"
#include "runtime/cuda/PlanBuilder.h"
#include "runtime/cuda/PlanFile.h"
#include "runtime/cuda/RuntimeImpl.h"
#include "runtime/cuda/ShapeVariants.h"
#include "runtime/reference/ReferenceExecutor.h"
#include "solder/Solder.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <nvtx3/nvToolsExt.h>
#include <set>
#include <thread>

using namespace llvm;

namespace solder {

std::mutex &lazyLoadMutex() {
  static std::mutex M;
  return M;
}

std::mutex &RuntimeAccess::captureMutex() { return lazyLoadMutex(); }

namespace {
/// Tells the caller's PhaseCallback that a phase runs, for its scope.
class PhaseScope {
public:
  PhaseScope(const PhaseCallback &CB, StringRef Name) : CB(CB), Name(Name) {
    if (CB)
      CB(Name, false);
  }
  ~PhaseScope() {
    if (CB)
      CB(Name, true);
  }

private:
  const PhaseCallback &CB;
  StringRef Name;
};
} // namespace

size_t TensorInfo::bytes() const {
  size_t N = dtypeSize(Elem);
  for (int64_t D : Dims)
    N *= size_t(D);
  return N;
}

//===----------------------------------------------------------------------===//
// CompiledModel
//===----------------------------------------------------------------------===//

CompiledModel::CompiledModel(std::unique_ptr<Impl> I) : I(std::move(I)) {}
CompiledModel::~CompiledModel() = default;

Expected<std::shared_ptr<CompiledModel>> CompiledModel::fromPlan(Plan P) {
  auto I = std::make_unique<Impl>();
  for (const PlanTensor &T : P.Inputs)
    I->Inputs.push_back({T.Name, T.Elem, T.Dims, {}});
  for (const PlanTensor &T : P.Outputs)
    I->Outputs.push_back({T.Name, T.Elem, T.Dims, {}});
  I->P = std::move(P);
  return std::shared_ptr<CompiledModel>(new CompiledModel(std::move(I)));
}

static PipelineOptions pipelineOptions(const CompileOptions &Opts,
                                       const VariantOptions *Variant) {
  PipelineOptions PO;
  PO.ReducedWeights = Variant ? Variant->Weights : nullptr;
  PO.DisabledPasses = Opts.DisabledPasses;
  PO.TargetGpu = Opts.Backend == ExecutionBackend::Cuda;
  PO.NoFusion = Opts.NoFusion;
  PO.FuseAttention = Opts.FuseAttention;
  PO.DeferNorms = Opts.DeferNorms;
  PO.AutoAttention = Opts.AutoAttention;
  PO.Attention = Opts.Attention;
  PO.Conv = Opts.Conv;
  PO.DisabledFusions = Opts.DisabledFusions;
  PO.Prec = Opts.Prec;
  PO.KeepModelIo = !Opts.ComputeIo;
  PO.Layout = Opts.Layout;
  PO.MaxFoldedConstantBytes = Opts.MaxConstantBytes;
  PO.MaxTensorBytes = Opts.MaxTensorBytes;
  return PO;
}

/// A graph input/output as the API describes it; its shape must be static.
static Expected<TensorInfo> tensorInfo(const Value &V, StringRef Role) {
  if (!V.type().isStatic())
    return rtError(Role + " '" + V.name() + "' has no static shape (" +
                   typeToString(V.type()) +
                   "): give its symbolic dims sizes (InputShapes or "
                   "SymbolSizes)");
  SmallVector<int64_t, 4> Dims = V.type().staticDims();
  return TensorInfo{V.name(), V.type().Elem, {Dims.begin(), Dims.end()}, {}};
}

static Error noRangesForGraphs(const CompileOptions &Opts) {
  if (Opts.InputRanges.empty())
    return Error::success();
  return rtError("input ranges (dynamic shapes) need the ONNX model: compile "
                 "it with compileFile or compileBytes, not from a graph");
}

Expected<std::shared_ptr<CompiledModel>>
CompiledModel::compileGraph(std::unique_ptr<Graph> G,
                            const CompileOptions &Opts) {
  if (Error E = noRangesForGraphs(Opts))
    return std::move(E);
  return RuntimeAccess::compileWith(std::move(G), Opts, nullptr);
}

Expected<std::shared_ptr<CompiledModel>>
RuntimeAccess::compileWith(std::unique_ptr<Graph> G, const CompileOptions &Opts,
                           const VariantOptions *Variant) {
  if (Opts.Backend == ExecutionBackend::Cuda)
    return compileWith(*G, Opts, Variant);
  {
    PhaseScope Phase(Opts.OnPhase, "passes");
    if (Error E = runPipeline(*G, pipelineOptions(Opts, Variant)))
      return std::move(E);
  }
  auto I = std::make_unique<CompiledModel::Impl>();
  for (auto [Values, Role, Infos] :
       {std::make_tuple(G->inputs(), "input", &I->Inputs),
        std::make_tuple(G->outputs(), "output", &I->Outputs)})
    for (const Value *V : Values) {
      Expected<TensorInfo> T = tensorInfo(*V, Role);
      if (!T)
        return T.takeError();
      Infos->push_back(std::move(*T));
    }
  I->Backend = ExecutionBackend::Reference;
  I->RefGraph = std::move(G);
  return std::shared_ptr<CompiledModel>(new CompiledModel(std::move(I)));
}

Expected<std::shared_ptr<CompiledModel>>
CompiledModel::compileGraph(Graph &G, const CompileOptions &Opts) {
  if (Opts.Backend != ExecutionBackend::Cuda)
    return rtError("compileGraph(Graph &) compiles for the cuda backend only; "
                   "the reference backend keeps the graph: pass it as a "
                   "std::unique_ptr");
  if (Error E = noRangesForGraphs(Opts))
    return std::move(E);
  return RuntimeAccess::compileWith(G, Opts, nullptr);
}

Expected<std::shared_ptr<CompiledModel>>
RuntimeAccess::compileWith(Graph &G, const CompileOptions &Opts,
                           const VariantOptions *Variant) {
  PipelineOptions PO = pipelineOptions(Opts, Variant);
  std::vector<DecisionRecord> Decisions;
  PO.Decisions = &Decisions;
  std::vector<std::pair<std::string, double>> PassSeconds;
  if (Opts.OnPassTime)
    PO.PassSeconds = &PassSeconds;
  {
    PhaseScope Phase(Opts.OnPhase, "passes");
    if (Error E = runPipeline(G, PO))
      return std::move(E);
  }
  for (const auto &[Pass, Seconds] : PassSeconds)
    Opts.OnPassTime(Pass, Seconds);
  PlanOptions PlanOpts;
  PlanOpts.Arch = Opts.Arch;
  if (PlanOpts.Arch.empty()) {
    NvrtcOptions Cache;
    Cache.CacheDir = Opts.CacheDir;
    PlanOpts.Arch = defaultCompileArch(resolveCacheDir(Cache));
  }
  PlanOpts.CacheDir = Opts.CacheDir;
  PlanOpts.AllowTF32 = Opts.AllowTF32 || Opts.Prec == Precision::TF32;
  PlanOpts.Prec = Opts.Prec;
  PlanOpts.Progress = Opts.Progress;
  PlanOpts.PerturbGroupId = Opts.PerturbGroupId;
  PlanOpts.ShapeParams = Variant && Variant->ShapeParams;
  PlanOpts.Gemm = Opts.Gemm;
  PlanOpts.Attention = Opts.Attention;
  PlanOpts.Conv = Opts.Conv;
  PlanOpts.DependentLaunch = Opts.DependentLaunch;
  if (Opts.Tune && Opts.Gemm == GemmKernels::Auto &&
      (Opts.Prec == Precision::F16 || Opts.Prec == Precision::BF16)) {
    PhaseScope Phase(Opts.OnPhase, "tuning");
    if (Error E = tuneGemmGroups(G, PlanOpts))
      return std::move(E);
  }
  if (Opts.Tune && Opts.Attention == AttentionKernels::Auto &&
      (Opts.Prec == Precision::F16 || Opts.Prec == Precision::BF16)) {
    PhaseScope Phase(Opts.OnPhase, "tuning");
    if (Error E = tuneAttentionGroups(G, PlanOpts))
      return std::move(E);
  }
  if (Opts.Tune && Opts.Conv == ConvEpilogues::Auto &&
      (Opts.Prec == Precision::F16 || Opts.Prec == Precision::BF16)) {
    PhaseScope Phase(Opts.OnPhase, "tuning");
    if (Error E = tuneConvGroups(G, PlanOpts))
      return std::move(E);
  }
  Expected<Plan> P = [&] {
    PhaseScope Phase(Opts.OnPhase, "plan");
    return buildPlan(G, PlanOpts);
  }();
  if (!P)
    return P.takeError();
  P->Decisions = std::move(Decisions);
  {
    PhaseScope Phase(Opts.OnPhase, "kernels");
    if (Error E = compilePlanKernels(*P, PlanOpts))
      return std::move(E);
  }
  Expected<std::shared_ptr<CompiledModel>> M =
      CompiledModel::fromPlan(std::move(*P));
  if (M) {
    (*M)->I->DeviceLimit = Opts.MaxDeviceMemory;
    (*M)->I->CacheDir = Opts.CacheDir;
    (*M)->I->Progress = Opts.Progress;
    (*M)->I->OnPhase = Opts.OnPhase;
  }
  return M;
}

static ImportOptions importOptions(const CompileOptions &Opts) {
  ImportOptions IO;
  for (const auto &E : Opts.InputShapes)
    IO.InputShapes[E.getKey()] = E.getValue();
  for (const auto &E : Opts.SymbolSizes)
    IO.SymbolSizes[E.getKey()] = E.getValue();
  return IO;
}

Expected<std::shared_ptr<CompiledModel>>
CompiledModel::compileFile(StringRef OnnxPath, const CompileOptions &Opts) {
  if (!Opts.InputRanges.empty()) {
    Expected<std::unique_ptr<ShapeVariants>> SV =
        ShapeVariants::create(OnnxPath.str(), "", Opts);
    if (!SV)
      return SV.takeError();
    return RuntimeAccess::wrapDynamic(std::move(*SV));
  }
  Expected<std::unique_ptr<Graph>> G =
      importOnnxFile(OnnxPath, importOptions(Opts));
  if (!G)
    return G.takeError();
  return compileGraph(std::move(*G), Opts);
}

Expected<std::shared_ptr<CompiledModel>>
RuntimeAccess::compileShared(StringRef Bytes, std::shared_ptr<const void> Owner,
                             StringRef Path, const CompileOptions &Opts,
                             const VariantOptions &Variant) {
  Expected<std::unique_ptr<Graph>> G =
      importOnnxShared(Bytes, std::move(Owner), Path, importOptions(Opts));
  if (!G)
    return G.takeError();
  return compileWith(std::move(*G), Opts, &Variant);
}

Expected<std::shared_ptr<CompiledModel>>
CompiledModel::compileBytes(StringRef OnnxBytes, const CompileOptions &Opts) {
  if (!Opts.InputRanges.empty()) {
    Expected<std::unique_ptr<ShapeVariants>> SV =
        ShapeVariants::create("", OnnxBytes.str(), Opts);
    if (!SV)
      return SV.takeError();
    return RuntimeAccess::wrapDynamic(std::move(*SV));
  }
  Expected<std::unique_ptr<Graph>> G =
      importOnnxBytes(OnnxBytes, "", importOptions(Opts));
  if (!G)
    return G.takeError();
  return compileGraph(std::move(*G), Opts);
}

Expected<std::shared_ptr<CompiledModel>>
CompiledModel::loadPlan(StringRef Path) {
  if (looksLikeDynamicPlanFile(Path)) {
    // Compiles the max-shape variant from the model inside, as compiling
    // did (NVRTC's disk cache makes the kernels quick).
    Expected<DynamicPlan> D = readDynamicPlanFile(Path);
    if (!D)
      return D.takeError();
    return compileBytes(D->OnnxBytes, D->Opts);
  }
  Expected<Plan> P = readPlanFile(Path);
  if (!P)
    return P.takeError();
  return fromPlan(std::move(*P));
}

Error CompiledModel::savePlan(StringRef Path) const {
  if (I->Backend != ExecutionBackend::Cuda)
    return rtError("a model compiled for the reference backend has no plan to "
                   "save (compile it for cuda)");
  if (I->Dyn) {
    Expected<DynamicPlan> P = I->Dyn->toPlan();
    if (!P)
      return P.takeError();
    return writeDynamicPlanFile(Path, *P);
  }
  return writePlanFile(Path, I->P);
}

ExecutionBackend CompiledModel::backend() const { return I->Backend; }
void CompiledModel::setDeviceMemoryLimit(uint64_t Bytes) {
  I->DeviceLimit = Bytes;
}
bool CompiledModel::isDynamic() const { return I->Dyn != nullptr; }

Expected<std::shared_ptr<CompiledModel>>
CompiledModel::shapeVariant(ArrayRef<std::vector<int64_t>> InputDims) {
  if (!I->Dyn)
    return rtError("shapeVariant: the model is not dynamic (compile it with "
                   "input ranges)");
  return I->Dyn->get(InputDims);
}

size_t CompiledModel::shapeVariantsCompiled() const {
  return I->Dyn ? I->Dyn->compiled() : 0;
}

void CompiledModel::setPhaseCallback(PhaseCallback OnPhase) {
  std::lock_guard<std::mutex> Lock(I->LoadMutex);
  I->OnPhase = std::move(OnPhase);
}

ArrayRef<TensorInfo> CompiledModel::inputs() const { return I->Inputs; }
ArrayRef<TensorInfo> CompiledModel::outputs() const { return I->Outputs; }
const Plan &CompiledModel::plan() const { return I->plan(); }

int CompiledModel::inputIndex(StringRef Name) const {
  for (size_t K = 0; K < I->Inputs.size(); ++K)
    if (I->Inputs[K].Name == Name)
      return int(K);
  return -1;
}
int CompiledModel::outputIndex(StringRef Name) const {
  for (size_t K = 0; K < I->Outputs.size(); ++K)
    if (I->Outputs[K].Name == Name)
      return int(K);
  return -1;
}

ModelStats CompiledModel::stats() const {
  if (I->Dyn) {
    // The max shape's figures (its arena sizes every context).
    ModelStats S = I->Dyn->maxVariant()->stats();
    S.WeightBytes = std::max<uint64_t>(S.WeightBytes, I->Dyn->pool()->bytes());
    return S;
  }
  ModelStats S;
  S.Steps = I->P.Steps.size();
  // Distinct compiled functions: a kernel running another's counts once.
  S.Kernels = size_t(count_if(
      I->P.Kernels, [](const PlanKernel &K) { return K.Symbol.empty(); }));
  S.LibraryCalls =
      I->P.Gemms.size() + I->P.Convs.size() + I->P.Attentions.size();
  S.ArenaBytes = I->P.ArenaBytes;
  S.NaiveArenaBytes = I->P.NaiveArenaBytes;
  S.WeightBytes = I->P.Weights.size();
  return S;
}

Error CompiledModel::loadOnDevice() {
  if (I->Dyn)
    return I->Dyn->maxVariant()->loadOnDevice();
  std::lock_guard<std::mutex> Lock(I->LoadMutex);
  if (I->Loaded || I->Backend != ExecutionBackend::Cuda)
    return Error::success();
  std::lock_guard<std::mutex> Lazy(lazyLoadMutex());
  return I->load();
}

/// A key telling apart convolution problems, for the algorithm cache.
static std::string convKey(const ConvConfig &C) {
  std::string K;
  raw_string_ostream OS(K);
  OS << int(C.Elem) << C.Transpose << C.Nhwc << C.AllowTF32 << C.Fused << C.HasZ
     << int(C.Act) << "|";
  for (const auto *V : {&C.XDims, &C.WDims, &C.YDims})
    OS << join(map_range(*V, [](int64_t X) { return std::to_string(X); }), ",")
       << "|";
  for (const auto *V : {&C.Pads, &C.Strides, &C.Dilations})
    OS << join(map_range(*V, [](int X) { return std::to_string(X); }), ",")
       << "|";
  OS << C.Groups;
  return OS.str();
}

Error CompiledModel::Impl::load() {
  // A part-way failed earlier load leaves nothing behind for this one.
  unload();
  Error E = loadOnce();
  if (E)
    unload();
  return E;
}

Error CompiledModel::Impl::loadOnce() {
  Expected<int> Dev = requireDevice();
  if (!Dev)
    return Dev.takeError();
  Device = *Dev;
  if (Expected<const CudaLibraries *> Libs = loadCudaLibraries(); !Libs)
    return Libs.takeError();
  Expected<std::string> Arch = currentDeviceArch();
  if (!Arch)
    return Arch.takeError();
  bool Missing =
      any_of(P.Kernels, [](const PlanKernel &K) { return K.Cubin.empty(); });
  if (P.Arch != *Arch || Missing) {
    if (Progress && P.Arch != *Arch)
      *Progress << "note: plan kernels are for " << P.Arch << ", this GPU is "
                << *Arch << ": recompiling " << P.Kernels.size()
                << " kernels\n";
    PlanOptions PO;
    PO.Arch = *Arch;
    PO.CacheDir = CacheDir;
    PO.Progress = Progress;
    PhaseScope Phase(OnPhase, "kernels");
    if (Error E = compilePlanKernels(P, PO))
      return E;
  }

  // Weights: a dynamic model's variant takes each piece from the pool
  // (uploaded by the first variant that has it); else one buffer.
  if (Pool) {
    PhaseScope Phase(OnPhase, "upload");
    for (const WeightBlob::Piece &W : P.Weights.pieces()) {
      if (W.Bytes.empty())
        continue;
      Expected<const void *> Ptr = Pool->get(W.Bytes, W.Owner);
      if (!Ptr)
        return Ptr.takeError();
      WeightMap.push_back(
          {W.Offset, W.Bytes.size(), static_cast<const char *>(*Ptr)});
    }
  } else if (!P.Weights.empty()) {
    PhaseScope Phase(OnPhase, "upload");
    if (Error E = reserve(P.Weights.size(), "the weights"))
      return E;
    if (cudaError_t R = cudaMalloc(&Weights, P.Weights.size());
        R != cudaSuccess) {
      Weights = nullptr;
      DeviceUsed -= P.Weights.size();
      return cudaError(R, "cudaMalloc of " + Twine(P.Weights.size()) +
                              " bytes of weights");
    }
    // Piece by piece, straight from where the bytes live (the mapped model
    // or plan file); the gaps are zeroed so the buffer is deterministic.
    SOLDER_CUDA_TRY(cudaMemset(Weights, 0, P.Weights.size()),
                    "clearing the weights buffer");
    for (const WeightBlob::Piece &W : P.Weights.pieces())
      if (!W.Bytes.empty())
        SOLDER_CUDA_TRY(cudaMemcpy(static_cast<char *>(Weights) + W.Offset,
                                   W.Bytes.data(), W.Bytes.size(),
                                   cudaMemcpyHostToDevice),
                        "uploading weights");
  }
  // Kernels sharing a compiled function (PlanKernel::Symbol) load its
  // cubin once.
  std::map<std::string, cudaLibrary_t> LoadedFor;
  for (const PlanKernel &K : P.Kernels) {
    cudaLibrary_t &Lib = LoadedFor[K.symbol()];
    if (!Lib) {
      SOLDER_CUDA_TRY(cudaLibraryLoadData(&Lib, K.Cubin.data(), nullptr,
                                          nullptr, 0, nullptr, nullptr, 0),
                      "loading the cubin of kernel " + K.Name);
      Libraries.push_back(Lib);
    }
    cudaKernel_t Kern;
    SOLDER_CUDA_TRY(cudaLibraryGetKernel(&Kern, Lib, K.symbol().c_str()),
                    "finding kernel " + K.symbol() + " in its cubin");
    if (K.DynamicSharedBytes > 48 * 1024)
      SOLDER_CUDA_TRY(cudaKernelSetAttributeForDevice(
                          Kern, cudaFuncAttributeMaxDynamicSharedMemorySize,
                          int(K.DynamicSharedBytes), Device),
                      "raising the shared memory limit of " + K.Name);
    Kernels.push_back(Kern);
  }

  // Library algorithms: the plan's when it was tuned on this GPU model,
  // else chosen now and recorded in the plan (savePlan keeps them).
  Expected<std::string> Name = currentDeviceName();
  if (!Name)
    return Name.takeError();
  bool Tuned = !P.TunedOn.empty() && P.TunedOn == *Name;
  if (!P.TunedOn.empty() && !Tuned) {
    if (Progress)
      *Progress << "note: the plan's algorithms were tuned on " << P.TunedOn
                << ", this GPU is " << *Name << ": choosing them again\n";
    for (ConvConfig &C : P.Convs)
      C.Algo = -1;
  }
  PhaseScope Tuning(OnPhase, "tuning");
  if (!P.Gemms.empty()) {
    cublasLtHandle_t Lt;
    SOLDER_CUBLAS_TRY(cudaLibs().cublasLtCreate(&Lt), "cublasLtCreate");
    for (size_t Idx = 0; Idx < P.Gemms.size(); ++Idx) {
      GemmConfig &C = P.Gemms[Idx];
      GemmCall Call;
      cublasLtMatmulAlgo_t Algo;
      size_t Ws = 0;
      Error E = Call.init(C);
      static_assert(sizeof(Algo.data) == sizeof(C.AlgoData), "opaque algo");
      bool Stored = false;
      if (!E && Tuned && C.HasAlgo) {
        std::memcpy(Algo.data, C.AlgoData.data(), sizeof(Algo.data));
        Stored = Call.checkAlgo(Lt, Algo, Ws);
      }
      if (!E && !Stored)
        E = Call.chooseAlgo(Lt, Algo, Ws);
      if (E) {
        cudaLibs().cublasLtDestroy(Lt);
        // Named by its step (the ONNX nodes), as a cuDNN failure is.
        for (const PlanStep &S : P.Steps)
          if (S.K == PlanStep::Kind::Gemm && S.Index == Idx)
            return rtError(S.Label + ": " + toString(std::move(E)));
        return E;
      }
      std::memcpy(C.AlgoData.data(), Algo.data, sizeof(Algo.data));
      C.HasAlgo = true;
      C.AlgoWorkspace = Ws;
      GemmAlgos.push_back(Algo);
      WorkspaceBytes = std::max(WorkspaceBytes, Ws);
    }
    cudaLibs().cublasLtDestroy(Lt);
  }

  if (!P.Convs.empty()) {
    cudnnHandle_t Dnn;
    SOLDER_CUDNN_TRY(cudaLibs().cudnnCreate(&Dnn), "cudnnCreate");
    std::map<std::string, std::pair<int, int>> Cache;
    // SOLDER_CUDNN_SEARCH=0 skips the measured search (each conv takes the
    // implicit GEMM): under compute-sanitizer's racecheck the search runs
    // every algorithm cuDNN has, minutes per model.
    const char *SearchEnv = std::getenv("SOLDER_CUDNN_SEARCH");
    bool Search = !(SearchEnv && llvm::StringRef(SearchEnv) == "0");
    auto Fail = [&](Error E, size_t Index) {
      cudaLibs().cudnnDestroy(Dnn);
      std::string Label;
      for (const PlanStep &S : P.Steps)
        if (S.K == PlanStep::Kind::Conv && S.Index == Index)
          Label = S.Label;
      return rtError(Label + ": " + toString(std::move(E)));
    };
    // Graphs: cuDNN's engine choice and workspace, checked once per
    // distinct graph (contexts build their own plans on their handles).
    std::map<std::string, size_t> GraphWs;
    for (size_t Idx = 0; Idx < P.Convs.size(); ++Idx) {
      ConvConfig &C = P.Convs[Idx];
      if (C.Graph) {
        std::string Key = convGraphPlanKey(C);
        auto It = GraphWs.find(Key);
        if (It == GraphWs.end()) {
          ConvGraphCall Call;
          if (Error E = Call.init(C, Dnn))
            return Fail(std::move(E), Idx);
          It = GraphWs.emplace(Key, Call.workspaceBytes()).first;
        }
        WorkspaceBytes = std::max(WorkspaceBytes, It->second);
        continue;
      }
      if (C.Algo < 0) {
        std::string Key = convKey(C);
        auto It = Cache.find(Key);
        if (It == Cache.end()) {
          ConvCall Call;
          std::pair<int, int> Choice;
          Error E = Call.init(C);
          if (!E)
            E = Call.chooseAlgo(Dnn, Choice.first, Choice.second, Search);
          if (E)
            return Fail(std::move(E), Idx);
          It = Cache.emplace(Key, Choice).first;
        }
        C.Algo = It->second.first;
        C.MathType = It->second.second;
      }
      ConvCall Call;
      Error E = Call.init(C);
      if (E)
        return Fail(std::move(E), Idx);
      Expected<size_t> Ws = Call.workspaceBytes(Dnn);
      if (!Ws)
        return Fail(Ws.takeError(), Idx);
      WorkspaceBytes = std::max(WorkspaceBytes, *Ws);
    }
    cudaLibs().cudnnDestroy(Dnn);
  }
  // cuDNN's attention plans are built per context (on its handle); one
  // built here checks cuDNN takes each and sizes the shared workspace.
  if (!P.Attentions.empty()) {
    cudnnHandle_t Dnn;
    SOLDER_CUDNN_TRY(cudaLibs().cudnnCreate(&Dnn), "cudnnCreate");
    std::set<std::string> Checked;
    for (size_t Idx = 0; Idx < P.Attentions.size(); ++Idx) {
      if (!Checked.insert(attentionPlanKey(P.Attentions[Idx])).second)
        continue;
      AttentionCall Call;
      if (Error E = Call.init(P.Attentions[Idx], Dnn)) {
        cudaLibs().cudnnDestroy(Dnn);
        return rtError(attentionLabel(P, Idx) + ": " + toString(std::move(E)));
      }
      WorkspaceBytes = std::max(WorkspaceBytes, Call.workspaceBytes());
    }
    cudaLibs().cudnnDestroy(Dnn);
  }
  P.TunedOn = *Name;
  Loaded = true;
  return Error::success();
}

Expected<std::unique_ptr<ExecutionContext>> CompiledModel::createContext() {
  if (Error E = loadOnDevice())
    return std::move(E);
  auto CI = std::make_unique<ExecutionContext::Impl>();
  CI->Model = shared_from_this();
  CI->M = I.get();
  if (I->Dyn) {
    CI->Dyn = std::make_unique<DynamicContext>(CI->Model, *I->Dyn);
    if (I->Backend == ExecutionBackend::Cuda)
      if (Error E = CI->Dyn->init())
        return std::move(E);
    return std::unique_ptr<ExecutionContext>(
        new ExecutionContext(std::move(CI)));
  }
  if (I->Backend != ExecutionBackend::Cuda) // runs on the CPU, nothing to set
    return std::unique_ptr<ExecutionContext>(
        new ExecutionContext(std::move(CI)));
  {
    std::lock_guard<std::mutex> Lazy(lazyLoadMutex()); // library handles
    if (Error E = CI->init())
      return std::move(E);
  }
  return std::unique_ptr<ExecutionContext>(new ExecutionContext(std::move(CI)));
}

ExecutionContext::ExecutionContext(std::unique_ptr<Impl> I) : I(std::move(I)) {}
ExecutionContext::~ExecutionContext() = default;

} // namespace solder

//===----------------------------------------------------------------------===//
// RuntimeAccess: what the dynamic-shape layer (ShapeVariants.cpp) needs
//===----------------------------------------------------------------------===//

namespace solder {

std::shared_ptr<CompiledModel>
RuntimeAccess::wrapDynamic(std::unique_ptr<ShapeVariants> SV) {
  auto I = std::make_unique<CompiledModel::Impl>();
  I->Inputs.assign(SV->inputs().begin(), SV->inputs().end());
  I->Outputs.assign(SV->outputs().begin(), SV->outputs().end());
  I->Backend = SV->backend();
  I->Dyn = std::move(SV);
  return std::shared_ptr<CompiledModel>(new CompiledModel(std::move(I)));
}

void RuntimeAccess::useWeightPool(CompiledModel &Variant,
                                  std::shared_ptr<DeviceWeightPool> Pool) {
  Variant.I->Pool = std::move(Pool);
}

Expected<uint64_t> RuntimeAccess::contextBlockBytes(CompiledModel &Variant) {
  if (Error E = Variant.loadOnDevice())
    return std::move(E);
  ExecutionContext::Impl Probe;
  Probe.M = Variant.I.get();
  std::vector<uint64_t> InOff, OutOff;
  uint64_t WsOff;
  return Probe.layout(/*OwnIo=*/false, InOff, OutOff, WsOff);
}

Expected<std::unique_ptr<ExecutionContext>>
RuntimeAccess::createContextIn(CompiledModel &Variant, char *Block,
                               uint64_t Bytes) {
  if (Error E = Variant.loadOnDevice())
    return std::move(E);
  auto CI = std::make_unique<ExecutionContext::Impl>();
  CI->Model = Variant.shared_from_this();
  CI->M = Variant.I.get();
  {
    std::lock_guard<std::mutex> Lazy(lazyLoadMutex()); // library handles
    if (Error E = CI->init(Block, Bytes))
      return std::move(E);
  }
  return std::unique_ptr<ExecutionContext>(new ExecutionContext(std::move(CI)));
}

} // namespace solder
