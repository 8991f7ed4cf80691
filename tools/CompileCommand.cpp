//===- CompileCommand.cpp - `solder compile MODEL.onnx -o MODEL.plan` -----===//
//
// Compiles a model for the GPU and writes the plan file: IR, kernel sources
// and cubins for --arch, library choices, memory plan and weights. Needs no
// GPU (cuDNN algorithms are then chosen when the plan is loaded).
// --fusion-report prints what was fused and how each group runs; with
// =json the report is the only thing on stdout (the summary goes to
// stderr). A model compiled before with the same arguments gets the plan
// it got then from the plan cache (tools/PlanCache.h).
//
//===----------------------------------------------------------------------===//
#include "codegen/NvrtcCompiler.h"
#include "codegen/NvrtcIdentity.h"
#include "frontend/ModelSummary.h"
#include "ir/FusedGroup.h"
#include "runtime/cuda/CudaSupport.h"
#include "runtime/cuda/LibraryCalls.h"
#include "runtime/cuda/Plan.h"
#include "runtime/cuda/PlanFile.h"
#include "tools/CommandUtils.h"
#include "tools/GpuCommands.h"
#include "tools/PlanCache.h"
#include "tools/Verbosity.h"
#include "llvm/Support/BuryPointer.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>
#include <optional>

using namespace llvm;

