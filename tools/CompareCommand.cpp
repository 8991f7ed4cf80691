//===- CompareCommand.cpp - `solder compare MODEL.onnx` -------------------===//
//
// Finds the fused group that computes wrong. Compiles the model exactly as
// `solder compile` would, runs the plan step by step on the GPU and, for
// every group of the plan (fused groups and single unfused nodes), copies
// its operands out before its first step and its results out after its
// last. The reference executor then runs the same group (a fused group's
// body, or the one node) on the GPU's own operands, so an error shows up in
// the group that makes it rather than in everything downstream. Last, the
// model's outputs are compared three ways: fused GPU run, unfused GPU run
// (--no-fusion) and the reference executor on the imported model.
//
// Exit codes: 0 all within tolerance, 1 a group or an output is not, 2 bad
// input or no GPU.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelEmitter.h"
#include "frontend/ModelSummary.h"
#include "ir/AttentionSpec.h"
#include "ir/FusedGroup.h"
#include "runtime/cuda/CudaSupport.h"
#include "runtime/cuda/Plan.h"
#include "runtime/cuda/PlanFile.h"
#include "runtime/reference/Kernels.h"
#include "runtime/reference/ReferenceExecutor.h"
#include "tools/CommandUtils.h"
#include "tools/Compare.h"
#include "tools/GpuCommands.h"
#include "tools/RandomInputs.h"
#include "tools/TensorIO.h"
#include "tools/Verbosity.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"
#include <cmath>
#include <map>

using namespace llvm;

