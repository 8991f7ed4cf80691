//===- KernelCompiler.cpp - Code generation and NVRTC for plans -----------===//
#include "runtime/cuda/KernelCompiler.h"
#include "codegen/KernelEmitter.h"
#include "codegen/NvrtcCompiler.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace solder {

unsigned smVersionOf(StringRef Arch) {
  // "sm_90" / "sm_90a" / "compute_90": the digits after the underscore.
  unsigned Sm = 0;
  StringRef Digits = Arch.substr(Arch.find('_') + 1);
  if (Arch.contains('_') &&
      !Digits.take_while([](char C) { return C >= '0' && C <= '9'; })
           .getAsInteger(10, Sm))
    return Sm;
  return CodegenOptions().SmVersion;
}

Expected<std::vector<GeneratedKernel>>
generateKernels(const Graph &G, StringRef Arch, int64_t PerturbGroupId,
                const std::set<int64_t> &GeneratedGemmGroups, bool PreferWgmma,
                bool DependentLaunch) {
  CodegenOptions Opts;
  Opts.DependentLaunch = DependentLaunch;
  Opts.PerturbGroupId = PerturbGroupId;
  Opts.SmVersion = smVersionOf(Arch);
  Opts.GeneratedGemmGroups = GeneratedGemmGroups;
  Opts.PreferWgmma = PreferWgmma;
  return emitGraphKernels(G, Opts);
}

Error compileCubins(MutableArrayRef<PlanKernel> Kernels, StringRef Arch,
                    StringRef CacheDir, raw_ostream *Progress) {
  std::vector<GeneratedKernel> Todo;
  std::vector<size_t> Where;
  for (size_t I = 0; I < Kernels.size(); ++I) {
    if (!Kernels[I].Cubin.empty())
      continue;
    GeneratedKernel K;
    K.Name = Kernels[I].Name;
    K.Source = Kernels[I].Source;
    Todo.push_back(std::move(K));
    Where.push_back(I);
  }
  if (Todo.empty())
    return Error::success();
  NvrtcOptions Opts;
  Opts.Arch = Arch.str();
  Opts.CacheDir = CacheDir.str();
  // The kernel counter goes where the caller's progress goes: nowhere when
  // it asked for quiet (null), whatever stderr is.
  Opts.Progress = [Progress](unsigned Done, unsigned Total) {
    if (Progress && Total > 1)
      *Progress << "\rcompiling kernels " << Done << "/" << Total
                << (Done == Total ? "\n" : "");
  };
  CompileStats Stats;
  Expected<std::vector<std::string>> Cubins =
      compileKernels(Todo, Opts, &Stats);
  if (!Cubins) {
    // NVRTC names the kernel; the user knows the ONNX nodes.
    std::string Msg = toString(Cubins.takeError());
    for (size_t I = 0; I < Where.size(); ++I) {
      const PlanKernel &K = Kernels[Where[I]];
      if (!K.NodeNames.empty() &&
          StringRef(Msg).contains("kernel " + K.Name + " ")) {
        Msg += "\n  (kernel " + K.Name +
               " implements ONNX nodes: " + join(K.NodeNames, ", ") + ")";
        break;
      }
    }
    return createStringError(inconvertibleErrorCode(), Msg);
  }
  for (size_t I = 0; I < Where.size(); ++I)
    Kernels[Where[I]].Cubin = std::move((*Cubins)[I]);
  if (Progress)
    *Progress << formatv("compiled {0} kernels for {1} in {2:F2} s ({3} "
                         "from the cache)\n",
                         Todo.size(), Arch, Stats.Seconds, Stats.Cached);
  return Error::success();
}

} // namespace solder
