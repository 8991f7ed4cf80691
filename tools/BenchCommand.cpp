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
#include "runtime/cuda/PlanFile.h"
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
static cl::list<std::string> BenchRunShapes(
    "run-shape", cl::value_desc("name=dims[,name=dims...]"),
    cl::desc("A dynamic model (--shape NAME=MIN..MAX...): time it at this "
             "shape (inputs not named take their tied or max dims); "
             "repeatable, in order; default: the max shape"),
    cl::sub(BenchCmd), cl::cat(BenchCat));
static cl::opt<bool> BenchCompareStatic(
    "compare-static",
    cl::desc("A dynamic model: also compile a static plan at each "
             "--run-shape, time it the same way and check both give "
             "identical outputs"),
    cl::sub(BenchCmd), cl::cat(BenchCat));
static cl::opt<unsigned> BenchMaxVariants(
    "max-shape-variants", cl::init(8),
    cl::desc("A dynamic model: shapes kept compiled and captured"),
    cl::sub(BenchCmd), cl::cat(BenchCat));
static cl::opt<uint64_t> BenchSeed("seed", cl::init(0),
                                   cl::desc("Seed of the random inputs"),
                                   cl::sub(BenchCmd), cl::cat(BenchCat));

static FusionFlags BenchFusion(BenchCmd, BenchCat);
static PrecisionFlags BenchPrecision(BenchCmd, BenchCat);
static VerbosityFlags BenchVerbosity(BenchCmd, BenchCat);
static LimitFlags BenchLimits(BenchCmd, BenchCat);
static DeviceMemoryFlag BenchDeviceMemory(BenchCmd, BenchCat);

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

/// Latencies of Iters runs after Warmup untimed ones, each bracketed by
/// events and waited for.
static Expected<std::vector<double>> timeRuns(ExecutionContext &C,
                                              BenchResources &R) {
  for (unsigned I = 0; I < BenchWarmup; ++I)
    if (Error E = C.run(R.Stream))
      return std::move(E);
  SOLDER_CUDA_TRY(cudaStreamSynchronize(R.Stream), "warm-up runs");
  std::vector<double> Ms;
  for (unsigned I = 0; I < BenchIters; ++I) {
    SOLDER_CUDA_TRY(cudaEventRecord(R.Start, R.Stream), "cudaEventRecord");
    if (Error E = C.run(R.Stream))
      return std::move(E);
    SOLDER_CUDA_TRY(cudaEventRecord(R.Stop, R.Stream), "cudaEventRecord");
    SOLDER_CUDA_TRY(cudaEventSynchronize(R.Stop), "running the model");
    float Elapsed = 0;
    SOLDER_CUDA_TRY(cudaEventElapsedTime(&Elapsed, R.Start, R.Stop),
                    "cudaEventElapsedTime");
    Ms.push_back(Elapsed);
  }
  std::sort(Ms.begin(), Ms.end());
  return Ms;
}

/// Random inputs at the context's current input dims, copied in.
static Expected<std::vector<Tensor>> copyRandomInputs(ExecutionContext &C,
                                                      BenchResources &R) {
  const CompiledModel &M = C.model();
  std::vector<Tensor> Ins;
  RandomOptions RO;
  for (size_t I = 0; I < M.inputs().size(); ++I) {
    Expected<std::vector<int64_t>> Dims = C.inputDims(unsigned(I));
    if (!Dims)
      return Dims.takeError();
    RandomGenerator Gen(BenchSeed * 0x100000001b3ULL + I);
    Ins.push_back(makeRandomTensor(M.inputs()[I].Elem, *Dims, RO, Gen));
    if (Error E = C.copyInputFromHost(unsigned(I), Ins.back().rawData(),
                                      Ins.back().byteSize(), R.Stream))
      return std::move(E);
  }
  SOLDER_CUDA_TRY(cudaStreamSynchronize(R.Stream), "copying inputs");
  return std::move(Ins);
}

/// Every output of C's latest run, as bytes.
static Expected<std::vector<std::string>> readOutputs(ExecutionContext &C,
                                                      BenchResources &R) {
  std::vector<std::string> Out;
  for (size_t I = 0; I < C.model().outputs().size(); ++I) {
    Expected<std::vector<int64_t>> Dims = C.outputDims(unsigned(I));
    if (!Dims)
      return Dims.takeError();
    size_t Bytes = dtypeSize(C.model().outputs()[I].Elem);
    for (int64_t D : *Dims)
      Bytes *= size_t(D);
    Out.emplace_back(Bytes, '\0');
    if (Error E =
            C.copyOutputToHost(unsigned(I), Out.back().data(), Bytes, R.Stream))
      return std::move(E);
  }
  return std::move(Out);
}

