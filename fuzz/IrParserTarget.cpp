//===- IrParserTarget.cpp - Fuzzing the textual IR parser -----------------===//
#include "fuzz/FuzzTargets.h"
#include "ir/Parser.h"
#include "ir/Printer.h"

namespace solder {
namespace fuzz {

std::string irParser(llvm::StringRef Bytes) {
  llvm::Expected<std::unique_ptr<Graph>> G = parseGraph(Bytes);
  if (!G) {
    llvm::consumeError(G.takeError());
    return "";
  }
  // The printer's promise (ir/Printer.h): print -> parse -> print gives
  // the same bytes.
  std::string Printed = graphToString(**G);
  llvm::Expected<std::unique_ptr<Graph>> Again = parseGraph(Printed);
  if (!Again)
    return "the printed graph does not parse: " +
           llvm::toString(Again.takeError()) + "\n" + Printed;
  std::string Reprinted = graphToString(**Again);
  if (Reprinted != Printed)
    return "print -> parse -> print changed the text:\n" + Printed + "\n---\n" +
           Reprinted;
  return "";
}

} // namespace fuzz
} // namespace solder
