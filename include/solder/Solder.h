//===- Solder.h - solder's C++ API ------------------------------*- C++ -*-===//
//
// Compile an ONNX model for the GPU, save and load plans, and run them:
//
//   solder::CompileOptions Opts;
//   Opts.InputShapes["input"] = {1, 3, 224, 224};
//   auto Model = solder::CompiledModel::compileFile("resnet.onnx", Opts);
//   if (!Model) ... llvm::toString(Model.takeError()) ...
//   auto Ctx = (*Model)->createContext();
//   (*Ctx)->copyInputFromHost(0, Data, Bytes, Stream);
//   (*Ctx)->run(Stream);
//   (*Ctx)->copyOutputToHost(0, Out, OutBytes, Stream); // synchronizes
//
// A CompiledModel is immutable once built and holds the weights on the
// device once; any number of ExecutionContexts (each with its own
// activation arena, library handles and CUDA graph) may run it at the same
// time from different threads on different streams. One context is used
// by one thread at a time.
//
// Compiling needs no GPU (NVRTC only); creating a context does, and fails
// with "no CUDA device: <reason>" where there is none. A model compiled for
// ExecutionBackend::Reference runs on the CPU reference executor instead
// (no GPU, no plan): its contexts take host tensors only (runHost).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_SOLDER_H
#define SOLDER_SOLDER_H

#include "ir/DType.h"
#include "ir/SizeLimits.h"
#include "ir/Tensor.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

typedef struct CUstream_st *cudaStream_t;
namespace llvm {
class raw_ostream;
}

