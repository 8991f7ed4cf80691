//===- InspectCommand.cpp - `solder inspect MODEL.onnx` -------------------===//
//
// Describes an ONNX model from its raw protobuf (frontend/ModelSummary.h):
// opsets, producer, inputs and outputs with symbolic dims by name, the op
// histogram, and everything solder does not support. The model need not be
// importable; the exit code is 0 whenever the file is a readable model.
//
//===----------------------------------------------------------------------===//
#include "frontend/ModelSummary.h"
#include "tools/CommandUtils.h"
#include "tools/Commands.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace solder {

static cl::SubCommand InspectCmd("inspect",
                                 "Describe an ONNX model: opsets, inputs, "
                                 "outputs, op histogram, unsupported ops");
static cl::OptionCategory InspectCat("inspect options");
static cl::opt<std::string> InspectModel(cl::Positional, cl::Required,
                                         cl::desc("<model.onnx>"),
                                         cl::sub(InspectCmd),
                                         cl::cat(InspectCat));

cl::SubCommand &inspectSubCommand() { return InspectCmd; }

static std::string byteSize(uint64_t Bytes) {
  std::string S;
  raw_string_ostream OS(S);
  if (Bytes < 1024)
    OS << Bytes << " B";
  else if (Bytes < (1u << 20))
    OS << format("%.1f KiB", Bytes / 1024.0);
  else
    OS << format("%.1f MiB", Bytes / 1048576.0);
  return OS.str();
}

int runInspectCommand(CommandArgs) {
  Expected<ModelSummary> SOrErr = summarizeOnnxFile(InspectModel);
  if (!SOrErr)
    return reportError(SOrErr.takeError());
  const ModelSummary &S = *SOrErr;
  raw_ostream &OS = outs();
  OS << "model: " << InspectModel << "\n";
  OS << "ir version: " << S.IrVersion << "\n";
  OS << "producer: "
     << (S.ProducerName.empty() ? std::string("(none)") : S.ProducerName);
  if (!S.ProducerVersion.empty())
    OS << " " << S.ProducerVersion;
  OS << "\nopsets:";
  for (const auto &[Domain, Version] : S.Opsets)
    OS << " " << Domain << " " << Version << ";";
  if (S.Opsets.empty())
    OS << " (none)";
  OS << "\ngraph: '" << S.GraphName << "', " << S.NumNodes << " nodes, "
     << S.NumInitializers << " initializers (" << byteSize(S.InitializerBytes)
     << ")\n";
  OS << "inputs:\n";
  for (const ValueSummary &V : S.Inputs)
    OS << "  " << V.Name << ": " << V.TypeText << "\n";
  OS << "outputs:\n";
  for (const ValueSummary &V : S.Outputs)
    OS << "  " << V.Name << ": " << V.TypeText << "\n";
  OS << "ops (" << S.OpHistogram.size() << " types):\n";
  for (const auto &[Op, Count] : S.OpHistogram)
    OS << format("  %-28s %u\n", Op.c_str(), Count);
  OS << "unsupported ops:";
  if (S.UnsupportedOps.empty())
    OS << " none";
  for (const std::string &Op : S.UnsupportedOps)
    OS << " " << Op;
  OS << "\n";
  if (!S.UnsupportedTypes.empty()) {
    OS << "unsupported types:\n";
    for (const std::string &T : S.UnsupportedTypes)
      OS << "  " << T << "\n";
  }
  if (!S.LegacyFeatures.empty()) {
    OS << "legacy features (refused):\n";
    for (const std::string &L : S.LegacyFeatures)
      OS << "  " << L << "\n";
  }
  return ExitSuccess;
}

} // namespace solder
