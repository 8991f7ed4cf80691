//===- Commands.h - The solder subcommands ----------------------*- C++ -*-===//
//
// Each command lives in its own file with its own llvm::cl::SubCommand and
// options; solder.cpp parses the command line and calls the selected one.
// Every run function returns the process exit code (see CommandUtils.h).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TOOLS_COMMANDS_H
#define SOLDER_TOOLS_COMMANDS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CommandLine.h"

namespace solder {

/// Argv: the whole command line (compile keys its plan cache on it).
using CommandArgs = llvm::ArrayRef<const char *>;

struct Command {
  llvm::cl::SubCommand *Sub;
  int (*Run)(CommandArgs Argv);
};

llvm::cl::SubCommand &inspectSubCommand();
int runInspectCommand(CommandArgs Argv);
llvm::cl::SubCommand &dumpIrSubCommand();
int runDumpIrCommand(CommandArgs Argv);
llvm::cl::SubCommand &runSubCommand();
int runRunCommand(CommandArgs Argv);
llvm::cl::SubCommand &testOnnxSubCommand();
int runTestOnnxCommand(CommandArgs Argv);

} // namespace solder

#endif
