//===- DumpKernelsCommand.cpp - `solder dump-kernels MODEL -o DIR` --------===//
//
// Writes each kernel of a model's GPU plan as DIR/<kernel>.cu, headed by a
// comment naming its fused group (id, kind, how the group runs), ALL the
// ONNX nodes it implements, the shapes and the launch configuration, and
// DIR/index.txt listing the fused groups, then every step of a run in
// order (kernels and library calls) with its group and the file holding
// its kernel.
//
//===----------------------------------------------------------------------===//
#include "runtime/cuda/LibraryCalls.h"
#include "runtime/cuda/Plan.h"
#include "tools/CommandUtils.h"
#include "tools/GpuCommands.h"
#include "tools/TensorIO.h"
#include "tools/Verbosity.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace solder {

static cl::SubCommand DumpCmd("dump-kernels",
                              "Write the generated CUDA kernels of a model");
static cl::OptionCategory DumpCat("dump-kernels options");
static cl::opt<std::string> DumpModel(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx|model.plan>"),
                                      cl::sub(DumpCmd), cl::cat(DumpCat));
static cl::opt<std::string> DumpOut("o", cl::Required, cl::value_desc("dir"),
                                    cl::desc("Folder to write into"),
                                    cl::sub(DumpCmd), cl::cat(DumpCat));
static cl::list<std::string>
    DumpShapes("shape", cl::value_desc("name=dims"),
               cl::desc("Input shape or dim symbol size (ONNX models)"),
               cl::sub(DumpCmd), cl::cat(DumpCat));
static cl::opt<std::string> DumpArch("arch", cl::init("sm_90"),
                                     cl::value_desc("sm_XY"),
                                     cl::desc("Architecture to compile for"),
                                     cl::sub(DumpCmd), cl::cat(DumpCat));
static cl::opt<std::string> DumpCacheDir("cache-dir", cl::value_desc("dir"),
                                         cl::desc("Compiled-kernel cache"),
                                         cl::sub(DumpCmd), cl::cat(DumpCat));

static cl::list<std::string>
    DumpDisabled("disable-pass", cl::value_desc("pass"),
                 cl::desc("Skip a pipeline pass; repeatable"), cl::sub(DumpCmd),
                 cl::cat(DumpCat));

static FusionFlags DumpKernelsFusion(DumpCmd, DumpCat);
static PrecisionFlags DumpKernelsPrecision(DumpCmd, DumpCat);
static VerbosityFlags DumpKernelsVerbosity(DumpCmd, DumpCat);
static LimitFlags DumpKernelsLimits(DumpCmd, DumpCat);

cl::SubCommand &dumpKernelsSubCommand() { return DumpCmd; }

static StringRef kindName(PlanStep::Kind K) {
  switch (K) {
  case PlanStep::Kind::Kernel:
    return "kernel";
  case PlanStep::Kind::Gemm:
    return "cublasLt";
  case PlanStep::Kind::Conv:
  case PlanStep::Kind::Attention:
    return "cudnn";
  case PlanStep::Kind::Copy:
    return "copy";
  }
  return "?";
}

/// The plan's entry for fused group Id, or null.
static const PlanGroup *findGroup(const Plan &P, int64_t Id) {
  if (Id < 0)
    return nullptr;
  for (const PlanGroup &G : P.Groups)
    if (G.Id == Id)
      return &G;
  return nullptr;
}