namespace solder {

static cl::SubCommand CompileCmd("compile",
                                 "Compile a model for the GPU into a plan "
                                 "file");
static cl::OptionCategory CompileCat("compile options");
static cl::opt<std::string> CompileModel(cl::Positional, cl::Required,
                                         cl::desc("<model.onnx>"),
                                         cl::sub(CompileCmd),
                                         cl::cat(CompileCat));
static cl::opt<std::string> CompileOut("o", cl::Required,
                                       cl::value_desc("model.plan"),
                                       cl::desc("Plan file to write"),
                                       cl::sub(CompileCmd),
                                       cl::cat(CompileCat));
static cl::list<std::string>
    CompileShapes("shape", cl::value_desc("name=dims"),
                  cl::desc("Input shape (input_ids=1x128) or dim symbol size "
                           "(N=4); repeatable"),
                  cl::sub(CompileCmd), cl::cat(CompileCat));
static cl::opt<std::string>
    CompileArch("arch", cl::value_desc("sm_XY"),
                cl::desc("Target GPU architecture (default: this machine's "
                         "GPU, else sm_90)"),
                cl::sub(CompileCmd), cl::cat(CompileCat));
static cl::opt<std::string>
    CompileCacheDir("cache-dir", cl::value_desc("dir"),
                    cl::desc("Compiled-kernel cache (default "
                             "~/.cache/solder)"),
                    cl::sub(CompileCmd), cl::cat(CompileCat));
static cl::opt<bool>
    CompileTF32("allow-tf32",
                cl::desc("Let fp32 matmuls and convolutions use TF32"),
                cl::sub(CompileCmd), cl::cat(CompileCat));
static cl::list<std::string>
    CompileDisabled("disable-pass", cl::value_desc("pass"),
                    cl::desc("Skip a pipeline pass; repeatable"),
                    cl::sub(CompileCmd), cl::cat(CompileCat));

static FusionFlags CompileFusion(CompileCmd, CompileCat);
static cl::opt<std::string> CompileTune(
    "tune", cl::ValueOptional, cl::value_desc("off|fast|full"),
    cl::desc("On this machine's GPU: fast chooses the cuDNN and cuBLASLt "
             "algorithms now (cuDNN measures them) and stores them in the "
             "plan, so every process that loads it runs the same ones; full "
             "(--tune alone) also times each fp16/bf16 matmul group as a "
             "library call and as a generated tensor-core GEMM, each "
             "attention group as cuDNN's and the generated kernel, and the "
             "whole plan as a chain of generated kernels, and keeps the "
             "faster (cached). off (the default): algorithms chosen each "
             "time the plan is loaded"),
    cl::init("off"), cl::sub(CompileCmd), cl::cat(CompileCat));
static PrecisionFlags CompilePrecision(CompileCmd, CompileCat);
static VerbosityFlags CompileVerbosity(CompileCmd, CompileCat);
static LimitFlags CompileLimits(CompileCmd, CompileCat);
static FusionReportFlag CompileReport(CompileCmd, CompileCat);
static cl::opt<bool> CompileNoPlanCache(
    "no-plan-cache",
    cl::desc("Compile even when the plan cache (plans/ in the kernel cache "
             "folder) holds the plan of this model, arguments and solder, "
             "and leave the new plan out of it"),
    cl::sub(CompileCmd), cl::cat(CompileCat));

cl::SubCommand &compileSubCommand() { return CompileCmd; }

raw_ostream *progressStream() {
  return sys::Process::StandardErrIsDisplayed() ? &errs() : nullptr;
}

Expected<CompiledOnnxModel> compileOnnxModel(StringRef Path,
                                             const ModelLoadOptions &Opts) {
  Expected<ModelSummary> Summary = summarizeOnnxFile(Path);
  if (!Summary)
    return Summary.takeError();
  StringMap<std::vector<DimRange>> Ranges;
  Expected<ImportOptions> IO = parseShapeArgs(
      Opts.Shapes, *Summary, Opts.AllowRanges ? &Ranges : nullptr);
  if (!IO)
    return IO.takeError();
  // A dynamic model ties unranged dims to ranged ones of the same symbol
  // itself: defaulting them to 1 here would pin them.
  if (Opts.DefaultDimNotes && Ranges.empty())
    bindUnboundDimsToOne(*Summary, *IO, *Opts.DefaultDimNotes);
  if (Opts.OnPhase)
    Opts.OnPhase("import", false);
  Expected<std::unique_ptr<Graph>> G = importOnnxFile(Path, *IO);
  if (Opts.OnPhase)
    Opts.OnPhase("import", true);
  if (!G)
    return G.takeError();
  if (Error E = checkDisabledFusions(Opts.DisabledFusions, **G))
    return std::move(E);
  CompileOptions CO;
  CO.Arch = Opts.Arch;
  CO.CacheDir = Opts.CacheDir;
  CO.AllowTF32 = Opts.AllowTF32;
  CO.Prec = Opts.Prec;
  CO.ComputeIo = Opts.ComputeIo;
  CO.Layout = Opts.Layout;
  CO.DisabledPasses = Opts.DisabledPasses;
  CO.NoFusion = Opts.NoFusion;
  CO.FuseAttention = Opts.FuseAttention;
  CO.DeferNorms = Opts.DeferNorms;
  CO.AutoAttention = Opts.AutoAttention;
  CO.Gemm = Opts.Gemm;
  CO.Attention = Opts.Attention;
  CO.Conv = Opts.Conv;
  CO.DependentLaunch = Opts.DependentLaunch;
  CO.Tune = Opts.Tune;
  CO.DisabledFusions = Opts.DisabledFusions;
  CO.PerturbGroupId = Opts.PerturbGroupId;
  CO.MaxConstantBytes = Opts.MaxConstantBytes;
  CO.MaxTensorBytes = Opts.MaxTensorBytes;
  CO.MaxDeviceMemory = Opts.MaxDeviceMemory;
  CO.Progress = Opts.Progress;
  CO.OnPhase = Opts.OnPhase;
  CO.OnPassTime = Opts.OnPassTime;
  for (const auto &E : IO->InputShapes)
    CO.InputShapes[E.getKey()] = E.getValue();
  for (const auto &E : IO->SymbolSizes)
    CO.SymbolSizes[E.getKey()] = E.getValue();
  if (!Ranges.empty()) {
    // Variants are compiled from the file, one per shape run.
    for (auto &E : Ranges)
      CO.InputRanges[E.getKey()] = E.getValue();
    CO.MaxShapeVariants = Opts.MaxShapeVariants;
    Expected<std::shared_ptr<CompiledModel>> M =
        CompiledModel::compileFile(Path, CO);
    if (!M)
      return M.takeError();
    return CompiledOnnxModel{std::move(*M), nullptr, std::move(*IO)};
  }
  // compileGraph runs the pipeline on *G in place: afterwards it is the
  // graph the plan was built from.
  Expected<std::shared_ptr<CompiledModel>> M =
      CompiledModel::compileGraph(**G, CO);
  if (!M)
    return M.takeError();
  return CompiledOnnxModel{std::move(*M), std::move(*G), std::move(*IO)};
}

Error applyLimits(const LimitFlags &Limits, ModelLoadOptions &Opts) {
  Expected<size_t> C = Limits.maxConstantBytes();
  if (!C)
    return C.takeError();
  Expected<uint64_t> T = Limits.maxTensorBytes();
  if (!T)
    return T.takeError();
  Opts.MaxConstantBytes = *C;
  Opts.MaxTensorBytes = *T;
  return Error::success();
}

Expected<std::shared_ptr<CompiledModel>>
loadOrCompileModel(StringRef Path, const ModelLoadOptions &Opts) {
  if (looksLikePlanFile(Path)) {
    if (!Opts.Shapes.empty())
      return createStringError(inconvertibleErrorCode(),
                               "--shape does not apply to a plan file: its "
                               "shapes were fixed by `solder compile`");
    if (Opts.Prec != Precision::F32 || Opts.ComputeIo ||
        Opts.Layout != ConvLayout::Auto)
      return createStringError(inconvertibleErrorCode(),
                               "--precision and --layout do not apply to a "
                               "plan file: they were fixed by `solder "
                               "compile`");
    if (Opts.NoFusion || !Opts.DisabledFusions.empty() ||
        Opts.Gemm != GemmKernels::Auto ||
        Opts.Attention != AttentionKernels::Auto ||
        Opts.Conv != ConvEpilogues::Auto || Opts.DependentLaunch ||
        Opts.DeferNorms)
      return createStringError(inconvertibleErrorCode(),
                               "--no-fusion, --disable-fusion, --gemm-kernels, "
                               "--attention-kernels, --conv-epilogues, "
                               "--dependent-launch and "
                               "--defer-norms do "
                               "not apply to a plan file: they were fixed by "
                               "`solder compile`");
    Expected<std::shared_ptr<CompiledModel>> M = CompiledModel::loadPlan(Path);
    if (M) {
      (*M)->setPhaseCallback(Opts.OnPhase);
      (*M)->setDeviceMemoryLimit(Opts.MaxDeviceMemory);
    }
    return M;
  }
  Expected<CompiledOnnxModel> C = compileOnnxModel(Path, Opts);
  if (!C)
    return C.takeError();
  return std::move(C->Model);
}

FusionReport fusionReportFromPlan(const Plan &P, const Graph *G) {
  FusionReport R;
  if (G)
    R = fusionReportFromGraph(*G, P.Decisions, "");
  else {
    R.Rejected = rejectedFusions(P.Decisions);
    R.LayoutBoundaries = layoutBoundaries(P.Decisions);
  }
  for (const PlanGroup &PG : P.Groups) {
    if (PG.Id < 0)
      continue; // an unfused node
    auto It = llvm::find_if(
        R.Groups, [&](const FusionReportGroup &X) { return X.Id == PG.Id; });
    if (It == R.Groups.end()) {
      R.Groups.push_back({PG.Id, PG.Kind, PG.Members, "", {}});
      It = std::prev(R.Groups.end());
    }
    It->RunsAs = PG.RunsAs;
    for (uint32_t S : PG.Steps)
      if (S < P.Steps.size())
        It->Steps.push_back(
            {S, P.Steps[S].Label, describeLibraryChoice(P, P.Steps[S])});
  }
  // Groups the plan does not list (a plan builder that fills no
  // Plan::Groups): their steps are the ones tagged with their id, their
  // members what those steps' kernels name.
  for (const PlanStep &S : P.Steps) {
    if (S.GroupId < 0)
      continue;
    auto It = llvm::find_if(R.Groups, [&](const FusionReportGroup &X) {
      return X.Id == S.GroupId;
    });
    if (It == R.Groups.end()) {
      R.Groups.push_back({S.GroupId, "?", {}, "", {}});
      It = std::prev(R.Groups.end());
    }
    if (S.K == PlanStep::Kind::Kernel && It->Kind == "?")
      for (const std::string &N : P.Kernels[S.Index].NodeNames)
        if (!llvm::is_contained(It->Members, N))
          It->Members.push_back(N);
  }
  for (FusionReportGroup &X : R.Groups) {
    if (!X.Steps.empty())
      continue;
    for (size_t S = 0; S < P.Steps.size(); ++S)
      if (P.Steps[S].GroupId == X.Id)
        X.Steps.push_back({unsigned(S), P.Steps[S].Label,
                           describeLibraryChoice(P, P.Steps[S])});
    if (X.RunsAs.empty())
      X.RunsAs = X.Steps.empty() ? std::string("no steps")
                                 : formatv("{0} step(s)", X.Steps.size()).str();
  }
  llvm::stable_sort(R.Groups,
                    [](const auto &A, const auto &B) { return A.Id < B.Id; });
  return R;
}

/// The process ends right after the plan is written: the model and the
/// compiled graph (a large model's many small allocations, about 1 ms of a
/// 30 ms cached compile of ResNet-50) are left to the exit, as clang's
/// -disable-free leaves its AST. Buried, they stay reachable for
/// LeakSanitizer.
static void leaveToExit(std::shared_ptr<CompiledModel> Model,
                        std::unique_ptr<Graph> Compiled) {
  BuryPointer(
      std::make_unique<std::shared_ptr<CompiledModel>>(std::move(Model)));
  BuryPointer(std::move(Compiled));
}

/// What `compile` prints about the plan it wrote, kept with a cached plan
/// so a hit prints it too.
struct CompileSummary {
  bool Dynamic = false;
  std::string Ranges, Arch, TunedOn;
  ModelStats S;

