//===- CommandUtils.h - Helpers shared by the solder commands ---*- C++ -*-===//
//
// Exit codes, error printing, `--shape` parsing, pass-name checking and
// tensor summaries, so every command behaves the same way.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TOOLS_COMMANDUTILS_H
#define SOLDER_TOOLS_COMMANDUTILS_H

#include "frontend/ModelSummary.h"
#include "frontend/OnnxImporter.h"
#include "ir/Graph.h"
#include "solder/Solder.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"
#include <string>
#include <utility>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace solder {

struct ModelLoadOptions; // tools/GpuCommands.h

struct PipelineOptions;

/// Process exit codes of every command.
enum ExitCode : int {
  ExitSuccess = 0,
  ExitMismatch = 1, ///< test failures or numeric mismatch
  ExitBadInput = 2, ///< bad usage, bad input or unsupported model
};

/// Prints "error: <message>" on stderr and returns ExitBadInput.
int reportError(llvm::Error E);
int reportError(const llvm::Twine &Msg);

/// "1x3x224x224" -> {1,3,224,224}; "" or "scalar" -> {} (rank 0).
llvm::Expected<std::vector<int64_t>> parseDims(llvm::StringRef Text);

/// Turns `--shape NAME=VALUE` arguments into import options. NAME is a graph
/// input when the model has an input of that name (VALUE is its dims,
/// checked against the input's rank and static dims), else a dim symbol
/// (VALUE is one size).
///
/// With Ranges, VALUE may also give a range per dim, `1..32x8..512` (a
/// plain size is a range of one): such inputs go into *Ranges instead
/// (dynamic shapes, CompileOptions::InputRanges). Without Ranges a range is
/// a usage error naming the commands that take one.
llvm::Expected<ImportOptions>
parseShapeArgs(llvm::ArrayRef<std::string> Args, const ModelSummary &Model,
               llvm::StringMap<std::vector<DimRange>> *Ranges = nullptr);

/// "1..32x8..512" -> {{1,32},{8,512}}; "4x128" -> {{4,4},{128,128}}.
llvm::Expected<std::vector<DimRange>> parseDimRanges(llvm::StringRef Text);

/// For the commands that run a model (run, bench, profile, compare): every
/// dynamic input dim that neither --shape nor an input file sized becomes 1,
/// as trtexec does, sequence dims included, with one note per symbol or dim
/// on Notes. `compile` and the dump commands keep asking instead: a plan is
/// kept, and a shape guessed into it would be a silent surprise.
void bindUnboundDimsToOne(const ModelSummary &Model, ImportOptions &Opts,
                          llvm::raw_ostream &Notes);

/// `--input NAME=FILE`: the name and the file, or an error saying so.
llvm::Expected<std::pair<llvm::StringRef, llvm::StringRef>>
splitInputArg(llvm::StringRef Arg);

/// Checks every name is a pipeline pass.
llvm::Error checkPassNames(llvm::ArrayRef<std::string> Names);

/// The concrete dims of a graph input: static dims as they are, symbols
/// from Opts; an error naming the input and symbol when a dim is unbound.
llvm::Expected<std::vector<int64_t>>
concreteInputDims(const Value &Input, const ImportOptions &Opts);

/// Checks `--disable-fusion` values against the imported (not yet
/// optimized) graph: a value of digits only is a group id and is accepted
/// as is (ids exist only after fusion; an id no group has disables
/// nothing); any other value must name a node of G.
llvm::Error checkDisabledFusions(llvm::ArrayRef<std::string> Values,
                                 const Graph &G);

