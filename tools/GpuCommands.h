//===- GpuCommands.h - The GPU subcommands ----------------------*- C++ -*-===//
//
// `solder compile`, `solder bench` and `solder dump-kernels` (builds with
// the CUDA toolkit only), and the loading step they share: a model given
// as ONNX is compiled, a plan file is read.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TOOLS_GPUCOMMANDS_H
#define SOLDER_TOOLS_GPUCOMMANDS_H

#include "frontend/OnnxImporter.h"
#include "ir/Graph.h"
#include "solder/Solder.h"
#include "tools/CommandUtils.h"
#include "tools/Commands.h"
#include "tools/FusionReport.h"
#include "llvm/Support/CommandLine.h"
#include <memory>
#include <string>
#include <vector>

namespace solder {

llvm::cl::SubCommand &compileSubCommand();
int runCompileCommand(CommandArgs Argv);
llvm::cl::SubCommand &benchSubCommand();
int runBenchCommand(CommandArgs Argv);
llvm::cl::SubCommand &dumpKernelsSubCommand();
int runDumpKernelsCommand(CommandArgs Argv);
llvm::cl::SubCommand &compareSubCommand();
int runCompareCommand(CommandArgs Argv);
llvm::cl::SubCommand &profileSubCommand();
int runProfileCommand(CommandArgs Argv);

struct ModelLoadOptions {
  std::vector<std::string> Shapes; ///< --shape NAME=DIMS
  /// The command takes `--shape NAME=MIN..MAX...` (a dynamic model).
  bool AllowRanges = false;
  /// Most shape variants a dynamic model keeps (CompileOptions).
  unsigned MaxShapeVariants = 8;
  std::string Arch;
  std::string CacheDir;
  bool AllowTF32 = false;
  Precision Prec = Precision::F32;
  bool ComputeIo = false;
  ConvLayout Layout = ConvLayout::Auto;
  std::vector<std::string> DisabledPasses;
  /// --no-fusion, --disable-fusion (see FusionFlags) and the hidden
  /// --test-perturb-group of compare.
  bool NoFusion = false;
  bool FuseAttention = false;           ///< --fuse-attention
  bool DeferNorms = false;              ///< --defer-norms
  bool AutoAttention = true;            ///< not --no-fuse-attention
  GemmKernels Gemm = GemmKernels::Auto; ///< --gemm-kernels
  AttentionKernels Attention = AttentionKernels::Auto; ///< --attention-kernels
  ConvEpilogues Conv = ConvEpilogues::Auto;            ///< --conv-epilogues
  bool DependentLaunch = false;                        ///< --dependent-launch
  bool Tune = false;                                   ///< compile --tune
  std::vector<std::string> DisabledFusions;
  int64_t PerturbGroupId = -1;
  /// --max-constant-bytes, --max-tensor-bytes (LimitFlags::apply).
  size_t MaxConstantBytes = DefaultMaxConstantBytes;
  uint64_t MaxTensorBytes = DefaultMaxTensorBytes;
  /// --max-device-memory (DeviceMemoryFlag); 0 = none.
  uint64_t MaxDeviceMemory = 0;
  /// Non-null (run, bench, profile, compare): dynamic input dims that no
  /// --shape binds become 1, with a note here (bindUnboundDimsToOne). Null
  /// (compile, dump-kernels): they are an error.
  llvm::raw_ostream *DefaultDimNotes = nullptr;
  /// Progress lines (stderr when it is a terminal), or null.
  llvm::raw_ostream *Progress = nullptr;
  /// Phase notifications (import, compile and load phases); may be empty.
  PhaseCallback OnPhase;
  /// Each pipeline pass's time (--verbose); may be empty.
  PassTimeCallback OnPassTime;
};

/// Copies the limits of a command's LimitFlags into Opts.
llvm::Error applyLimits(const LimitFlags &Limits, ModelLoadOptions &Opts);

/// Compiles MODEL.onnx or reads MODEL.plan (told apart by the plan magic).
llvm::Expected<std::shared_ptr<CompiledModel>>
loadOrCompileModel(llvm::StringRef Path, const ModelLoadOptions &Opts);

/// A model compiled from ONNX together with the graph the pipeline left
/// (FusedGroup nodes with their bodies, constants whole), for the commands
/// that look inside the plan (compare); no graph for a dynamic model (its
/// variants are compiled from the file).
struct CompiledOnnxModel {
  std::shared_ptr<CompiledModel> Model;
  std::unique_ptr<Graph> CompiledGraph;
  ImportOptions Import;
};
llvm::Expected<CompiledOnnxModel>
compileOnnxModel(llvm::StringRef Path, const ModelLoadOptions &Opts);

/// The fusion report of a plan: its fused groups (Plan::Groups, singles
/// left out) with the steps that run them, and its rejected candidates.
/// With G (the graph the plan was built from), a group of G the plan does
/// not list is still reported, with the steps tagged with its id; so is a
/// group id that only steps carry (kind "?").
FusionReport fusionReportFromPlan(const Plan &P, const Graph *G);

/// stderr when it is a terminal, else null.
llvm::raw_ostream *progressStream();

} // namespace solder

#endif
