//===- OnnxImportTarget.cpp - Fuzzing ONNX import through to a plan -------===//
//
// The path of `solder compile MODEL.onnx --arch sm_90` on a machine
// without a GPU, minus the kernels' NVRTC compile (see FuzzTargets.h).
// Every pass is followed by the verifier: a pass that turns a valid graph
// into an invalid one is a bug even though the pipeline reports it as an
// error.
//
//===----------------------------------------------------------------------===//
#include "frontend/ModelSummary.h"
#include "frontend/OnnxImporter.h"
#include "fuzz/FuzzTargets.h"
#include "passes/Pipeline.h"
#ifdef SOLDER_HAVE_CUDA
#include "runtime/cuda/PlanBuilder.h"
#include "runtime/cuda/PlanFile.h"
#endif
#include <cstdlib>

namespace solder {
namespace fuzz {

/// Binds every symbolic or unknown dim of the model's inputs to 2, as a
/// user would with --shape, so the plan builder sees static shapes.
static ImportOptions bindInputs(llvm::StringRef Bytes) {
  ImportOptions IO;
  llvm::Expected<ModelSummary> S = summarizeOnnxBytes(Bytes, "fuzz.onnx");
  if (!S) {
    llvm::consumeError(S.takeError());
    return IO;
  }
  for (const ValueSummary &In : S->Inputs) {
    if (In.Rank < 0)
      continue;
    std::vector<int64_t> Dims = In.StaticDims;
    for (int64_t &D : Dims)
      if (D < 0)
        D = 2;
    IO.InputShapes[In.Name] = Dims;
  }
  return IO;
}

std::string onnxImport(llvm::StringRef Bytes) {
  llvm::Expected<std::unique_ptr<Graph>> G =
      importOnnxBytes(Bytes, /*BaseDir=*/"", bindInputs(Bytes));
  if (!G) {
    llvm::consumeError(G.takeError());
    return "";
  }
  PipelineOptions PO;
  PO.TargetGpu = true;
  PO.VerifyEachPass = true;
  PO.FuseAttention = true; // every pass, attention-recognition included
  if (llvm::Error E = runPipeline(**G, PO)) {
    std::string Msg = llvm::toString(std::move(E));
    if (llvm::StringRef(Msg).startswith("IR invalid after"))
      return Msg;
    return "";
  }
#ifdef SOLDER_HAVE_CUDA
  PlanOptions PlanOpts;
  PlanOpts.Arch = "sm_90";
  llvm::Expected<Plan> P = buildPlan(**G, PlanOpts);
  if (!P) {
    llvm::consumeError(P.takeError());
    return "";
  }
  if (const char *N = std::getenv("SOLDER_FUZZ_NVRTC"); N && *N == '1')
    if (llvm::Error E = compilePlanKernels(*P, PlanOpts))
      return "a generated kernel does not compile: " +
             llvm::toString(std::move(E));
  // solder's own plan must read back.
  llvm::Expected<Plan> Back = deserializePlan(serializePlan(*P));
  if (!Back)
    return "a plan built from the model does not read back: " +
           llvm::toString(Back.takeError());
#endif
  return "";
}

} // namespace fuzz
} // namespace solder
