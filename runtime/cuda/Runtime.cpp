//===- Runtime.cpp - CompiledModel and ExecutionContext -------------------===//
//
// Loading a model onto the device (once, shared by its contexts):
//   - recompile kernels whose cubins are for another architecture;
//   - upload the weights blob into one device buffer;
//   - load each cubin as a cudaLibrary and look its kernel up;
//   - choose cuBLASLt algorithms (heuristics) and cuDNN algorithms
//     (measured, cached per configuration), and the workspace they need.
//
// An execution context owns one device allocation holding its arena, its
// own input/output buffers and the library workspace, plus its cuBLASLt and
// cuDNN handles and descriptors. Steady-state runs allocate nothing and
// never wait on the host: a run is one cudaGraphLaunch.
//
//===----------------------------------------------------------------------===//
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
#include <thread>

using namespace llvm;

namespace solder {

/// Serializes the work that may load GPU code lazily (model loading with
/// its cuDNN measurements, a context's first run) against CUDA graph
/// captures. CUDA loads modules lazily per process, and loading one while
/// any thread captures a stream can fail the load or the capture, so this
/// lock is process-wide by necessity. Steady-state runs never take it.
/// Freeing device memory and destroying library handles take it too:
/// cudaFree synchronizes the device, which fails another thread's capture
/// (seen: 1 stress run in 6 lost its CUDA graph when a finished thread
/// destroyed its context).
static std::mutex &lazyLoadMutex() {
  static std::mutex M;
  return M;
}

std::mutex &RuntimeAccess::captureMutex() { return lazyLoadMutex(); }

static Error rtError(const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), Msg);
}

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

static Error notOnReference(StringRef What) {
  return rtError(What + " needs the cuda backend: a reference-backend model "
                        "runs host tensors only (runHost)");
}

size_t TensorInfo::bytes() const {
  size_t N = dtypeSize(Elem);
  for (int64_t D : Dims)
    N *= size_t(D);
  return N;
}

//===----------------------------------------------------------------------===//
// CompiledModel
//===----------------------------------------------------------------------===//

struct CompiledModel::Impl {
  Plan P;
  std::vector<TensorInfo> Inputs, Outputs;
  std::string CacheDir;
  raw_ostream *Progress = nullptr;
  PhaseCallback OnPhase;
  /// The reference backend runs this graph (and has an empty plan).
  ExecutionBackend Backend = ExecutionBackend::Cuda;
  std::unique_ptr<Graph> RefGraph;

  std::mutex LoadMutex;
  bool Loaded = false;
  int Device = 0;
  void *Weights = nullptr;
  std::vector<cudaLibrary_t> Libraries;
  std::vector<cudaKernel_t> Kernels;
  std::vector<cublasLtMatmulAlgo_t> GemmAlgos;
  size_t WorkspaceBytes = 0;
  /// A dynamic model: its variants (P is empty; the max variant's plan
  /// stands for it).
  std::unique_ptr<ShapeVariants> Dyn;
  /// A variant of a dynamic model: weights come from the shared pool, one
  /// device pointer per blob piece (by offset) instead of Weights.
  std::shared_ptr<DeviceWeightPool> Pool;
  struct PooledPiece {
    uint64_t Offset, Size;
    const char *Ptr;
  };
  std::vector<PooledPiece> WeightMap;

  const char *weightPtr(uint64_t Offset) const {
    if (!Pool)
      return static_cast<const char *>(Weights) + Offset;
    auto It = std::upper_bound(
        WeightMap.begin(), WeightMap.end(), Offset,
        [](uint64_t O, const PooledPiece &P) { return O < P.Offset; });
    if (It == WeightMap.begin())
      return nullptr;
    --It;
    return Offset <= It->Offset + It->Size ? It->Ptr + (Offset - It->Offset)
                                           : nullptr;
  }
  const Plan &plan() const { return Dyn ? Dyn->maxVariant()->plan() : P; }

  /// CompiledModel::setDeviceMemoryLimit: 0 = none; what the weights and
  /// the contexts' blocks of this model hold now.
  uint64_t DeviceLimit = 0;
  std::atomic<uint64_t> DeviceUsed{0};

  ~Impl() {
    std::lock_guard<std::mutex> Lazy(lazyLoadMutex()); // see there
    unload();
  }
  /// Frees what a load (finished or failed part way) holds; a model that
  /// never touched the device calls nothing (it may be destroyed from a
  /// static destructor while the driver shuts down).
  void unload() {
    for (cudaLibrary_t L : Libraries)
      cudaLibraryUnload(L);
    Libraries.clear();
    Kernels.clear();
    GemmAlgos.clear();
    WeightMap.clear();
    if (Weights) {
      cudaFree(Weights);
      Weights = nullptr;
      DeviceUsed -= P.Weights.size();
    }
  }
  /// Counts Bytes against the limit, or says what does not fit.
  Error reserve(uint64_t Bytes, const Twine &What) {
    uint64_t Used = DeviceUsed.fetch_add(Bytes);
    if (DeviceLimit && Used + Bytes > DeviceLimit) {
      DeviceUsed -= Bytes;
      return rtError("device memory limit of " + Twine(DeviceLimit) +
                     " bytes (--max-device-memory) exceeded: " + What +
                     " needs " + Twine(Bytes) + " bytes, " + Twine(Used) +
                     " are in use by this model");
    }
    return Error::success();
  }
  Error load();
  Error loadOnce();
};

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

