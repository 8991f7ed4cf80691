//===- ExecutionContext.cpp - Bindings, runs and copies of one context ----===//
//
// An execution context owns one device allocation holding its arena, its
// own input/output buffers and the library workspace, plus its cuBLASLt and
// cuDNN handles and descriptors. Steady-state runs allocate nothing and
// never wait on the host: a run is one cudaGraphLaunch.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/KernelCompiler.h"
#include "runtime/cuda/MemoryPlanner.h"
#include "runtime/cuda/RuntimeImpl.h"
#include "runtime/reference/ReferenceExecutor.h"
#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>

using namespace llvm;

namespace solder {

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
    if (Error E = M->reserve(Size + P.ScratchBytes,
                             "an execution context (arena, inputs, "
                             "outputs, library workspace, kernel scratch)"))
      return E;
    Reserved = Size + P.ScratchBytes;
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
    if (!C.Graph)
      if (Error E = Convs.back()->init(C))
        return E;
  }
  if (Error E = initDnnPlans())
    return E;
  DependentLaunchOk = smVersionOf(P.Arch) >= 90;
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
  if (P.ScratchBytes) {
    SOLDER_CUDA_TRY(
        cudaMalloc(reinterpret_cast<void **>(&Scratch), P.ScratchBytes),
        "cudaMalloc of the " + Twine(P.ScratchBytes) + "-byte kernel scratch");
    SOLDER_CUDA_TRY(cudaMemset(Scratch, 0, P.ScratchBytes),
                    "zeroing the kernel scratch");
  }
  if (Error E = checkCooperativeKernels())
    return E;
  SOLDER_CUDA_TRY(cudaStreamCreateWithFlags(&Own, cudaStreamNonBlocking),
                  "cudaStreamCreate");
  SOLDER_CUDA_TRY(cudaEventCreateWithFlags(&Before, cudaEventDisableTiming),
                  "cudaEventCreate");
  SOLDER_CUDA_TRY(cudaEventCreateWithFlags(&After, cudaEventDisableTiming),
                  "cudaEventCreate");
  ArgValues.resize(P.Steps.size());
  ArgPtrs.resize(P.Steps.size());
  MapValues.resize(P.Steps.size());
  for (size_t S = 0; S < P.Steps.size(); ++S) {
    ArgValues[S].resize(P.Steps[S].Args.size());
    for (size_t A = 0; A < ArgValues[S].size(); ++A)
      ArgPtrs[S].push_back(&ArgValues[S][A]);
    if (P.Steps[S].K != PlanStep::Kind::Kernel)
      continue;
    const PlanKernel &K = P.Kernels[P.Steps[S].Index];
    MapValues[S].resize(K.TensorMaps.size());
    for (CUtensorMap &T : MapValues[S])
      ArgPtrs[S].push_back(&T);
    // Counts by value, from the plan (which the model keeps as long as
    // its contexts live).
    for (const int64_t &C : K.Counts)
      ArgPtrs[S].push_back(const_cast<int64_t *>(&C));
  }
  return Error::success();
}