namespace solder {

class Graph;
struct Plan;
struct BufferRef;
class ExecutionContext;
struct RuntimeAccess;

/// Where a compiled model runs.
enum class ExecutionBackend {
  /// The GPU plan: fused generated kernels and cuBLASLt/cuDNN calls.
  Cuda,
  /// The CPU reference executor (the correctness oracle) on the optimized
  /// graph: needs no GPU, is slow, has no plan file; contexts run host
  /// tensors only (ExecutionContext::runHost).
  Reference,
};

/// The sizes one dim of a dynamic input may take, both ends included.
struct DimRange {
  int64_t Min = 0, Max = 0;
  bool contains(int64_t D) const { return D >= Min && D <= Max; }
  bool operator==(const DimRange &O) const {
    return Min == O.Min && Max == O.Max;
  }
};

/// Told when a phase of compiling or loading begins (Done false) and ends
/// (Done true), for progress displays and timings. Phases: "passes",
/// "plan", "kernels" (NVRTC), "upload" (weights to the GPU), "tuning"
/// (library algorithm choice).
using PhaseCallback = std::function<void(llvm::StringRef Phase, bool Done)>;
/// One pipeline pass's wall time in seconds, summed over its runs.
using PassTimeCallback =
    std::function<void(llvm::StringRef Pass, double Seconds)>;

struct CompileOptions {
  ExecutionBackend Backend = ExecutionBackend::Cuda;
  /// Target architecture ("sm_90"); empty = the current GPU's, or sm_90
  /// when there is no GPU.
  std::string Arch;
  /// Concrete shapes of inputs with symbolic dims, by input name.
  llvm::StringMap<std::vector<int64_t>> InputShapes;
  /// Sizes of named dim symbols ("N" -> 4).
  llvm::StringMap<int64_t> SymbolSizes;
  /// Dynamic shapes: per input, a range for every dim (a fixed dim is a
  /// range of one size). The model then serves every shape in the ranges:
  /// each concrete shape first run is compiled into its own variant
  /// (kernels specialised to that shape, NVRTC's disk cache shared),
  /// variants share the device weights, and a context keeps a CUDA graph
  /// per shape. A shape outside the ranges is an error naming the dim.
  /// Needs the ONNX model itself (compileFile/compileBytes).
  llvm::StringMap<std::vector<DimRange>> InputRanges;
  /// How many variants (concrete shapes) a dynamic model keeps compiled,
  /// and a context keeps ready (graphs captured); least recently used
  /// ones beyond are dropped and compiled again when next needed.
  unsigned MaxShapeVariants = 8;
  /// Folder of the compiled-kernel cache; empty = the default one
  /// ($XDG_CACHE_HOME/solder, else ~/.cache/solder; see NvrtcOptions).
  std::string CacheDir;
  /// Lets fp32 matmuls and convolutions use TF32 tensor cores (faster,
  /// about 1e-3 relative error). Off by default.
  bool AllowTF32 = false;
  /// fp32 (default), tf32 (as AllowTF32), fp16 or bf16: float tensors
  /// are stored in that type, accumulation stays fp32. The model's fp32
  /// inputs and outputs keep their type (casts at the boundary) unless
  /// ComputeIo.
  Precision Prec = Precision::F32;
  bool ComputeIo = false;
  /// Layout of 2-D convolutions: Auto puts fp16/bf16 convolutions in NHWC
  /// (with transposes only where the region meets NCHW ops).
  ConvLayout Layout = ConvLayout::Auto;
  /// Pipeline passes to skip, by name.
  std::vector<std::string> DisabledPasses;
  /// No fusion at all (every op its own step), and fusion instances not to
  /// form (group ids or ONNX node names); see PipelineOptions.
  bool NoFusion = false;
  std::vector<std::string> DisabledFusions;
  /// Scaled dot-product attention becomes one Attention op (one generated
  /// flash-attention kernel on the GPU) everywhere; `--fuse-attention`.
  bool FuseAttention = false;
  /// f16/bf16 GPU plans: every LayerNorm whose users are matmuls (reading
  /// it as A, constant weights) and residual adds is deferred into them:
  /// they read its input and its row statistics, which a generated GEMM
  /// computes from the tiles it multiplies, so no LayerNorm kernel runs
  /// (`--defer-norms`; passes/NormDeferral.h). Experimental: measured
  /// slower than the split chain so far (bench/RESULTS.md); Tune does not
  /// try it.
  bool DeferNorms = false;
  /// Who runs matmul contraction groups: the library (cuBLASLt plus a
  /// generated kernel for the rest of the epilogue), one generated
  /// tensor-core GEMM with the whole epilogue, LayerNorm included
  /// (f16/bf16), or auto: what Tune chose, else the library.
  GemmKernels Gemm = GemmKernels::Auto;
  /// Who runs attention groups: the generated flash-attention kernel,
  /// cuDNN's fused attention (f16/bf16; the plan fails to load where cuDNN
  /// refuses the group), or auto: what Tune chose, else generated.
  AttentionKernels Attention = AttentionKernels::Auto;
  /// How convolution groups run: cuDNN's fused call plus a generated kernel
  /// for the rest, one cuDNN operation graph for the whole chain (NHWC
  /// f16/bf16; the plan fails to load where cuDNN has no engine for a
  /// group), or auto: what Tune chose, else the fused call.
  ConvEpilogues Conv = ConvEpilogues::Auto;
  /// Experimental, not yet measured on a GPU: generated kernels (sm_90+)
  /// launch as programmatic dependents of the step before
  /// (`--dependent-launch`), overlapping its tail with their launch.
  bool DependentLaunch = false;
  /// With Gemm auto and a GPU here: times both ways of running each
  /// matmul group that has a generated GEMM, on this GPU, and keeps the
  /// faster (the fusion report shows both times). Needs the GPU; library
  /// algorithms are chosen by loadOnDevice as before.
  bool Tune = false;
  /// Without FuseAttention: fp16/bf16 plans fuse attention where its
  /// kernel's grid fills the GPU (B*H*ceil(Sq/64) >= 128 blocks) or it has
  /// at most 256 keys, where it was measured faster; fp32 plans never.
  /// `--no-fuse-attention` clears it.
  bool AutoAttention = true;
  /// Resource limits against hostile models (see ir/SizeLimits.h):
  /// constant folding leaves a node unfolded when a result would exceed
  /// MaxConstantBytes, and a value whose static size exceeds MaxTensorBytes
  /// fails the compile with the node named.
  size_t MaxConstantBytes = DefaultMaxConstantBytes;
  uint64_t MaxTensorBytes = DefaultMaxTensorBytes;
  /// Device memory the model may hold (see setDeviceMemoryLimit); 0 = no
  /// limit but the GPU's.
  uint64_t MaxDeviceMemory = 0;
  /// Test only: the generated kernel of this group id adds a small error
  /// to its first output, so `solder compare` can be shown to find it.
  int64_t PerturbGroupId = -1;
  /// Progress lines for long steps; null = quiet.
  llvm::raw_ostream *Progress = nullptr;
  /// Phase begin/end notifications (compiling, and later loading the
  /// model onto the GPU); empty = none.
  PhaseCallback OnPhase;
  /// After the pass pipeline: each pass's time, in the order the passes
  /// first ran (`solder compile --verbose`); empty = not measured.
  PassTimeCallback OnPassTime;
};

/// A graph input or output.
struct TensorInfo {
  std::string Name;
  DType Elem = DType::F32;
  /// For a dynamic model: the dims at the largest shape (inputs at every
  /// range's Max, outputs as that shape gives them); ExecutionContext's
  /// inputDims/outputDims give the current ones.
  std::vector<int64_t> Dims;
  /// Inputs of a dynamic model: the range of every dim; empty otherwise.
  std::vector<DimRange> Ranges;
  size_t bytes() const;
};

/// Memory and launch figures of a compiled model.
struct ModelStats {
  size_t Steps = 0;             ///< launches (kernels + library calls) per run
  size_t Kernels = 0;           ///< distinct generated kernels
  size_t LibraryCalls = 0;      ///< cuBLASLt + cuDNN calls per run
  uint64_t ArenaBytes = 0;      ///< activation arena of one context
  uint64_t NaiveArenaBytes = 0; ///< every intermediate in its own buffer
  uint64_t WeightBytes = 0;
};

class CompiledModel : public std::enable_shared_from_this<CompiledModel> {
public:
  ~CompiledModel();

