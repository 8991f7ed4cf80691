//===- Parser.h - Reads solder's textual IR ---------------------*- C++ -*-===//
//
// Parses the format written by ir/Printer.h back into a Graph: the same
// value and node names, types, attributes and constant bytes, in the same
// order. Values must be defined before use (inputs, constants, earlier node
// results). Errors are "line:col: message". Besides what the printer
// writes, hand-written text may omit a node's result types (`: ...`), which
// are then inferred, and may write constants of any size as readable lists.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_IR_PARSER_H
#define SOLDER_IR_PARSER_H

#include "ir/Graph.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include <memory>

namespace solder {

/// Parses one graph and runs verifyGraph on it.
llvm::Expected<std::unique_ptr<Graph>> parseGraph(llvm::StringRef Text);

/// Parses without verifying (for tests of the verifier and for tools that
/// want to inspect broken IR). Only syntax and name resolution are checked.
llvm::Expected<std::unique_ptr<Graph>>
parseGraphUnverified(llvm::StringRef Text);

} // namespace solder

#endif