Error ExecutionContext::Impl::checkCooperativeKernels() const {
  const Plan &P = M->P;
  int Dev = 0, Sms = 0;
  for (size_t I = 0; I < P.Kernels.size(); ++I) {
    const PlanKernel &K = P.Kernels[I];
    if (!K.Cooperative)
      continue;
    if (!Sms) {
      SOLDER_CUDA_TRY(cudaGetDevice(&Dev), "cudaGetDevice");
      SOLDER_CUDA_TRY(
          cudaDeviceGetAttribute(&Sms, cudaDevAttrMultiProcessorCount, Dev),
          "cudaDeviceGetAttribute");
    }
    int PerSm = 0;
    SOLDER_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
                        &PerSm, reinterpret_cast<const void *>(M->Kernels[I]),
                        int(K.Block[0] * K.Block[1] * K.Block[2]),
                        K.DynamicSharedBytes),
                    "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
    uint64_t Blocks = uint64_t(K.Grid[0]) * K.Grid[1] * K.Grid[2];
    uint64_t Fit = uint64_t(PerSm) * uint64_t(Sms);
    // Blocks in clusters (__cluster_dims__) are placed a cluster at a
    // time, within one GPC: fewer may fit than SMs times blocks a SM.
    cudaFuncAttributes FA = {};
    SOLDER_CUDA_TRY(cudaFuncGetAttributes(
                        &FA, reinterpret_cast<const void *>(M->Kernels[I])),
                    "cudaFuncGetAttributes");
    if (FA.requiredClusterWidth > 0) {
      cudaLaunchConfig_t Cfg = {};
      Cfg.gridDim = dim3(K.Grid[0], K.Grid[1], K.Grid[2]);
      Cfg.blockDim = dim3(K.Block[0], K.Block[1], K.Block[2]);
      Cfg.dynamicSmemBytes = K.DynamicSharedBytes;
      int Clusters = 0;
      SOLDER_CUDA_TRY(
          cudaOccupancyMaxActiveClusters(
              &Clusters, reinterpret_cast<const void *>(M->Kernels[I]), &Cfg),
          "cudaOccupancyMaxActiveClusters");
      Fit = std::min<uint64_t>(
          Fit, uint64_t(Clusters) * uint64_t(FA.requiredClusterWidth) *
                   uint64_t(std::max(1, FA.requiredClusterHeight)) *
                   uint64_t(std::max(1, FA.requiredClusterDepth)));
    }
    if (Blocks > Fit)
      return rtError("kernel " + K.Name + " needs its " + Twine(Blocks) +
                     " blocks resident at once and this GPU holds " +
                     Twine(Fit) +
                     "; compile the model for this GPU with --tune, or "
                     "with --gemm-kernels library");
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

Error ExecutionContext::Impl::encodeTensorMaps() {
  const Plan &P = M->P;
  for (size_t S = 0; S < P.Steps.size(); ++S) {
    if (MapValues[S].empty())
      continue;
    const PlanKernel &K = P.Kernels[P.Steps[S].Index];
    for (size_t I = 0; I < K.TensorMaps.size(); ++I) {
      const PlanTensorMap &T = K.TensorMaps[I];
      if (Error E = encodeTensorMap(T, ArgValues[S][T.Arg], MapValues[S][I],
                                    "kernel " + K.Name + ": argument " +
                                        Twine(T.Arg)))
        return E;
    }
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
  if (Error E = encodeTensorMaps())
    return E;
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

Error ExecutionContext::Impl::initDnnPlans() {
  const Plan &P = M->P;
  ConvGraphs.clear();
  ConvGraphOf.assign(P.Convs.size(), SIZE_MAX);
  std::map<std::string, size_t> Graphs;
  for (size_t I = 0; I < P.Convs.size(); ++I) {
    if (!P.Convs[I].Graph)
      continue;
    auto [It, New] =
        Graphs.emplace(convGraphPlanKey(P.Convs[I]), ConvGraphs.size());
    ConvGraphOf[I] = It->second;
    if (!New)
      continue;
    ConvGraphs.push_back(std::make_unique<ConvGraphCall>());
    if (Error E = ConvGraphs.back()->init(P.Convs[I], Dnn))
      return rtError(convLabel(P, I) + ": " + toString(std::move(E)));
    if (Error E =
            workspaceFits(convLabel(P, I), ConvGraphs.back()->workspaceBytes()))
      return E;
  }
  Attentions.clear();
  AttentionOf.clear();
  std::map<std::string, size_t> Built;
  for (size_t I = 0; I < P.Attentions.size(); ++I) {
    auto [It, New] =
        Built.emplace(attentionPlanKey(P.Attentions[I]), Attentions.size());
    AttentionOf.push_back(It->second);
    if (!New)
      continue;
    Attentions.push_back(std::make_unique<AttentionCall>());
    if (Error E = Attentions.back()->init(P.Attentions[I], Dnn))
      return rtError(attentionLabel(P, I) + ": " + toString(std::move(E)));
    if (Error E = workspaceFits(attentionLabel(P, I),
                                Attentions.back()->workspaceBytes()))
      return E;
  }
  return Error::success();
}

/// The model sized the shared workspace from the plans it built on its own
/// handle; cuDNN is expected to pick the same engine on this one. Should it
/// not, a larger workspace would be written past its end: refused instead.
Error ExecutionContext::Impl::workspaceFits(const std::string &Label,
                                            size_t Need) const {
  if (Need <= M->WorkspaceBytes)
    return Error::success();
  return rtError(Label + ": cuDNN's plan on this context needs " + Twine(Need) +
                 " bytes of workspace, the model sized " +
                 Twine(M->WorkspaceBytes) +
                 " when it was loaded; load the plan again");
}

Error ExecutionContext::Impl::enqueueSteps(cudaStream_t S, size_t First,
                                           size_t Last) {
  const Plan &P = M->P;
  if (ArgsStale)
    if (Error E = refreshArgs(S))
      return E;
  if (usesDnn())
    SOLDER_CUDNN_TRY(cudaLibs().cudnnSetStream(Dnn, S), "cudnnSetStream");
  for (size_t SI = First; SI < std::min(Last, P.Steps.size()); ++SI) {
    const PlanStep &St = P.Steps[SI];
    Error E = Error::success();
    switch (St.K) {
    case PlanStep::Kind::Kernel: {
      const PlanKernel &K = P.Kernels[St.Index];
      const void *Fn = reinterpret_cast<const void *>(M->Kernels[St.Index]);
      dim3 Grid(K.Grid[0], K.Grid[1], K.Grid[2]);
      dim3 Block(K.Block[0], K.Block[1], K.Block[2]);
      cudaError_t R;
      // A cooperative kernel's blocks wait for each other: all resident at
      // once, which a cooperative launch guarantees (checkCooperativeKernels).
      // A dependent launch may start while the step before finishes; the
      // kernel's own griddepcontrol.wait orders its reads after that step's
      // writes. A kernel may be both: it lets the next grid launch only
      // once all its blocks are resident (GemmEmitter.cpp).
      const bool Dependent = K.DependentLaunch && DependentLaunchOk;
      if (K.Cooperative || Dependent) {
        cudaLaunchAttribute Attrs[2];
        unsigned NumAttrs = 0;
        if (K.Cooperative) {
          Attrs[NumAttrs].id = cudaLaunchAttributeCooperative;
          Attrs[NumAttrs++].val.cooperative = 1;
        }
        if (Dependent) {
          Attrs[NumAttrs].id =
              cudaLaunchAttributeProgrammaticStreamSerialization;
          Attrs[NumAttrs++].val.programmaticStreamSerializationAllowed = 1;
        }
        cudaLaunchConfig_t Cfg = {};
        Cfg.gridDim = Grid;
        Cfg.blockDim = Block;
        Cfg.dynamicSmemBytes = K.DynamicSharedBytes;
        Cfg.stream = S;
        Cfg.attrs = Attrs;
        Cfg.numAttrs = NumAttrs;
        R = cudaLaunchKernelExC(&Cfg, Fn, ArgPtrs[SI].data());
      } else {
        R = cudaLaunchKernel(Fn, Grid, Block, ArgPtrs[SI].data(),
                             K.DynamicSharedBytes, S);
      }
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
      if (C.Graph) {
        std::vector<const void *> Reads(C.GraphReads.size(), nullptr);
        for (size_t I = 0; I < Reads.size(); ++I)
          if (C.GraphTensors[I].K == ConvGraphTensor::Kind::Operand)
            Reads[I] = resolve(C.GraphReads[I]);
        E = ConvGraphs[ConvGraphOf[St.Index]]->enqueue(
            Dnn, resolve(C.X), resolve(C.W), resolveMut(C.Y), Reads, Workspace);
        break;
      }
      E = Convs[St.Index]->enqueue(Dnn, resolve(C.X), resolve(C.W),
                                   resolveMut(C.Y),
                                   C.Fused ? resolve(C.Bias) : nullptr,
                                   C.Fused && C.HasZ ? resolve(C.Z) : nullptr,
                                   Workspace, M->WorkspaceBytes);
      break;
    }
    case PlanStep::Kind::Attention: {
      const AttentionConfig &C = P.Attentions[St.Index];
      E = Attentions[AttentionOf[St.Index]]->enqueue(
          Dnn, resolve(C.Q), resolve(C.K), resolve(C.V),
          C.HasBias ? resolve(C.Bias) : nullptr, resolveMut(C.O), Workspace);
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
    if (usesDnn()) // a handle that failed in a capture fails after it
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
    if (!usesDnn() || Attempt == 2)
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
  case BufferSpace::Scratch:
    Limit = I->M->P.ScratchBytes;
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