  static CompileSummary of(const CompiledModel &M) {
    CompileSummary C;
    C.S = M.stats();
    C.Dynamic = M.isDynamic();
    C.Arch = M.plan().Arch;
    C.TunedOn = M.plan().TunedOn;
    if (C.Dynamic)
      for (const TensorInfo &T : M.inputs()) {
        C.Ranges += (C.Ranges.empty() ? "" : ", ") + T.Name + "=";
        for (size_t D = 0; D < T.Ranges.size(); ++D)
          C.Ranges +=
              (D ? "x" : "") + (T.Ranges[D].Min == T.Ranges[D].Max
                                    ? std::to_string(T.Ranges[D].Min)
                                    : std::to_string(T.Ranges[D].Min) + ".." +
                                          std::to_string(T.Ranges[D].Max));
      }
    return C;
  }

  /// One field per line; the strings (no newlines in them) last.
  std::string encode() const {
    return formatv("{0}\n{1}\n{2}\n{3}\n{4}\n{5}\n{6}\n{7}\n{8}\n{9}\n",
                   int(Dynamic), S.Kernels, S.LibraryCalls, S.Steps,
                   S.ArenaBytes, S.NaiveArenaBytes, S.WeightBytes, Arch,
                   TunedOn, Ranges)
        .str();
  }
  static std::optional<CompileSummary> decode(StringRef Text) {
    SmallVector<StringRef, 11> L;
    Text.split(L, '\n');
    CompileSummary C;
    int Dyn;
    if (L.size() != 11 || !L[10].empty() || L[0].getAsInteger(10, Dyn) ||
        L[1].getAsInteger(10, C.S.Kernels) ||
        L[2].getAsInteger(10, C.S.LibraryCalls) ||
        L[3].getAsInteger(10, C.S.Steps) ||
        L[4].getAsInteger(10, C.S.ArenaBytes) ||
        L[5].getAsInteger(10, C.S.NaiveArenaBytes) ||
        L[6].getAsInteger(10, C.S.WeightBytes))
      return std::nullopt;
    C.Dynamic = Dyn != 0;
    C.Arch = L[7].str();
    C.TunedOn = L[8].str();
    C.Ranges = L[9].str();
    return C;
  }