/// `--no-fusion`, `--fuse-attention` and `--disable-fusion
/// ID|ONNX_NODE_NAME` (repeatable) of
/// one command. Each command that compiles declares one, right after its
/// SubCommand and in the same file (so the SubCommand exists first):
///   static FusionFlags Fusion(RunCmd, RunCat);
/// so every command spells, documents and checks them alike.
class FusionFlags {
public:
  FusionFlags(llvm::cl::SubCommand &Sub, llvm::cl::OptionCategory &Cat);
  bool noFusion() const { return NoFusion; }
  bool fuseAttention() const { return FuseAttention; }
  bool deferNorms() const { return DeferNorms; }
  bool autoAttention() const { return !NoFuseAttention; }
  bool dependentLaunch() const { return DependentLaunch; }
  /// --gemm-kernels, or a usage error naming the bad value.
  llvm::Expected<GemmKernels> gemmKernels() const;
  /// --attention-kernels, or a usage error naming the bad value.
  llvm::Expected<AttentionKernels> attentionKernels() const;
  /// --conv-epilogues, or a usage error naming the bad value.
  llvm::Expected<ConvEpilogues> convEpilogues() const;
  std::vector<std::string> disabledFusions() const {
    return {Disabled.begin(), Disabled.end()};
  }
  /// checkDisabledFusions of the --disable-fusion values.
  llvm::Error check(const Graph &G) const;
  /// Copies the flags into the pipeline options, or into a GPU command's
  /// model options; a usage error for a bad --gemm-kernels value.
  llvm::Error apply(PipelineOptions &PO) const;
  llvm::Error apply(ModelLoadOptions &Opts) const;

private:
  llvm::cl::opt<bool> NoFusion;
  llvm::cl::opt<bool> FuseAttention, NoFuseAttention, DeferNorms;
  llvm::cl::list<std::string> Disabled;
  llvm::cl::opt<std::string> Gemm, Attention, Conv;
  llvm::cl::opt<bool> DependentLaunch;
};

/// `--precision fp32|tf32|fp16|bf16`, `--io-precision model|compute` and
/// `--layout auto|nchw|nhwc` of one command, declared like FusionFlags:
///   static PrecisionFlags Precision(RunCmd, RunCat);
class PrecisionFlags {
public:
  PrecisionFlags(llvm::cl::SubCommand &Sub, llvm::cl::OptionCategory &Cat);
  /// The precision (tf32 also when the command's --allow-tf32 is set), or
  /// a usage error for an unknown name.
  llvm::Expected<Precision> precision(bool AllowTF32 = false) const;
  /// Whether the model's inputs and outputs take the compute type.
  llvm::Expected<bool> computeIo() const;
  /// Both into the pipeline options, or into a command's own fields.
  llvm::Error apply(PipelineOptions &PO) const;
  llvm::Error apply(Precision &P, bool &ComputeIo, ConvLayout &Layout) const;

private:
  llvm::cl::opt<std::string> Prec;
  llvm::cl::opt<std::string> Io;
  llvm::cl::opt<std::string> Layout;
};

/// "4096", "64M", "16GiB" -> bytes (K, M, G, T are powers of 1024).
llvm::Expected<uint64_t> parseByteSize(llvm::StringRef Text,
                                       llvm::StringRef Flag);

/// `--max-constant-bytes` and `--max-tensor-bytes` of one command (the
/// resource limits against hostile models, ir/SizeLimits.h), declared like
/// FusionFlags: `static LimitFlags Limits(RunCmd, RunCat);`.
class LimitFlags {
public:
  LimitFlags(llvm::cl::SubCommand &Sub, llvm::cl::OptionCategory &Cat);
  llvm::Expected<size_t> maxConstantBytes() const;
  llvm::Expected<uint64_t> maxTensorBytes() const;
  /// Sets both limits in PO; an error for a malformed value.
  llvm::Error apply(PipelineOptions &PO) const;

private:
  llvm::cl::opt<std::string> MaxConstant, MaxTensor;
};

/// `--max-device-memory BYTES` of the commands that run on the GPU
/// (CompiledModel::setDeviceMemoryLimit), declared like LimitFlags.
class DeviceMemoryFlag {
public:
  DeviceMemoryFlag(llvm::cl::SubCommand &Sub, llvm::cl::OptionCategory &Cat);
  /// The limit in bytes (0 = none), or an error for a malformed value.
  llvm::Expected<uint64_t> bytes() const;

private:
  llvm::cl::opt<std::string> Limit;
};

/// "name: f32[2,3]  min -1 max 2 mean 0.3  [v0, v1, ...]".
void printTensorSummary(llvm::raw_ostream &OS, llvm::StringRef Name,
                        const Tensor &T, unsigned MaxValues = 8);

} // namespace solder

#endif