namespace solder {

static cl::SubCommand
    CompareCmd("compare",
               "Find the fused group that computes wrong: check every group "
               "of the GPU plan against the reference executor on the "
               "GPU's own operands (needs a GPU)");
static cl::OptionCategory CompareCat("compare options");
static cl::opt<std::string> CmpModel(cl::Positional, cl::Required,
                                     cl::desc("<model.onnx>"),
                                     cl::sub(CompareCmd), cl::cat(CompareCat));
static cl::list<std::string>
    CmpShapes("shape", cl::value_desc("name=dims"),
              cl::desc("Input shape (input_ids=1x128) or dim symbol size "
                       "(N=4); repeatable"),
              cl::sub(CompareCmd), cl::cat(CompareCat));
static cl::list<std::string>
    CmpInputs("input", cl::value_desc("name=file"),
              cl::desc("Input tensor from a .npy or .pb file; repeatable"),
              cl::sub(CompareCmd), cl::cat(CompareCat));
static cl::opt<bool>
    CmpRandom("random-inputs",
              cl::desc("Generate every input not given with --input (the "
                       "same values `solder run --seed` makes)"),
              cl::sub(CompareCmd), cl::cat(CompareCat));
static cl::opt<uint64_t> CmpSeed("seed", cl::init(0),
                                 cl::desc("Seed of --random-inputs"),
                                 cl::sub(CompareCmd), cl::cat(CompareCat));
static cl::opt<double>
    CmpRTol("rtol",
            cl::desc("Tolerance of each group relative to the largest "
                     "reference value: max|gpu-ref| <= atol + rtol*max|ref| "
                     "(default 1e-4 for f32, 1e-2 for f16/bf16)"),
            cl::sub(CompareCmd), cl::cat(CompareCat));
static cl::opt<double>
    CmpATol("atol",
            cl::desc("Absolute tolerance of each group (default 1e-5 for "
                     "f32, 1e-3 for f16/bf16)"),
            cl::sub(CompareCmd), cl::cat(CompareCat));
static cl::opt<double> CmpOutRTol(
    "output-rtol", cl::init(1e-3),
    cl::desc("Relative tolerance of the model outputs (errors add up over "
             "the groups); default 1e-3, 1e-2 with --precision fp16, 3e-2 "
             "with bf16"),
    cl::sub(CompareCmd), cl::cat(CompareCat));
static cl::opt<double> CmpOutATol("output-atol", cl::init(1e-4),
                                  cl::desc("Absolute tolerance of the model "
                                           "outputs"),
                                  cl::sub(CompareCmd), cl::cat(CompareCat));
static cl::opt<std::string> CmpJson("json", cl::value_desc("file"),
                                    cl::desc("Also write the results as JSON"),
                                    cl::sub(CompareCmd), cl::cat(CompareCat));
static cl::opt<std::string>
    CmpArch("arch", cl::value_desc("sm_XY"),
            cl::desc("Target GPU architecture (default: this GPU's)"),
            cl::sub(CompareCmd), cl::cat(CompareCat));
static cl::opt<std::string> CmpCacheDir("cache-dir", cl::value_desc("dir"),
                                        cl::desc("Compiled-kernel cache"),
                                        cl::sub(CompareCmd),
                                        cl::cat(CompareCat));
static cl::opt<bool>
    CmpTF32("allow-tf32",
            cl::desc("Let fp32 matmuls and convolutions use TF32 (then "
                     "loosen --rtol)"),
            cl::sub(CompareCmd), cl::cat(CompareCat));
static cl::list<std::string>
    CmpDisabledPasses("disable-pass", cl::value_desc("pass"),
                      cl::desc("Skip a pipeline pass; repeatable"),
                      cl::sub(CompareCmd), cl::cat(CompareCat));
static cl::opt<int64_t> CmpPerturb(
    "test-perturb-group", cl::init(-1), cl::Hidden,
    cl::desc("Test only: the generated kernel of this group adds a small "
             "error to its first output"),
    cl::sub(CompareCmd), cl::cat(CompareCat));
static FusionFlags CmpFusion(CompareCmd, CompareCat);
static PrecisionFlags CmpPrecision(CompareCmd, CompareCat);

/// The plan's precision, for the default tolerances.
static Precision CmpPrec = Precision::F32;
static VerbosityFlags CmpVerbosity(CompareCmd, CompareCat);
static LimitFlags CmpLimits(CompareCmd, CompareCat);
static DeviceMemoryFlag CmpDeviceMemory(CompareCmd, CompareCat);

cl::SubCommand &compareSubCommand() { return CompareCmd; }

namespace {
/// A group's tensors as the GPU had them.
struct GroupData {
  std::vector<Tensor> Operands, Results;
  bool HaveOperands = false, HaveResults = false;
};

struct GroupOutcome {
  const PlanGroup *Group = nullptr;
  ErrorStats Err;
  bool Pass = true;
  /// Why the group could not be checked, or where it failed; "" for a pass.
  std::string Note;
  bool Checked = false;
};

struct OutputOutcome {
  std::string Name, What;
  ErrorStats Err;
  bool Pass = true;
  std::string Reason;
};
} // namespace

static Error cmpError(const Twine &Msg) {
  return createStringError(inconvertibleErrorCode(), Msg);
}

static Tolerance groupTolerance(DType Elem) {
  // In a reduced-precision plan an fp32 result (an output cast, an fp32
  // region of the policy) still comes from reduced inputs, and a fused
  // kernel keeps its reduced intermediates in fp32 registers where the
  // reference rounds them: the plan's precision sets the bound.
  bool Half = Elem == DType::F16 || Elem == DType::BF16 ||
              CmpPrec == Precision::F16 || CmpPrec == Precision::BF16;
  // bf16 keeps 8 significant bits: one rounding is up to 2^-8 relative.
  double HalfRTol =
      Elem == DType::BF16 || CmpPrec == Precision::BF16 ? 3e-2 : 1e-2;
  Tolerance T;
  T.RTol = CmpRTol.getNumOccurrences() ? CmpRTol : (Half ? HalfRTol : 1e-4);
  T.ATol = CmpATol.getNumOccurrences() ? CmpATol : (Half ? 1e-3 : 1e-5);
  return T;
}

/// The model outputs' tolerance: the reference runs the original fp32
/// graph, so a reduced-precision plan is held to its precision's bound.
static Tolerance outputTolerance() {
  Tolerance T{CmpOutRTol, CmpOutATol};
  if (!CmpOutRTol.getNumOccurrences() && CmpPrec == Precision::F16)
    T.RTol = 1e-2;
  if (!CmpOutRTol.getNumOccurrences() && CmpPrec == Precision::BF16)
    T.RTol = 3e-2;
  return T;
}

/// "conv1, relu1, add3, +4 more": member names, at most about 60 chars.
static std::string shortNodes(ArrayRef<std::string> Names) {
  std::string S;
  for (size_t I = 0; I < Names.size(); ++I) {
    std::string Next = (I ? ", " : "") + Names[I];
    if (I > 0 && S.size() + Next.size() > 60) {
      S += formatv(", +{0} more", Names.size() - I).str();
      break;
    }
    S += Next;
  }
  return S;
}

static json::Value jsonNumber(double V) {
  if (std::isfinite(V))
    return V;
  return std::isnan(V) ? "nan" : (V > 0 ? "inf" : "-inf");
}

/// The node of G a single (unfused) plan group stands for.
static const Node *findSingle(const Graph &G, const PlanGroup &PG) {
  if (PG.Members.size() != 1)
    return nullptr;
  for (const auto &N : G.nodes())
    if (!isFusedGroup(*N) && memberName(*N) == PG.Members[0])
      return N.get();
  return nullptr;
}

/// The FusedGroup or Attention node of G with group id Id.
static const Node *findFused(const Graph &G, int64_t Id) {
  for (const auto &N : G.nodes()) {
    if (isFusedGroup(*N) && groupInfo(*N).Id == Id)
      return N.get();
    if (N->kind() == OpKind::Attention && attentionGroup(*N).Id == Id)
      return N.get();
  }
  return nullptr;
}

/// The tensor for value V of the compiled graph: the GPU's copy when the
/// plan lists V among the group's operands, else the graph's constant.
static const Tensor *operandTensor(const Value *V, const PlanGroup &PG,
                                   const GroupData &D) {
  for (size_t I = 0; I < PG.Operands.size() && I < D.Operands.size(); ++I)
    if (PG.Operands[I].Name == V->name())
      return &D.Operands[I];
  return V->constant();
}

/// Runs the group on the CPU from the GPU's operands and compares with the
/// GPU's results.
static GroupOutcome checkGroup(const Graph &Compiled, const PlanGroup &PG,
                               const GroupData &D) {
  GroupOutcome O;
  O.Group = &PG;
  if (!D.HaveOperands || !D.HaveResults) {
    O.Note = "not checked: the step-by-step run did not reach it";
    return O;
  }
  const Node *N =
      PG.Id >= 0 ? findFused(Compiled, PG.Id) : findSingle(Compiled, PG);
  if (!N) {
    O.Note = PG.Id >= 0 ? formatv("not checked: no FusedGroup node with id "
                                  "{0} in the compiled graph",
                                  PG.Id)
                              .str()
                        : "not checked: no node '" + join(PG.Members, ",") +
                              "' in the compiled graph";
    return O;
  }
  std::vector<const Tensor *> Ops;
  std::vector<Tensor> ReadThrough; // Slices the attention kernel reads through
  ReadThrough.reserve(N->numOperands());
  // Statistics the group computed itself, with the reference's values.
  std::vector<std::pair<const Value *, const Tensor *>> Stats;
  for (const Value *V : N->operands()) {
    if (!V) {
      Ops.push_back(nullptr);
      continue;
    }
    const Tensor *T = operandTensor(V, PG, D);
    const Node *P = V->producer();
    if (!T && P && isReadThroughByAttention(*P)) {
      // The plan holds the Slice's or Split's input: cut V out of it here,
      // as the kernel read it.
      std::vector<const Tensor *> SliceOps;
      for (const Value *SV : P->operands())
        SliceOps.push_back(SV ? operandTensor(SV, PG, D) : nullptr);
      SmallVector<Tensor, 3> R;
      if (SliceOps[0]) {
        if (Error E = ref::evaluateNode(*P, SliceOps, R)) {
          consumeError(std::move(E));
        } else {
          size_t K = llvm::find(P->results(), V) - P->results().begin();
          ReadThrough.push_back(std::move(R[K]));
          T = &ReadThrough.back();
        }
      }
    }
    if (!T && P && !P->body() && statsNormOf(*P)) {
      // A deferred LayerNorm's statistics, which this group's GEMM computed
      // (the plan lists them as its results): the reference computes them
      // from the group's own input, and they are checked below.
      std::vector<const Tensor *> NormOps;
      for (const Value *SV : P->operands())
        NormOps.push_back(SV ? operandTensor(SV, PG, D) : nullptr);
      SmallVector<Tensor, 3> R;
      Error E =
          NormOps[0] ? ref::evaluateNode(*P, NormOps, R) : Error::success();
      if (E) {
        consumeError(std::move(E));
      } else if (NormOps[0]) {
        size_t K = llvm::find(P->results(), V) - P->results().begin();
        ReadThrough.push_back(std::move(R[K]));
        T = &ReadThrough.back();
        Stats.push_back({V, T});
      }
    }
    if (!T) {
      O.Note = "not checked: the plan lists no operand '" + V->name() + "'";
      return O;
    }
    Ops.push_back(T);
  }
  std::vector<Tensor> Want;
  if (N->body()) {
    std::vector<Tensor> In;
    for (const Tensor *T : Ops)
      In.push_back(T ? *T : Tensor());
    Expected<std::vector<Tensor>> R = runReference(*N->body(), In);
    if (!R) {
      O.Note = "not checked: reference failed: " + toString(R.takeError());
      return O;
    }
    Want = std::move(*R);
  } else {
    SmallVector<Tensor, 2> R;
    if (Error E = ref::evaluateNode(*N, Ops, R)) {
      O.Note = "not checked: reference failed: " + toString(std::move(E));
      return O;
    }
    Want.assign(R.begin(), R.end());
  }
  O.Checked = true;
  std::vector<const Value *> Checked(N->results().begin(), N->results().end());
  for (const auto &[V, T] : Stats) {
    Checked.push_back(V);
    Want.push_back(*T);
  }
  for (size_t I = 0; I < Checked.size() && I < Want.size(); ++I) {
    const Value *V = Checked[I];
    if (!V)
      continue;
    const Tensor *Actual = nullptr;
    for (size_t K = 0; K < PG.Results.size() && K < D.Results.size(); ++K)
      if (PG.Results[K].Name == V->name())
        Actual = &D.Results[K];
    if (!Actual)
      continue; // a result no step writes (unused optional result)
    ErrorStats E = measureErrors(*Actual, Want[I]);
    O.Err.MaxAbs = std::max(O.Err.MaxAbs, E.MaxAbs);
    O.Err.MaxRel = std::max(O.Err.MaxRel, E.scaled());
    Tolerance Tol = groupTolerance(V->dtype());
    if (!E.withinScaled(Tol.RTol, Tol.ATol) && O.Pass) {
      O.Pass = false;
      O.Note = "'" + V->name() + "': max abs error " +
               std::to_string(E.MaxAbs) + " > atol + rtol * max|ref| (" +
               std::to_string(Tol.ATol) + " + " + std::to_string(Tol.RTol) +
               " * " + std::to_string(E.MaxRef) + "); " +
               compareTensors(*Actual, Want[I], Tol).Reason;
    }
  }
  return O;
}

/// Reads a plan value into a host tensor.
static Expected<Tensor> readValue(ExecutionContext &Ctx, const PlanValue &V) {
  Tensor T(V.Elem, V.Dims);
  if (Error E = Ctx.readBuffer(V.Ref, T.mutableRawData(), T.byteSize()))
    return std::move(E);
  return T;
}

/// The model inputs, from --input files or --random-inputs, in the order
/// of Model's inputs.
static Expected<std::vector<Tensor>>
makeInputs(const CompiledModel &Model, const StringMap<Tensor> &Given) {
  std::vector<Tensor> Inputs;
  ArrayRef<TensorInfo> Infos = Model.inputs();
  for (size_t Index = 0; Index < Infos.size(); ++Index) {
    const TensorInfo &Info = Infos[Index];
    auto It = Given.find(Info.Name);
    if (It != Given.end()) {
      const Tensor &T = It->second;
      if (T.dtype() != Info.Elem || T.dims() != ArrayRef<int64_t>(Info.Dims))
        return cmpError("input '" + Info.Name + "': the file holds " +
                        typeToString(T.type()) + ", the model expects " +
                        typeToString(TensorType(Info.Elem, Info.Dims)));
      Inputs.push_back(T);
      continue;
    }
    if (!CmpRandom)
      return cmpError("no data for input '" + Info.Name +
                      "': give --input NAME=FILE or --random-inputs");
    // As `solder run` seeds each input, so both see the same data.
    RandomGenerator Gen(CmpSeed * 0x100000001b3ULL + Index);
    Inputs.push_back(
        makeRandomTensor(Info.Elem, Info.Dims, RandomOptions(), Gen));
  }
  return Inputs;
}

static std::vector<OutputOutcome> compareOutputs(ArrayRef<std::string> Names,
                                                 ArrayRef<Tensor> Actual,
                                                 ArrayRef<Tensor> Expected,
                                                 StringRef What) {
  std::vector<OutputOutcome> Out;
  Tolerance Tol = outputTolerance();
  for (size_t I = 0; I < Names.size() && I < Actual.size(); ++I) {
    OutputOutcome O;
    O.Name = Names[I];
    O.What = What.str();
    if (I >= Expected.size()) {
      O.Pass = false;
      O.Reason = "no such output on the other side";
    } else {
      O.Err = measureErrors(Actual[I], Expected[I]);
      O.Pass = O.Err.withinScaled(Tol.RTol, Tol.ATol);
      if (!O.Pass)
        O.Reason = compareTensors(Actual[I], Expected[I], Tol).Reason;
      O.Err.MaxRel = O.Err.scaled();
    }
    Out.push_back(std::move(O));
  }
  return Out;
}

static int runCompare() {
  if (Error E = checkPassNames(CmpDisabledPasses))
    return reportError(std::move(E));
  if (looksLikePlanFile(CmpModel))
    return reportError("compare needs the ONNX model, not a plan file: it "
                       "compiles the model with and without fusion");
  if (CmpRTol.getNumOccurrences() && CmpRTol < 0)
    return reportError("--rtol must not be negative");
  if (CmpATol.getNumOccurrences() && CmpATol < 0)
    return reportError("--atol must not be negative");

  // Input files first: their dims bind the model's symbolic dims.
  ModelLoadOptions Opts;
  Opts.Shapes.assign(CmpShapes.begin(), CmpShapes.end());
  StringMap<Tensor> Given;
  for (StringRef Arg : CmpInputs) {
    auto NF = splitInputArg(Arg);
    if (!NF)
      return reportError(NF.takeError());
    // Not a structured binding: clang 14 cannot capture one in a lambda.
    StringRef Name = NF->first, File = NF->second;
    Expected<Tensor> T = readTensorFile(File);
    if (!T)
      return reportError(T.takeError());
    bool Shaped = llvm::any_of(
        CmpShapes, [&](StringRef S) { return S.split('=').first == Name; });
    if (!Shaped) {
      std::string Dims = T->rank() ? "" : "scalar";
      for (unsigned I = 0; I < T->rank(); ++I)
        Dims += (I ? "x" : "") + std::to_string(T->dims()[I]);
      Opts.Shapes.push_back((Name + "=" + Dims).str());
    }
    Given[Name] = std::move(*T);
  }

  // Compiling needs no GPU, but everything after it does: say so first.
  if (Expected<int> Dev = requireDevice(); !Dev)
    return reportError("solder compare runs the model on a GPU: " +
                       toString(Dev.takeError()));

  Opts.Arch = CmpArch;
  Opts.CacheDir = CmpCacheDir;
  Opts.AllowTF32 = CmpTF32;
  if (Error E = CmpPrecision.apply(Opts.Prec, Opts.ComputeIo, Opts.Layout))
    return reportError(std::move(E));
  CmpPrec = Opts.Prec;
  Opts.DisabledPasses.assign(CmpDisabledPasses.begin(),
                             CmpDisabledPasses.end());
  if (Error E = CmpFusion.apply(Opts))
    return reportError(std::move(E));
  if (Error E = applyLimits(CmpLimits, Opts))
    return reportError(std::move(E));
  Expected<uint64_t> DeviceLimit = CmpDeviceMemory.bytes();
  if (!DeviceLimit)
    return reportError(DeviceLimit.takeError());
  Opts.MaxDeviceMemory = *DeviceLimit;
  Opts.PerturbGroupId = CmpPerturb;
  Opts.DefaultDimNotes = &CmpVerbosity.notes();
  std::unique_ptr<PhaseDisplay> Display = CmpVerbosity.makeDisplay();
  CmpVerbosity.apply(Opts, *Display);
  Expected<CompiledOnnxModel> Fused = compileOnnxModel(CmpModel, Opts);
  if (!Fused)
    return reportError(Fused.takeError());
  const Plan &P = Fused->Model->plan();
  // Not an error: `--disable-fusion N --test-perturb-group N` must pass.
  if (CmpPerturb >= 0 && llvm::none_of(P.Groups, [](const PlanGroup &G) {
        return G.Id == CmpPerturb;
      }))
    errs() << "note: --test-perturb-group " << CmpPerturb
           << ": the plan has no fused group of that id; nothing perturbed\n";

  Expected<std::vector<Tensor>> Inputs = makeInputs(*Fused->Model, Given);
  if (!Inputs)
    return reportError(Inputs.takeError());
  for (const auto &E : Given)
    if (Fused->Model->inputIndex(E.getKey()) < 0)
      return reportError("--input '" + E.getKey() +
                         "': the model has no such input");

  Expected<std::unique_ptr<ExecutionContext>> Ctx =
      Fused->Model->createContext();
  if (!Ctx)
    return reportError(Ctx.takeError());
  (*Ctx)->setUseCudaGraph(false);
  for (size_t I = 0; I < Inputs->size(); ++I)
    if (Error E = (*Ctx)->copyInputFromHost(unsigned(I), (*Inputs)[I].rawData(),
                                            (*Inputs)[I].byteSize(), nullptr))
      return reportError(std::move(E));

  // Which groups start and end at each step.
  std::multimap<size_t, size_t> StartsAt, EndsAt;
  for (size_t G = 0; G < P.Groups.size(); ++G) {
    ArrayRef<uint32_t> S = P.Groups[G].Steps;
    if (S.empty())
      continue; // a view: no step, nothing to check
    StartsAt.insert({*std::min_element(S.begin(), S.end()), G});
    EndsAt.insert({*std::max_element(S.begin(), S.end()), G});
  }
  if (P.Groups.empty())
    errs() << "note: the plan lists no groups (Plan::Groups is empty): no "
              "per-group check, only the outputs are compared\n";
  std::vector<GroupData> Data(P.Groups.size());
  ExecutionContext &C = **Ctx;
  Error RunErr =
      C.runStepByStep(nullptr, [&](size_t Step, bool After) -> Error {
        auto &Map = After ? EndsAt : StartsAt;
        for (auto [It, End] = Map.equal_range(Step); It != End; ++It) {
          const PlanGroup &PG = P.Groups[It->second];
          GroupData &D = Data[It->second];
          for (const PlanValue &V : After ? PG.Results : PG.Operands) {
            Expected<Tensor> T = readValue(C, V);
            if (!T)
              return T.takeError();
            (After ? D.Results : D.Operands).push_back(std::move(*T));
          }
          (After ? D.HaveResults : D.HaveOperands) = true;
        }
        return Error::success();
      });
  if (RunErr)
    return reportError(std::move(RunErr));
  std::vector<Tensor> FusedOut;
  for (size_t I = 0; I < Fused->Model->outputs().size(); ++I) {
    const TensorInfo &Info = Fused->Model->outputs()[I];
    Tensor T(Info.Elem, Info.Dims);
    if (Error E = C.copyOutputToHost(unsigned(I), T.mutableRawData(),
                                     T.byteSize(), nullptr))
      return reportError(std::move(E));
    FusedOut.push_back(std::move(T));
  }

  // Per group.
  std::vector<GroupOutcome> Groups;
  const GroupOutcome *FirstFail = nullptr;
  for (size_t G = 0; G < P.Groups.size(); ++G)
    if (!P.Groups[G].Steps.empty())
      Groups.push_back(checkGroup(*Fused->CompiledGraph, P.Groups[G], Data[G]));
  outs() << "group  kind         max abs err  err/max|ref|  result   nodes\n";
  for (const GroupOutcome &O : Groups) {
    const PlanGroup &PG = *O.Group;
    StringRef Result = !O.Checked ? "SKIP" : O.Pass ? "PASS" : "FAIL";
    outs() << left_justify(PG.Id >= 0 ? std::to_string(PG.Id) : "-", 5) << "  "
           << left_justify(PG.Kind, 11) << "  "
           << format("%-11.3g  %-12.3g  ", O.Err.MaxAbs, O.Err.MaxRel)
           << left_justify(Result, 7) << "  " << shortNodes(PG.Members) << "\n";
    if (!O.Pass && !FirstFail)
      FirstFail = &O;
  }
  size_t Skipped =
      llvm::count_if(Groups, [](const GroupOutcome &O) { return !O.Checked; });
  if (FirstFail) {
    const PlanGroup &PG = *FirstFail->Group;
    outs() << "first failing group: "
           << (PG.Id >= 0 ? "group " + std::to_string(PG.Id)
                          : std::string("single node"))
           << " (" << PG.Kind << ": " << join(PG.Members, ", ")
           << "): " << FirstFail->Note << "\n";
  } else {
    outs() << "all " << Groups.size() - Skipped
           << " checked groups within tolerance";
    if (Skipped)
      outs() << " (" << Skipped << " not checked)";
    outs() << "\n";
  }
  for (const GroupOutcome &O : Groups)
    if (!O.Checked)
      outs() << "  " << shortNodes(O.Group->Members) << ": " << O.Note << "\n";

  // Whole model: unfused GPU run and the reference on the imported graph.
  std::vector<std::string> OutNames;
  for (const TensorInfo &T : Fused->Model->outputs())
    OutNames.push_back(T.Name);
  ModelLoadOptions Unfused = Opts;
  Unfused.NoFusion = true;
  Unfused.DisabledFusions.clear();
  Unfused.PerturbGroupId = -1;
  Expected<std::shared_ptr<CompiledModel>> UM =
      loadOrCompileModel(CmpModel, Unfused);
  if (!UM)
    return reportError(UM.takeError());
  Expected<std::unique_ptr<ExecutionContext>> UCtx = (*UM)->createContext();
  if (!UCtx)
    return reportError(UCtx.takeError());
  Expected<std::vector<Tensor>> UnfusedOut = (*UCtx)->runHost(*Inputs);
  if (!UnfusedOut)
    return reportError(UnfusedOut.takeError());
  Expected<std::unique_ptr<Graph>> Imported =
      importOnnxFile(CmpModel, Fused->Import);
  if (!Imported)
    return reportError(Imported.takeError());
  Expected<std::vector<Tensor>> RefOut = runReference(**Imported, *Inputs);
  if (!RefOut)
    return reportError(RefOut.takeError());

  std::vector<OutputOutcome> Outputs;
  for (auto &V :
       {compareOutputs(OutNames, FusedOut, *RefOut, "fused vs reference"),
        compareOutputs(OutNames, *UnfusedOut, *RefOut, "unfused vs reference"),
        compareOutputs(OutNames, FusedOut, *UnfusedOut, "fused vs unfused")})
    Outputs.insert(Outputs.end(), V.begin(), V.end());
  bool OutputsPass = true;
  for (const OutputOutcome &O : Outputs) {
    outs() << "output '" << O.Name << "' " << left_justify(O.What, 20)
           << format("  max abs %-10.3g err/max|ref| %-10.3g ", O.Err.MaxAbs,
                     O.Err.MaxRel)
           << (O.Pass ? "PASS" : "FAIL") << "\n";
    if (!O.Pass)
      outs() << "  " << O.Reason << "\n";
    OutputsPass &= O.Pass;
  }
  bool AllPass = !FirstFail && OutputsPass;
  outs() << (AllPass ? "PASS" : "FAIL") << "\n";
  outs().flush();

  if (!CmpJson.empty()) {
    json::Array GroupsJ, OutputsJ;
    for (const GroupOutcome &O : Groups) {
      json::Array Members;
      for (const std::string &M : O.Group->Members)
        Members.push_back(M);
      GroupsJ.push_back(json::Object{{"id", O.Group->Id},
                                     {"kind", O.Group->Kind},
                                     {"runs_as", O.Group->RunsAs},
                                     {"members", std::move(Members)},
                                     {"max_abs_err", jsonNumber(O.Err.MaxAbs)},
                                     {"max_rel_err", jsonNumber(O.Err.MaxRel)},
                                     {"checked", O.Checked},
                                     {"pass", O.Pass},
                                     {"note", O.Note}});
    }
    for (const OutputOutcome &O : Outputs)
      OutputsJ.push_back(json::Object{{"name", O.Name},
                                      {"comparison", O.What},
                                      {"max_abs_err", jsonNumber(O.Err.MaxAbs)},
                                      {"max_rel_err", jsonNumber(O.Err.MaxRel)},
                                      {"pass", O.Pass},
                                      {"reason", O.Reason}});
    json::Value FirstFailJ = nullptr, FirstFailMembers = nullptr;
    if (FirstFail) {
      FirstFailJ = FirstFail->Group->Id;
      json::Array M;
      for (const std::string &S : FirstFail->Group->Members)
        M.push_back(S);
      FirstFailMembers = std::move(M);
    }
    json::Object Root{
        {"model", CmpModel.getValue()},
        {"group_tolerance_f32",
         json::Object{{"rtol", groupTolerance(DType::F32).RTol},
                      {"atol", groupTolerance(DType::F32).ATol}}},
        {"output_tolerance", json::Object{{"rtol", outputTolerance().RTol},
                                          {"atol", outputTolerance().ATol}}},
        {"precision", precisionName(CmpPrec)},
        {"groups", std::move(GroupsJ)},
        {"first_failing_group", std::move(FirstFailJ)},
        {"first_failing_members", std::move(FirstFailMembers)},
        {"outputs", std::move(OutputsJ)},
        {"pass", AllPass}};
    std::error_code EC;
    raw_fd_ostream OS(CmpJson, EC, sys::fs::OF_Text);
    if (EC)
      return reportError("cannot write '" + CmpJson + "': " + EC.message());
    OS << formatv("{0:2}", json::Value(std::move(Root))) << "\n";
  }
  return AllPass ? ExitSuccess : ExitMismatch;
}

int runCompareCommand(CommandArgs) { return runCompare(); }

} // namespace solder
