//===- GemmTuning.cpp - Generated GEMM or library, timed per group --------===//
#include "runtime/cuda/GemmTuning.h"
#include "codegen/KernelEmitter.h"
#include "codegen/NvrtcCompiler.h"
#include "ir/FusedGroup.h"
#include "runtime/cuda/CudaSupport.h"
#include "runtime/cuda/KernelCompiler.h"
#include "runtime/cuda/PlanFile.h"
#include "solder/Solder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include <map>

using namespace llvm;

namespace solder {

namespace {

constexpr unsigned TuneRuns = 7, TuneReps = 20;
constexpr double Margin = 0.95;

struct PlanTimes {
  std::map<int64_t, double> Groups; ///< each candidate group's steps alone
  double Whole = 0;                 ///< the whole plan
};

/// The plan of G built with Mode (and Choices), kernels compiled.
Expected<Plan> candidatePlan(const Graph &G, const PlanOptions &Base,
                             GemmKernels Mode,
                             const std::map<int64_t, bool> &Choices) {
  PlanOptions PO = Base;
  PO.Gemm = Mode;
  PO.GemmChoices = Choices;
  PO.Progress = nullptr;
  Expected<Plan> P = buildPlan(G, PO);
  if (!P)
    return P.takeError();
  if (Error E = compilePlanKernels(*P, PO))
    return std::move(E);
  return P;
}

/// Median milliseconds of plan P and of each candidate group's steps in it.
Expected<PlanTimes> timePlan(Plan P, const std::set<int64_t> &Ids) {
  std::vector<std::pair<size_t, size_t>> Ranges;
  std::vector<int64_t> RangeIds;
  for (const PlanGroup &Grp : P.Groups)
    if (Ids.count(Grp.Id) && !Grp.Steps.empty()) {
      Ranges.push_back({Grp.Steps.front(), size_t(Grp.Steps.back()) + 1});
      RangeIds.push_back(Grp.Id);
    }
  Ranges.push_back({0, P.Steps.size()});
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
  Expected<std::vector<double>> T =
      (*C)->timeStepRanges(nullptr, Ranges, TuneRuns, TuneReps);
  if (!T)
    return T.takeError();
  PlanTimes Out;
  for (size_t I = 0; I < RangeIds.size(); ++I)
    Out.Groups[RangeIds[I]] = (*T)[I];
  Out.Whole = T->back();
  return Out;
}

/// What a tuning's outcome depends on: the graph (its IR text: shapes,
/// types, groups; large constants elided, as timings do not depend on
/// values), the kernels of both candidate plans (so a change to code
/// generation tunes again), this GPU and NVRTC's version.
std::string tuningKey(const Plan &Lib, const Plan &Gen, StringRef Gpu) {
  SHA256 H;
  auto Add = [&](StringRef S) {
    H.update(S);
    H.update(StringRef("\0", 1));
  };
  Add("solder gemm tuning 1");
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

/// <cache>/tuning/<key>: one line per group, "<id> <0|1> <note>"; "" when
/// there is no cache folder.
std::string tuningPath(const PlanOptions &Opts, StringRef Key) {
  NvrtcOptions NO;
  NO.CacheDir = Opts.CacheDir;
  std::string Dir = resolveCacheDir(NO);
  return Dir.empty() ? "" : Dir + "/tuning/" + Key.str();
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

} // namespace

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
  std::string Path = tuningPath(Opts, tuningKey(*LibPlan, *GenPlan, *Gpu));
  std::map<int64_t, bool> Choices;
  std::map<int64_t, std::string> Notes;
  if (readCache(Path, Ids, Choices, Notes)) {
    if (Opts.Progress)
      *Opts.Progress << "tuning: reused the timings cached in " << Path << "\n";
    for (auto &[Id, Use] : Choices) {
      Opts.GemmChoices[Id] = Use;
      Opts.GemmNotes[Id] = Notes[Id] + " (cached)";
    }
    return Error::success();
  }
  Expected<PlanTimes> Lib = timePlan(std::move(*LibPlan), Ids);
  if (!Lib)
    return Lib.takeError();
  Expected<PlanTimes> Gen = timePlan(std::move(*GenPlan), Ids);
  if (!Gen)
    return Gen.takeError();
  bool Any = false;
  for (int64_t Id : Ids) {
    auto L = Lib->Groups.find(Id), X = Gen->Groups.find(Id);
    if (L == Lib->Groups.end() || X == Gen->Groups.end())
      continue;
    bool UseGen = X->second < L->second * Margin;
    Any |= UseGen;
    Choices[Id] = UseGen;
    Notes[Id] = formatv("tuned: generated GEMM {0:F1} us, library {1:F1} us",
                        X->second * 1e3, L->second * 1e3)
                    .str();
  }
  // Groups timed alone can mislead (weights stay in L2 between replays):
  // the plan with the chosen generated GEMMs must also be faster whole.
  if (Any) {
    Expected<Plan> TunedPlan =
        candidatePlan(G, Opts, GemmKernels::Auto, Choices);
    if (!TunedPlan)
      return TunedPlan.takeError();
    Expected<PlanTimes> Tuned = timePlan(std::move(*TunedPlan), Ids);
    if (!Tuned)
      return Tuned.takeError();
    if (Tuned->Whole >= Lib->Whole) {
      std::string Why =
          formatv("; not kept: the plan ran {0:F3} ms with the chosen "
                  "generated GEMMs, {1:F3} ms without",
                  Tuned->Whole, Lib->Whole)
              .str();
      for (auto &[Id, Use] : Choices)
        if (Use) {
          Use = false;
          Notes[Id] += Why;
        }
    }
  }
  // A later compile of the same graph on this GPU reuses the outcome; a
  // cache that cannot be written only costs that compile the timing.
  if (!Path.empty() &&
      !sys::fs::create_directories(sys::path::parent_path(Path)))
    consumeError(writeAtomically(Path, [&](raw_pwrite_stream &OS) {
      for (const auto &[Id, Use] : Choices)
        OS << Id << " " << (Use ? 1 : 0) << " " << Notes[Id] << "\n";
    }));
  for (auto &[Id, Use] : Choices) {
    Opts.GemmChoices[Id] = Use;
    Opts.GemmNotes[Id] = Notes[Id];
  }
  return Error::success();
}

} // namespace solder
