//===- GemmTuning.cpp - Generated GEMM or library, timed per group --------===//
#include "runtime/cuda/GemmTuning.h"
#include "codegen/KernelEmitter.h"
#include "ir/FusedGroup.h"
#include "runtime/cuda/KernelCompiler.h"
#include "solder/Solder.h"
#include "llvm/Support/FormatVariadic.h"
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

/// Median milliseconds of the plan of G built with Mode (and Choices), and
/// of each candidate group's steps in it.
Expected<PlanTimes> timePlan(const Graph &G, const PlanOptions &Base,
                             GemmKernels Mode,
                             const std::map<int64_t, bool> &Choices,
                             const std::set<int64_t> &Ids) {
  PlanOptions PO = Base;
  PO.Gemm = Mode;
  PO.GemmChoices = Choices;
  PO.Progress = nullptr;
  Expected<Plan> P = buildPlan(G, PO);
  if (!P)
    return P.takeError();
  if (Error E = compilePlanKernels(*P, PO))
    return std::move(E);
  std::vector<std::pair<size_t, size_t>> Ranges;
  std::vector<int64_t> RangeIds;
  for (const PlanGroup &Grp : P->Groups)
    if (Ids.count(Grp.Id) && !Grp.Steps.empty()) {
      Ranges.push_back({Grp.Steps.front(), size_t(Grp.Steps.back()) + 1});
      RangeIds.push_back(Grp.Id);
    }
  Ranges.push_back({0, P->Steps.size()});
  Expected<std::shared_ptr<CompiledModel>> M =
      CompiledModel::fromPlan(std::move(*P));
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
  Expected<PlanTimes> Lib = timePlan(G, Opts, GemmKernels::Library, {}, Ids);
  if (!Lib)
    return Lib.takeError();
  Expected<PlanTimes> Gen = timePlan(G, Opts, GemmKernels::Generated, {}, Ids);
  if (!Gen)
    return Gen.takeError();
  std::map<int64_t, bool> Choices;
  std::map<int64_t, std::string> Notes;
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
    Expected<PlanTimes> Tuned =
        timePlan(G, Opts, GemmKernels::Auto, Choices, Ids);
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
  for (auto &[Id, Use] : Choices) {
    Opts.GemmChoices[Id] = Use;
    Opts.GemmNotes[Id] = Notes[Id];
  }
  return Error::success();
}

} // namespace solder
