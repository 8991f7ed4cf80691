//===- DumpIrCommand.cpp - `solder dump-ir MODEL.onnx` --------------------===//
//
// Imports a model, runs the pass pipeline and prints the resulting IR
// (large constants elided unless --print-constants). --after-all DIR also
// writes the IR after every pass; --no-optimize prints the imported graph.
// --fusion-report prints the fused groups and rejected candidates instead
// of the IR (which then goes only to -o FILE, if given): dump-ir builds no
// plan, so each group's "runs as" reads "not planned (dump-ir)".
//
//===----------------------------------------------------------------------===//
#include "frontend/OnnxImporter.h"
#include "ir/Printer.h"
#include "passes/Pipeline.h"
#include "tools/CommandUtils.h"
#include "tools/Commands.h"
#include "tools/FusionReport.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace solder {

static cl::SubCommand DumpIrCmd("dump-ir",
                                "Import a model, run the pass pipeline and "
                                "print the IR");
static cl::OptionCategory DumpIrCat("dump-ir options");
static cl::opt<std::string> DumpModel(cl::Positional, cl::Required,
                                      cl::desc("<model.onnx>"),
                                      cl::sub(DumpIrCmd), cl::cat(DumpIrCat));
static cl::opt<std::string>
    DumpAfterAll("after-all", cl::value_desc("dir"),
                 cl::desc("Also write the IR after every pass into <dir> "
                          "(00-input.ir, 01-<pass>.ir, ...)"),
                 cl::sub(DumpIrCmd), cl::cat(DumpIrCat));
static cl::list<std::string>
    DumpShapes("shape", cl::value_desc("name=dims"),
               cl::desc("Input shape (input_ids=1x128) or dim symbol size "
                        "(N=4); repeatable"),
               cl::sub(DumpIrCmd), cl::cat(DumpIrCat));
static cl::list<std::string>
    DumpDisabled("disable-pass", cl::value_desc("pass"),
                 cl::desc("Skip a pipeline pass; repeatable"),
                 cl::sub(DumpIrCmd), cl::cat(DumpIrCat));
static cl::opt<bool>
    DumpConstants("print-constants",
                  cl::desc("Print the data of large constants too"),
                  cl::sub(DumpIrCmd), cl::cat(DumpIrCat));
static cl::opt<bool>
    DumpNoOptimize("no-optimize",
                   cl::desc("Print the imported graph; run no passes"),
                   cl::sub(DumpIrCmd), cl::cat(DumpIrCat));
static cl::opt<std::string> DumpOutput("o", cl::value_desc("file"),
                                       cl::desc("Write the IR to <file> "
                                                "instead of stdout"),
                                       cl::sub(DumpIrCmd), cl::cat(DumpIrCat));

static FusionFlags DumpFusion(DumpIrCmd, DumpIrCat);
static PrecisionFlags DumpPrecision(DumpIrCmd, DumpIrCat);
static LimitFlags DumpLimits(DumpIrCmd, DumpIrCat);
static FusionReportFlag DumpReport(DumpIrCmd, DumpIrCat);

cl::SubCommand &dumpIrSubCommand() { return DumpIrCmd; }

int runDumpIrCommand(CommandArgs) {
  if (Error E = checkPassNames(DumpDisabled))
    return reportError(std::move(E));
  if (Expected<bool> J = DumpReport.wantsJson(); !J)
    return reportError(J.takeError());
  ImportOptions Opts;
  if (!DumpShapes.empty()) {
    Expected<ModelSummary> S = summarizeOnnxFile(DumpModel);
    if (!S)
      return reportError(S.takeError());
    Expected<ImportOptions> O = parseShapeArgs(DumpShapes, *S);
    if (!O)
      return reportError(O.takeError());
    Opts = std::move(*O);
  }
  Expected<std::unique_ptr<Graph>> G = importOnnxFile(DumpModel, Opts);
  if (!G)
    return reportError(G.takeError());

  std::vector<DecisionRecord> Decisions;
  if (!DumpNoOptimize) {
    if (Error E = DumpFusion.check(**G))
      return reportError(std::move(E));
    PipelineOptions PO;
    PO.DisabledPasses.assign(DumpDisabled.begin(), DumpDisabled.end());
    if (Error E = DumpFusion.apply(PO))
      return reportError(std::move(E));
    if (Error E = DumpPrecision.apply(PO))
      return reportError(std::move(E));
    if (Error E = DumpLimits.apply(PO))
      return reportError(std::move(E));
    PO.Decisions = &Decisions;
    if (!DumpAfterAll.empty()) {
      if (std::error_code EC = sys::fs::create_directories(DumpAfterAll))
        return reportError("cannot create '" + DumpAfterAll +
                           "': " + EC.message());
      PO.DumpAfterAllDir = DumpAfterAll;
    }
    if (Error E = runPipeline(**G, PO))
      return reportError(std::move(E));
  }

  if (DumpReport.requested()) {
    DumpReport.print(
        outs(), fusionReportFromGraph(**G, Decisions, "not planned (dump-ir)"));
    outs().flush();
  }
  PrintOptions PrintOpts;
  PrintOpts.ElideLargeConstants = !DumpConstants;
  if (DumpOutput.empty() || DumpOutput == "-") {
    if (DumpReport.requested())
      return ExitSuccess;
    printGraph(outs(), **G, PrintOpts);
    outs().flush();
    return ExitSuccess;
  }
  std::error_code EC;
  raw_fd_ostream OS(DumpOutput, EC, sys::fs::OF_Text);
  if (EC)
    return reportError("cannot open '" + DumpOutput + "': " + EC.message());
  printGraph(OS, **G, PrintOpts);
  OS.close();
  if (OS.has_error()) {
    std::string Msg = OS.error().message();
    OS.clear_error();
    return reportError("cannot write '" + DumpOutput + "': " + Msg);
  }
  return ExitSuccess;
}

} // namespace solder