/// `--run-shape input_ids=1x128,attention_mask=1x128` applied to C.
static Error setRunShape(ExecutionContext &C, StringRef Spec) {
  SmallVector<StringRef, 4> Parts;
  Spec.split(Parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef P : Parts) {
    auto [Name, Value] = P.split('=');
    int Index = C.model().inputIndex(Name.trim());
    if (Index < 0)
      return createStringError(inconvertibleErrorCode(),
                               "--run-shape '" + Spec + "': no input '" +
                                   Name.trim() + "'");
    Expected<std::vector<int64_t>> Dims = parseDims(Value.trim());
    if (!Dims)
      return Dims.takeError();
    if (Error E = C.setInputShape(unsigned(Index), *Dims))
      return createStringError(inconvertibleErrorCode(),
                               "--run-shape '" + Spec +
                                   "': " + toString(std::move(E)));
  }
  return Error::success();
}

static std::string shapeText(ExecutionContext &C) {
  std::string S;
  for (size_t I = 0; I < C.model().inputs().size(); ++I) {
    Expected<std::vector<int64_t>> Dims = C.inputDims(unsigned(I));
    std::string D = "?";
    if (Dims)
      D = join(map_range(*Dims, [](int64_t X) { return std::to_string(X); }),
               "x");
    else
      consumeError(Dims.takeError());
    S += (S.empty() ? "" : ",") + C.model().inputs()[I].Name + "=" + D;
  }
  return S;
}

/// A dynamic model: per --run-shape, the first run (compiling the variant
/// and capturing its graph) and the steady latency, optionally against a
/// static plan of that shape.
static Error benchDynamic(CompiledModel &M, ExecutionContext &C,
                          const ModelLoadOptions &Opts, json::Object &Out) {
  BenchResources R;
  SOLDER_CUDA_TRY(cudaStreamCreateWithFlags(&R.Stream, cudaStreamNonBlocking),
                  "cudaStreamCreate");
  SOLDER_CUDA_TRY(cudaEventCreate(&R.Start), "cudaEventCreate");
  SOLDER_CUDA_TRY(cudaEventCreate(&R.Stop), "cudaEventCreate");
  if (BenchCompareStatic && looksLikePlanFile(BenchModel))
    return createStringError(inconvertibleErrorCode(),
                             "--compare-static compiles static plans from the "
                             "ONNX model: give the .onnx file, not a plan");
  std::vector<std::string> Specs(BenchRunShapes.begin(), BenchRunShapes.end());
  if (Specs.empty())
    Specs.push_back("");
  json::Array Shapes;
  for (const std::string &Spec : Specs) {
    if (Error E = setRunShape(C, Spec))
      return E;
    json::Object Row;
    Row["shape"] = shapeText(C);
    Expected<std::vector<Tensor>> Ins = copyRandomInputs(C, R);
    if (!Ins)
      return Ins.takeError();
    size_t Before = M.shapeVariantsCompiled();
    auto T0 = std::chrono::steady_clock::now();
    if (Error E = C.run(R.Stream))
      return E;
    SOLDER_CUDA_TRY(cudaStreamSynchronize(R.Stream), "the first run");
    auto T1 = std::chrono::steady_clock::now();
    Row["first_run_ms"] =
        std::chrono::duration<double, std::milli>(T1 - T0).count();
    Row["compiled_variant"] = M.shapeVariantsCompiled() > Before;
    Expected<std::vector<double>> Ms = timeRuns(C, R);
    if (!Ms)
      return Ms.takeError();
    Row["median_ms"] = percentile(*Ms, 50);
    Row["p90_ms"] = percentile(*Ms, 90);
    if (BenchCompareStatic) {
      Expected<std::vector<std::string>> DynOut = readOutputs(C, R);
      if (!DynOut)
        return DynOut.takeError();
      ModelLoadOptions SO = Opts;
      SO.AllowRanges = false;
      SO.Shapes.clear();
      SO.DefaultDimNotes = nullptr;
      for (size_t I = 0; I < M.inputs().size(); ++I)
        SO.Shapes.push_back(
            M.inputs()[I].Name + "=" +
            join(map_range((*Ins)[I].dims(),
                           [](int64_t X) { return std::to_string(X); }),
                 "x"));
      Expected<std::shared_ptr<CompiledModel>> SM =
          loadOrCompileModel(BenchModel, SO);
      if (!SM)
        return SM.takeError();
      Expected<std::unique_ptr<ExecutionContext>> SC = (*SM)->createContext();
      if (!SC)
        return SC.takeError();
      (*SC)->setUseCudaGraph(!BenchNoGraph);
      for (size_t I = 0; I < Ins->size(); ++I)
        if (Error E = (*SC)->copyInputFromHost(unsigned(I), (*Ins)[I].rawData(),
                                               (*Ins)[I].byteSize(), R.Stream))
          return E;
      Expected<std::vector<double>> SMs = timeRuns(**SC, R);
      if (!SMs)
        return SMs.takeError();
      Expected<std::vector<std::string>> StaticOut = readOutputs(**SC, R);
      if (!StaticOut)
        return StaticOut.takeError();
      // Timed once more after the static plan: the two are compared on
      // the same clocks, not before and after a long compile.
      Expected<std::vector<double>> Again = timeRuns(C, R);
      if (!Again)
        return Again.takeError();
      Row["median_ms"] = percentile(*Again, 50);
      Row["p90_ms"] = percentile(*Again, 90);
      Row["static_median_ms"] = percentile(*SMs, 50);
      Row["dynamic_over_static"] =
          percentile(*Again, 50) / percentile(*SMs, 50);
      Row["outputs_identical"] = *DynOut == *StaticOut;
    }
    Shapes.push_back(std::move(Row));
  }
  Out["model"] = std::string(BenchModel);
  Out["arch"] = M.plan().Arch;
  Out["dynamic"] = true;
  Out["cuda_graph"] = !BenchNoGraph;
  Out["iters"] = int64_t(BenchIters);
  Out["variants_compiled"] = int64_t(M.shapeVariantsCompiled());
  Out["shapes"] = std::move(Shapes);
  return Error::success();
}

