//===- CudaBackend.cpp - The `--backend cuda` of run and test-onnx --------===//
//
// prepare() runs the pass pipeline and builds and compiles the GPU plan
// (NVRTC, no GPU needed); run() loads it onto the GPU and runs it once
// with host inputs through a fresh execution context.
//
//===----------------------------------------------------------------------===//
#include "tools/CudaBackend.h"
#include "ir/SizeLimits.h"
#include "runtime/cuda/CudaSupport.h"
#include "runtime/cuda/PlanBuilder.h"
#include "solder/Solder.h"

using namespace llvm;

namespace solder {

namespace {
class CudaBackend : public Backend {
public:
  explicit CudaBackend(const CudaBackendOptions &Opts) : Opts(Opts) {}
  StringRef name() const override { return "cuda"; }

  Error prepare(Graph &G, const PipelineOptions &PO, bool Optimize) override {
    if (Optimize) {
      PipelineOptions GpuPO = PO;
      GpuPO.TargetGpu = true;
      if (Error E = runPipeline(G, GpuPO))
        return E;
    } else if (Error E = checkTensorSizes(G, PO.MaxTensorBytes)) {
      return E;
    }
    PlanOptions Plan;
    Plan.Arch = Opts.Arch;
    if (Plan.Arch.empty()) {
      Expected<std::string> Arch = currentDeviceArch();
      if (!Arch)
        return Arch.takeError();
      Plan.Arch = *Arch;
    }
    Plan.CacheDir = Opts.CacheDir;
    Plan.AllowTF32 = Opts.AllowTF32 || PO.Prec == Precision::TF32;
    Plan.Prec = PO.Prec;
    Plan.Gemm = PO.Gemm;
    Plan.Attention = PO.Attention;
    Plan.Conv = PO.Conv;
    Expected<solder::Plan> P = buildPlan(G, Plan);
    if (!P)
      return P.takeError();
    if (Error E = compilePlanKernels(*P, Plan))
      return E;
    Expected<std::shared_ptr<CompiledModel>> M =
        CompiledModel::fromPlan(std::move(*P));
    if (!M)
      return M.takeError();
    Model = std::move(*M);
    return Error::success();
  }

  Expected<std::vector<Tensor>> run(const Graph &G,
                                    ArrayRef<Tensor> Inputs) override {
    if (!Model)
      return createStringError(inconvertibleErrorCode(),
                               "cuda backend: run() before prepare()");
    Expected<std::unique_ptr<ExecutionContext>> Ctx = Model->createContext();
    if (!Ctx)
      return Ctx.takeError();
    (*Ctx)->setUseCudaGraph(Opts.UseCudaGraph);
    return (*Ctx)->runHost(Inputs);
  }

private:
  CudaBackendOptions Opts;
  std::shared_ptr<CompiledModel> Model;
};
} // namespace

std::unique_ptr<Backend> createCudaBackend(const CudaBackendOptions &Opts) {
  return std::make_unique<CudaBackend>(Opts);
}

Expected<std::vector<Tensor>> runPlanFile(StringRef Path,
                                          ArrayRef<Tensor> Inputs) {
  Expected<std::shared_ptr<CompiledModel>> M = CompiledModel::loadPlan(Path);
  if (!M)
    return M.takeError();
  Expected<std::unique_ptr<ExecutionContext>> Ctx = (*M)->createContext();
  if (!Ctx)
    return Ctx.takeError();
  return (*Ctx)->runHost(Inputs);
}

} // namespace solder
