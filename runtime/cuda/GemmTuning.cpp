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
constexpr double Margin = 0.9;

/// Each candidate group's median milliseconds in the plan of G built with
/// Mode.
Expected<std::map<int64_t, double>> timeGroups(const Graph &G,
                                               const PlanOptions &Base,
                                               GemmKernels Mode,
                                               const std::set<int64_t> &Ids) {
  PlanOptions PO = Base;
  PO.Gemm = Mode;
  PO.GemmChoices.clear();
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
  std::map<int64_t, double> Out;
  for (size_t I = 0; I < RangeIds.size(); ++I)
    Out[RangeIds[I]] = (*T)[I];
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
  Expected<std::map<int64_t, double>> Lib =
      timeGroups(G, Opts, GemmKernels::Library, Ids);
  if (!Lib)
    return Lib.takeError();
  Expected<std::map<int64_t, double>> Gen =
      timeGroups(G, Opts, GemmKernels::Generated, Ids);
  if (!Gen)
    return Gen.takeError();
  for (int64_t Id : Ids) {
    auto L = Lib->find(Id), X = Gen->find(Id);
    if (L == Lib->end() || X == Gen->end())
      continue;
    bool UseGen = X->second < L->second * Margin;
    Opts.GemmChoices[Id] = UseGen;
    Opts.GemmNotes[Id] = formatv("tuned: generated GEMM {0:F1} us, library "
                                 "{1:F1} us",
                                 X->second * 1e3, L->second * 1e3)
                             .str();
  }
  return Error::success();
}

} // namespace solder
