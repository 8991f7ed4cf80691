//===- Backend.cpp - The reference backend and backend lookup -------------===//
#include "tools/Backend.h"
#include "ir/SizeLimits.h"
#include "runtime/reference/ReferenceExecutor.h"
#if SOLDER_HAVE_CUDA
#include "tools/CudaBackend.h"
#endif

using namespace llvm;

namespace solder {

namespace {
/// Runs the pipeline, then interprets the graph with the reference kernels.
class ReferenceBackend : public Backend {
public:
  StringRef name() const override { return "reference"; }
  Error prepare(Graph &G, const PipelineOptions &Opts, bool Optimize) override {
    // The pipeline checks tensor sizes itself; an unoptimized graph is
    // checked here, before the executor allocates anything.
    if (!Optimize)
      return checkTensorSizes(G, Opts.MaxTensorBytes);
    return runPipeline(G, Opts);
  }
  Expected<std::vector<Tensor>> run(const Graph &G,
                                    ArrayRef<Tensor> Inputs) override {
    return runReference(G, Inputs);
  }
};
} // namespace

ArrayRef<StringRef> backendNames() {
  static const StringRef Names[] = {"reference", "cuda"};
  return Names;
}

Expected<std::unique_ptr<Backend>> createBackend(StringRef Name) {
  if (Name == "reference")
    return std::make_unique<ReferenceBackend>();
  if (Name == "cuda") {
#if SOLDER_HAVE_CUDA
    return createCudaBackend();
#else
    return createStringError(inconvertibleErrorCode(),
                             "cuda backend not available in this build");
#endif
  }
  return createStringError(inconvertibleErrorCode(),
                           "unknown backend '" + Name +
                               "' (expected reference or cuda)");
}

} // namespace solder