  static llvm::Expected<std::shared_ptr<CompiledModel>>
  compileFile(llvm::StringRef OnnxPath, const CompileOptions &Opts = {});
  static llvm::Expected<std::shared_ptr<CompiledModel>>
  compileBytes(llvm::StringRef OnnxBytes, const CompileOptions &Opts = {});
  /// Compiles an imported graph for the GPU; the pass pipeline rewrites G
  /// in place (the reference backend, which keeps the graph, is refused).
  static llvm::Expected<std::shared_ptr<CompiledModel>>
  compileGraph(Graph &G, const CompileOptions &Opts = {});
  /// The same for a graph the model takes over, for either backend.
  static llvm::Expected<std::shared_ptr<CompiledModel>>
  compileGraph(std::unique_ptr<Graph> G, const CompileOptions &Opts = {});

  /// Reads a plan written by savePlan (or `solder compile`). A plan for
  /// another architecture is recompiled from its kernel sources when it is
  /// loaded onto a GPU of that architecture.
  static llvm::Expected<std::shared_ptr<CompiledModel>>
  loadPlan(llvm::StringRef Path);
  static llvm::Expected<std::shared_ptr<CompiledModel>> fromPlan(Plan P);
  /// Writes the plan atomically (temporary file, then rename). A model for
  /// the reference backend has no plan: an error.
  llvm::Error savePlan(llvm::StringRef Path) const;
  ExecutionBackend backend() const;
  /// Compiled with InputRanges: serves a range of shapes (see there).
  bool isDynamic() const;
  /// A dynamic model's variant for these concrete input dims (one vector
  /// per input, in input order), compiled now unless it is kept already.
  llvm::Expected<std::shared_ptr<CompiledModel>>
  shapeVariant(llvm::ArrayRef<std::vector<int64_t>> InputDims);
  /// Variants compiled so far (a dynamic model; 0 otherwise).
  size_t shapeVariantsCompiled() const;