static Error bench(json::Object &Out) {
  if (BenchIters == 0)
    return createStringError(inconvertibleErrorCode(),
                             "--iters must be at least 1");
  if (Expected<int> Dev = requireDevice(); !Dev)
    return Dev.takeError();
  ModelLoadOptions Opts;
  Opts.Shapes.assign(BenchShapes.begin(), BenchShapes.end());
  Opts.AllowRanges = true;
  Opts.MaxShapeVariants = BenchMaxVariants;
  Opts.Arch = BenchArch;
  Opts.CacheDir = BenchCacheDir;
  Opts.AllowTF32 = BenchTF32;
  if (Error E = BenchPrecision.apply(Opts.Prec, Opts.ComputeIo, Opts.Layout))
    return E;
  if (Error E = BenchFusion.apply(Opts))
    return E;
  Opts.DefaultDimNotes = &BenchVerbosity.notes();
  std::unique_ptr<PhaseDisplay> Display = BenchVerbosity.makeDisplay();
  BenchVerbosity.apply(Opts, *Display);
  if (Error E = applyLimits(BenchLimits, Opts))
    return E;
  Expected<uint64_t> DeviceLimit = BenchDeviceMemory.bytes();
  if (!DeviceLimit)
    return DeviceLimit.takeError();
  Opts.MaxDeviceMemory = *DeviceLimit;
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
  if ((*M)->isDynamic()) {
    Out["compile_s"] = std::chrono::duration<double>(T1 - T0).count();
    Out["load_s"] = std::chrono::duration<double>(T2 - T1).count();
    return benchDynamic(**M, C, Opts, Out);
  }
  if (!BenchRunShapes.empty() || BenchCompareStatic)
    return createStringError(inconvertibleErrorCode(),
                             "--run-shape and --compare-static need a dynamic "
                             "model (--shape NAME=MIN..MAX...)");

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

  Expected<std::vector<double>> Timed = timeRuns(C, R);
  if (!Timed)
    return Timed.takeError();
  std::vector<double> Ms = std::move(*Timed);
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

int runBenchCommand(CommandArgs) {
  json::Object Out;
  if (Error E = bench(Out))
    return reportError(std::move(E));
  // --compare-static: a dynamic variant must compute what the static plan
  // of its shape computes, bit for bit (they run the same kernels).
  int Rc = ExitSuccess;
  if (const json::Array *Shapes = Out.getArray("shapes"))
    for (const json::Value &V : *Shapes)
      if (V.getAsObject()->getBoolean("outputs_identical") == false)
        Rc = ExitMismatch;
  if (BenchJson) {
    outs() << formatv("{0}\n", json::Value(std::move(Out)));
    return Rc;
  }
  if (Out.getBoolean("dynamic")) {
    outs() << formatv("{0} ({1}, {2}), dynamic: {3} variants compiled "
                      "(max shape in {4:F2} s)\n",
                      BenchModel, *Out.getString("arch"),
                      BenchNoGraph ? "steps one by one" : "CUDA graph",
                      *Out.getInteger("variants_compiled"),
                      *Out.getNumber("compile_s"));
    for (const json::Value &V : *Out.getArray("shapes")) {
      const json::Object &Row = *V.getAsObject();
      outs() << formatv("{0}: first run {1:F1} ms{2}, median {3:F3} ms, p90 "
                        "{4:F3} ms",
                        *Row.getString("shape"), *Row.getNumber("first_run_ms"),
                        *Row.getBoolean("compiled_variant") ? " (compiled)"
                                                            : "",
                        *Row.getNumber("median_ms"), *Row.getNumber("p90_ms"));
      if (auto S = Row.getNumber("static_median_ms"))
        outs() << formatv("; static plan {0:F3} ms (dynamic/static {1:F3}), "
                          "outputs {2}",
                          *S, *Row.getNumber("dynamic_over_static"),
                          *Row.getBoolean("outputs_identical") ? "identical"
                                                               : "DIFFER");
      outs() << "\n";
    }
    return Rc;
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
