//===- RuntimeImpl.h - What CompiledModel and ExecutionContext hold -*- C++
//-*-===//
//
// The private state of a compiled model and of an execution context,
// shared by the files that implement them: CompiledModel.cpp (compile,
// load onto the device, contexts), ExecutionContext.cpp (bindings, runs,
// copies) and StepTiming.cpp (per-step timing for profile and bench).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_RUNTIMEIMPL_H
#define SOLDER_RUNTIME_CUDA_RUNTIMEIMPL_H

#include "runtime/cuda/CudaLibraries.h"
#include "runtime/cuda/CudaSupport.h"
#include "runtime/cuda/CudnnAttention.h"
#include "runtime/cuda/CudnnConvGraph.h"
#include "runtime/cuda/LibraryCalls.h"
#include "runtime/cuda/Plan.h"
#include "runtime/cuda/ShapeVariants.h"
#include "solder/Solder.h"
#include "llvm/Support/Error.h"
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

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
std::mutex &lazyLoadMutex();

inline llvm::Error rtError(const llvm::Twine &Msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), Msg);
}

inline llvm::Error notOnReference(llvm::StringRef What) {
  return rtError(What + " needs the cuda backend: a reference-backend model "
                        "runs host tensors only (runHost)");
}

struct CompiledModel::Impl {
  Plan P;
  std::vector<TensorInfo> Inputs, Outputs;
  std::string CacheDir;
  llvm::raw_ostream *Progress = nullptr;
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
  llvm::Error reserve(uint64_t Bytes, const llvm::Twine &What) {
    uint64_t Used = DeviceUsed.fetch_add(Bytes);
    if (DeviceLimit && Used + Bytes > DeviceLimit) {
      DeviceUsed -= Bytes;
      return rtError("device memory limit of " + llvm::Twine(DeviceLimit) +
                     " bytes (--max-device-memory) exceeded: " + What +
                     " needs " + llvm::Twine(Bytes) + " bytes, " +
                     llvm::Twine(Used) + " are in use by this model");
    }
    return llvm::Error::success();
  }
  llvm::Error load();
  llvm::Error loadOnce();
};

