//===- StepTiming.cpp - Per-step GPU times for profile and bench ----------===//
//
// ExecutionContext::timeSteps and its launched twin: every step's time,
// measured with events recorded inside the captured graph (external
// records) or, where capture fails, between launches held behind a gate.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/RuntimeImpl.h"
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <nvtx3/nvToolsExt.h>
#include <thread>

using namespace llvm;

namespace solder {

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

} // namespace solder
