//===- RunCommand.cpp - `solder run MODEL.onnx` ---------------------------===//
//
// Imports a model, prepares it for a backend, runs it on inputs read from
// .npy/.pb files or generated from a seed, and prints a summary of each
// output; --output-dir writes outputs as NAME.npy (--save-inputs the inputs
// too, so another runtime can be fed the very same data).
//
//===----------------------------------------------------------------------===//
#include "frontend/ModelSummary.h"
#include "frontend/OnnxImporter.h"
#include "ir/SizeLimits.h"
#include "tools/Backend.h"
#include "tools/CommandUtils.h"
#include "tools/Commands.h"
#include "tools/RandomInputs.h"
#include "tools/TensorIO.h"
#include "tools/Verbosity.h"
#if SOLDER_HAVE_CUDA
#include "runtime/cuda/PlanFile.h"
#include "solder/Solder.h"
#endif
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace solder {

static cl::SubCommand RunCmd("run", "Run a model on given or random inputs "
                                    "and print its outputs");
static cl::OptionCategory RunCat("run options");
static cl::opt<std::string> RunModel(cl::Positional, cl::Required,
                                     cl::desc("<model.onnx>"), cl::sub(RunCmd),
                                     cl::cat(RunCat));
static cl::opt<std::string>
    RunBackend("backend", cl::init("reference"), cl::value_desc("name"),
               cl::desc("Where to run: reference (CPU) or cuda"),
               cl::sub(RunCmd), cl::cat(RunCat));
static cl::list<std::string>
    RunInputs("input", cl::value_desc("name=file"),
              cl::desc("Input tensor from a .npy or .pb file; repeatable"),
              cl::sub(RunCmd), cl::cat(RunCat));
static cl::opt<bool>
    RunRandom("random-inputs",
              cl::desc("Generate every input not given with --input"),
              cl::sub(RunCmd), cl::cat(RunCat));
static cl::opt<uint64_t> RunSeed("seed", cl::init(0),
                                 cl::desc("Seed of --random-inputs"),
                                 cl::sub(RunCmd), cl::cat(RunCat));
static cl::opt<bool>
    RunNormal("normal",
              cl::desc("Random floats are standard normal instead of "
                       "uniform in [-1, 1)"),
              cl::sub(RunCmd), cl::cat(RunCat));
static cl::opt<std::string>
    RunIntRange("int-range", cl::init("0:10"), cl::value_desc("lo:hi"),
                cl::desc("Random integers are drawn from [lo, hi)"),
                cl::sub(RunCmd), cl::cat(RunCat));
static cl::list<std::string>
    RunShapes("shape", cl::value_desc("name=dims"),
              cl::desc("Input shape (input_ids=1x128) or dim symbol size "
                       "(N=4); repeatable"),
              cl::sub(RunCmd), cl::cat(RunCat));
static cl::list<std::string>
    RunDisabled("disable-pass", cl::value_desc("pass"),
                cl::desc("Skip a pipeline pass; repeatable"), cl::sub(RunCmd),
                cl::cat(RunCat));
static cl::opt<bool> RunNoOptimize("no-optimize",
                                   cl::desc("Run the graph as imported, "
                                            "without the pass pipeline"),
                                   cl::sub(RunCmd), cl::cat(RunCat));
static cl::opt<std::string>
    RunOutputDir("output-dir", cl::value_desc("dir"),
                 cl::desc("Write each output as <dir>/<name>.npy"),
                 cl::sub(RunCmd), cl::cat(RunCat));
static cl::opt<std::string>
    RunSaveInputs("save-inputs", cl::value_desc("dir"),
                  cl::desc("Write each input as <dir>/<name>.npy"),
                  cl::sub(RunCmd), cl::cat(RunCat));
static cl::opt<unsigned> RunShowValues("show-values", cl::init(8),
                                       cl::desc("How many leading values of "
                                                "each output to print"),
                                       cl::sub(RunCmd), cl::cat(RunCat));

static FusionFlags RunFusion(RunCmd, RunCat);
static PrecisionFlags RunPrecision(RunCmd, RunCat);
static VerbosityFlags RunVerbosity(RunCmd, RunCat);
static LimitFlags RunLimits(RunCmd, RunCat);

cl::SubCommand &runSubCommand() { return RunCmd; }

static Expected<RandomOptions> randomOptions() {
  RandomOptions R;
  if (RunNormal)
    R.Floats = RandomOptions::FloatDistribution::Normal;
  auto [Lo, Hi] = StringRef(RunIntRange).split(':');
  if (Lo.trim().getAsInteger(10, R.IntLow) ||
      Hi.trim().getAsInteger(10, R.IntHigh) || R.IntLow >= R.IntHigh)
    return createStringError(inconvertibleErrorCode(),
                             "--int-range '" + RunIntRange +
                                 "': expected lo:hi with lo < hi");
  return R;
}

/// Writes tensors as <Dir>/<sanitized name>.npy, one file name per tensor
/// even when two names sanitize alike.
static Error writeTensors(StringRef Dir, ArrayRef<std::string> Names,
                          ArrayRef<Tensor> Tensors) {
  if (std::error_code EC = sys::fs::create_directories(Dir))
    return createStringError(EC,
                             "cannot create '" + Dir + "': " + EC.message());
  StringSet<> Used;
  for (size_t I = 0; I < Names.size(); ++I) {
    std::string Base = sanitizeFileName(Names[I]);
    std::string File = Base;
    for (unsigned K = 1; !Used.insert(File).second; ++K)
      File = Base + "_" + std::to_string(K);
    SmallString<256> Path(Dir);
    sys::path::append(Path, File + ".npy");
    if (npyStoresAsRawBits(Tensors[I].dtype()))
      errs() << "note: '" << Names[I]
             << "' is bf16, which numpy lacks: " << Path
             << " holds its raw bits as '<u2'\n";
    if (Error E = writeNpyFile(Path, Tensors[I]))
      return E;
  }
  return Error::success();
}

/// Checks a tensor read for input V fits V's type.
static Error checkInputFits(const Value &V, const Tensor &T, StringRef From) {
  bool Fits = T.dtype() == V.dtype() && T.rank() == V.shape().size();
  for (unsigned I = 0; Fits && I < T.rank(); ++I)
    Fits = !V.shape()[I].isStatic() || V.shape()[I].size() == T.dims()[I];
  if (Fits)
    return Error::success();
  return createStringError(inconvertibleErrorCode(),
                           "input '" + V.name() + "': " + From + " holds " +
                               typeToString(T.type()) + ", the model expects " +
                               typeToString(V.type()));
}

#if SOLDER_HAVE_CUDA
/// `solder run MODEL.plan`: the plan fixes the graph, shapes and backend.
static int runPlanCommand() {
  if (RunBackend != "cuda")
    return reportError("a plan file runs on the cuda backend only (got "
                       "--backend " +
                       RunBackend + ")");
  Expected<GemmKernels> Gemm = RunFusion.gemmKernels();
  if (!Gemm)
    return reportError(Gemm.takeError());
  Expected<AttentionKernels> Attn = RunFusion.attentionKernels();
  if (!Attn)
    return reportError(Attn.takeError());
  Expected<ConvEpilogues> Conv = RunFusion.convEpilogues();
  if (!Conv)
    return reportError(Conv.takeError());
  if (RunFusion.noFusion() || !RunFusion.disabledFusions().empty() ||
      *Gemm != GemmKernels::Auto || *Attn != AttentionKernels::Auto ||
      *Conv != ConvEpilogues::Auto || RunFusion.dependentLaunch())
    return reportError("--no-fusion, --disable-fusion, --gemm-kernels, "
                       "--attention-kernels, --conv-epilogues and "
                       "--dependent-launch do not "
                       "apply to a plan file: they were fixed by `solder "
                       "compile`");
  if (!RunShapes.empty())
    return reportError("--shape does not apply to a plan file: its shapes "
                       "were fixed by `solder compile`");
  Expected<RandomOptions> RandOpts = randomOptions();
  if (!RandOpts)
    return reportError(RandOpts.takeError());
  Expected<std::shared_ptr<CompiledModel>> M =
      CompiledModel::loadPlan(RunModel);
  if (!M)
    return reportError(M.takeError());
  StringMap<Tensor> Given;
  for (StringRef Arg : RunInputs) {
    auto NF = splitInputArg(Arg);
    if (!NF)
      return reportError(NF.takeError());
    // Not a structured binding: clang 14 cannot capture one in a lambda.
    StringRef Name = NF->first, File = NF->second;
    if ((*M)->inputIndex(Name) < 0)
      return reportError("--input '" + Arg + "': the plan has no input '" +
                         Name + "'");
    Expected<Tensor> T = readTensorFile(File);
    if (!T)
      return reportError(T.takeError());
    Given[Name] = std::move(*T);
  }
  std::vector<Tensor> Inputs;
  std::vector<std::string> InNames, OutNames;
  ArrayRef<TensorInfo> Infos = (*M)->inputs();
  for (size_t Index = 0; Index < Infos.size(); ++Index) {
    const TensorInfo &Info = Infos[Index];
    InNames.push_back(Info.Name);
    auto It = Given.find(Info.Name);
    if (It != Given.end()) {
      const Tensor &T = It->second;
      if (T.dtype() != Info.Elem || T.dims() != ArrayRef<int64_t>(Info.Dims))
        return reportError("input '" + Info.Name + "': the file holds " +
                           typeToString(T.type()) + ", the plan expects " +
                           typeToString(TensorType(Info.Elem, Info.Dims)));
      Inputs.push_back(T);
      continue;
    }
    if (!RunRandom)
      return reportError("no data for input '" + Info.Name +
                         "': give --input NAME=FILE or --random-inputs");
    RandomGenerator Gen(RunSeed * 0x100000001b3ULL + Index);
    Inputs.push_back(makeRandomTensor(Info.Elem, Info.Dims, *RandOpts, Gen));
  }
  if (!RunSaveInputs.empty())
    if (Error E = writeTensors(RunSaveInputs, InNames, Inputs))
      return reportError(std::move(E));
  Expected<std::unique_ptr<ExecutionContext>> Ctx = (*M)->createContext();
  if (!Ctx)
    return reportError(Ctx.takeError());
  Expected<std::vector<Tensor>> Outputs = (*Ctx)->runHost(Inputs);
  if (!Outputs)
    return reportError(Outputs.takeError());
  for (size_t I = 0; I < Outputs->size(); ++I) {
    OutNames.push_back((*M)->outputs()[I].Name);
    printTensorSummary(outs(), OutNames.back(), (*Outputs)[I], RunShowValues);
  }
  outs().flush();
  if (!RunOutputDir.empty())
    if (Error E = writeTensors(RunOutputDir, OutNames, *Outputs))
      return reportError(std::move(E));
  return ExitSuccess;
}
#endif

int runRunCommand(CommandArgs) {
#if SOLDER_HAVE_CUDA
  if (looksLikePlanFile(RunModel))
    return runPlanCommand();
#endif
  Expected<std::unique_ptr<Backend>> B = createBackend(RunBackend);
  if (!B)
    return reportError(B.takeError());
  if (Error E = checkPassNames(RunDisabled))
    return reportError(std::move(E));
  Expected<RandomOptions> RandOpts = randomOptions();
  if (!RandOpts)
    return reportError(RandOpts.takeError());

  Expected<ModelSummary> Summary = summarizeOnnxFile(RunModel);
  if (!Summary)
    return reportError(Summary.takeError());
  Expected<ImportOptions> Opts = parseShapeArgs(RunShapes, *Summary);
  if (!Opts)
    return reportError(Opts.takeError());

  // Input files are read before import so their shapes can bind the
  // model's symbolic dims.
  StringMap<Tensor> Given;
  for (StringRef Arg : RunInputs) {
    auto NF = splitInputArg(Arg);
    if (!NF)
      return reportError(NF.takeError());
    // Not a structured binding: clang 14 cannot capture one in a lambda.
    StringRef Name = NF->first, File = NF->second;
    if (llvm::none_of(Summary->Inputs,
                      [&](const ValueSummary &V) { return V.Name == Name; }))
      return reportError("--input '" + Arg + "': the model has no input '" +
                         Name + "'");
    Expected<Tensor> T = readTensorFile(File);
    if (!T)
      return reportError(T.takeError());
    if (!Opts->InputShapes.count(Name))
      Opts->InputShapes[Name] =
          std::vector<int64_t>(T->dims().begin(), T->dims().end());
    Given[Name] = std::move(*T);
  }
  bindUnboundDimsToOne(*Summary, *Opts, RunVerbosity.notes());

  std::unique_ptr<PhaseDisplay> Display = RunVerbosity.makeDisplay();
  Display->begin("import");
  Expected<std::unique_ptr<Graph>> G = importOnnxFile(RunModel, *Opts);
  Display->end("import");
  if (!G)
    return reportError(G.takeError());
  // Before any input is made: a hostile input shape is refused, not
  // allocated (the pipeline checks the rest).
  Expected<uint64_t> MaxTensorBytes = RunLimits.maxTensorBytes();
  if (!MaxTensorBytes)
    return reportError(MaxTensorBytes.takeError());
  if (Error E = checkTensorSizes(**G, *MaxTensorBytes))
    return reportError(std::move(E));

  std::vector<Tensor> Inputs;
  std::vector<std::string> Missing;
  ArrayRef<Value *> GraphInputs = (*G)->inputs();
  for (size_t Index = 0; Index < GraphInputs.size(); ++Index) {
    const Value *V = GraphInputs[Index];
    auto It = Given.find(V->name());
    if (It != Given.end()) {
      // bf16 travels through .npy as raw '<u2' bits (see TensorIO.h).
      if (V->dtype() == DType::BF16 && It->second.dtype() == DType::U16)
        It->second = Tensor::copyOf(DType::BF16, It->second.dims(),
                                    It->second.rawData());
      if (Error E = checkInputFits(*V, It->second, "the --input file"))
        return reportError(std::move(E));
      Inputs.push_back(It->second);
      continue;
    }
    if (!RunRandom) {
      Missing.push_back(V->name());
      continue;
    }
    Expected<std::vector<int64_t>> Dims = concreteInputDims(*V, *Opts);
    if (!Dims)
      return reportError(Dims.takeError());
    // One generator per input, so giving one input from a file does not
    // change the random values of the others.
    RandomGenerator Gen(RunSeed * 0x100000001b3ULL + Index);
    Inputs.push_back(makeRandomTensor(V->dtype(), *Dims, *RandOpts, Gen));
  }
  if (!Missing.empty())
    return reportError("no data for input(s) " + join(Missing, ", ") +
                       ": give --input NAME=FILE or --random-inputs");

  if (!RunSaveInputs.empty()) {
    std::vector<std::string> Names;
    for (const Value *V : (*G)->inputs())
      Names.push_back(V->name());
    if (Error E = writeTensors(RunSaveInputs, Names, Inputs))
      return reportError(std::move(E));
  }

  if (Error E = RunFusion.check(**G))
    return reportError(std::move(E));
  PipelineOptions PO;
  PO.DisabledPasses.assign(RunDisabled.begin(), RunDisabled.end());
  if (Error E = RunFusion.apply(PO))
    return reportError(std::move(E));
  if (Error E = RunPrecision.apply(PO))
    return reportError(std::move(E));
  if (Error E = RunLimits.apply(PO))
    return reportError(std::move(E));
  Display->begin("compile");
  Error Prepared = (*B)->prepare(**G, PO, !RunNoOptimize);
  Display->end("compile");
  if (Prepared)
    return reportError(std::move(Prepared));
  Display->begin("run");
  Expected<std::vector<Tensor>> Outputs = (*B)->run(**G, Inputs);
  Display->end("run");
  if (!Outputs)
    return reportError(Outputs.takeError());

  ArrayRef<Value *> OutValues = (*G)->outputs();
  for (size_t I = 0; I < Outputs->size(); ++I)
    printTensorSummary(outs(), OutValues[I]->name(), (*Outputs)[I],
                       RunShowValues);
  outs().flush();
  if (!RunOutputDir.empty()) {
    std::vector<std::string> Names;
    for (const Value *V : OutValues)
      Names.push_back(V->name());
    if (Error E = writeTensors(RunOutputDir, Names, *Outputs))
      return reportError(std::move(E));
  }
  return ExitSuccess;
}

} // namespace solder