static PipelineOptions pipelineOptions(const CompileOptions &Opts) {
  PipelineOptions PO;
  PO.DisabledPasses = Opts.DisabledPasses;
  PO.TargetGpu = Opts.Backend == ExecutionBackend::Cuda;
  PO.NoFusion = Opts.NoFusion;
  PO.FuseAttention = Opts.FuseAttention;
  PO.AutoAttention = Opts.AutoAttention;
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
  if (Opts.Backend == ExecutionBackend::Cuda)
    return compileGraph(*G, Opts);
  {
    PhaseScope Phase(Opts.OnPhase, "passes");
    if (Error E = runPipeline(*G, pipelineOptions(Opts)))
      return std::move(E);
  }
  auto I = std::make_unique<Impl>();
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
  PipelineOptions PO = pipelineOptions(Opts);
  std::vector<DecisionRecord> Decisions;
  PO.Decisions = &Decisions;
  {
    PhaseScope Phase(Opts.OnPhase, "passes");
    if (Error E = runPipeline(G, PO))
      return std::move(E);
  }
  PlanOptions PlanOpts;
  PlanOpts.Arch = Opts.Arch;
  if (PlanOpts.Arch.empty()) {
    Expected<std::string> Arch = thisMachineArch();
    if (Arch) {
      PlanOpts.Arch = *Arch;
    } else {
      consumeError(Arch.takeError());
      PlanOpts.Arch = "sm_90";
    }
  }
  PlanOpts.CacheDir = Opts.CacheDir;
  PlanOpts.AllowTF32 = Opts.AllowTF32 || Opts.Prec == Precision::TF32;
  PlanOpts.Prec = Opts.Prec;
  PlanOpts.Progress = Opts.Progress;
  PlanOpts.PerturbGroupId = Opts.PerturbGroupId;
  PlanOpts.Gemm = Opts.Gemm;
  if (Opts.Tune && Opts.Gemm == GemmKernels::Auto &&
      (Opts.Prec == Precision::F16 || Opts.Prec == Precision::BF16)) {
    PhaseScope Phase(Opts.OnPhase, "tuning");
    if (Error E = tuneGemmGroups(G, PlanOpts))
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
  Expected<std::shared_ptr<CompiledModel>> M = fromPlan(std::move(*P));
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
  S.Kernels = I->P.Kernels.size();
  S.LibraryCalls = I->P.Gemms.size() + I->P.Convs.size();
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
      Expected<const void *> Ptr = Pool->get(W.Bytes);
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
  for (const PlanKernel &K : P.Kernels) {
    cudaLibrary_t Lib;
    SOLDER_CUDA_TRY(cudaLibraryLoadData(&Lib, K.Cubin.data(), nullptr, nullptr,
                                        0, nullptr, nullptr, 0),
                    "loading the cubin of kernel " + K.Name);
    Libraries.push_back(Lib);
    cudaKernel_t Kern;
    SOLDER_CUDA_TRY(cudaLibraryGetKernel(&Kern, Lib, K.Name.c_str()),
                    "finding kernel " + K.Name + " in its cubin");
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
    for (size_t Idx = 0; Idx < P.Convs.size(); ++Idx) {
      ConvConfig &C = P.Convs[Idx];
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
  P.TunedOn = *Name;
  Loaded = true;
  return Error::success();
}

//===----------------------------------------------------------------------===//
// ExecutionContext
//===----------------------------------------------------------------------===//

struct ExecutionContext::Impl {
  std::shared_ptr<CompiledModel> Model;
  CompiledModel::Impl *M = nullptr;
  cudnnHandle_t Dnn = nullptr;
  cublasLtHandle_t Lt = nullptr;
  std::vector<std::unique_ptr<GemmCall>> Gemms;
  std::vector<std::unique_ptr<ConvCall>> Convs;
  /// One allocation: arena | own inputs | own outputs | workspace |
  /// pointer tables.
  char *Block = nullptr;
  char *Arena = nullptr, *Workspace = nullptr;
  std::vector<char *> OwnIn, OwnOut;
  std::vector<const void *> InPtr;
  std::vector<void *> OutPtr;
  /// Kernel parameters per step: the pointer values and pointers to them.
  std::vector<std::vector<void *>> ArgValues, ArgPtrs;
  bool ArgsStale = true;
  /// Pointer-array matmuls (GemmConfig::pointerArrays): per gemm, where its
  /// A, B, C, D pointer arrays start in the tables (0 for other gemms), and
  /// their host image, uploaded whenever a buffer binding changes. Tables
  /// is in the block, or its own allocation for a context in a shared
  /// block (the tables persist between runs; the shared block does not).
  std::vector<uint64_t> PtrTableOff;
  std::vector<uint64_t> PtrHost, PtrUploaded;
  uint64_t PtrTableBase = 0;
  char *Tables = nullptr;
  bool OwnTables = false;
  cudaStream_t Own = nullptr;
  cudaEvent_t Before = nullptr, After = nullptr;

  bool UseGraph = true;
  bool PoisonArena = false;
  cudaGraphExec_t Exec = nullptr;
  std::vector<const void *> CapturedIn;
  std::vector<void *> CapturedOut;
  uint64_t GraphLaunches = 0;
  std::string GraphFailure;
  bool FirstRunDone = false;
  /// A context of a dynamic model: everything goes through its variants.
  std::unique_ptr<DynamicContext> Dyn;
  /// Bytes of the block counted against the model's device memory limit.
  uint64_t Reserved = 0;
  /// Set when a call failed with a sticky CUDA error: the process's CUDA
  /// context is gone, and every later call says so instead of trying.
  std::string Broken;
  /// A variant's context inside a DynamicContext: Block is the shared one
  /// (not freed here) and there are no own input/output buffers.
  bool ExternalBlock = false;

  ~Impl() {
    // Freeing must not meet another thread's capture (lazyLoadMutex). A
    // dynamic context's variants (Dyn) lock for themselves after this.
    std::lock_guard<std::mutex> Lazy(lazyLoadMutex());
    if (Exec)
      cudaGraphExecDestroy(Exec);
    Gemms.clear();
    Convs.clear();
    if (Dnn)
      cudaLibs().cudnnDestroy(Dnn);
    if (Lt)
      cudaLibs().cublasLtDestroy(Lt);
    if (Before)
      cudaEventDestroy(Before);
    if (After)
      cudaEventDestroy(After);
    if (Own)
      cudaStreamDestroy(Own);
    if (Block && !ExternalBlock)
      cudaFree(Block);
    if (Reserved)
      M->DeviceUsed -= Reserved;
    if (OwnTables && Tables)
      cudaFree(Tables);
  }

  /// Offsets in the context's block; returns its size. Without own I/O
  /// there are no input/output buffers in it.
  uint64_t layout(bool OwnIo, std::vector<uint64_t> &InOff,
                  std::vector<uint64_t> &OutOff, uint64_t &WsOff);
  /// Creates handles and calls; allocates the block unless External.
  Error init(char *External = nullptr, uint64_t ExternalBytes = 0);
  const char *resolve(const BufferRef &R) const {
    switch (R.Space) {
    case BufferSpace::Weights:
      return M->weightPtr(R.Offset);
    case BufferSpace::Arena:
      return Arena + R.Offset;
    case BufferSpace::Input:
      return static_cast<const char *>(InPtr[R.Index]) + R.Offset;
    case BufferSpace::Output:
      return static_cast<const char *>(OutPtr[R.Index]) + R.Offset;
    }
    return nullptr;
  }
  void *resolveMut(const BufferRef &R) const {
    return const_cast<char *>(resolve(R));
  }
  /// Resolves kernel parameters and pointer tables against the current
  /// bindings. Uploading tables waits for S (no run on it may still read
  /// them); never called while S is capturing.
  Error refreshArgs(cudaStream_t S);
  /// Enqueues steps [First, Last) (all of them by default).
  Error enqueueSteps(cudaStream_t S, size_t First = 0, size_t Last = SIZE_MAX);
  Error runEager(cudaStream_t S);
  Error runGraph(cudaStream_t S);
  /// A new cuDNN handle in place of the current one (see runGraph).
  Error renewDnn() {
    if (Dnn)
      cudaLibs().cudnnDestroy(Dnn);
    Dnn = nullptr;
    SOLDER_CUDNN_TRY(cudaLibs().cudnnCreate(&Dnn), "cudnnCreate");
    return Error::success();
  }
  /// Captures that failed and were tried again with a new cuDNN handle.
  unsigned CaptureRetries = 0;
  /// A call after a sticky CUDA error: refused, saying why.
  Error checkBroken() const {
    if (Broken.empty())
      return Error::success();
    return rtError("the GPU failed earlier with a sticky error (" + Broken +
                   "); this context refuses to run: restart the process");
  }
  /// E, after noting a sticky error behind it (the process's CUDA context
  /// is then unusable).
  Error noteSticky(Error E) {
    if (!E || !Own) // the reference backend and dynamic contexts have none
      return E;
    cudaError_t S = cudaStreamQuery(Own);
    if (isStickyCudaError(S) && Broken.empty())
      Broken = cudaGetErrorString(S);
    return E;
  }
  /// setPoisonArena: the arena filled with 0xFF on S, before a run.
  Error poison(cudaStream_t S) {
    if (PoisonArena && M->P.ArenaBytes)
      SOLDER_CUDA_TRY(cudaMemsetAsync(Arena, 0xFF, M->P.ArenaBytes, S),
                      "poisoning the arena");
    return Error::success();
  }
};

uint64_t ExecutionContext::Impl::layout(bool OwnIo,
                                        std::vector<uint64_t> &InOff,
                                        std::vector<uint64_t> &OutOff,
                                        uint64_t &WsOff) {
  const Plan &P = M->P;
  uint64_t Size = alignTo256(P.ArenaBytes);
  InOff.clear();
  OutOff.clear();
  if (OwnIo) {
    for (const TensorInfo &T : M->Inputs) {
      InOff.push_back(Size);
      Size += alignTo256(T.bytes());
    }
    for (const TensorInfo &T : M->Outputs) {
      OutOff.push_back(Size);
      Size += alignTo256(T.bytes());
    }
  }
  WsOff = Size;
  Size += alignTo256(M->WorkspaceBytes);
  PtrTableBase = Size;
  PtrTableOff.clear();
  uint64_t Slots = 0;
  for (const GemmConfig &C : P.Gemms) {
    PtrTableOff.push_back(C.pointerArrays() ? Slots * 8 : 0);
    if (C.pointerArrays())
      Slots += 4 * uint64_t(C.Batch);
  }
  PtrHost.assign(Slots, 0);
  if (OwnIo) // else the tables get their own allocation
    Size += alignTo256(Slots * 8);
  return std::max<uint64_t>(Size, 256);
}

Error ExecutionContext::Impl::init(char *External, uint64_t ExternalBytes) {
  const Plan &P = M->P;
  // The memory limit first: a context that does not fit creates nothing.
  std::vector<uint64_t> InOff, OutOff;
  uint64_t WsOff = 0;
  uint64_t Size = layout(/*OwnIo=*/!External, InOff, OutOff, WsOff);
  if (!External) {
    if (Error E = M->reserve(Size, "an execution context (arena, inputs, "
                                   "outputs, library workspace)"))
      return E;
    Reserved = Size;
  }
  if (Expected<const CudaLibraries *> Libs = loadCudaLibraries(); !Libs)
    return Libs.takeError();
  SOLDER_CUDNN_TRY(cudaLibs().cudnnCreate(&Dnn), "cudnnCreate");
  SOLDER_CUBLAS_TRY(cudaLibs().cublasLtCreate(&Lt), "cublasLtCreate");
  for (const GemmConfig &C : P.Gemms) {
    Gemms.push_back(std::make_unique<GemmCall>());
    if (Error E = Gemms.back()->init(C))
      return E;
  }
  for (const ConvConfig &C : P.Convs) {
    Convs.push_back(std::make_unique<ConvCall>());
    if (Error E = Convs.back()->init(C))
      return E;
  }
  if (External) {
    if (ExternalBytes < Size)
      return rtError("the shared context block has " + Twine(ExternalBytes) +
                     " bytes, the variant needs " + Twine(Size));
    Block = External;
    ExternalBlock = true;
  } else {
    SOLDER_CUDA_TRY(cudaMalloc(reinterpret_cast<void **>(&Block), Size),
                    "cudaMalloc of the " + Twine(Size) +
                        "-byte execution context");
  }
  Arena = Block;
  Workspace = Block + WsOff;
  if (!External) {
    Tables = Block + PtrTableBase;
  } else if (!PtrHost.empty()) {
    SOLDER_CUDA_TRY(
        cudaMalloc(reinterpret_cast<void **>(&Tables), PtrHost.size() * 8),
        "cudaMalloc of the matmul pointer tables");
    OwnTables = true;
  }
  if (External) {
    OwnIn.assign(M->Inputs.size(), nullptr);
    InPtr.assign(M->Inputs.size(), nullptr);
    OwnOut.assign(M->Outputs.size(), nullptr);
    OutPtr.assign(M->Outputs.size(), nullptr);
  }
  for (uint64_t O : InOff) {
    OwnIn.push_back(Block + O);
    InPtr.push_back(Block + O);
  }
  for (uint64_t O : OutOff) {
    OwnOut.push_back(Block + O);
    OutPtr.push_back(Block + O);
  }
  SOLDER_CUDA_TRY(cudaStreamCreateWithFlags(&Own, cudaStreamNonBlocking),
                  "cudaStreamCreate");
  SOLDER_CUDA_TRY(cudaEventCreateWithFlags(&Before, cudaEventDisableTiming),
                  "cudaEventCreate");
  SOLDER_CUDA_TRY(cudaEventCreateWithFlags(&After, cudaEventDisableTiming),
                  "cudaEventCreate");
  ArgValues.resize(P.Steps.size());
  ArgPtrs.resize(P.Steps.size());
  for (size_t S = 0; S < P.Steps.size(); ++S) {
    ArgValues[S].resize(P.Steps[S].Args.size());
    for (size_t A = 0; A < ArgValues[S].size(); ++A)
      ArgPtrs[S].push_back(&ArgValues[S][A]);
  }
  return Error::success();
}

/// Generated kernels take their buffers as __restrict__ pointers, so an
/// output must share no byte with another output or with an input.
static Error checkBindingsDisjoint(const CompiledModel::Impl &M,
                                   ArrayRef<const void *> In,
                                   ArrayRef<void *> Out) {
  auto Overlap = [](const void *A, size_t NA, const void *B, size_t NB) {
    auto X = reinterpret_cast<uintptr_t>(A), Y = reinterpret_cast<uintptr_t>(B);
    return NA && NB && X < Y + NB && Y < X + NA;
  };
  for (size_t J = 0; J < Out.size(); ++J) {
    size_t NJ = M.Outputs[J].bytes();
    for (size_t K = J + 1; K < Out.size(); ++K)
      if (Overlap(Out[J], NJ, Out[K], M.Outputs[K].bytes()))
        return rtError("the buffers bound to outputs #" + Twine(J) + " and #" +
                       Twine(K) + " overlap");
    for (size_t I = 0; I < In.size(); ++I)
      if (Overlap(Out[J], NJ, In[I], M.Inputs[I].bytes()))
        return rtError("the buffer bound to output #" + Twine(J) +
                       " overlaps the one bound to input #" + Twine(I) +
                       " (outputs must not be computed in place)");
  }
  return Error::success();
}

Error ExecutionContext::Impl::refreshArgs(cudaStream_t Stream) {
  const Plan &P = M->P;
  if (Error E = checkBindingsDisjoint(*M, InPtr, OutPtr))
    return E;
  for (size_t S = 0; S < P.Steps.size(); ++S)
    for (size_t A = 0; A < P.Steps[S].Args.size(); ++A)
      ArgValues[S][A] = resolveMut(P.Steps[S].Args[A]);
  if (!PtrHost.empty()) {
    // Batch I of a pointer-array matmul: each operand's base plus the
    // strides of I's index along the batch dims.
    for (size_t G = 0; G < P.Gemms.size(); ++G) {
      const GemmConfig &C = P.Gemms[G];
      if (!C.pointerArrays())
        continue;
      uint64_t *Tab = PtrHost.data() + PtrTableOff[G] / 8;
      uint64_t Elem = dtypeSize(C.Elem);
      bool SeparateC = C.CFrom == GemmConfig::CSource::Separate;
      const BufferRef *Refs[4] = {&C.A, &C.B, SeparateC ? &C.C : &C.D, &C.D};
      const std::vector<int64_t> *Strides[4] = {
          &C.BatchStrideA, &C.BatchStrideB, &C.BatchStrideD, &C.BatchStrideD};
      for (int64_t I = 0; I < C.Batch; ++I) {
        int64_t Rem = I;
        uint64_t Off[4] = {0, 0, 0, 0};
        for (size_t D = C.BatchDims.size(); D-- > 0;) {
          int64_t Idx = Rem % C.BatchDims[D];
          Rem /= C.BatchDims[D];
          for (int O = 0; O < 4; ++O)
            Off[O] += uint64_t(Idx * (*Strides[O])[D]) * Elem;
        }
        for (int O = 0; O < 4; ++O)
          Tab[O * C.Batch + I] =
              reinterpret_cast<uint64_t>(resolve(*Refs[O])) + Off[O];
      }
    }
  }
  // Uploaded only when they change (a binding of a buffer they point
  // into): rebinding inputs, as every zero-copy run may, costs no copy.
  if (PtrHost != PtrUploaded) {
    // Stream-ordered, never on the legacy stream: another thread may be
    // capturing a graph meanwhile, and a legacy-stream copy would join it.
    SOLDER_CUDA_TRY(cudaStreamSynchronize(Stream),
                    "waiting before updating matmul pointer tables");
    SOLDER_CUDA_TRY(cudaMemcpyAsync(Tables, PtrHost.data(), PtrHost.size() * 8,
                                    cudaMemcpyHostToDevice, Stream),
                    "uploading matmul pointer tables");
    SOLDER_CUDA_TRY(cudaStreamSynchronize(Stream),
                    "uploading matmul pointer tables");
    PtrUploaded = PtrHost;
  }
  ArgsStale = false;
  return Error::success();
}

Error ExecutionContext::Impl::enqueueSteps(cudaStream_t S, size_t First,
                                           size_t Last) {
  const Plan &P = M->P;
  if (ArgsStale)
    if (Error E = refreshArgs(S))
      return E;
  if (!Convs.empty())
    SOLDER_CUDNN_TRY(cudaLibs().cudnnSetStream(Dnn, S), "cudnnSetStream");
  for (size_t SI = First; SI < std::min(Last, P.Steps.size()); ++SI) {
    const PlanStep &St = P.Steps[SI];
    Error E = Error::success();
    switch (St.K) {
    case PlanStep::Kind::Kernel: {
      const PlanKernel &K = P.Kernels[St.Index];
      cudaError_t R =
          cudaLaunchKernel(reinterpret_cast<const void *>(M->Kernels[St.Index]),
                           dim3(K.Grid[0], K.Grid[1], K.Grid[2]),
                           dim3(K.Block[0], K.Block[1], K.Block[2]),
                           ArgPtrs[SI].data(), K.DynamicSharedBytes, S);
      if (R != cudaSuccess)
        E = cudaError(R, "launching kernel " + K.Name);
      break;
    }
    case PlanStep::Kind::Gemm: {
      const GemmConfig &C = P.Gemms[St.Index];
      bool SeparateC = C.CFrom == GemmConfig::CSource::Separate;
      const void *Bias = C.hasBias() ? resolve(C.BiasVec) : nullptr;
      if (C.pointerArrays()) {
        char *Tab = Tables + PtrTableOff[St.Index];
        uint64_t Arr = uint64_t(C.Batch) * 8;
        E = Gemms[St.Index]->enqueue(Lt, M->GemmAlgos[St.Index], Tab, Tab + Arr,
                                     Bias, SeparateC ? Tab + 2 * Arr : nullptr,
                                     Tab + 3 * Arr, Workspace,
                                     M->WorkspaceBytes, S);
        break;
      }
      E = Gemms[St.Index]->enqueue(
          Lt, M->GemmAlgos[St.Index], resolve(C.A), resolve(C.B), Bias,
          SeparateC ? resolve(C.C) : nullptr, resolveMut(C.D), Workspace,
          M->WorkspaceBytes, S);
      break;
    }
    case PlanStep::Kind::Conv: {
      const ConvConfig &C = P.Convs[St.Index];
      E = Convs[St.Index]->enqueue(Dnn, resolve(C.X), resolve(C.W),
                                   resolveMut(C.Y),
                                   C.Fused ? resolve(C.Bias) : nullptr,
                                   C.Fused && C.HasZ ? resolve(C.Z) : nullptr,
                                   Workspace, M->WorkspaceBytes);
      break;
    }
    case PlanStep::Kind::Copy: {
      const CopyConfig &C = P.Copies[St.Index];
      cudaError_t R = cudaMemcpyAsync(resolveMut(C.Dst), resolve(C.Src),
                                      C.Bytes, cudaMemcpyDeviceToDevice, S);
      if (R != cudaSuccess)
        E = cudaError(R, "cudaMemcpyAsync");
      break;
    }
    }
    if (E)
      return rtError(St.Label + ": " + toString(std::move(E)));
  }
  return Error::success();
}

Error ExecutionContext::Impl::runEager(cudaStream_t S) {
  if (FirstRunDone)
    return enqueueSteps(S);
  // The first run loads library and kernel code lazily: not while another
  // thread captures (see lazyLoadMutex), and finished before unlocking.
  std::lock_guard<std::mutex> Lazy(lazyLoadMutex());
  if (Error E = enqueueSteps(S))
    return E;
  SOLDER_CUDA_TRY(cudaStreamSynchronize(S), "the first run");
  FirstRunDone = true;
  return Error::success();
}

Error ExecutionContext::Impl::runGraph(cudaStream_t S) {
  bool Current = Exec && CapturedIn == InPtr && CapturedOut == OutPtr;
  if (Current) {
    SOLDER_CUDA_TRY(cudaGraphLaunch(Exec, S), "cudaGraphLaunch");
    ++GraphLaunches;
    return Error::success();
  }
  // The first run goes step by step: libraries load their modules lazily,
  // which must not happen inside a capture. Its steps are then captured.
  bool Ran = false;
  if (!Exec) {
    if (Error E = runEager(S))
      return E;
    Ran = true;
  }
  std::lock_guard<std::mutex> Lazy(lazyLoadMutex());
  // New bindings: resolve them now, not inside the capture (uploading
  // pointer tables is a synchronous copy).
  if (ArgsStale)
    if (Error E = refreshArgs(S))
      return E;
  // A step that cannot be captured (a library call doing something a
  // capture forbids) makes the context fall back to step-by-step launches
  // for good; GraphFailure says why.
  auto FallBack = [&](Error Why) -> Error {
    GraphFailure = toString(std::move(Why));
    cudaGetLastError();
    if (!Convs.empty()) // a handle that failed in a capture fails after it
      consumeError(renewDnn());
    UseGraph = false;
    if (Exec) {
      cudaGraphExecDestroy(Exec);
      Exec = nullptr;
    }
    return Ran ? Error::success() : enqueueSteps(S);
  };
  // A capture that another thread's device-synchronizing call (cudaFree)
  // broke fails a library call inside it ("operation failed due to a
  // previous error during capture", 901), and the cuDNN handle then fails
  // its eager calls too. Frees now take lazyLoadMutex (8 threads x 2
  // models: 15 of 15 stress runs clean on an H100, 6 of 8 before); should
  // a capture still fail, a fresh cuDNN handle and two more captures are
  // tried before giving up on the graph (seen to recover every time).
  cudaGraph_t G = nullptr;
  for (int Attempt = 0;; ++Attempt) {
    cudaError_t Begin =
        cudaStreamBeginCapture(S, cudaStreamCaptureModeThreadLocal);
    if (Begin != cudaSuccess)
      return FallBack(cudaError(Begin, "cudaStreamBeginCapture"));
    Error E = enqueueSteps(S);
    cudaError_t End = cudaStreamEndCapture(S, &G);
    if (!E && End == cudaSuccess)
      break;
    if (G)
      cudaGraphDestroy(G);
    G = nullptr;
    if (!E)
      E = cudaError(End, "cudaStreamEndCapture");
    cudaGetLastError();
    if (Convs.empty() || Attempt == 2)
      return FallBack(std::move(E));
    consumeError(std::move(E));
    ++CaptureRetries;
    if (Error R = renewDnn())
      return FallBack(std::move(R));
  }
  if (Exec) {
    cudaGraphExecUpdateResultInfo Info;
    if (cudaGraphExecUpdate(Exec, G, &Info) != cudaSuccess) {
      cudaGetLastError();
      cudaGraphExecDestroy(Exec);
      Exec = nullptr;
    }
  }
  if (!Exec) {
    cudaError_t R = cudaGraphInstantiate(&Exec, G, 0);
    if (R != cudaSuccess) {
      cudaGraphDestroy(G);
      Exec = nullptr;
      return FallBack(cudaError(R, "cudaGraphInstantiate"));
    }
  }
  cudaGraphDestroy(G);
  CapturedIn = InPtr;
  CapturedOut = OutPtr;
  if (!Ran) {
    SOLDER_CUDA_TRY(cudaGraphLaunch(Exec, S), "cudaGraphLaunch");
    ++GraphLaunches;
  }
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

Error ExecutionContext::setInputShape(unsigned Index, ArrayRef<int64_t> Dims) {
  if (I->Dyn)
    return I->Dyn->setInputShape(Index, Dims);
  if (Index >= I->M->Inputs.size())
    return rtError("no input #" + Twine(Index));
  const TensorInfo &T = I->M->Inputs[Index];
  if (ArrayRef<int64_t>(T.Dims) != Dims)
    return rtError("input '" + T.Name + "' has the fixed shape " +
                   typeToString(TensorType(T.Elem, T.Dims)) +
                   " (compile the model with input ranges to vary it)");
  return Error::success();
}

Expected<std::vector<int64_t>>
ExecutionContext::inputDims(unsigned Index) const {
  if (I->Dyn)
    return I->Dyn->inputDims(Index);
  if (Index >= I->M->Inputs.size())
    return rtError("no input #" + Twine(Index));
  return I->M->Inputs[Index].Dims;
}

Expected<std::vector<int64_t>> ExecutionContext::outputDims(unsigned Index) {
  if (I->Dyn)
    return I->Dyn->outputDims(Index);
  if (Index >= I->M->Outputs.size())
    return rtError("no output #" + Twine(Index));
  return I->M->Outputs[Index].Dims;
}

Error ExecutionContext::bindInput(unsigned Index, const void *DevicePtr) {
  if (I->M->Backend != ExecutionBackend::Cuda)
    return notOnReference("bindInput");
  if (I->Dyn)
    return I->Dyn->bindInput(Index, DevicePtr);
  if (Index >= I->InPtr.size())
    return rtError("no input #" + Twine(Index));
  if (!DevicePtr)
    DevicePtr = I->OwnIn[Index];
  if (reinterpret_cast<uintptr_t>(DevicePtr) % 16)
    return rtError("input #" + Twine(Index) +
                   ": device pointer must be 16-byte aligned");
  if (I->InPtr[Index] != DevicePtr)
    I->ArgsStale = true;
  I->InPtr[Index] = DevicePtr;
  return Error::success();
}

Error ExecutionContext::bindOutput(unsigned Index, void *DevicePtr) {
  if (I->M->Backend != ExecutionBackend::Cuda)
    return notOnReference("bindOutput");
  if (I->Dyn)
    return I->Dyn->bindOutput(Index, DevicePtr);
  if (Index >= I->OutPtr.size())
    return rtError("no output #" + Twine(Index));
  if (!DevicePtr)
    DevicePtr = I->OwnOut[Index];
  if (reinterpret_cast<uintptr_t>(DevicePtr) % 16)
    return rtError("output #" + Twine(Index) +
                   ": device pointer must be 16-byte aligned");
  if (I->OutPtr[Index] != DevicePtr)
    I->ArgsStale = true;
  I->OutPtr[Index] = DevicePtr;
  return Error::success();
}

const void *ExecutionContext::inputBuffer(unsigned Index) const {
  if (I->Dyn)
    return I->Dyn->inputBuffer(Index);
  return Index < I->InPtr.size() ? I->InPtr[Index] : nullptr;
}
void *ExecutionContext::outputBuffer(unsigned Index) const {
  if (I->Dyn)
    return I->Dyn->outputBuffer(Index);
  return Index < I->OutPtr.size() ? I->OutPtr[Index] : nullptr;
}

Error ExecutionContext::copyInputFromHost(unsigned Index, const void *Host,
                                          size_t Bytes, cudaStream_t Stream) {
  if (Error E = I->checkBroken())
    return E;
  auto Body = [&]() -> Error {
    if (I->M->Backend != ExecutionBackend::Cuda)
      return notOnReference("copyInputFromHost");
    if (I->Dyn)
      return I->Dyn->copyInputFromHost(Index, Host, Bytes, Stream);
    if (Index >= I->InPtr.size())
      return rtError("no input #" + Twine(Index));
    const TensorInfo &T = I->M->Inputs[Index];
    if (Bytes != T.bytes())
      return rtError("input '" + T.Name + "' takes " + Twine(T.bytes()) +
                     " bytes, got " + Twine(Bytes));
    if (Error E = bindInput(Index, I->OwnIn[Index]))
      return E;
    if (Bytes)
      SOLDER_CUDA_TRY(cudaMemcpyAsync(I->OwnIn[Index], Host, Bytes,
                                      cudaMemcpyHostToDevice,
                                      Stream ? Stream : I->Own),
                      "copying input '" + T.Name + "' to the device");
    return Error::success();
  };
  return I->noteSticky(Body());
}

Error ExecutionContext::copyOutputToHost(unsigned Index, void *Host,
                                         size_t Bytes, cudaStream_t Stream) {
  if (Error E = I->checkBroken())
    return E;
  auto Body = [&]() -> Error {
    if (I->M->Backend != ExecutionBackend::Cuda)
      return notOnReference("copyOutputToHost");
    if (I->Dyn)
      return I->Dyn->copyOutputToHost(Index, Host, Bytes, Stream);
    if (Index >= I->OutPtr.size())
      return rtError("no output #" + Twine(Index));
    const TensorInfo &T = I->M->Outputs[Index];
    if (Bytes != T.bytes())
      return rtError("output '" + T.Name + "' has " + Twine(T.bytes()) +
                     " bytes, the host buffer " + Twine(Bytes));
    cudaStream_t S = Stream ? Stream : I->Own;
    if (Bytes)
      SOLDER_CUDA_TRY(cudaMemcpyAsync(Host, I->OutPtr[Index], Bytes,
                                      cudaMemcpyDeviceToHost, S),
                      "copying output '" + T.Name + "' to the host");
    SOLDER_CUDA_TRY(cudaStreamSynchronize(S), "running the model");
    return Error::success();
  };
  return I->noteSticky(Body());
}

Error ExecutionContext::run(cudaStream_t Stream) {
  if (Error E = I->checkBroken())
    return E;
  auto Body = [&]() -> Error {
    if (I->M->Backend != ExecutionBackend::Cuda)
      return notOnReference("run");
    if (I->Dyn)
      return I->Dyn->run(Stream);
    if (!I->UseGraph || Stream)
      if (Error E = I->poison(Stream ? Stream : I->Own))
        return E;
    if (!I->UseGraph)
      return I->runEager(Stream ? Stream : I->Own);
    if (Stream)
      return I->runGraph(Stream);
    // The legacy default stream cannot be captured: run on the context's own
    // stream, ordered after and before the default stream's work.
    SOLDER_CUDA_TRY(cudaEventRecord(I->Before, nullptr), "cudaEventRecord");
    SOLDER_CUDA_TRY(cudaStreamWaitEvent(I->Own, I->Before, 0),
                    "cudaStreamWaitEvent");
    if (Error E = I->poison(I->Own))
      return E;
    if (Error E = I->runGraph(I->Own))
      return E;
    SOLDER_CUDA_TRY(cudaEventRecord(I->After, I->Own), "cudaEventRecord");
    SOLDER_CUDA_TRY(cudaStreamWaitEvent(nullptr, I->After, 0),
                    "cudaStreamWaitEvent");
    return Error::success();
  };
  return I->noteSticky(Body());
}

Error ExecutionContext::runStepByStep(
    cudaStream_t Stream, function_ref<Error(size_t Step, bool After)> Observe) {
  if (Error E = I->checkBroken())
    return E;
  auto Body = [&]() -> Error {
    if (I->M->Backend != ExecutionBackend::Cuda)
      return notOnReference("runStepByStep");
    if (I->Dyn) {
      Expected<ExecutionContext *> C = I->Dyn->current();
      if (!C)
        return C.takeError();
      return (*C)->runStepByStep(Stream, Observe);
    }
    cudaStream_t S = Stream ? Stream : I->Own;
    // Library and kernel code load lazily on a first run: not while another
    // thread captures a graph (see lazyLoadMutex).
    std::unique_lock<std::mutex> Lazy(lazyLoadMutex(), std::defer_lock);
    if (!I->FirstRunDone)
      Lazy.lock();
    SOLDER_CUDA_TRY(cudaStreamSynchronize(S), "waiting for earlier work");
    for (size_t K = 0; K < I->M->P.Steps.size(); ++K) {
      if (Error E = Observe(K, false))
        return E;
      if (Error E = I->enqueueSteps(S, K, K + 1))
        return E;
      SOLDER_CUDA_TRY(cudaStreamSynchronize(S),
                      "running step " + Twine(K) + " (" +
                          I->M->P.Steps[K].Label + ")");
      if (Error E = Observe(K, true))
        return E;
    }
    I->FirstRunDone = true;
    return Error::success();
  };
  return I->noteSticky(Body());
}

namespace {
/// Holds a stream (through cudaLaunchHostFunc) until opened, so the work
/// enqueued behind it runs back to back. A gate never opened lets the
/// stream go after two seconds: a host blocked on a full launch queue
/// cannot deadlock with it.
struct StreamGate {
  std::atomic<bool> Open{false};
  static void CUDART_CB wait(void *P) {
    auto *G = static_cast<StreamGate *>(P);
    auto Until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (!G->Open.load(std::memory_order_acquire) &&
           std::chrono::steady_clock::now() < Until)
      std::this_thread::yield();
  }
};

/// A captured graph and its executable, destroyed on scope exit.
struct GraphHolder {
  cudaGraph_t G = nullptr;
  cudaGraphExec_t Exec = nullptr;
  ~GraphHolder() {
    if (Exec)
      cudaGraphExecDestroy(Exec);
    if (G)
      cudaGraphDestroy(G);
  }
};
/// Events for one timed run of N steps, destroyed on scope exit.
struct StepEvents {
  std::vector<cudaEvent_t> E;
  ~StepEvents() {
    for (cudaEvent_t X : E)
      cudaEventDestroy(X);
  }
  /// Adds Count fresh events.
  Error create(size_t Count) {
    for (size_t K = 0; K < Count; ++K) {
      cudaEvent_t X;
      SOLDER_CUDA_TRY(cudaEventCreate(&X), "cudaEventCreate");
      E.push_back(X);
    }
    return Error::success();
  }
};

/// Captures what Enqueue puts on S into Graph and instantiates it.
Error captureInto(cudaStream_t S, GraphHolder &Graph,
                  function_ref<Error()> Enqueue) {
  SOLDER_CUDA_TRY(cudaStreamBeginCapture(S, cudaStreamCaptureModeThreadLocal),
                  "cudaStreamBeginCapture");
  Error E = Enqueue();
  cudaGraph_t G = nullptr;
  cudaError_t End = cudaStreamEndCapture(S, &G);
  Graph.G = G;
  if (E)
    return E;
  SOLDER_CUDA_TRY(End, "capturing the timed steps");
  SOLDER_CUDA_TRY(cudaGraphInstantiate(&Graph.Exec, G, 0),
                  "cudaGraphInstantiate");
  return Error::success();
}
} // namespace

Expected<std::vector<double>> ExecutionContext::timeSteps(cudaStream_t Stream,
                                                          unsigned Runs,
                                                          StepTiming Mode,
                                                          bool Nvtx) {
  if (I->M->Backend != ExecutionBackend::Cuda)
    return notOnReference("timeSteps");
  if (I->Dyn) {
    Expected<ExecutionContext *> C = I->Dyn->current();
    if (!C)
      return C.takeError();
    return (*C)->timeSteps(Stream, Runs, Mode, Nvtx);
  }
  if (Runs == 0)
    return rtError("timeSteps needs at least one run");
  cudaStream_t S = Stream ? Stream : I->Own;
  const std::vector<PlanStep> &Steps = I->M->P.Steps;
  size_t N = Steps.size();
  StepEvents Ev;
  if (Error E = Ev.create(N + 1))
    return std::move(E);
  std::unique_lock<std::mutex> Lazy(lazyLoadMutex(), std::defer_lock);
  if (!I->FirstRunDone)
    Lazy.lock();
  SOLDER_CUDA_TRY(cudaStreamSynchronize(S), "waiting for earlier work");
  // Launches the steps with an event after each (also what is captured:
  // inside a capture only an external record becomes a node that records
  // the event when the graph runs; a plain one just orders the capture).
  unsigned RecordFlags =
      Mode == StepTiming::InGraph ? cudaEventRecordExternal : 0;
  auto Enqueue = [&]() -> Error {
    SOLDER_CUDA_TRY(cudaEventRecordWithFlags(Ev.E[0], S, RecordFlags),
                    "cudaEventRecord");
    for (size_t K = 0; K < N; ++K) {
      bool Range = Nvtx && Mode == StepTiming::Launched;
      if (Range) {
        std::string Name = "step " + std::to_string(K) +
                           (Steps[K].GroupId >= 0
                                ? " group " + std::to_string(Steps[K].GroupId)
                                : std::string()) +
                           ": " + Steps[K].Label;
        nvtxRangePushA(Name.c_str());
      }
      Error E = I->enqueueSteps(S, K, K + 1);
      if (Range)
        nvtxRangePop();
      if (E)
        return E;
      SOLDER_CUDA_TRY(cudaEventRecordWithFlags(Ev.E[K + 1], S, RecordFlags),
                      "cudaEventRecord");
    }
    return Error::success();
  };
  GraphHolder Graph;
  if (Mode == StepTiming::InGraph) {
    // A first eager run loads what loads lazily; capture cannot.
    if (Error E = I->enqueueSteps(S))
      return std::move(E);
    SOLDER_CUDA_TRY(cudaStreamSynchronize(S), "running the steps");
    I->FirstRunDone = true;
    if (Error E = captureInto(S, Graph, Enqueue))
      return std::move(E);
  }
  std::vector<std::vector<double>> Ms(N);
  // Run 0 warms up (lazy loading, caches) and is not kept.
  for (unsigned R = 0; R <= Runs; ++R) {
    StreamGate Gate;
    if (Mode == StepTiming::InGraph) {
      SOLDER_CUDA_TRY(cudaGraphLaunch(Graph.Exec, S), "cudaGraphLaunch");
    } else {
      // Not the warm-up run: a library loading lazily may wait on the
      // stream it is called for.
      if (Mode == StepTiming::Queued && R > 0)
        SOLDER_CUDA_TRY(cudaLaunchHostFunc(S, StreamGate::wait, &Gate),
                        "cudaLaunchHostFunc");
      Error E = Enqueue();
      Gate.Open.store(true, std::memory_order_release);
      if (E) {
        cudaStreamSynchronize(S); // the gate must not outlive this scope
        return std::move(E);
      }
    }
    SOLDER_CUDA_TRY(cudaEventSynchronize(Ev.E[N]), "running the steps");
    I->FirstRunDone = true;
    if (Lazy.owns_lock())
      Lazy.unlock();
    if (R == 0)
      continue;
    for (size_t K = 0; K < N; ++K) {
      float T = 0;
      SOLDER_CUDA_TRY(cudaEventElapsedTime(&T, Ev.E[K], Ev.E[K + 1]),
                      "cudaEventElapsedTime");
      Ms[K].push_back(T);
    }
  }
  std::vector<double> Median(N);
  for (size_t K = 0; K < N; ++K) {
    std::sort(Ms[K].begin(), Ms[K].end());
    Median[K] = Ms[K][Ms[K].size() / 2];
  }
  return Median;
}

Expected<std::vector<double>>
ExecutionContext::timeStepRanges(cudaStream_t Stream,
                                 ArrayRef<std::pair<size_t, size_t>> Ranges,
                                 unsigned Runs, unsigned Reps) {
  if (I->M->Backend != ExecutionBackend::Cuda)
    return notOnReference("timeStepRanges");
  if (I->Dyn)
    return rtError("timeStepRanges: not for dynamic models");
  if (Runs == 0 || Reps == 0)
    return rtError("timeStepRanges needs at least one run and replay");
  size_t N = I->M->P.Steps.size();
  for (auto [First, Last] : Ranges)
    if (First >= Last || Last > N)
      return rtError("timeStepRanges: no steps [" + Twine(First) + ", " +
                     Twine(Last) + ") in a plan of " + Twine(N));
  cudaStream_t S = Stream ? Stream : I->Own;
  StepEvents Ev;
  if (Error E = Ev.create(2))
    return std::move(E);
  {
    // A first eager run loads what loads lazily; capture cannot.
    std::unique_lock<std::mutex> Lazy(lazyLoadMutex(), std::defer_lock);
    if (!I->FirstRunDone)
      Lazy.lock();
    if (Error E = I->enqueueSteps(S))
      return std::move(E);
    SOLDER_CUDA_TRY(cudaStreamSynchronize(S), "running the steps");
    I->FirstRunDone = true;
  }
  std::vector<double> Out;
  for (auto [First, Last] : Ranges) {
    GraphHolder Graph;
    if (Error E = captureInto(S, Graph, [&, First = First, Last = Last] {
          return I->enqueueSteps(S, First, Last);
        }))
      return std::move(E);
    std::vector<double> Ms;
    for (unsigned R = 0; R <= Runs; ++R) {
      SOLDER_CUDA_TRY(cudaEventRecord(Ev.E[0], S), "cudaEventRecord");
      for (unsigned K = 0; K < Reps; ++K)
        SOLDER_CUDA_TRY(cudaGraphLaunch(Graph.Exec, S), "cudaGraphLaunch");
      SOLDER_CUDA_TRY(cudaEventRecord(Ev.E[1], S), "cudaEventRecord");
      SOLDER_CUDA_TRY(cudaEventSynchronize(Ev.E[1]), "running the steps");
      float T = 0;
      SOLDER_CUDA_TRY(cudaEventElapsedTime(&T, Ev.E[0], Ev.E[1]),
                      "cudaEventElapsedTime");
      if (R > 0) // round 0 warms up
        Ms.push_back(double(T) / Reps);
    }
    std::sort(Ms.begin(), Ms.end());
    Out.push_back(Ms[Ms.size() / 2]);
  }
  return Out;
}

Error ExecutionContext::readBuffer(const BufferRef &Ref, void *Host,
                                   size_t Bytes) {
  if (I->M->Backend != ExecutionBackend::Cuda)
    return notOnReference("readBuffer");
  if (I->Dyn) {
    Expected<ExecutionContext *> C = I->Dyn->current();
    if (!C)
      return C.takeError();
    return (*C)->readBuffer(Ref, Host, Bytes);
  }
  if (Ref.Space == BufferSpace::Input && Ref.Index >= I->InPtr.size())
    return rtError("no input #" + Twine(Ref.Index));
  if (Ref.Space == BufferSpace::Output && Ref.Index >= I->OutPtr.size())
    return rtError("no output #" + Twine(Ref.Index));
  uint64_t Limit = 0;
  switch (Ref.Space) {
  case BufferSpace::Weights:
    Limit = I->M->P.Weights.size();
    break;
  case BufferSpace::Arena:
    Limit = I->M->P.ArenaBytes;
    break;
  case BufferSpace::Input:
    Limit = I->M->Inputs[Ref.Index].bytes();
    break;
  case BufferSpace::Output:
    Limit = I->M->Outputs[Ref.Index].bytes();
    break;
  }
  if (Ref.Offset > Limit || Bytes > Limit - Ref.Offset)
    return rtError("reading " + Twine(Bytes) + " bytes at offset " +
                   Twine(Ref.Offset) + " runs past the end of its buffer (" +
                   Twine(Limit) + " bytes)");
  if (I->ArgsStale)
    if (Error E = I->refreshArgs(I->Own))
      return E;
  if (Bytes)
    SOLDER_CUDA_TRY(
        cudaMemcpy(Host, I->resolve(Ref), Bytes, cudaMemcpyDeviceToHost),
        "reading a buffer back");
  return Error::success();
}

int ExecutionContext::device() const {
  return I->M->Backend == ExecutionBackend::Cuda ? I->M->Device : -1;
}
ExecutionBackend ExecutionContext::backend() const { return I->M->Backend; }
const CompiledModel &ExecutionContext::model() const { return *I->Model; }

void ExecutionContext::setUseCudaGraph(bool On) {
  I->UseGraph = On;
  if (I->Dyn)
    I->Dyn->setUseCudaGraph(On);
}
void ExecutionContext::setPoisonArena(bool On) { I->PoisonArena = On; }
bool ExecutionContext::usesCudaGraph() const {
  return I->Dyn ? I->Dyn->usesCudaGraph() : I->UseGraph;
}
uint64_t ExecutionContext::graphLaunches() const {
  return I->Dyn ? I->Dyn->graphLaunches() : I->GraphLaunches;
}
StringRef ExecutionContext::cudaGraphFailure() const {
  return I->Dyn ? I->Dyn->cudaGraphFailure() : StringRef(I->GraphFailure);
}

Expected<std::vector<Tensor>> ExecutionContext::runHost(ArrayRef<Tensor> Inputs,
                                                        cudaStream_t Stream) {
  if (I->Dyn)
    return I->Dyn->runHost(Inputs, Stream);
  const auto &Ins = I->M->Inputs;
  if (Inputs.size() != Ins.size())
    return rtError("the model takes " + Twine(Ins.size()) + " inputs, got " +
                   Twine(Inputs.size()));
  for (size_t K = 0; K < Ins.size(); ++K) {
    const Tensor &T = Inputs[K];
    if (T.dtype() != Ins[K].Elem ||
        ArrayRef<int64_t>(T.dims()) != ArrayRef<int64_t>(Ins[K].Dims))
      return rtError("input '" + Ins[K].Name + "': got " +
                     typeToString(T.type()) + ", the model takes " +
                     typeToString(TensorType(Ins[K].Elem, Ins[K].Dims)));
  }
  if (I->M->Backend == ExecutionBackend::Reference)
    return runReference(*I->M->RefGraph, Inputs);
  cudaStream_t S = Stream ? Stream : I->Own;
  for (size_t K = 0; K < Ins.size(); ++K) {
    const Tensor &T = Inputs[K];
    if (Error E = copyInputFromHost(K, T.rawData(), T.byteSize(), S))
      return std::move(E);
  }
  for (size_t K = 0; K < I->OutPtr.size(); ++K)
    if (Error E = bindOutput(K, I->OwnOut[K]))
      return std::move(E);
  if (Error E = run(S))
    return std::move(E);
  std::vector<Tensor> Out;
  for (size_t K = 0; K < I->M->Outputs.size(); ++K) {
    const TensorInfo &T = I->M->Outputs[K];
    Tensor R(T.Elem, T.Dims);
    if (Error E = copyOutputToHost(K, R.mutableRawData(), R.byteSize(), S))
      return std::move(E);
    Out.push_back(std::move(R));
  }
  return std::move(Out);
}

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