int runDumpKernelsCommand(CommandArgs) {
  if (Error E = checkPassNames(DumpDisabled))
    return reportError(std::move(E));
  ModelLoadOptions Opts;
  Opts.DisabledPasses.assign(DumpDisabled.begin(), DumpDisabled.end());
  Opts.Shapes.assign(DumpShapes.begin(), DumpShapes.end());
  Opts.Arch = DumpArch;
  Opts.CacheDir = DumpCacheDir;
  if (Error E = DumpKernelsFusion.apply(Opts))
    return reportError(std::move(E));
  if (Error E =
          DumpKernelsPrecision.apply(Opts.Prec, Opts.ComputeIo, Opts.Layout))
    return reportError(std::move(E));
  std::unique_ptr<PhaseDisplay> Display = DumpKernelsVerbosity.makeDisplay();
  DumpKernelsVerbosity.apply(Opts, *Display);
  if (Error E = applyLimits(DumpKernelsLimits, Opts))
    return reportError(std::move(E));
  Expected<std::shared_ptr<CompiledModel>> M =
      loadOrCompileModel(DumpModel, Opts);
  if (!M)
    return reportError(M.takeError());
  if (std::error_code EC = sys::fs::create_directories(DumpOut))
    return reportError("cannot create '" + DumpOut + "': " + EC.message());
  const Plan &P = (*M)->plan();

  std::vector<std::string> Files;
  for (const PlanKernel &K : P.Kernels) {
    std::string File = sanitizeFileName(K.Name) + ".cu";
    Files.push_back(File);
    std::string Text;
    raw_string_ostream OS(Text);
    OS << "// kernel " << K.Name << "\n";
    if (const PlanGroup *G = findGroup(P, K.GroupId))
      OS << "// group " << G->Id << " (" << G->Kind << ", runs as " << G->RunsAs
         << ")\n";
    else if (K.GroupId >= 0)
      OS << "// group " << K.GroupId << "\n";
    else
      OS << "// group: none (one unfused node)\n";
    OS << "// nodes: ";
    for (size_t I = 0; I < K.NodeNames.size(); ++I)
      OS << (I ? ", " : "") << "'" << K.NodeNames[I] << "'";
    OS << "\n// " << K.Summary << "\n";
    if (!K.Symbol.empty())
      OS << "// runs the code of " << K.Symbol
         << " (identical but for the name; compiled once)\n";
    OS << formatv("// launch: grid ({0},{1},{2}) block ({3},{4},{5}), {6} "
                  "bytes dynamic shared memory\n",
                  K.Grid[0], K.Grid[1], K.Grid[2], K.Block[0], K.Block[1],
                  K.Block[2], K.DynamicSharedBytes);
    OS << "// compiled for " << P.Arch << " (" << K.Cubin.size()
       << " bytes of cubin)\n\n";
    OS << K.Source;
    SmallString<256> Path(DumpOut);
    sys::path::append(Path, File);
    if (Error E = writeFileAtomically(Path, OS.str()))
      return reportError(std::move(E));
  }

  std::string Index;
  raw_string_ostream OS(Index);
  OS << "# " << P.Steps.size() << " steps per run of '" << P.ModelName << "' ("
     << P.Arch << "), in order\n";
  OS << "# arena " << P.ArenaBytes << " bytes (naive " << P.NaiveArenaBytes
     << "), weights " << P.Weights.size() << " bytes\n";
  FusionReport Report = fusionReportFromPlan(P, nullptr);
  OS << "# " << Report.Groups.size() << " fused groups\n";
  for (const FusionReportGroup &G : Report.Groups)
    OS << formatv("group {0}  {1}  {2}  steps {3}  nodes {4}\n", G.Id, G.Kind,
                  G.RunsAs,
                  join(map_range(G.Steps,
                                 [](const FusionReportStep &S) {
                                   return std::to_string(S.Index);
                                 }),
                       ","),
                  join(G.Members, ", "));
  OS << "# step  kind      group  kernel file  label\n";
  for (size_t I = 0; I < P.Steps.size(); ++I) {
    const PlanStep &S = P.Steps[I];
    OS << formatv("{0,4}  {1,-8}  {2,5}  ", I, kindName(S.K),
                  S.GroupId >= 0 ? std::to_string(S.GroupId)
                                 : std::string("-"));
    if (S.K == PlanStep::Kind::Kernel)
      OS << Files[S.Index] << "  ";
    OS << S.Label;
    std::string Lib = describeLibraryChoice(P, S);
    if (!Lib.empty())
      OS << "  [" << Lib << "]";
    OS << "\n";
  }
  SmallString<256> Path(DumpOut);
  sys::path::append(Path, "index.txt");
  if (Error E = writeFileAtomically(Path, OS.str()))
    return reportError(std::move(E));
  outs() << "wrote " << P.Kernels.size() << " kernels and index.txt to "
         << DumpOut << "\n";
  return ExitSuccess;
}

} // namespace solder
