//===- GemmTuning.cpp - Generated GEMM or library, timed per group --------===//
#include "runtime/cuda/GemmTuning.h"
#include "codegen/ConvGraphEpilogue.h"
#include "codegen/KernelEmitter.h"
#include "codegen/NvrtcCompiler.h"
#include "ir/AttentionSpec.h"
#include "ir/FusedGroup.h"
#include "runtime/cuda/CudaLibraries.h"
#include "runtime/cuda/CudaSupport.h"
#include "runtime/cuda/CudnnConvGraph.h"
#include "runtime/cuda/KernelCompiler.h"
#include "runtime/cuda/PlanFile.h"
#include "solder/Solder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <map>

using namespace llvm;

namespace solder {

namespace {

constexpr unsigned TuneRuns = 7, TuneReps = 20;
/// How much faster alone a candidate must run to be chosen: cuDNN's
/// attention 5%; a generated GEMM 2% (the fused LayerNorm GEMMs at b32 ran
/// 1.02-1.05x of cuBLASLt plus the row kernel in plans on an H200, which
/// 5% never kept). Either way the plan with the choices must then also run
/// faster whole.
constexpr double AttentionMargin = 0.95, GemmMargin = 0.98, ConvMargin = 0.98;

struct PlanTimes {
  std::map<int64_t, double> Groups; ///< each candidate group's steps alone
  double Whole = 0;                 ///< the whole plan
};

/// The plan of G built with PO, kernels compiled.
Expected<Plan> candidatePlan(const Graph &G, PlanOptions PO) {
  PO.Progress = nullptr;
  Expected<Plan> P = buildPlan(G, PO);
  if (!P)
    return P.takeError();
  if (Error E = compilePlanKernels(*P, PO))
    return std::move(E);
  return P;
}

/// The plan of G built with Mode (and Choices), kernels compiled.
Expected<Plan> candidatePlan(const Graph &G, const PlanOptions &Base,
                             GemmKernels Mode,
                             const std::map<int64_t, bool> &Choices) {
  PlanOptions PO = Base;
  PO.Gemm = Mode;
  PO.GemmChoices = Choices;
  return candidatePlan(G, PO);
}

/// Median milliseconds of plan P and of each candidate group's steps in it.
/// A plan loaded for timing: its model and a context with zero inputs.
struct TimedPlan {
  std::shared_ptr<CompiledModel> M;
  std::unique_ptr<ExecutionContext> C;
};

Expected<TimedPlan> loadForTiming(Plan P) {
  Expected<std::shared_ptr<CompiledModel>> M =
      CompiledModel::fromPlan(std::move(P));
  if (!M)
    return M.takeError();
  Expected<std::unique_ptr<ExecutionContext>> C = (*M)->createContext();
  if (!C)
    return C.takeError();
  for (unsigned I = 0; I < (*M)->inputs().size(); ++I) {
    std::vector<char> Zeros((*M)->inputs()[I].bytes(), 0);
    if (Error E =
            (*C)->copyInputFromHost(I, Zeros.data(), Zeros.size(), nullptr))
      return std::move(E);
  }
  return TimedPlan{std::move(*M), std::move(*C)};
}

Expected<PlanTimes> timePlan(Plan P, const std::set<int64_t> &Ids) {
  std::vector<std::pair<size_t, size_t>> Ranges;
  std::vector<int64_t> RangeIds;
  for (const PlanGroup &Grp : P.Groups)
    if (Ids.count(Grp.Id) && !Grp.Steps.empty()) {
      Ranges.push_back({Grp.Steps.front(), size_t(Grp.Steps.back()) + 1});
      RangeIds.push_back(Grp.Id);
    }
  Ranges.push_back({0, P.Steps.size()});
  Expected<TimedPlan> T = loadForTiming(std::move(P));
  if (!T)
    return T.takeError();
  Expected<std::vector<double>> Ms =
      T->C->timeStepRanges(nullptr, Ranges, TuneRuns, TuneReps);
  if (!Ms)
    return Ms.takeError();
  PlanTimes Out;
  for (size_t I = 0; I < RangeIds.size(); ++I)
    Out.Groups[RangeIds[I]] = (*Ms)[I];
  Out.Whole = Ms->back();
  return Out;
}

/// Median milliseconds of whole plans A and B, timed in turns (A, B, A,
/// B, ...): the clocks and the L2 then treat both alike, where two timings
/// taken apart differed by more than the 1-2% a choice is about (BERT-base
/// b32 on an H100: the same LayerNorm groups kept in one tuning, not kept
/// in the next).
Expected<std::pair<double, double>> timeInTurns(Plan A, Plan B) {
  constexpr unsigned Turns = 5;
  Expected<TimedPlan> TA = loadForTiming(std::move(A));
  if (!TA)
    return TA.takeError();
  Expected<TimedPlan> TB = loadForTiming(std::move(B));
  if (!TB)
    return TB.takeError();
  size_t StepsA = TA->M->plan().Steps.size(),
         StepsB = TB->M->plan().Steps.size();
  std::vector<double> Ms[2];
  for (unsigned I = 0; I < Turns; ++I)
    for (int W = 0; W < 2; ++W) {
      ExecutionContext &C = W ? *TB->C : *TA->C;
      Expected<std::vector<double>> T = C.timeStepRanges(
          nullptr, {{0, W ? StepsB : StepsA}}, TuneRuns, TuneReps);
      if (!T)
        return T.takeError();
      Ms[W].push_back(T->front());
    }
  for (std::vector<double> &V : Ms)
    std::sort(V.begin(), V.end());
  return std::make_pair(Ms[0][Turns / 2], Ms[1][Turns / 2]);
}

/// What a tuning's outcome depends on: the graph (its IR text: shapes,
/// types, groups; large constants elided, as timings do not depend on
/// values), the kernels of both candidate plans (so a change to code
/// generation tunes again), this GPU and NVRTC's version.
std::string tuningKey(const Plan &Lib, const Plan &Gen, StringRef Gpu,
                      StringRef What = "solder gemm tuning 1") {
  SHA256 H;
  auto Add = [&](StringRef S) {
    H.update(S);
    H.update(StringRef("\0", 1));
  };
  Add(What);
  Add(Gpu);
  Add(nvrtcVersionString());
  Add(Lib.IrText);
  for (const Plan *P : {&Lib, &Gen})
    for (const PlanKernel &K : P->Kernels) {
      Add(K.Name);
      Add(K.Source);
    }
  return toHex(H.final(), /*LowerCase=*/true);
}

/// Writes the outcome to Path (best effort: a cache that cannot be
/// written only costs the next compile the timing).
void writeCache(StringRef Path, const std::map<int64_t, bool> &Choices,
                std::map<int64_t, std::string> &Notes) {
  if (!Path.empty() &&
      !sys::fs::create_directories(sys::path::parent_path(Path)))
    consumeError(writeAtomically(Path, [&](raw_pwrite_stream &OS) {
      for (const auto &[Id, Use] : Choices)
        OS << Id << " " << (Use ? 1 : 0) << " " << Notes[Id] << "\n";
    }));
}

/// <cache>/tuning/<key>: one line per group, "<id> <0|1> <note>"; "" when
/// there is no cache folder.
std::string tuningPath(const PlanOptions &Opts, StringRef Key) {
  NvrtcOptions NO;
  NO.CacheDir = Opts.CacheDir;
  std::string Dir = resolveCacheDir(NO);
  return Dir.empty() ? "" : Dir + "/tuning/" + Key.str();
}

/// The cache path of a tuning between plans A and B that cuDNN takes part
/// in: keyed by What and cuDNN's version besides tuningKey's parts.
Expected<std::string> cudnnTuningPath(const PlanOptions &Opts, const Plan &A,
                                      const Plan &B, StringRef What) {
  Expected<std::string> Gpu = currentDeviceName();
  if (!Gpu)
    return Gpu.takeError();
  Expected<const CudaLibraries *> Libs = loadCudaLibraries();
  if (!Libs)
    return Libs.takeError();
  return tuningPath(Opts, tuningKey(A, B, *Gpu,
                                    (What + ", cuDNN " +
                                     std::to_string((*Libs)->cudnnGetVersion()))
                                        .str()));
}

/// The cached outcome for Ids, or false when there is none (or it does
/// not cover every group).
bool readCache(StringRef Path, const std::set<int64_t> &Ids,
               std::map<int64_t, bool> &Choices,
               std::map<int64_t, std::string> &Notes) {
  if (Path.empty())
    return false;
  ErrorOr<std::unique_ptr<MemoryBuffer>> B = MemoryBuffer::getFile(Path);
  if (!B)
    return false;
  SmallVector<StringRef, 64> Lines;
  (*B)->getBuffer().split(Lines, '\n', -1, false);
  std::map<int64_t, bool> C;
  std::map<int64_t, std::string> N;
  for (StringRef L : Lines) {
    auto [IdText, Rest] = L.split(' ');
    auto [Use, Note] = Rest.split(' ');
    int64_t Id;
    if (IdText.getAsInteger(10, Id) || (Use != "0" && Use != "1"))
      return false;
    C[Id] = Use == "1";
    N[Id] = Note.str();
  }
  for (int64_t Id : Ids)
    if (!C.count(Id))
      return false;
  Choices = std::move(C);
  Notes = std::move(N);
  return true;
}

/// Copies the outcome cached at Path for Ids into Choices and Notes (the
/// notes marked cached); false when there is none.
bool reuseCache(StringRef Path, const std::set<int64_t> &Ids,
                raw_ostream *Progress, std::map<int64_t, bool> &Choices,
                std::map<int64_t, std::string> &Notes) {
  std::map<int64_t, bool> C;
  std::map<int64_t, std::string> N;
  if (!readCache(Path, Ids, C, N))
    return false;
  if (Progress)
    *Progress << "tuning: reused the timings cached in " << Path << "\n";
  for (auto &[Id, Use] : C) {
    Choices[Id] = Use;
    Notes[Id] = N[Id] + " (cached)";
  }
  return true;
}

/// Per group of Ids, the candidate when it ran faster than the base by the
/// margin (Alone times the base or less; both times in Notes: "tuned:
/// <Cand> X us, <Base> Y us").
/// Groups timed alone can mislead (weights stay in L2 between replays), so
/// when any was chosen the plan Build makes with the choices must also be
/// faster whole than the base plan (Build with none), the two timed in
/// turns, else none is kept (Chosen names them in the note).
Error chooseFaster(
    const std::set<int64_t> &Ids, const PlanTimes &Base, const PlanTimes &Cand,
    StringRef BaseName, StringRef CandName, StringRef Chosen,
    function_ref<Expected<Plan>(const std::map<int64_t, bool> &)> Build,
    std::map<int64_t, bool> &Choices, std::map<int64_t, std::string> &Notes,
    double Alone, double *KeptWhole = nullptr) {
  if (KeptWhole)
    *KeptWhole = Base.Whole;
  bool Any = false;
  for (int64_t Id : Ids) {
    auto B = Base.Groups.find(Id), C = Cand.Groups.find(Id);
    if (B == Base.Groups.end() || C == Cand.Groups.end())
      continue;
    bool Use = C->second < B->second * Alone;
    Any |= Use;
    Choices[Id] = Use;
    Notes[Id] = formatv("tuned: {0} {1:F1} us, {2} {3:F1} us", CandName,
                        C->second * 1e3, BaseName, B->second * 1e3)
                    .str();
  }
  if (!Any)
    return Error::success();
  Expected<Plan> TunedPlan = Build(Choices);
  if (!TunedPlan)
    return TunedPlan.takeError();
  Expected<Plan> BasePlan = Build({});
  if (!BasePlan)
    return BasePlan.takeError();
  Expected<std::pair<double, double>> Whole =
      timeInTurns(std::move(*BasePlan), std::move(*TunedPlan));
  if (!Whole)
    return Whole.takeError();
  auto [BaseWhole, TunedWhole] = *Whole;
  if (KeptWhole)
    *KeptWhole = BaseWhole;
  if (TunedWhole < BaseWhole) {
    if (KeptWhole)
      *KeptWhole = TunedWhole;
    return Error::success();
  }
  std::string Why = formatv("; not kept: the plan ran {0:F3} ms with the "
                            "chosen {1}, {2:F3} ms without (timed in turns)",
                            TunedWhole, Chosen, BaseWhole)
                        .str();
  for (auto &[Id, Use] : Choices)
    if (Use) {
      Use = false;
      Notes[Id] += Why;
    }
  return Error::success();
}

} // namespace

/// The tuning cache's line for the chain of dependent launches (group ids
/// are never negative).
static constexpr int64_t ChainId = -1;
/// The chain must run the whole plan this much faster than the best other.
static constexpr double ChainMargin = 0.98;

/// The tuning cache's line saying group Id keeps its row normalization
/// fused in the chain: FusedInChain - Id (below ChainId).
static constexpr int64_t FusedInChain = -2;

/// Makes Opts the chain's: every matmul group of Ids generated, those
/// with a row normalization split unless in Fused, every generated kernel
/// a dependent launch (the fused ones with their statistics through
/// global memory are cooperative launches as well).
static void useChain(const Graph &G, const std::set<int64_t> &Ids,
                     PlanOptions &Opts, const std::set<int64_t> &Fused) {
  Opts.DependentLaunch = true;
  for (const auto &N : G.nodes())
    if (isFusedGroup(*N) && Ids.count(groupInfo(*N).Id)) {
      Opts.GemmChoices[groupInfo(*N).Id] = true;
      if (normSplitValue(*N) && !Fused.count(groupInfo(*N).Id))
        Opts.SplitNormGroups.insert(groupInfo(*N).Id);
    }
}

Error tuneGemmGroups(const Graph &G, PlanOptions &Opts) {
  unsigned Sm = smVersionOf(Opts.Arch);
  std::set<int64_t> Ids;
  for (const auto &N : G.nodes())
    if (isFusedGroup(*N) && groupInfo(*N).Kind == GroupKind::Contraction &&
        generatedGemmUnsupported(*N, Sm).empty())
      Ids.insert(groupInfo(*N).Id);
  if (Ids.empty())
    return Error::success();
  if (Opts.Progress)
    *Opts.Progress << "tuning: timing " << Ids.size()
                   << " matmul groups as library calls and as generated "
                      "GEMMs\n";
  Expected<Plan> LibPlan = candidatePlan(G, Opts, GemmKernels::Library, {});
  if (!LibPlan)
    return LibPlan.takeError();
  Expected<Plan> GenPlan = candidatePlan(G, Opts, GemmKernels::Generated, {});
  if (!GenPlan)
    return GenPlan.takeError();
  Expected<std::string> Gpu = currentDeviceName();
  if (!Gpu)
    return Gpu.takeError();
  std::string Path = tuningPath(
      Opts, tuningKey(*LibPlan, *GenPlan, *Gpu, "solder gemm tuning 5"));
  if (reuseCache(Path, Ids, Opts.Progress, Opts.GemmChoices, Opts.GemmNotes)) {
    bool Chain = Opts.GemmChoices.count(ChainId) && Opts.GemmChoices[ChainId];
    std::set<int64_t> Fused;
    for (auto It = Opts.GemmChoices.begin(); It != Opts.GemmChoices.end();) {
      if (It->first >= 0) {
        ++It;
        continue;
      }
      if (It->first <= FusedInChain && It->second)
        Fused.insert(FusedInChain - It->first);
      Opts.GemmNotes.erase(It->first);
      It = Opts.GemmChoices.erase(It);
    }
    if (Chain)
      useChain(G, Ids, Opts, Fused);
    return Error::success();
  }
  std::map<int64_t, bool> Choices;
  std::map<int64_t, std::string> Notes;
  double BestWhole = 0;
  Expected<PlanTimes> Lib = timePlan(std::move(*LibPlan), Ids);
  if (!Lib)
    return Lib.takeError();
  Expected<PlanTimes> Gen = timePlan(std::move(*GenPlan), Ids);
  if (!Gen)
    return Gen.takeError();
  if (Error E = chooseFaster(
          Ids, *Lib, *Gen, "library", "generated GEMM", "generated GEMMs",
          [&](const std::map<int64_t, bool> &C) {
            return candidatePlan(G, Opts, GemmKernels::Auto, C);
          },
          Choices, Notes, GemmMargin, &BestWhole))
    return E;
  // The chain: at small batches the plan is a chain of short kernels, and
  // generated kernels launched as dependents overlap each one's start
  // (its weights fetched early) with the previous one's end, which no
  // group timed alone shows. So the whole plan with every matmul group
  // generated (row normalizations split off into their row kernels, the
  // fused form being slower wherever measured) and dependent launches is
  // one more candidate, kept when it runs the whole plan 2% faster.
  // A second chain keeps fused the row normalizations whose one-kernel
  // form (statistics through global memory) ran faster alone than the
  // library and its row kernel.
  std::set<int64_t> FusedAlone;
  for (const auto &N : G.nodes())
    if (isFusedGroup(*N) && Ids.count(groupInfo(*N).Id) && normSplitValue(*N)) {
      int64_t Id = groupInfo(*N).Id;
      auto L = Lib->Groups.find(Id), C = Gen->Groups.find(Id);
      if (L != Lib->Groups.end() && C != Gen->Groups.end() &&
          C->second < L->second * GemmMargin)
        FusedAlone.insert(Id);
    }
  std::set<int64_t> ChainFused;
  if (Sm >= 90 && !Opts.DependentLaunch) {
    double ChainWhole = 0;
    std::string Which;
    for (bool WithFused : {false, true}) {
      if (WithFused && FusedAlone.empty())
        continue;
      PlanOptions PO = Opts;
      PO.Gemm = GemmKernels::Auto;
      useChain(G, Ids, PO, WithFused ? FusedAlone : std::set<int64_t>());
      Expected<Plan> ChainPlan = candidatePlan(G, PO);
      if (!ChainPlan)
        return ChainPlan.takeError();
      Expected<PlanTimes> Chain = timePlan(std::move(*ChainPlan), {});
      if (!Chain)
        return Chain.takeError();
      if (Opts.Progress && WithFused)
        *Opts.Progress << formatv("tuning: the chain with {0} row "
                                  "normalizations fused ran {1:F3} ms, with "
                                  "none {2:F3} ms\n",
                                  FusedAlone.size(), Chain->Whole, ChainWhole);
      if (!WithFused || Chain->Whole < ChainWhole) {
        ChainWhole = Chain->Whole;
        ChainFused = WithFused ? FusedAlone : std::set<int64_t>();
        Which = WithFused ? formatv(" ({0} row normalizations fused)",
                                    FusedAlone.size())
                                .str()
                          : "";
      }
    }
    bool Keep = ChainWhole < BestWhole * ChainMargin;
    std::string Note =
        formatv("the plan as a chain of generated kernels launched as "
                "dependents{0} ran {1:F3} ms, the best other {2:F3} ms",
                Which, ChainWhole, BestWhole)
            .str();
    if (Keep)
      for (int64_t Id : Ids) {
        Notes[Id] = "tuned: generated GEMM in that chain (" + Note +
                    "); alone " + (Choices[Id] ? "" : "not ") +
                    "chosen: " + Notes[Id];
        Choices[Id] = true;
      }
    Note = (Keep ? "tuned: " : "not kept: ") + Note;
    Choices[ChainId] = Keep;
    Notes[ChainId] = Note;
    if (!Keep)
      ChainFused.clear();
    for (int64_t Id : ChainFused) {
      Choices[FusedInChain - Id] = true;
      Notes[FusedInChain - Id] = "row normalization fused in the chain";
    }
    if (Opts.Progress)
      *Opts.Progress << "tuning: " << Note << "\n";
  }
  // A later compile of the same graph on this GPU reuses the outcome.
  writeCache(Path, Choices, Notes);
  for (auto &[Id, Use] : Choices) {
    if (Id < 0)
      continue;
    Opts.GemmChoices[Id] = Use;
    Opts.GemmNotes[Id] = Notes[Id];
  }
  if (Choices.count(ChainId) && Choices[ChainId])
    useChain(G, Ids, Opts, ChainFused);
  return Error::success();
}

Error tuneAttentionGroups(const Graph &G, PlanOptions &Opts) {
  std::set<int64_t> Ids;
  for (const auto &N : G.nodes())
    if (N->kind() == OpKind::Attention && attentionGroup(*N).Id >= 0)
      Ids.insert(attentionGroup(*N).Id);
  if (Ids.empty())
    return Error::success();
  if (Opts.Progress)
    *Opts.Progress << "tuning: timing " << Ids.size()
                   << " attention groups as generated kernels and as cuDNN "
                      "calls\n";
  PlanOptions GenOpts = Opts, DnnOpts = Opts;
  GenOpts.Attention = AttentionKernels::Generated;
  DnnOpts.Attention = AttentionKernels::Cudnn;
  Expected<Plan> GenPlan = candidatePlan(G, GenOpts);
  if (!GenPlan)
    return GenPlan.takeError();
  Expected<Plan> DnnPlan = candidatePlan(G, DnnOpts);
  if (!DnnPlan)
    return DnnPlan.takeError();
  // Groups cuDNN does not take (f32, a boolean mask) stay generated.
  std::set<int64_t> Takes;
  for (const PlanGroup &Grp : DnnPlan->Groups)
    if (Ids.count(Grp.Id) && !Grp.Steps.empty() &&
        DnnPlan->Steps[Grp.Steps.front()].K == PlanStep::Kind::Attention)
      Takes.insert(Grp.Id);
  if (Takes.empty())
    return Error::success();
  Expected<std::string> Path =
      cudnnTuningPath(Opts, *GenPlan, *DnnPlan, "solder attention tuning 2");
  if (!Path)
    return Path.takeError();
  if (reuseCache(*Path, Takes, Opts.Progress, Opts.AttentionChoices,
                 Opts.AttentionNotes))
    return Error::success();
  std::map<int64_t, bool> Choices;
  std::map<int64_t, std::string> Notes;
  Expected<PlanTimes> Gen = timePlan(std::move(*GenPlan), Takes);
  if (!Gen)
    return Gen.takeError();
  // cuDNN may still refuse a group when the plan loads (no engine for it
  // in this version): then every group stays generated, saying why.
  Expected<PlanTimes> Dnn = timePlan(std::move(*DnnPlan), Takes);
  if (!Dnn) {
    std::string Why = "not cuDNN: " + toString(Dnn.takeError());
    for (int64_t Id : Takes) {
      Choices[Id] = false;
      Notes[Id] = Why;
    }
  } else if (Error E = chooseFaster(
                 Takes, *Gen, *Dnn, "generated", "cuDNN", "cuDNN calls",
                 [&](const std::map<int64_t, bool> &C) {
                   PlanOptions Chosen = Opts;
                   Chosen.AttentionChoices = C;
                   return candidatePlan(G, Chosen);
                 },
                 Choices, Notes, AttentionMargin)) {
    return E;
  }
  writeCache(*Path, Choices, Notes);
  for (auto &[Id, Use] : Choices) {
    Opts.AttentionChoices[Id] = Use;
    Opts.AttentionNotes[Id] = Notes[Id];
  }
  return Error::success();
}

/// Engine configurations a convolution graph is timed with.
static constexpr int ConvEngineTries = 3;

/// The engine configuration per group beside a tuning's cache file
/// (<path>.engines, "<id> <configuration>" lines; best effort as the
/// cache itself).
static void writeEngines(StringRef Path, const std::map<int64_t, int> &E) {
  if (!Path.empty())
    consumeError(
        writeAtomically(Path.str() + ".engines", [&](raw_pwrite_stream &OS) {
          for (const auto &[Id, K] : E)
            OS << Id << " " << K << "\n";
        }));
}

static void readEngines(StringRef Path, std::map<int64_t, int> &E) {
  ErrorOr<std::unique_ptr<MemoryBuffer>> B =
      MemoryBuffer::getFile(Path.str() + ".engines");
  if (!B)
    return;
  SmallVector<StringRef, 64> Lines;
  (*B)->getBuffer().split(Lines, '\n', -1, false);
  for (StringRef L : Lines) {
    auto [IdText, KText] = L.split(' ');
    int64_t Id;
    int K;
    if (!IdText.getAsInteger(10, Id) && !KText.getAsInteger(10, K) && K >= 0 &&
        K < ConvEngineTries)
      E[Id] = K;
  }
}

Error tuneConvGroups(const Graph &G, PlanOptions &Opts) {
  std::set<int64_t> Ids;
  for (const auto &N : G.nodes())
    if (isFusedGroup(*N) && groupInfo(*N).Kind == GroupKind::Contraction &&
        lowerConvGraph(*N).Anchor)
      Ids.insert(groupInfo(*N).Id);
  if (Ids.empty())
    return Error::success();
  if (Opts.Progress)
    *Opts.Progress << "tuning: timing " << Ids.size()
                   << " convolution groups as cuDNN's fused call and as "
                      "cuDNN operation graphs\n";
  PlanOptions FusedOpts = Opts, GraphOpts = Opts;
  FusedOpts.Conv = ConvEpilogues::Fused;
  GraphOpts.Conv = ConvEpilogues::Graph;
  Expected<Plan> FusedPlan = candidatePlan(G, FusedOpts);
  if (!FusedPlan)
    return FusedPlan.takeError();
  Expected<Plan> GraphPlan = candidatePlan(G, GraphOpts);
  if (!GraphPlan)
    return GraphPlan.takeError();
  Expected<std::string> CachePath =
      cudnnTuningPath(Opts, *FusedPlan, *GraphPlan, "solder conv tuning 2");
  if (!CachePath)
    return CachePath.takeError();
  const std::string &Path = *CachePath;
  if (reuseCache(Path, Ids, Opts.Progress, Opts.ConvGraphChoices,
                 Opts.ConvGraphNotes)) {
    readEngines(Path, Opts.ConvGraphEngines);
    return Error::success();
  }
  std::map<int64_t, bool> Choices;
  std::map<int64_t, std::string> Notes;
  // Groups cuDNN has no engine for on this GPU stay fused, saying why;
  // identical graphs are asked once.
  std::set<int64_t> Takes;
  {
    cudnnHandle_t H;
    if (cudnnStatus_t S = cudaLibs().cudnnCreate(&H); S != CUDNN_STATUS_SUCCESS)
      return dnnError(S, "cudnnCreate");
    std::map<std::string, std::string> Refused;
    for (const PlanGroup &Grp : GraphPlan->Groups) {
      if (!Ids.count(Grp.Id) || Grp.Steps.empty())
        continue;
      const PlanStep &S = GraphPlan->Steps[Grp.Steps.front()];
      if (S.K != PlanStep::Kind::Conv || !GraphPlan->Convs[S.Index].Graph)
        continue;
      const ConvConfig &C = GraphPlan->Convs[S.Index];
      std::string K = convGraphPlanKey(C);
      auto It = Refused.find(K);
      if (It == Refused.end()) {
        ConvGraphCall Call;
        Error E = Call.init(C, H);
        It = Refused.emplace(K, E ? toString(std::move(E)) : "").first;
      }
      if (It->second.empty()) {
        Takes.insert(Grp.Id);
        continue;
      }
      std::string Why = It->second;
      std::replace(Why.begin(), Why.end(), '\n', ' ');
      Choices[Grp.Id] = false;
      Notes[Grp.Id] = "not a cuDNN graph: " + Why;
    }
    cudaLibs().cudnnDestroy(H);
  }
  if (Opts.Progress)
    *Opts.Progress << "tuning: cuDNN has engines for " << Takes.size() << " of "
                   << Ids.size() << " convolution graphs\n";
  std::map<int64_t, int> Engines;
  auto Build = [&](const std::map<int64_t, bool> &C) {
    PlanOptions Chosen = Opts;
    Chosen.Conv = ConvEpilogues::Auto;
    Chosen.ConvGraphChoices = C;
    Chosen.ConvGraphEngines = Engines;
    return candidatePlan(G, Chosen);
  };
  if (!Takes.empty()) {
    std::map<int64_t, bool> Only;
    for (int64_t Id : Takes)
      Only[Id] = true;
    // Each graph with the first few engine configurations cuDNN's
    // heuristics list (a group offered fewer takes the first that
    // finalizes): the fastest per group is the graph's candidate.
    PlanTimes Best;
    std::map<int64_t, int> Picked;
    for (int K = 0; K < ConvEngineTries; ++K) {
      for (int64_t Id : Takes)
        Engines[Id] = K;
      Expected<Plan> Try = Build(Only);
      if (!Try)
        return Try.takeError();
      Expected<PlanTimes> T = timePlan(std::move(*Try), Takes);
      if (!T)
        return T.takeError();
      for (auto [Id, Ms] : T->Groups) {
        auto It = Best.Groups.find(Id);
        if (It == Best.Groups.end() || Ms < It->second) {
          Best.Groups[Id] = Ms;
          Picked[Id] = K;
        }
      }
    }
    Engines = Picked;
    Expected<PlanTimes> Fused = timePlan(std::move(*FusedPlan), Takes);
    if (!Fused)
      return Fused.takeError();
    if (Error E =
            chooseFaster(Takes, *Fused, Best, "fused call", "cuDNN graph",
                         "cuDNN graphs", Build, Choices, Notes, ConvMargin))
      return E;
    for (int64_t Id : Takes)
      Notes[Id] +=
          formatv(" (graph: engine configuration {0})", Picked[Id]).str();
  }
  writeCache(Path, Choices, Notes);
  writeEngines(Path, Engines);
  for (auto &[Id, Use] : Choices) {
    Opts.ConvGraphChoices[Id] = Use;
    Opts.ConvGraphNotes[Id] = Notes[Id];
  }
  Opts.ConvGraphEngines = Engines;
  return Error::success();
}

} // namespace solder
