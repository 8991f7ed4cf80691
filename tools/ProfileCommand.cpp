//===- ProfileCommand.cpp - `solder profile MODEL` ------------------------===//
//
// Where a run's time goes, step by step (ExecutionContext::timeSteps,
// medians of --runs): each step's GPU time as the plan's graph runs it,
// captured with a CUDA event after each step into one graph (or, where
// library calls cannot be captured with events between them, launched back
// to back behind a host gate so the GPU never waits for the host): the
// table's "gpu ms", percentages and roofline; and each step launched with an
// event after it ("launch ms": the host's launch cost shows there, the
// events' own cost included). Whole runs are timed too, without per-step
// events: the plan's graph replay (the total a user gets) and the steps
// launched one by one (what `solder bench --no-cuda-graph` measures). Each
// step gets its FLOPs and bytes moved (library calls from their configuration;
// a generated kernel from its group's operands and results, when the kernel is
// the group's only step), achieved TFLOP/s and GB/s, and the share of its
// roofline bound, max(FLOPs / peak FLOP/s, bytes / peak bandwidth), with the
// peaks computed from the device (currentGpuPeaks). Also: a summary by step
// kind, the ten slowest steps, --json, and --trace FILE, a Chrome/Perfetto
// trace of one run laid out from the medians. Every step is an NVTX range while
// it is timed (Nsight Systems shows its label).
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaSupport.h"
#include "runtime/cuda/LibraryCalls.h"
#include "runtime/cuda/Plan.h"
#include "tools/CommandUtils.h"
#include "tools/GpuCommands.h"
#include "tools/RandomInputs.h"
#include "tools/TensorIO.h"
#include "tools/Verbosity.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <map>
#include <numeric>

using namespace llvm;

