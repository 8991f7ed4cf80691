//===- Commands.h - The solder subcommands ----------------------*- C++ -*-===//
//
// Each command lives in its own file with its own llvm::cl::SubCommand and
// options; solder.cpp parses the command line and calls the selected one.
// Every run function returns the process exit code (see CommandUtils.h).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TOOLS_COMMANDS_H
#define SOLDER_TOOLS_COMMANDS_H

#include "llvm/Support/CommandLine.h"

namespace solder {

struct Command {
  llvm::cl::SubCommand *Sub;
  int (*Run)();
};

llvm::cl::SubCommand &inspectSubCommand();
int runInspectCommand();
llvm::cl::SubCommand &dumpIrSubCommand();
int runDumpIrCommand();
llvm::cl::SubCommand &runSubCommand();
int runRunCommand();
llvm::cl::SubCommand &testOnnxSubCommand();
int runTestOnnxCommand();

} // namespace solder

#endif