  void print(raw_ostream &OS, StringRef Out, double Seconds,
             bool Cached) const {
    std::string Took =
        formatv("compiled in {0:F2} s{1}", Seconds,
                Cached ? " (the plan cache's: same model, arguments and "
                         "solder; --no-plan-cache compiles anew)"
                       : "")
            .str();
    if (Dynamic) {
      OS << formatv("wrote {0}: a dynamic plan for {1} (the ONNX model and "
                    "the options: each shape compiles when it first runs, "
                    "with the kernel cache); the max shape: {2} kernels, {3} "
                    "library calls, {4} steps, arena {5} bytes; {6}\n",
                    Out, Ranges, S.Kernels, S.LibraryCalls, S.Steps,
                    S.ArenaBytes, Took);
      return;
    }
    OS << formatv("wrote {0}: {1} kernels ({2}), {3} library calls, {4} "
                  "steps per run\n",
                  Out, S.Kernels, Arch, S.LibraryCalls, S.Steps);
    OS << formatv("arena {0} bytes (naive sum of intermediates {1} bytes, "
                  "{2:F1}%), weights {3} bytes; {4}\n",
                  S.ArenaBytes, S.NaiveArenaBytes,
                  S.NaiveArenaBytes
                      ? 100.0 * double(S.ArenaBytes) / double(S.NaiveArenaBytes)
                      : 100.0,
                  S.WeightBytes, Took);
    OS << (TunedOn.empty()
               ? std::string("library algorithms: chosen when the plan is "
                             "loaded (compile with --tune on the GPU to store "
                             "them)\n")
               : "library algorithms: tuned on " + TunedOn + "\n");
  }
};

/// The plan cache and this compile's key in it, when the compile may use
/// it: an ONNX model (not a plan) compiled to a file, with nothing asked of
/// the compile itself (a report, verbose notes, tuning on this GPU).
static std::optional<std::pair<PlanCache, PlanCacheKey>>
planCacheFor(CommandArgs Argv, bool Tuning) {
  if (CompileNoPlanCache || Tuning || CompileReport.requested() ||
      CompileVerbosity.verbose() || looksLikePlanFile(CompileModel) ||
      writesInPlace(CompileOut))
    return std::nullopt;
  std::optional<std::vector<std::string>> Args = planCacheArgs(Argv);
  NvrtcOptions N;
  N.CacheDir = CompileCacheDir;
  std::string CacheDir = resolveCacheDir(N);
  if (!Args || CacheDir.empty())
    return std::nullopt;
  // The model's external-data files are part of what it is.
  Expected<ModelSummary> Summary = summarizeOnnxFile(CompileModel);
  if (!Summary) {
    consumeError(Summary.takeError());
    return std::nullopt;
  }
  // The architecture the compile will target.
  std::string Arch =
      CompileArch.empty() ? defaultCompileArch(CacheDir) : CompileArch;
  std::optional<PlanCacheKey> Key =
      planCacheKey(*Args, CompileModel, Summary->ExternalDataLocations, Arch,
                   nvrtcVersionFor(CacheDir));
  if (!Key)
    return std::nullopt;
  return std::make_pair(PlanCache(CacheDir + "/plans"), std::move(*Key));
}

int runCompileCommand(CommandArgs Argv) {
  if (Error E = checkPassNames(CompileDisabled))
    return reportError(std::move(E));
  if (Expected<bool> J = CompileReport.wantsJson(); !J)
    return reportError(J.takeError());
  if (!CompileArch.empty() && !StringRef(CompileArch).startswith("sm_"))
    return reportError("--arch '" + CompileArch +
                       "': expected sm_XY, e.g. sm_90");
  ModelLoadOptions Opts;
  Opts.Shapes.assign(CompileShapes.begin(), CompileShapes.end());
  Opts.AllowRanges = true;
  Opts.Arch = CompileArch;
  Opts.CacheDir = CompileCacheDir;
  Opts.AllowTF32 = CompileTF32;
  if (Error E = CompilePrecision.apply(Opts.Prec, Opts.ComputeIo, Opts.Layout))
    return reportError(std::move(E));
  Opts.DisabledPasses.assign(CompileDisabled.begin(), CompileDisabled.end());
  if (Error E = CompileFusion.apply(Opts))
    return reportError(std::move(E));
  // `--tune` alone is full.
  const std::string TuneMode =
      CompileTune.empty() ? std::string("full") : std::string(CompileTune);
  if (TuneMode != "off" && TuneMode != "fast" && TuneMode != "full")
    return reportError("--tune '" + TuneMode + "': expected off, fast or full");
  const bool TuneAlgorithms = TuneMode != "off";
  Opts.Tune = TuneMode == "full";
  std::unique_ptr<PhaseDisplay> Display = CompileVerbosity.makeDisplay();
  CompileVerbosity.apply(Opts, *Display);
  if (Error E = applyLimits(CompileLimits, Opts))
    return reportError(std::move(E));
  auto Start = std::chrono::steady_clock::now();
  auto Elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         Start)
        .count();
  };
  std::optional<std::pair<PlanCache, PlanCacheKey>> Cache =
      planCacheFor(Argv, TuneAlgorithms);
  if (Cache)
    if (std::optional<std::string> Hit =
            Cache->first.serve(Cache->second, CompileOut))
      if (std::optional<CompileSummary> S = CompileSummary::decode(*Hit)) {
        S->print(outs(), CompileOut, Elapsed(), /*Cached=*/true);
        return ExitSuccess;
      }
  std::shared_ptr<CompiledModel> Model;
  std::unique_ptr<Graph> Compiled;
  if (looksLikePlanFile(CompileModel)) {
    Expected<std::shared_ptr<CompiledModel>> M =
        loadOrCompileModel(CompileModel, Opts);
    if (!M)
      return reportError(M.takeError());
    Model = std::move(*M);
  } else {
    Expected<CompiledOnnxModel> C = compileOnnxModel(CompileModel, Opts);
    if (!C)
      return reportError(C.takeError());
    Model = std::move(C->Model);
    Compiled = std::move(C->CompiledGraph);
  }
  double Seconds = Elapsed();
  if (TuneAlgorithms) {
    if (Error E = Model->loadOnDevice())
      return reportError("--tune=" + TuneMode + " needs the plan's GPU here: " +
                         toString(std::move(E)));
  }
  if (Error E = Model->savePlan(CompileOut))
    return reportError(std::move(E));
  CompileSummary S = CompileSummary::of(*Model);
  if (Cache)
    Cache->first.store(Cache->second, CompileOut, S.encode());
  bool Json = CompileReport.requested() && *CompileReport.wantsJson();
  S.print(Json ? errs() : outs(), CompileOut, Seconds, /*Cached=*/false);
  if (CompileReport.requested())
    CompileReport.print(
        outs(), fusionReportFromPlan(Model->plan(),
                                     S.Dynamic ? nullptr : Compiled.get()));
  leaveToExit(std::move(Model), std::move(Compiled));
  return ExitSuccess;
}

} // namespace solder