struct ExecutionContext::Impl {
  std::shared_ptr<CompiledModel> Model;
  CompiledModel::Impl *M = nullptr;
  cudnnHandle_t Dnn = nullptr;
  cublasLtHandle_t Lt = nullptr;
  std::vector<std::unique_ptr<GemmCall>> Gemms;
  std::vector<std::unique_ptr<ConvCall>> Convs;
  /// Built on Dnn (an execution plan belongs to its handle), one per
  /// distinct attentionPlanKey; AttentionOf maps Plan::Attentions to them.
  std::vector<std::unique_ptr<AttentionCall>> Attentions;
  std::vector<size_t> AttentionOf;
  /// Likewise the convolution graphs (one per distinct convGraphPlanKey);
  /// ConvGraphOf maps Plan::Convs to them (SIZE_MAX: a legacy call).
  std::vector<std::unique_ptr<ConvGraphCall>> ConvGraphs;
  std::vector<size_t> ConvGraphOf;
  /// The plan's kernels were built for sm_90 or later, where the
  /// griddepcontrol in DependentLaunch kernels is compiled in.
  bool DependentLaunchOk = false;
  /// One allocation: arena | own inputs | own outputs | workspace |
  /// pointer tables.
  char *Block = nullptr;
  char *Arena = nullptr, *Workspace = nullptr;
  std::vector<char *> OwnIn, OwnOut;
  std::vector<const void *> InPtr;
  std::vector<void *> OutPtr;
  /// Kernel parameters per step: the pointer values and pointers to them
  /// (then to the step's tensor maps, encoded from the pointers).
  std::vector<std::vector<void *>> ArgValues, ArgPtrs;
  std::vector<std::vector<CUtensorMap>> MapValues;
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
  /// Kernels' scratch (Plan::ScratchBytes), zeroed once: its own
  /// allocation, since kernels keep state in it between runs (a shared
  /// dynamic block does not keep it).
  char *Scratch = nullptr;
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
    Attentions.clear();
    ConvGraphs.clear();
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
    if (Scratch)
      cudaFree(Scratch);
  }

  /// Offsets in the context's block; returns its size. Without own I/O
  /// there are no input/output buffers in it.
  uint64_t layout(bool OwnIo, std::vector<uint64_t> &InOff,
                  std::vector<uint64_t> &OutOff, uint64_t &WsOff);
  /// Creates handles and calls; allocates the block unless External.
  llvm::Error init(char *External = nullptr, uint64_t ExternalBytes = 0);
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
    case BufferSpace::Scratch:
      return Scratch + R.Offset;
    }
    return nullptr;
  }
  void *resolveMut(const BufferRef &R) const {
    return const_cast<char *>(resolve(R));
  }
  /// Resolves kernel parameters and pointer tables against the current
  /// bindings. Uploading tables waits for S (no run on it may still read
  /// them); never called while S is capturing.
  llvm::Error refreshArgs(cudaStream_t S);
  /// MapValues from ArgValues (refreshArgs).
  llvm::Error encodeTensorMaps();
  /// An error naming the first cooperative kernel whose blocks this GPU
  /// cannot hold at once.
  llvm::Error checkCooperativeKernels() const;
  /// Enqueues steps [First, Last) (all of them by default).
  llvm::Error enqueueSteps(cudaStream_t S, size_t First = 0,
                           size_t Last = SIZE_MAX);
  llvm::Error runEager(cudaStream_t S);
  llvm::Error runGraph(cudaStream_t S);
  /// Whether any step calls cuDNN.
  bool usesDnn() const { return !Convs.empty() || !Attentions.empty(); }
  /// The attention calls and convolution graphs, built on the current
  /// handle.
  llvm::Error initDnnPlans();
  /// An error naming Label when Need exceeds the model's workspace.
  llvm::Error workspaceFits(const std::string &Label, size_t Need) const;
  /// A new cuDNN handle in place of the current one (see runGraph); the
  /// attention and convolution plans are built again on it.
  llvm::Error renewDnn() {
    Attentions.clear();
    ConvGraphs.clear();
    if (Dnn)
      cudaLibs().cudnnDestroy(Dnn);
    Dnn = nullptr;
    SOLDER_CUDNN_TRY(cudaLibs().cudnnCreate(&Dnn), "cudnnCreate");
    return initDnnPlans();
  }
  /// Captures that failed and were tried again with a new cuDNN handle.
  unsigned CaptureRetries = 0;
  /// A call after a sticky CUDA error: refused, saying why.
  llvm::Error checkBroken() const {
    if (Broken.empty())
      return llvm::Error::success();
    return rtError("the GPU failed earlier with a sticky error (" + Broken +
                   "); this context refuses to run: restart the process");
  }
  /// E, after noting a sticky error behind it (the process's CUDA context
  /// is then unusable).
  llvm::Error noteSticky(llvm::Error E) {
    if (!E || !Own) // the reference backend and dynamic contexts have none
      return E;
    cudaError_t S = cudaStreamQuery(Own);
    if (isStickyCudaError(S) && Broken.empty())
      Broken = cudaGetErrorString(S);
    return E;
  }
  /// setPoisonArena: the arena filled with 0xFF on S, before a run.
  llvm::Error poison(cudaStream_t S) {
    if (PoisonArena && M->P.ArenaBytes)
      SOLDER_CUDA_TRY(cudaMemsetAsync(Arena, 0xFF, M->P.ArenaBytes, S),
                      "poisoning the arena");
    return llvm::Error::success();
  }
};

} // namespace solder

#endif // SOLDER_RUNTIME_CUDA_RUNTIMEIMPL_H
