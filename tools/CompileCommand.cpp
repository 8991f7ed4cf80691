//===- CompileCommand.cpp - `solder compile MODEL.onnx -o MODEL.plan` -----===//
//
// Compiles a model for the GPU and writes the plan file: IR, kernel sources
// and cubins for --arch, library choices, memory plan and weights. Needs no
// GPU (cuDNN algorithms are then chosen when the plan is loaded).
//
//===----------------------------------------------------------------------===//
#include "frontend/ModelSummary.h"
#include "runtime/cuda/PlanFile.h"
#include "tools/CommandUtils.h"
#include "tools/GpuCommands.h"
#include "llvm/Support/Chrono.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"
#include <chrono>

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

cl::SubCommand &compileSubCommand() { return CompileCmd; }

raw_ostream *progressStream() {
  return sys::Process::StandardErrIsDisplayed() ? &errs() : nullptr;
}

Expected<std::shared_ptr<CompiledModel>>
loadOrCompileModel(StringRef Path, const ModelLoadOptions &Opts) {
  if (looksLikePlanFile(Path)) {
    if (!Opts.Shapes.empty())
      return createStringError(inconvertibleErrorCode(),
                               "--shape does not apply to a plan file: its "
                               "shapes were fixed by `solder compile`");
    return CompiledModel::loadPlan(Path);
  }
  Expected<ModelSummary> Summary = summarizeOnnxFile(Path);
  if (!Summary)
    return Summary.takeError();
  Expected<ImportOptions> IO = parseShapeArgs(Opts.Shapes, *Summary);
  if (!IO)
    return IO.takeError();
  CompileOptions CO;
  CO.Arch = Opts.Arch;
  CO.CacheDir = Opts.CacheDir;
  CO.AllowTF32 = Opts.AllowTF32;
  CO.DisabledPasses = Opts.DisabledPasses;
  CO.Progress = Opts.Progress;
  for (const auto &E : IO->InputShapes)
    CO.InputShapes[E.getKey()] = E.getValue();
  for (const auto &E : IO->SymbolSizes)
    CO.SymbolSizes[E.getKey()] = E.getValue();
  return CompiledModel::compileFile(Path, CO);
}

int runCompileCommand() {
  if (Error E = checkPassNames(CompileDisabled))
    return reportError(std::move(E));
  if (!CompileArch.empty() && !StringRef(CompileArch).startswith("sm_"))
    return reportError("--arch '" + CompileArch +
                       "': expected sm_XY, e.g. sm_90");
  ModelLoadOptions Opts;
  Opts.Shapes.assign(CompileShapes.begin(), CompileShapes.end());
  Opts.Arch = CompileArch;
  Opts.CacheDir = CompileCacheDir;
  Opts.AllowTF32 = CompileTF32;
  Opts.DisabledPasses.assign(CompileDisabled.begin(), CompileDisabled.end());
  Opts.Progress = progressStream();
  auto Start = std::chrono::steady_clock::now();
  Expected<std::shared_ptr<CompiledModel>> M =
      loadOrCompileModel(CompileModel, Opts);
  if (!M)
    return reportError(M.takeError());
  double Seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - Start)
          .count();
  if (Error E = (*M)->savePlan(CompileOut))
    return reportError(std::move(E));
  ModelStats S = (*M)->stats();
  outs() << formatv("wrote {0}: {1} kernels ({2}), {3} library calls, {4} "
                    "steps per run\n",
                    CompileOut, S.Kernels, (*M)->plan().Arch, S.LibraryCalls,
                    S.Steps);
  outs() << formatv("arena {0} bytes (naive sum of intermediates {1} bytes, "
                    "{2:F1}%), weights {3} bytes; compiled in {4:F2} s\n",
                    S.ArenaBytes, S.NaiveArenaBytes,
                    S.NaiveArenaBytes ? 100.0 * double(S.ArenaBytes) /
                                            double(S.NaiveArenaBytes)
                                      : 100.0,
                    S.WeightBytes, Seconds);
  return ExitSuccess;
}

} // namespace solder