namespace solder {

static cl::SubCommand ProfileCmd("profile",
                                 "Time every step of a model on the GPU, "
                                 "with FLOPs, bytes and roofline");
static cl::OptionCategory ProfileCat("profile options");
static cl::opt<std::string> ProfileModel(cl::Positional, cl::Required,
                                         cl::desc("<model.onnx|model.plan>"),
                                         cl::sub(ProfileCmd),
                                         cl::cat(ProfileCat));
static cl::list<std::string>
    ProfileShapes("shape", cl::value_desc("name=dims"),
                  cl::desc("Input shape or dim symbol size (ONNX models)"),
                  cl::sub(ProfileCmd), cl::cat(ProfileCat));
static cl::opt<unsigned> ProfileRuns("runs", cl::init(50),
                                     cl::desc("Timed runs (medians are "
                                              "reported)"),
                                     cl::sub(ProfileCmd), cl::cat(ProfileCat));
static cl::opt<bool> ProfileJson("json", cl::desc("Print one JSON object"),
                                 cl::sub(ProfileCmd), cl::cat(ProfileCat));
static cl::opt<std::string>
    ProfileTrace("trace", cl::value_desc("file.json"),
                 cl::desc("Write a Chrome/Perfetto trace of one run"),
                 cl::sub(ProfileCmd), cl::cat(ProfileCat));
static cl::opt<std::string> ProfileArch("arch", cl::value_desc("sm_XY"),
                                        cl::desc("Compile for this "
                                                 "architecture"),
                                        cl::sub(ProfileCmd),
                                        cl::cat(ProfileCat));
static cl::opt<std::string> ProfileCacheDir("cache-dir", cl::value_desc("dir"),
                                            cl::desc("Compiled-kernel cache"),
                                            cl::sub(ProfileCmd),
                                            cl::cat(ProfileCat));
static cl::opt<bool> ProfileTF32("allow-tf32",
                                 cl::desc("Let fp32 matmuls and convolutions "
                                          "use TF32"),
                                 cl::sub(ProfileCmd), cl::cat(ProfileCat));

static FusionFlags ProfileFusion(ProfileCmd, ProfileCat);
static PrecisionFlags ProfilePrecision(ProfileCmd, ProfileCat);
static VerbosityFlags ProfileVerbosity(ProfileCmd, ProfileCat);
static LimitFlags ProfileLimits(ProfileCmd, ProfileCat);
static DeviceMemoryFlag ProfileDeviceMemory(ProfileCmd, ProfileCat);

cl::SubCommand &profileSubCommand() { return ProfileCmd; }

namespace {

/// What one step computes and moves; Known is false when the bytes of a
/// kernel cannot be told apart from the rest of its group's.
struct StepCost {
  double Flops = 0, Bytes = 0;
  bool Known = true;
  /// The math peak that applies: tensor-core fp16/bf16, TF32, or fp32.
  enum class Math { Fp32, Tf32, Half } M = Math::Fp32;
};

double product(ArrayRef<int64_t> D) {
  double P = 1;
  for (int64_t X : D)
    P *= double(X);
  return P;
}

StepCost::Math mathOf(DType T, bool AllowTF32) {
  if (T == DType::F16 || T == DType::BF16)
    return StepCost::Math::Half;
  return AllowTF32 && T == DType::F32 ? StepCost::Math::Tf32
                                      : StepCost::Math::Fp32;
}

double valueBytes(const PlanValue &V) {
  return product(V.Dims) * double(dtypeSize(V.Elem));
}

/// FLOPs and bytes of step K. GroupOf maps a step to its Plan::Groups
/// entry.
StepCost stepCost(const Plan &P, size_t K,
                  const std::map<size_t, const PlanGroup *> &GroupOf) {
  const PlanStep &S = P.Steps[K];
  StepCost C;
  switch (S.K) {
  case PlanStep::Kind::Gemm: {
    const GemmConfig &G = P.Gemms[S.Index];
    double Batches = G.pointerArrays() ? product(G.BatchDims) : double(G.Batch);
    double E = double(dtypeSize(G.Elem)), M = double(G.M), N = double(G.N),
           Kd = double(G.K);
    C.Flops = 2 * M * N * Kd * Batches;
    // An operand with batch stride 0 is read once.
    double A = M * Kd * (G.StrideA || G.pointerArrays() ? Batches : 1);
    double B = Kd * N * (G.StrideB || G.pointerArrays() ? Batches : 1);
    double D = M * N * Batches;
    double Extra =
        (G.CFrom != GemmConfig::CSource::None ? D : 0) + (G.hasBias() ? M : 0);
    C.Bytes = (A + B + D + Extra) * E;
    C.M = mathOf(G.Elem, G.AllowTF32);
    return C;
  }
  case PlanStep::Kind::Conv: {
    const ConvConfig &V = P.Convs[S.Index];
    double E = double(dtypeSize(V.Elem));
    // Each output (forward) or input (transposed) element takes one
    // multiply-add per filter tap of its group.
    double Per = product(ArrayRef<int64_t>(V.WDims).drop_front());
    C.Flops = 2 * (V.Transpose ? product(V.XDims) : product(V.YDims)) * Per;
    C.Bytes =
        (product(V.XDims) + product(V.WDims) + product(V.YDims) +
         (V.HasZ ? product(V.YDims) : 0) + (V.Fused ? double(V.YDims[1]) : 0)) *
        E;
    C.M = mathOf(V.Elem, V.AllowTF32);
    return C;
  }
  case PlanStep::Kind::Attention: {
    // Q K^T and P V; Q, K, V, the mask and O each moved once.
    const AttentionConfig &A = P.Attentions[S.Index];
    double B = double(A.Batch), Hq = double(A.QHeads), Hk = double(A.KvHeads),
           Sq = double(A.QLen), Sk = double(A.KvLen), D = double(A.HeadDim),
           Dv = double(A.VHeadDim);
    C.Flops = 2 * B * Hq * Sq * Sk * (D + Dv);
    double Mask = A.HasBias ? product(A.BiasDims) : 0;
    C.Bytes = (B * Hq * Sq * (D + Dv) + B * Hk * Sk * (D + Dv) + Mask) *
              double(dtypeSize(A.Elem));
    C.M = StepCost::Math::Half;
    return C;
  }
  case PlanStep::Kind::Copy:
    C.Bytes = 2.0 * double(P.Copies[S.Index].Bytes);
    return C;
  case PlanStep::Kind::Kernel: {
    auto It = GroupOf.find(K);
    if (It == GroupOf.end() || It->second->Steps.size() != 1) {
      C.Known = false;
      return C;
    }
    for (const PlanValue &V : It->second->Operands)
      C.Bytes += valueBytes(V);
    for (const PlanValue &V : It->second->Results)
      C.Bytes += valueBytes(V);
    return C;
  }
  }
  return C;
}

const char *kindName(PlanStep::Kind K) {
  switch (K) {
  case PlanStep::Kind::Kernel:
    return "kernel";
  case PlanStep::Kind::Gemm:
    return "cublaslt";
  case PlanStep::Kind::Conv:
  case PlanStep::Kind::Attention:
    return "cudnn";
  case PlanStep::Kind::Copy:
    return "copy";
  }
  return "?";
}

/// Owns the profile's stream and events.
struct ProfileResources {
  cudaStream_t Stream = nullptr;
  cudaEvent_t Start = nullptr, Stop = nullptr;
  ~ProfileResources() {
    if (Start)
      cudaEventDestroy(Start);
    if (Stop)
      cudaEventDestroy(Stop);
    if (Stream)
      cudaStreamDestroy(Stream);
  }
};

} // namespace

/// Median milliseconds of Runs whole runs: graph replays, or the steps
/// launched one by one as `solder bench --no-cuda-graph` runs them.
static Expected<double> timeWholeRuns(ExecutionContext &C, ProfileResources &R,
                                      unsigned Runs, bool Graph) {
  C.setUseCudaGraph(Graph);
  for (int I = 0; I < 10; ++I) // as bench's default warm-up
    if (Error E = C.run(R.Stream))
      return std::move(E);
  std::vector<double> Ms;
  for (unsigned I = 0; I < Runs; ++I) {
    SOLDER_CUDA_TRY(cudaEventRecord(R.Start, R.Stream), "cudaEventRecord");
    if (Error E = C.run(R.Stream))
      return std::move(E);
    SOLDER_CUDA_TRY(cudaEventRecord(R.Stop, R.Stream), "cudaEventRecord");
    SOLDER_CUDA_TRY(cudaEventSynchronize(R.Stop), "running the model");
    float T = 0;
    SOLDER_CUDA_TRY(cudaEventElapsedTime(&T, R.Start, R.Stop),
                    "cudaEventElapsedTime");
    Ms.push_back(T);
  }
  std::sort(Ms.begin(), Ms.end());
  return Ms[Ms.size() / 2];
}

static Error profile(json::Object &Out) {
  if (ProfileRuns == 0)
    return createStringError(inconvertibleErrorCode(),
                             "--runs must be at least 1");
  if (Expected<int> Dev = requireDevice(); !Dev)
    return Dev.takeError();
  ModelLoadOptions Opts;
  Opts.Shapes.assign(ProfileShapes.begin(), ProfileShapes.end());
  Opts.Arch = ProfileArch;
  Opts.CacheDir = ProfileCacheDir;
  Opts.AllowTF32 = ProfileTF32;
  if (Error E = ProfilePrecision.apply(Opts.Prec, Opts.ComputeIo, Opts.Layout))
    return E;
  if (Error E = ProfileFusion.apply(Opts))
    return E;
  Opts.DefaultDimNotes = &ProfileVerbosity.notes();
  std::unique_ptr<PhaseDisplay> Display = ProfileVerbosity.makeDisplay();
  ProfileVerbosity.apply(Opts, *Display);
  if (Error E = applyLimits(ProfileLimits, Opts))
    return E;
  Expected<uint64_t> DeviceLimit = ProfileDeviceMemory.bytes();
  if (!DeviceLimit)
    return DeviceLimit.takeError();
  Opts.MaxDeviceMemory = *DeviceLimit;
  Expected<std::shared_ptr<CompiledModel>> M =
      loadOrCompileModel(ProfileModel, Opts);
  if (!M)
    return M.takeError();
  Expected<std::unique_ptr<ExecutionContext>> Ctx = (*M)->createContext();
  if (!Ctx)
    return Ctx.takeError();
  Expected<GpuPeaks> Peaks = currentGpuPeaks();
  if (!Peaks)
    return Peaks.takeError();
  ExecutionContext &C = **Ctx;
  ProfileResources R;
  SOLDER_CUDA_TRY(cudaStreamCreateWithFlags(&R.Stream, cudaStreamNonBlocking),
                  "cudaStreamCreate");
  SOLDER_CUDA_TRY(cudaEventCreate(&R.Start), "cudaEventCreate");
  SOLDER_CUDA_TRY(cudaEventCreate(&R.Stop), "cudaEventCreate");
  RandomOptions RO;
  for (size_t I = 0; I < (*M)->inputs().size(); ++I) {
    const TensorInfo &T = (*M)->inputs()[I];
    RandomGenerator Gen(0x100000001b3ULL + I);
    Tensor In = makeRandomTensor(T.Elem, T.Dims, RO, Gen);
    if (Error E = C.copyInputFromHost(unsigned(I), In.rawData(), In.byteSize(),
                                      R.Stream))
      return E;
  }
  Expected<double> LaunchedRunMs =
      timeWholeRuns(C, R, ProfileRuns, /*Graph=*/false);
  if (!LaunchedRunMs)
    return LaunchedRunMs.takeError();
  Expected<double> GraphMs = timeWholeRuns(C, R, ProfileRuns, /*Graph=*/true);
  if (!GraphMs)
    return GraphMs.takeError();
  Expected<std::vector<double>> LaunchedMs =
      C.timeSteps(R.Stream, ProfileRuns, ExecutionContext::StepTiming::Launched,
                  /*Nvtx=*/true);
  if (!LaunchedMs)
    return LaunchedMs.takeError();
  // GPU time per step as the graph runs it; when the steps cannot be
  // captured with events between them, launched back to back behind a
  // gate (GPU time without launch gaps, no capture); the launched figures
  // only when that fails too.
  Expected<std::vector<double>> StepMs = C.timeSteps(
      R.Stream, ProfileRuns, ExecutionContext::StepTiming::InGraph, false);
  Out["gpu_timing"] = "graph";
  if (!StepMs) {
    Out["graph_timing_failure"] = toString(StepMs.takeError());
    StepMs = C.timeSteps(R.Stream, ProfileRuns,
                         ExecutionContext::StepTiming::Queued, false);
    Out["gpu_timing"] = "queued";
  }
  if (!StepMs) {
    Out["queued_timing_failure"] = toString(StepMs.takeError());
    StepMs = *LaunchedMs;
    Out["gpu_timing"] = "launched";
  }

  const Plan &P = (*M)->plan();
  std::map<size_t, const PlanGroup *> GroupOf;
  for (const PlanGroup &G : P.Groups)
    for (uint32_t S : G.Steps)
      GroupOf[S] = &G;
  double Sum = std::accumulate(StepMs->begin(), StepMs->end(), 0.0);
  double LaunchedSum =
      std::accumulate(LaunchedMs->begin(), LaunchedMs->end(), 0.0);
  json::Array Steps, Trace;
  std::map<std::string, std::pair<size_t, double>> ByKind;
  double Start = 0;
  for (size_t K = 0; K < P.Steps.size(); ++K) {
    const PlanStep &S = P.Steps[K];
    StepCost Cost = stepCost(P, K, GroupOf);
    double Ms = (*StepMs)[K], Sec = Ms * 1e-3;
    double PeakTflops = Cost.M == StepCost::Math::Half   ? Peaks->HalfTflops
                        : Cost.M == StepCost::Math::Tf32 ? Peaks->Tf32Tflops
                                                         : Peaks->Fp32Tflops;
    json::Object J{{"index", int64_t(K)},
                   {"group", S.GroupId},
                   {"kind", kindName(S.K)},
                   {"label", S.Label},
                   {"library", describeLibraryChoice(P, S)},
                   {"ms", Ms},
                   {"launched_ms", (*LaunchedMs)[K]}};
    auto G = GroupOf.find(K);
    if (G != GroupOf.end()) {
      json::Array Nodes;
      for (const std::string &N : G->second->Members)
        Nodes.push_back(N);
      J["onnx_nodes"] = std::move(Nodes);
    }
    if (Cost.Known) {
      J["flops"] = Cost.Flops;
      J["bytes"] = Cost.Bytes;
      if (Sec > 0) {
        J["tflops"] = Cost.Flops / Sec * 1e-12;
        J["gb_per_s"] = Cost.Bytes / Sec * 1e-9;
      }
      // The roofline bound needs the math peak only when there is math.
      bool HavePeak = Cost.Flops == 0 || PeakTflops > 0;
      if (Sec > 0 && Peaks->MemoryGBs > 0 && HavePeak) {
        double Bound = Cost.Bytes / (Peaks->MemoryGBs * 1e9);
        if (Cost.Flops > 0)
          Bound = std::max(Bound, Cost.Flops / (PeakTflops * 1e12));
        J["roofline_pct"] = 100.0 * Bound / Sec;
        J["bound"] = Cost.Flops > 0 && Cost.Flops / (PeakTflops * 1e12) >=
                                           Cost.Bytes / (Peaks->MemoryGBs * 1e9)
                         ? "compute"
                         : "memory";
      }
    }
    auto &Kind = ByKind[kindName(S.K)];
    ++Kind.first;
    Kind.second += Ms;
    Trace.push_back(json::Object{
        {"name", S.Label},
        {"cat", kindName(S.K)},
        {"ph", "X"},
        {"ts", Start * 1e3},
        {"dur", Ms * 1e3},
        {"pid", 0},
        {"tid", 0},
        {"args", json::Object{{"step", int64_t(K)}, {"group", S.GroupId}}}});
    Start += Ms;
    Steps.push_back(std::move(J));
  }
  json::Array Kinds;
  for (auto &[Name, V] : ByKind)
    Kinds.push_back(
        json::Object{{"kind", Name},
                     {"steps", int64_t(V.first)},
                     {"ms", V.second},
                     {"pct", Sum > 0 ? 100.0 * V.second / Sum : 0}});
  Out["model"] = std::string(ProfileModel);
  Out["gpu"] = Peaks->Name;
  Out["arch"] = Peaks->Arch;
  Out["peaks"] = json::Object{{"sms", Peaks->SMs},
                              {"clock_ghz", Peaks->ClockGHz},
                              {"memory_gb_per_s", Peaks->MemoryGBs},
                              {"fp32_tflops", Peaks->Fp32Tflops},
                              {"tf32_tflops", Peaks->Tf32Tflops},
                              {"half_tflops", Peaks->HalfTflops}};
  Out["runs"] = int64_t(ProfileRuns);
  Out["graph_ms"] = *GraphMs;
  Out["launched_ms"] = *LaunchedRunMs;
  Out["launched_steps_ms"] = LaunchedSum;
  Out["gpu_steps_ms"] = Sum;
  Out["steps"] = std::move(Steps);
  Out["by_kind"] = std::move(Kinds);
  if (!ProfileTrace.empty()) {
    std::string Text =
        formatv("{0}",
                json::Value(json::Object{{"traceEvents", std::move(Trace)},
                                         {"displayTimeUnit", "ms"}}))
            .str();
    if (Error E = writeFileAtomically(ProfileTrace, Text))
      return E;
  }
  return Error::success();
}

static std::string fmt(const json::Object &J, StringRef Key, const char *F) {
  if (auto V = J.getNumber(Key))
    return formatv(F, *V).str();
  return "-";
}

int runProfileCommand(CommandArgs) {
  json::Object Out;
  if (Error E = profile(Out))
    return reportError(std::move(E));
  if (ProfileJson) {
    outs() << formatv("{0}\n", json::Value(std::move(Out)));
    return ExitSuccess;
  }
  const json::Object &Pk = *Out.getObject("peaks");
  outs() << formatv("{0} on {1} ({2}): {3} SMs at {4:F2} GHz, {5:F0} GB/s; "
                    "peak {6:F0} TFLOP/s fp16/bf16 tensor, {7:F0} TF32, "
                    "{8:F1} fp32 (0 = no table for this arch)\n",
                    ProfileModel, *Out.getString("gpu"), *Out.getString("arch"),
                    *Pk.getInteger("sms"), *Pk.getNumber("clock_ghz"),
                    *Pk.getNumber("memory_gb_per_s"),
                    *Pk.getNumber("half_tflops"), *Pk.getNumber("tf32_tflops"),
                    *Pk.getNumber("fp32_tflops"));
  double Sum = *Out.getNumber("gpu_steps_ms");
  StringRef How = *Out.getString("gpu_timing");
  const json::Array &Steps = *Out.getArray("steps");
  outs() << formatv(
      "one run: {0:F3} ms as the plan's CUDA graph, {1:F3} ms launched one "
      "by one (as bench --no-cuda-graph); the steps' GPU times (gpu ms, {2}) "
      "sum to {3:F3} ms; launched with an event after each they sum to "
      "{4:F3} ms (launch ms, the events' own cost included); medians of {5} "
      "runs\n",
      *Out.getNumber("graph_ms"), *Out.getNumber("launched_ms"),
      How == "graph"    ? "timed inside a graph"
      : How == "queued" ? "queued back to back behind a host gate"
                        : "launched",
      Sum, *Out.getNumber("launched_steps_ms"), *Out.getInteger("runs"));
  if (How != "launched" && !Steps.empty())
    outs() << formatv("note: each step's gpu ms includes its timing event "
                      "(the steps' sum exceeds the graph run by {0:F2} us "
                      "per step)\n",
                      1000 * (Sum - *Out.getNumber("graph_ms")) /
                          double(Steps.size()));
  if (auto Why = Out.getString("graph_timing_failure"))
    outs() << "note: the steps could not be timed inside a graph (" << *Why
           << ")\n";
  if (auto Why = Out.getString("queued_timing_failure"))
    outs() << "note: nor queued behind a gate (" << *Why
           << "): gpu ms are the launched times\n";
  outs() << "\n"
         << formatv("{0,4}  {1,5}  {2,-8}  {3,8}  {4,8}  {5,5}  {6,8}  {7,9}  "
                    "{8,8}  {9,7}  {10,5}  {11}\n",
                    "step", "group", "kind", "gpu ms", "launch", "%", "GFLOP",
                    "MB", "TFLOP/s", "GB/s", "roof%", "what");
  for (const json::Value &V : Steps) {
    const json::Object &J = *V.getAsObject();
    double Ms = *J.getNumber("ms");
    std::string Lib = J.getString("library")->str();
    outs() << formatv(
        "{0,4}  {1,5}  {2,-8}  {3,8:F4}  {4,8:F4}  {5,5:F1}  "
        "{6,8}  {7,9}  {8,8}  {9,7}  {10,5}  {11}{12}\n",
        *J.getInteger("index"), *J.getInteger("group"), *J.getString("kind"),
        Ms, *J.getNumber("launched_ms"), Sum > 0 ? 100 * Ms / Sum : 0,
        J.getNumber("flops") && *J.getNumber("flops") > 0
            ? formatv("{0:F3}", *J.getNumber("flops") * 1e-9).str()
            : std::string("-"),
        J.getNumber("bytes")
            ? formatv("{0:F3}", *J.getNumber("bytes") * 1e-6).str()
            : std::string("-"),
        J.getNumber("flops") && *J.getNumber("flops") > 0
            ? fmt(J, "tflops", "{0:F1}")
            : std::string("-"),
        fmt(J, "gb_per_s", "{0:F0}"), fmt(J, "roofline_pct", "{0:F0}"),
        *J.getString("label"), Lib.empty() ? "" : "  [" + Lib + "]");
  }
  outs() << "\nby kind:\n";
  for (const json::Value &V : *Out.getArray("by_kind")) {
    const json::Object &K = *V.getAsObject();
    outs() << formatv("  {0,-8} {1,4} steps  {2,8:F3} ms  {3,5:F1}%\n",
                      *K.getString("kind"), *K.getInteger("steps"),
                      *K.getNumber("ms"), *K.getNumber("pct"));
  }
  std::vector<const json::Object *> Top;
  for (const json::Value &V : Steps)
    Top.push_back(V.getAsObject());
  std::stable_sort(Top.begin(), Top.end(), [](auto *A, auto *B) {
    return *A->getNumber("ms") > *B->getNumber("ms");
  });
  outs() << "slowest steps:\n";
  for (size_t I = 0; I < Top.size() && I < 10; ++I)
    outs() << formatv("  {0,4}  {1,8:F4} ms  roofline {2,3}%  {3}\n",
                      *Top[I]->getInteger("index"), *Top[I]->getNumber("ms"),
                      fmt(*Top[I], "roofline_pct", "{0:F0}"),
                      *Top[I]->getString("label"));
  if (!ProfileTrace.empty())
    outs() << "wrote the trace to " << ProfileTrace << "\n";
  return ExitSuccess;
}

} // namespace solder