  llvm::ArrayRef<TensorInfo> inputs() const;
  llvm::ArrayRef<TensorInfo> outputs() const;
  /// Index of the input/output of that name, or -1.
  int inputIndex(llvm::StringRef Name) const;
  int outputIndex(llvm::StringRef Name) const;
  ModelStats stats() const;
  /// The plan it runs (steps, groups, buffers; for reports and debugging).
  const Plan &plan() const;

  /// Phase notifications of loading onto the GPU ("kernels" when a plan is
  /// recompiled, "upload", "tuning"); replaces CompileOptions::OnPhase.
  /// Set it before the first context is created.
  void setPhaseCallback(PhaseCallback OnPhase);
  /// Caps what this model holds on the device, its weights plus the
  /// blocks of its contexts (arena, own inputs/outputs, library workspace;
  /// not the libraries' own handles): a load or createContext that would
  /// exceed it fails, naming what did not fit, and frees what it had
  /// allocated. 0 = no limit. Static models (a dynamic model's variants
  /// are not counted yet).
  void setDeviceMemoryLimit(uint64_t Bytes);
  /// Uploads weights, loads kernels and chooses library algorithms on the
  /// current device (done once; createContext calls it). The algorithms
  /// are recorded in the plan with the GPU's name: savePlan afterwards
  /// writes a tuned plan, whose algorithms every later load on the same
  /// GPU model reuses (`solder compile --tune`).
  llvm::Error loadOnDevice();
  /// A new execution context on the current device (for the reference
  /// backend: on the CPU, always available).
  llvm::Expected<std::unique_ptr<ExecutionContext>> createContext();

  struct Impl;

private:
  friend struct RuntimeAccess;
  explicit CompiledModel(std::unique_ptr<Impl> I);
  std::unique_ptr<Impl> I;
};

class ExecutionContext {
public:
  ~ExecutionContext();

  /// Reads/writes the caller's device buffer directly on every run
  /// (16-byte aligned, the tensor's size, on device()); null binds the
  /// context's own buffer again. A new address makes the next run
  /// re-capture its CUDA graph: bind the same buffers for the fastest runs.
  /// An output's buffer must not overlap an input's or another output's
  /// (kernels take their buffers as __restrict__): run() refuses it.
  llvm::Error bindInput(unsigned Index, const void *DevicePtr);
  llvm::Error bindOutput(unsigned Index, void *DevicePtr);
  /// Dynamic models: the concrete dims of input Index for the next runs
  /// (checked against its ranges); until set, an input has its Max dims.
  /// Binding buffers and copying come after: sizes follow these dims.
  llvm::Error setInputShape(unsigned Index, llvm::ArrayRef<int64_t> Dims);
  /// The dims input/output Index has for the next run (a dynamic model's
  /// output dims: its variant for the current input shapes is compiled
  /// first when it does not exist yet).
  llvm::Expected<std::vector<int64_t>> inputDims(unsigned Index) const;
  llvm::Expected<std::vector<int64_t>> outputDims(unsigned Index);
  /// Enqueues a copy of host data into the context's own input buffer
  /// (and binds that buffer); Bytes must be the input's size.
  llvm::Error copyInputFromHost(unsigned Index, const void *Host, size_t Bytes,
                                cudaStream_t Stream);
  /// Enqueues a copy of an output into host memory and waits for it.
  llvm::Error copyOutputToHost(unsigned Index, void *Host, size_t Bytes,
                               cudaStream_t Stream);
  /// The device buffer input/output Index is read from/written to now.
  const void *inputBuffer(unsigned Index) const;
  void *outputBuffer(unsigned Index) const;
  /// The CUDA device the context's buffers live on and bound buffers must
  /// be on; -1 for the reference backend.
  int device() const;
  const CompiledModel &model() const;
  ExecutionBackend backend() const;

