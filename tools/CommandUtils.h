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
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
}

namespace solder {

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
llvm::Expected<ImportOptions> parseShapeArgs(llvm::ArrayRef<std::string> Args,
                                             const ModelSummary &Model);

/// Checks every name is a pipeline pass.
llvm::Error checkPassNames(llvm::ArrayRef<std::string> Names);

/// The concrete dims of a graph input: static dims as they are, symbols
/// from Opts; an error naming the input and symbol when a dim is unbound.
llvm::Expected<std::vector<int64_t>>
concreteInputDims(const Value &Input, const ImportOptions &Opts);

/// "name: f32[2,3]  min -1 max 2 mean 0.3  [v0, v1, ...]".
void printTensorSummary(llvm::raw_ostream &OS, llvm::StringRef Name,
                        const Tensor &T, unsigned MaxValues = 8);

} // namespace solder

#endif
