//===- solder.cpp - The solder command-line tool --------------------------===//
//
// `solder <command> [options]`: inspect, dump-ir, run, test-onnx (and,
// with the CUDA toolkit, compile, bench, dump-kernels, compare, profile). This
// file only parses the command line and dispatches; each command is in its own
// <Name>Command.cpp. Exit codes: 0 success, 1 test failures or numeric
// mismatch, 2 bad usage, bad input or unsupported model.
//
//===----------------------------------------------------------------------===//
#include "tools/CommandUtils.h"
#include "tools/Commands.h"
#if SOLDER_HAVE_CUDA
#include "tools/GpuCommands.h"
#endif
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace solder;

int main(int argc, char **argv) {
  InitLLVM X(argc, argv);
  const Command Commands[] = {
    {&inspectSubCommand(), runInspectCommand},
    {&dumpIrSubCommand(), runDumpIrCommand},
    {&runSubCommand(), runRunCommand},
    {&testOnnxSubCommand(), runTestOnnxCommand},
#if SOLDER_HAVE_CUDA
    {&compileSubCommand(), runCompileCommand},
    {&benchSubCommand(), runBenchCommand},
    {&dumpKernelsSubCommand(), runDumpKernelsCommand},
    {&compareSubCommand(), runCompareCommand},
    {&profileSubCommand(), runProfileCommand},
#endif
  };
  auto ListCommands = [&](raw_ostream &OS) {
    for (const Command &C : Commands)
      OS << "  " << C.Sub->getName() << " - " << C.Sub->getDescription()
         << "\n";
  };

  // A first argument that is neither an option nor a command would reach
  // the top-level parser as a stray positional; say what went wrong.
  if (argc < 2) {
    errs() << "error: no command given\nusage: solder <command> [options] "
              "(solder <command> --help for details)\ncommands:\n";
    ListCommands(errs());
    return ExitBadInput;
  }
  StringRef First = argv[1];
  if (!First.startswith("-") && none_of(Commands, [&](const Command &C) {
        return C.Sub->getName() == First;
      })) {
    errs() << "error: unknown command '" << First << "'\ncommands:\n";
    ListCommands(errs());
    return ExitBadInput;
  }

  // LLVM's own --color option means nothing to a solder user.
  StringMap<cl::Option *> &Registered = cl::getRegisteredOptions();
  if (auto It = Registered.find("color"); It != Registered.end())
    It->second->setHiddenFlag(cl::ReallyHidden);

  // Parse errors are collected so they can carry the "error: " prefix
  // every solder diagnostic starts with.
  std::string ParseErrors;
  raw_string_ostream ParseErrorStream(ParseErrors);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "solder: an ONNX to fused CUDA compiler\n\n"
          "  solder <command> --help   shows the options of one command\n",
          &ParseErrorStream)) {
    ParseErrorStream.flush();
    return reportError(StringRef(ParseErrors).trim() +
                       "\n(solder <command> --help shows the options)");
  }

  for (const Command &C : Commands)
    if (*C.Sub)
      return C.Run(ArrayRef<const char *>(argv, size_t(argc)));
  errs() << "error: no command given (solder --help lists them)\n";
  return ExitBadInput;
}
