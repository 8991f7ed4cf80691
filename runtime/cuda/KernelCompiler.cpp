//===- KernelCompiler.cpp - Code generation and NVRTC for plans -----------===//
#include "runtime/cuda/KernelCompiler.h"
#include "codegen/KernelEmitter.h"
#include "codegen/NvrtcCompiler.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"
#include <map>

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

/// Source as the compiler sees it, less the kernel's name: every
/// occurrence of Name blanked and every whole-line comment (the emitters'
/// group headers name the group) left out.
static std::string withoutName(StringRef Source, StringRef Name) {
  std::string Out;
  Out.reserve(Source.size());
  while (!Source.empty()) {
    auto [Line, Rest] = Source.split('\n');
    Source = Rest;
    if (Line.ltrim().startswith("//"))
      continue;
    while (!Name.empty()) {
      size_t At = Line.find(Name);
      if (At == StringRef::npos)
        break;
      Out += Line.take_front(At);
      Out += '\x01';
      Line = Line.drop_front(At + Name.size());
    }
    Out += Line;
    Out += '\n';
  }
  return Out;
}

Error compileCubins(MutableArrayRef<PlanKernel> Kernels, StringRef Arch,
                    StringRef CacheDir, raw_ostream *Progress) {
  std::vector<GeneratedKernel> Todo;
  std::vector<size_t> Where;
  // Kernels whose sources differ only in their names (BERT-base: each of
  // the 12 layers has the same attention and LayerNorm kernels, 38 kernels
  // and 5 distinct ones) are compiled once; the others take that cubin
  // and run its function (PlanKernel::Symbol).
  std::map<std::string, size_t> FirstOf;         // source, name blanked -> Todo
  std::vector<std::pair<size_t, size_t>> Shared; // kernel, Todo index
  for (size_t I = 0; I < Kernels.size(); ++I) {
    if (!Kernels[I].Cubin.empty())
      continue;
    Kernels[I].Symbol.clear();
    auto [It, New] = FirstOf.emplace(
        withoutName(Kernels[I].Source, Kernels[I].Name), Todo.size());
    if (!New) {
      Shared.push_back({I, It->second});
      continue;
    }
    GeneratedKernel K;
    K.Name = Kernels[I].Name;
    // NVRTC, and so the disk cache's key, sees the source without the
    // comment that summarizes its shapes: kernels that take their varying
    // lengths as parameters are then the same source at every shape (a
    // dynamic model's new shape reuses their cubins).
    K.Source = withoutSummaryComment(Kernels[I].Source, Kernels[I].Summary);
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
  for (auto [I, T] : Shared) {
    Kernels[I].Cubin = Kernels[Where[T]].Cubin;
    Kernels[I].Symbol = Kernels[Where[T]].Name;
  }
  if (Progress)
    *Progress << formatv("compiled {0} kernels for {1} in {2:F2} s ({3} "
                         "from the cache; {4} more share their code)\n",
                         Todo.size(), Arch, Stats.Seconds, Stats.Cached,
                         Shared.size());
  return Error::success();
}

} // namespace solder
