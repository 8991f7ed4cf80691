//===- BenchCommand.cpp - `solder bench MODEL` ----------------------------===//
//
// Times one execution context on the GPU: after --warmup runs, each of
// --iters runs is bracketed by CUDA events (and waited for, so one run's
// latency is what is measured); then the same number of runs back to back
// gives the throughput. Prints median / p90 / p99 latency, throughput,
// launches per run and the arena size, as text or --json.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaSupport.h"
#include "runtime/cuda/Plan.h"
#include "tools/CommandUtils.h"
#include "tools/GpuCommands.h"
#include "tools/RandomInputs.h"
#include "tools/Verbosity.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <chrono>
#include <cmath>

using namespace llvm;

namespace solder {

static cl::SubCommand BenchCmd("bench", "Measure a model's GPU latency");
static cl::OptionCategory BenchCat("bench options");
static cl::opt<std::string> BenchModel(cl::Positional, cl::Required,
                                       cl::desc("<model.onnx|model.plan>"),
                                       cl::sub(BenchCmd), cl::cat(BenchCat));
static cl::list<std::string>
    BenchShapes("shape", cl::value_desc("name=dims"),
                cl::desc("Input shape or dim symbol size (ONNX models)"),
                cl::sub(BenchCmd), cl::cat(BenchCat));
static cl::opt<unsigned> BenchIters("iters", cl::init(100),
                                    cl::desc("Timed runs"), cl::sub(BenchCmd),
                                    cl::cat(BenchCat));
static cl::opt<unsigned> BenchWarmup("warmup", cl::init(10),
                                     cl::desc("Untimed runs first"),
                                     cl::sub(BenchCmd), cl::cat(BenchCat));
static cl::opt<bool> BenchNoGraph("no-cuda-graph",
                                  cl::desc("Launch steps one by one instead "
                                           "of replaying a CUDA graph"),
                                  cl::sub(BenchCmd), cl::cat(BenchCat));
static cl::opt<bool> BenchJson("json", cl::desc("Print one JSON object"),
                               cl::sub(BenchCmd), cl::cat(BenchCat));
static cl::opt<std::string> BenchArch("arch", cl::value_desc("sm_XY"),
                                      cl::desc("Compile for this "
                                               "architecture"),
                                      cl::sub(BenchCmd), cl::cat(BenchCat));
static cl::opt<std::string> BenchCacheDir("cache-dir", cl::value_desc("dir"),
                                          cl::desc("Compiled-kernel cache"),
                                          cl::sub(BenchCmd), cl::cat(BenchCat));
static cl::opt<bool> BenchTF32("allow-tf32",
                               cl::desc("Let fp32 matmuls and convolutions "
                                        "use TF32"),
                               cl::sub(BenchCmd), cl::cat(BenchCat));
static cl::opt<uint64_t> BenchSeed("seed", cl::init(0),
                                   cl::desc("Seed of the random inputs"),
                                   cl::sub(BenchCmd), cl::cat(BenchCat));

static FusionFlags BenchFusion(BenchCmd, BenchCat);
static PrecisionFlags BenchPrecision(BenchCmd, BenchCat);
static VerbosityFlags BenchVerbosity(BenchCmd, BenchCat);
static LimitFlags BenchLimits(BenchCmd, BenchCat);

cl::SubCommand &benchSubCommand() { return BenchCmd; }

static double percentile(std::vector<double> Sorted, double P) {
  if (Sorted.empty())
    return 0;
  double Rank = P / 100.0 * double(Sorted.size() - 1);
  size_t Lo = size_t(std::floor(Rank)), Hi = size_t(std::ceil(Rank));
  return Sorted[Lo] + (Sorted[Hi] - Sorted[Lo]) * (Rank - double(Lo));
}

namespace {
/// Owns the stream and events of a benchmark.
struct BenchResources {
  cudaStream_t Stream = nullptr;
  cudaEvent_t Start = nullptr, Stop = nullptr;
  ~BenchResources() {
    if (Start)
      cudaEventDestroy(Start);
    if (Stop)
      cudaEventDestroy(Stop);
    if (Stream)
      cudaStreamDestroy(Stream);
  }
};
} // namespace

static Error bench(json::Object &Out) {
  if (BenchIters == 0)
    return createStringError(inconvertibleErrorCode(),
                             "--iters must be at least 1");
  if (Expected<int> Dev = requireDevice(); !Dev)
    return Dev.takeError();
  ModelLoadOptions Opts;
  Opts.Shapes.assign(BenchShapes.begin(), BenchShapes.end());
  Opts.Arch = BenchArch;
  Opts.CacheDir = BenchCacheDir;
  Opts.AllowTF32 = BenchTF32;
  if (Error E = BenchPrecision.apply(Opts.Prec, Opts.ComputeIo, Opts.Layout))
    return E;
  Opts.NoFusion = BenchFusion.noFusion();
  Opts.FuseAttention = BenchFusion.fuseAttention();
  Opts.DisabledFusions = BenchFusion.disabledFusions();
  Opts.DefaultDimNotes = &BenchVerbosity.notes();
  std::unique_ptr<PhaseDisplay> Display = BenchVerbosity.makeDisplay();
  BenchVerbosity.apply(Opts, *Display);
  if (Error E = applyLimits(BenchLimits, Opts))
    return E;
  auto T0 = std::chrono::steady_clock::now();
  Expected<std::shared_ptr<CompiledModel>> M =
      loadOrCompileModel(BenchModel, Opts);
  if (!M)
    return M.takeError();
  auto T1 = std::chrono::steady_clock::now();
  Expected<std::unique_ptr<ExecutionContext>> Ctx = (*M)->createContext();
  if (!Ctx)
    return Ctx.takeError();
  auto T2 = std::chrono::steady_clock::now();
  ExecutionContext &C = **Ctx;
  C.setUseCudaGraph(!BenchNoGraph);

  BenchResources R;
  SOLDER_CUDA_TRY(cudaStreamCreateWithFlags(&R.Stream, cudaStreamNonBlocking),
                  "cudaStreamCreate");
  SOLDER_CUDA_TRY(cudaEventCreate(&R.Start), "cudaEventCreate");
  SOLDER_CUDA_TRY(cudaEventCreate(&R.Stop), "cudaEventCreate");
  RandomOptions RO;
  for (size_t I = 0; I < (*M)->inputs().size(); ++I) {
    const TensorInfo &T = (*M)->inputs()[I];
    RandomGenerator Gen(BenchSeed * 0x100000001b3ULL + I);
    Tensor In = makeRandomTensor(T.Elem, T.Dims, RO, Gen);
    if (Error E = C.copyInputFromHost(unsigned(I), In.rawData(), In.byteSize(),
                                      R.Stream))
      return E;
  }
  SOLDER_CUDA_TRY(cudaStreamSynchronize(R.Stream), "copying inputs");

  for (unsigned I = 0; I < BenchWarmup; ++I)
    if (Error E = C.run(R.Stream))
      return E;
  SOLDER_CUDA_TRY(cudaStreamSynchronize(R.Stream), "warm-up runs");

  std::vector<double> Ms;
  for (unsigned I = 0; I < BenchIters; ++I) {
    SOLDER_CUDA_TRY(cudaEventRecord(R.Start, R.Stream), "cudaEventRecord");
    if (Error E = C.run(R.Stream))
      return E;
    SOLDER_CUDA_TRY(cudaEventRecord(R.Stop, R.Stream), "cudaEventRecord");
    SOLDER_CUDA_TRY(cudaEventSynchronize(R.Stop), "running the model");
    float Elapsed = 0;
    SOLDER_CUDA_TRY(cudaEventElapsedTime(&Elapsed, R.Start, R.Stop),
                    "cudaEventElapsedTime");
    Ms.push_back(Elapsed);
  }
  // Throughput: the same number of runs without waiting in between.
  SOLDER_CUDA_TRY(cudaEventRecord(R.Start, R.Stream), "cudaEventRecord");
  for (unsigned I = 0; I < BenchIters; ++I)
    if (Error E = C.run(R.Stream))
      return E;
  SOLDER_CUDA_TRY(cudaEventRecord(R.Stop, R.Stream), "cudaEventRecord");
  SOLDER_CUDA_TRY(cudaEventSynchronize(R.Stop), "running the model");
  float Total = 0;
  SOLDER_CUDA_TRY(cudaEventElapsedTime(&Total, R.Start, R.Stop),
                  "cudaEventElapsedTime");

  if (!C.cudaGraphFailure().empty())
    Out["cuda_graph_failure"] = C.cudaGraphFailure().str();
  std::sort(Ms.begin(), Ms.end());
  double Mean = 0;
  for (double X : Ms)
    Mean += X / double(Ms.size());
  ModelStats S = (*M)->stats();
  int64_t Batch = (*M)->inputs().empty() || (*M)->inputs()[0].Dims.empty()
                      ? 1
                      : (*M)->inputs()[0].Dims[0];
  double RunsPerSecond = Total > 0 ? 1000.0 * BenchIters / Total : 0;
  Out["model"] = std::string(BenchModel);
  Out["arch"] = (*M)->plan().Arch;
  Out["cuda_graph"] = !BenchNoGraph;
  Out["iters"] = int64_t(BenchIters);
  Out["warmup"] = int64_t(BenchWarmup);
  Out["median_ms"] = percentile(Ms, 50);
  Out["p90_ms"] = percentile(Ms, 90);
  Out["p99_ms"] = percentile(Ms, 99);
  Out["mean_ms"] = Mean;
  Out["min_ms"] = Ms.front();
  Out["runs_per_s"] = RunsPerSecond;
  Out["samples_per_s"] = RunsPerSecond * double(Batch);
  Out["launches_per_run"] = int64_t(BenchNoGraph ? S.Steps : 1);
  Out["steps_per_run"] = int64_t(S.Steps);
  Out["kernels"] = int64_t(S.Kernels);
  Out["library_calls"] = int64_t(S.LibraryCalls);
  Out["arena_bytes"] = int64_t(S.ArenaBytes);
  Out["naive_arena_bytes"] = int64_t(S.NaiveArenaBytes);
  Out["weight_bytes"] = int64_t(S.WeightBytes);
  Out["compile_s"] = std::chrono::duration<double>(T1 - T0).count();
  Out["load_s"] = std::chrono::duration<double>(T2 - T1).count();
  return Error::success();
}

int runBenchCommand() {
  json::Object Out;
  if (Error E = bench(Out))
    return reportError(std::move(E));
  if (BenchJson) {
    outs() << formatv("{0}\n", json::Value(std::move(Out)));
    return ExitSuccess;
  }
  auto Num = [&](StringRef K) { return *Out.getNumber(K); };
  auto Int = [&](StringRef K) { return *Out.getInteger(K); };
  outs() << formatv("{0} ({1}, {2})\n", BenchModel, *Out.getString("arch"),
                    BenchNoGraph ? "steps one by one" : "CUDA graph");
  if (auto Why = Out.getString("cuda_graph_failure"))
    outs() << "note: CUDA graph capture failed, ran step by step: " << *Why
           << "\n";
  outs() << formatv("latency over {0} runs: median {1:F3} ms, p90 {2:F3} "
                    "ms, p99 {3:F3} ms, min {4:F3} ms\n",
                    Int("iters"), Num("median_ms"), Num("p90_ms"),
                    Num("p99_ms"), Num("min_ms"));
  outs() << formatv("throughput: {0:F1} runs/s ({1:F1} samples/s)\n",
                    Num("runs_per_s"), Num("samples_per_s"));
  outs() << formatv("launches per run: {0} ({1} steps: {2} kernels, {3} "
                    "library calls)\n",
                    Int("launches_per_run"), Int("steps_per_run"),
                    Int("kernels"), Int("library_calls"));
  outs() << formatv("arena {0} bytes (naive {1} bytes), weights {2} bytes; "
                    "compile {3:F2} s, load {4:F2} s\n",
                    Int("arena_bytes"), Int("naive_arena_bytes"),
                    Int("weight_bytes"), Num("compile_s"), Num("load_s"));
  return ExitSuccess;
}

} // namespace solder