  /// Runs the model on Stream, asynchronously. With CUDA graphs on (the
  /// default), the first run also captures the steps into a graph and
  /// later runs replay it; rebinding a buffer recaptures.
  llvm::Error run(cudaStream_t Stream);
  void setUseCudaGraph(bool On);
  /// Debugging: before every run the activation arena is filled with 0xFF
  /// bytes (NaN in every float type, -1 in integers), so a step reading
  /// memory that no earlier step of the run wrote shows in the outputs.
  /// Costs a memset per run. Not for dynamic models.
  void setPoisonArena(bool On);
  bool usesCudaGraph() const;
  /// Graph launches so far (0 while running step by step).
  uint64_t graphLaunches() const;
  /// Why capturing a CUDA graph failed, when it did (the context then runs
  /// step by step); empty otherwise.
  llvm::StringRef cudaGraphFailure() const;

  /// Runs the steps one by one on Stream (no CUDA graph), synchronizing
  /// after each; Observe(StepIndex, /*After=*/false) is called before step
  /// StepIndex runs and Observe(StepIndex, true) after it has finished. An
  /// error from Observe stops the run and is returned. For debugging
  /// (`solder compare`), not for speed.
  llvm::Error runStepByStep(
      cudaStream_t Stream,
      llvm::function_ref<llvm::Error(size_t Step, bool After)> Observe);
  /// How timeSteps runs the steps.
  enum class StepTiming {
    /// Launched back to back on the stream (no CUDA graph, as `solder bench
    /// --no-cuda-graph`): a step's time is its GPU time, or its launch
    /// interval when the host's launch cost is the larger.
    Launched,
    /// Captured with the events into one CUDA graph and replayed: each
    /// step's GPU time as the plan's graph runs it.
    InGraph,
    /// Launched back to back behind a host gate that holds the stream
    /// until every step is enqueued: each step's GPU time without the
    /// host's launch gaps, and without capturing (for plans whose steps
    /// cannot be captured together with events).
    Queued,
  };
  /// Times every step: Runs runs with a CUDA event after each step, after
  /// one untimed run; returns each step's median milliseconds. With Nvtx
  /// (Launched), every step is an NVTX range named by its group and label,
  /// so Nsight Systems shows it. For `solder profile`.
  llvm::Expected<std::vector<double>>
  timeSteps(cudaStream_t Stream, unsigned Runs, StepTiming Mode, bool Nvtx);
  /// Times ranges of steps for tuning: each [First, Last) is captured
  /// alone into a CUDA graph and replayed Reps times back to back between
  /// two events, Runs times (after one full eager run and one untimed
  /// round); returns each range's median milliseconds per replay. The
  /// steps run on whatever the buffers hold.
  llvm::Expected<std::vector<double>>
  timeStepRanges(cudaStream_t Stream,
                 llvm::ArrayRef<std::pair<size_t, size_t>> Ranges,
                 unsigned Runs, unsigned Reps);
  /// Copies Bytes at Ref (any space: weights, arena, input, output) to
  /// Host, synchronously; meant for use inside Observe. Arena contents are
  /// those of the latest step that wrote them.
  llvm::Error readBuffer(const BufferRef &Ref, void *Host, size_t Bytes);

  /// Host inputs in, host outputs out (synchronous); the only way to run a
  /// reference-backend context (the other run/bind/copy calls fail there).
  llvm::Expected<std::vector<Tensor>> runHost(llvm::ArrayRef<Tensor> Inputs,
                                              cudaStream_t Stream = nullptr);

  struct Impl;

private:
  friend class CompiledModel;
  friend struct RuntimeAccess;
  explicit ExecutionContext(std::unique_ptr<Impl> I);
  std::unique_ptr<Impl> I;
};

} // namespace solder

#endif
