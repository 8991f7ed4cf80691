//===- NvrtcCompiler.cpp - Generated kernels to CUBIN through NVRTC -------===//
//
// Work list: kernels with identical cache keys are compiled once. Workers
// take keys from an atomic counter; each first looks in the disk cache
// (<dir>/<sha256>.cubin, checked to be an ELF file), else runs NVRTC and
// writes the CUBIN atomically (a unique temporary file in the same folder,
// then rename), so concurrent solder processes never see half a file: two
// processes writing one entry each rename a whole file over it, and the
// entry is one of the two (identical) CUBINs. A cache folder that cannot be
// created or written costs one warning, and the compile goes on without
// it (entries already there are still read).
// NVRTC programs are independent, so compiling several at once is safe.
//
// A kernel that uses architecture-specific instructions (wgmma, marked by
// codegen/TensorCoreSupport.h's ArchSpecificMarker) is compiled for
// `sm_XYa` instead of `sm_XY`, alone among the kernels of the call; its
// options, and with them its cache key, name that target.
//
//===----------------------------------------------------------------------===//
#include "codegen/NvrtcCompiler.h"
#include "codegen/NvrtcApi.h"
#include "codegen/NvrtcIdentity.h"
#include "codegen/TensorCoreSupport.h"
#include "ir/FileBytes.h"
#include "ir/OpRegistry.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>
#include <unistd.h>

namespace solder {

namespace {

std::string nvrtcMessage(const NvrtcApi &N, nvrtcResult R) {
  return N.nvrtcGetErrorString(R);
}

/// The folder holding cuda_fp16.h, or "" when none is found.
std::string findCudaInclude(const NvrtcOptions &Opts) {
  std::vector<std::string> Candidates;
  if (!Opts.CudaIncludeDir.empty())
    Candidates.push_back(Opts.CudaIncludeDir);
  if (const char *P = std::getenv("CUDA_PATH"))
    Candidates.push_back(std::string(P) + "/include");
  if (const char *P = std::getenv("CUDA_HOME"))
    Candidates.push_back(std::string(P) + "/include");
#ifdef SOLDER_CUDA_INCLUDE_DIR
  // A CMake list: one or more folders separated by ';'.
  llvm::SmallVector<llvm::StringRef, 2> BuildDirs;
  llvm::StringRef(SOLDER_CUDA_INCLUDE_DIR).split(BuildDirs, ';');
  for (llvm::StringRef D : BuildDirs)
    Candidates.push_back(D.str());
#endif
  Candidates.push_back("/usr/local/cuda/include");
  Candidates.push_back("/usr/local/cuda/targets/x86_64-linux/include");
  Candidates.push_back("/usr/local/cuda-13.0/targets/x86_64-linux/include");
  Candidates.push_back("/usr/include");
  for (const std::string &C : Candidates)
    if (llvm::sys::fs::exists(C + "/cuda_fp16.h"))
      return C;
  return "";
}

std::string cacheKey(const GeneratedKernel &K,
                     const std::vector<std::string> &Options,
                     const std::string &Arch, llvm::StringRef NvrtcVersion) {
  llvm::SHA256 H;
  auto Field = [&](llvm::StringRef S) {
    // Length-prefixed so field boundaries cannot shift.
    H.update(std::to_string(S.size()) + ":");
    H.update(S);
  };
  Field("solder-cubin-v1");
  Field(NvrtcVersion);
  Field(Arch);
  for (const std::string &O : Options)
    Field(O);
  Field(K.Name);
  Field(K.Source);
  return llvm::toHex(H.final(), /*LowerCase=*/true);
}

bool looksLikeCubin(llvm::StringRef Data) {
  return Data.size() > 4 && Data.startswith("\x7f"
                                            "ELF");
}

llvm::Error writeAtomically(const std::string &Path, llvm::StringRef Data) {
  llvm::SmallString<256> Tmp;
  int FD;
  if (auto EC =
          llvm::sys::fs::createUniqueFile(Path + ".tmp-%%%%%%%%", FD, Tmp))
    return makeError("cannot create a file next to '" + Path +
                     "': " + EC.message());
  llvm::sys::RemoveFileOnSignal(Tmp);
  auto Done =
      llvm::make_scope_exit([&] { llvm::sys::DontRemoveFileOnSignal(Tmp); });
  {
    llvm::raw_fd_ostream OS(FD, /*shouldClose=*/true);
    OS << Data;
    OS.close();
    if (OS.has_error()) {
      OS.clear_error();
      llvm::sys::fs::remove(Tmp);
      return makeError("cannot write '" + Tmp + "'");
    }
  }
  if (auto EC = llvm::sys::fs::rename(Tmp, Path)) {
    llvm::sys::fs::remove(Tmp);
    return makeError("cannot rename '" + Tmp + "' to '" + Path +
                     "': " + EC.message());
  }
  return llvm::Error::success();
}

/// LLVM installs its signal handlers, and with them an alternate signal
/// stack of its own heap memory, on whichever thread first asks for a file
/// to be removed on a signal. Asking on the calling thread before the workers
/// start keeps that stack off them: AddressSanitizer's thread teardown
/// unmaps a thread's alternate stack and aborts on one it did not map.
void registerSignalHandlersOnThisThread(const std::string &CacheDir) {
  std::string Probe = CacheDir + "/.solder-signal-probe";
  llvm::sys::RemoveFileOnSignal(Probe);
  llvm::sys::DontRemoveFileOnSignal(Probe);
}

/// Writes a failing kernel's source where the user can open it.
std::string saveFailingSource(const GeneratedKernel &K,
                              const NvrtcOptions &Opts) {
  llvm::SmallString<256> Dir(Opts.FailureDir);
  if (Dir.empty())
    llvm::sys::path::system_temp_directory(/*ErasedOnReboot=*/true, Dir);
  llvm::sys::fs::create_directories(Dir);
  llvm::SmallString<256> Path;
  int FD;
  llvm::SmallString<256> Model(Dir);
  llvm::sys::path::append(Model, K.Name + "-%%%%%%.cu");
  if (llvm::sys::fs::createUniqueFile(Model, FD, Path))
    return "";
  llvm::raw_fd_ostream OS(FD, /*shouldClose=*/true);
  OS << K.Source;
  return std::string(Path.str());
}

/// The options for kernel K: Options, with the architecture-specific
/// target (`sm_90a` for `sm_90`) when K's source asks for it; an error when
/// Arch has none (only sm_90's wgmma is generated).
llvm::Expected<std::vector<std::string>>
kernelOptions(const GeneratedKernel &K, const std::vector<std::string> &Options,
              llvm::StringRef Arch) {
  if (!codegen::needsArchSpecificTarget(K.Source) || Arch == "sm_90a")
    return Options;
  if (Arch != "sm_90")
    return makeError("kernel " + K.Name + " (" + K.Summary +
                     ") uses sm_90a instructions (wgmma) and cannot be "
                     "compiled for " +
                     Arch.str() + "; generate the kernels for this GPU again");
  std::vector<std::string> O = Options;
  for (std::string &Opt : O)
    if (Opt == "--gpu-architecture=" + Arch.str())
      Opt += "a";
  return O;
}

/// Compiles one kernel; the CUBIN or an error with the log.
llvm::Expected<std::string> runNvrtc(const NvrtcApi &N,
                                     const GeneratedKernel &K,
                                     const std::vector<std::string> &Options,
                                     const NvrtcOptions &Opts) {
  nvrtcProgram Prog;
  std::string FileName = K.Name + ".cu";
  nvrtcResult R = N.nvrtcCreateProgram(&Prog, K.Source.c_str(),
                                       FileName.c_str(), 0, nullptr, nullptr);
  if (R != NVRTC_SUCCESS)
    return makeError("kernel " + K.Name +
                     ": nvrtcCreateProgram failed: " + nvrtcMessage(N, R));
  std::vector<const char *> Argv;
  for (const std::string &O : Options)
    Argv.push_back(O.c_str());
  R = N.nvrtcCompileProgram(Prog, Argv.size(), Argv.data());
  std::string Log;
  size_t LogSize = 0;
  if (N.nvrtcGetProgramLogSize(Prog, &LogSize) == NVRTC_SUCCESS &&
      LogSize > 1) {
    Log.resize(LogSize);
    N.nvrtcGetProgramLog(Prog, &Log[0]);
    Log.resize(LogSize - 1);
  }
  if (R != NVRTC_SUCCESS) {
    N.nvrtcDestroyProgram(&Prog);
    std::string Saved = saveFailingSource(K, Opts);
    return makeError("NVRTC failed to compile kernel " + K.Name + " (" +
                     K.Summary + "): " + nvrtcMessage(N, R) +
                     (Saved.empty() ? "" : "\n  source: " + Saved) +
                     "\n  options: " + llvm::join(Options, " ") + "\n" + Log);
  }
  size_t Size = 0;
  std::string Cubin;
  R = N.nvrtcGetCUBINSize(Prog, &Size);
  if (R == NVRTC_SUCCESS) {
    Cubin.resize(Size);
    R = N.nvrtcGetCUBIN(Prog, &Cubin[0]);
  }
  N.nvrtcDestroyProgram(&Prog);
  if (R != NVRTC_SUCCESS || Cubin.empty())
    return makeError("kernel " + K.Name +
                     ": cannot get the CUBIN: " + nvrtcMessage(N, R));
  return Cubin;
}

} // namespace

llvm::Error writeCacheFileAtomically(const std::string &Path,
                                     llvm::StringRef Data) {
  return writeAtomically(Path, Data);
}

std::string nvrtcVersionString() {
  auto N = nvrtcApi();
  if (!N) {
    llvm::consumeError(N.takeError());
    return "unavailable";
  }
  int Major = 0, Minor = 0;
  if ((*N)->nvrtcVersion(&Major, &Minor) != NVRTC_SUCCESS)
    return "unknown";
  return std::to_string(Major) + "." + std::to_string(Minor);
}

llvm::Expected<std::vector<std::string>>
nvrtcCompileOptions(const NvrtcOptions &Opts) {
  llvm::StringRef Arch(Opts.Arch);
  unsigned SM = 0;
  if (!Arch.consume_front("sm_") || Arch.getAsInteger(10, SM) || SM < 80)
    return makeError("unsupported GPU architecture '" + Opts.Arch +
                     "': solder needs sm_80 or newer, e.g. sm_90");
  std::vector<std::string> O = {"--gpu-architecture=" + Opts.Arch,
                                "--std=c++17"};
  std::string Inc = findCudaInclude(Opts);
  if (!Inc.empty())
    O.push_back("-I" + Inc);
  O.insert(O.end(), Opts.ExtraOptions.begin(), Opts.ExtraOptions.end());
  return O;
}

std::string resolveCacheDir(const NvrtcOptions &Opts) {
  if (!Opts.CacheDir.empty())
    return Opts.CacheDir;
  if (const char *X = std::getenv("XDG_CACHE_HOME"); X && *X)
    return std::string(X) + "/solder";
  if (const char *H = std::getenv("HOME"); H && *H)
    return std::string(H) + "/.cache/solder";
  return "";
}

llvm::Expected<std::vector<std::string>>
compileKernels(llvm::ArrayRef<GeneratedKernel> Kernels,
               const NvrtcOptions &Opts, CompileStats *Stats) {
  auto Start = std::chrono::steady_clock::now();
  auto OptionsOr = nvrtcCompileOptions(Opts);
  if (!OptionsOr)
    return OptionsOr.takeError();
  std::vector<std::string> Options = std::move(*OptionsOr);
  // The cache folder first: it knows NVRTC's version (NvrtcIdentity.h), so
  // NVRTC itself is loaded only when a kernel is not in the cache.
  std::mutex ProgressMutex;
  // One warning per call, from whichever thread first finds the cache
  // unusable; later write failures are dropped silently.
  std::atomic<bool> CacheWritable{true};
  auto WarnOnce = [&](const std::string &Msg) {
    if (!CacheWritable.exchange(false)) // already warned
      return;
    std::lock_guard<std::mutex> Lock(ProgressMutex);
    if (Opts.Warning)
      Opts.Warning(Msg);
    else
      llvm::errs() << "warning: " << Msg << "\n";
  };
  std::string CacheDir = Opts.UseCache ? resolveCacheDir(Opts) : "";
  if (!CacheDir.empty())
    if (std::error_code EC = llvm::sys::fs::create_directories(CacheDir)) {
      WarnOnce("cannot create the kernel cache folder '" + CacheDir + "' (" +
               EC.message() + "); compiling without a cache");
      CacheDir.clear();
    }
  std::string Version = nvrtcVersionFor(CacheDir);

  // Each kernel's options (its target), then unique work items by cache
  // key.
  std::vector<std::vector<std::string>> KernelOpts;
  for (const GeneratedKernel &K : Kernels) {
    auto O = kernelOptions(K, Options, Opts.Arch);
    if (!O)
      return O.takeError();
    KernelOpts.push_back(std::move(*O));
  }
  std::vector<std::string> Keys(Kernels.size());
  llvm::StringMap<unsigned> FirstOf;
  std::vector<unsigned> Work; // kernel index of each unique key
  for (size_t I = 0; I < Kernels.size(); ++I) {
    Keys[I] = cacheKey(Kernels[I], KernelOpts[I], Opts.Arch, Version);
    if (FirstOf.try_emplace(Keys[I], Work.size()).second)
      Work.push_back(I);
  }

  std::vector<std::string> Cubins(Work.size());
  std::vector<std::optional<llvm::Error>> Errors(Work.size());
  std::atomic<unsigned> Next{0}, NumCompiled{0}, NumCached{0};
  unsigned Done = 0;
  bool Tty = !Opts.Progress && isatty(2) && Work.size() > 1;

  auto Worker = [&] {
    for (unsigned W; (W = Next++) < Work.size();) {
      const GeneratedKernel &K = Kernels[Work[W]];
      const std::string &Key = Keys[Work[W]];
      std::string Path =
          CacheDir.empty() ? "" : CacheDir + "/" + Key + ".cubin";
      bool Hit = false;
      if (!Path.empty()) {
        // Read, not mapped: an entry another process truncates cannot
        // fault here.
        auto Buf = readFileBytes(Path, "cached kernel", UINT64_MAX);
        if (!Buf)
          llvm::consumeError(Buf.takeError());
        else if (looksLikeCubin((*Buf)->getBuffer())) {
          Cubins[W] = (*Buf)->getBuffer().str();
          Hit = true;
          ++NumCached;
        }
      }
      if (!Hit) {
        // Loaded once per process, on the first kernel the cache lacks.
        auto Nvrtc = nvrtcApi();
        auto C = Nvrtc ? runNvrtc(**Nvrtc, K, KernelOpts[Work[W]], Opts)
                       : llvm::Expected<std::string>(Nvrtc.takeError());
        if (!C) {
          Errors[W].emplace(C.takeError());
        } else {
          Cubins[W] = std::move(*C);
          ++NumCompiled;
          // A failed cache write only costs a recompile later.
          if (!Path.empty() && CacheWritable)
            if (llvm::Error E = writeAtomically(Path, Cubins[W]))
              WarnOnce("kernel cache folder '" + CacheDir +
                       "' is not writable (" + llvm::toString(std::move(E)) +
                       "); compiled kernels are not cached");
        }
      }
      std::lock_guard<std::mutex> Lock(ProgressMutex);
      ++Done;
      if (Opts.Progress)
        Opts.Progress(Done, Work.size());
      else if (Tty)
        llvm::errs() << "\rcompiling kernels " << Done << "/" << Work.size()
                     << (Done == Work.size() ? "\n" : "");
    }
  };
  unsigned NumThreads = Opts.Threads
                            ? Opts.Threads
                            : std::max(1u, std::thread::hardware_concurrency());
  NumThreads = std::min<unsigned>(NumThreads, Work.size());
  std::vector<std::thread> Pool;
  if (NumThreads > 1 && !CacheDir.empty())
    registerSignalHandlersOnThisThread(CacheDir);
  for (unsigned T = 1; T < NumThreads; ++T)
    Pool.emplace_back(Worker);
  Worker();
  for (std::thread &T : Pool)
    T.join();

  // Report the first failure in kernel order; drop the rest.
  llvm::Error First = llvm::Error::success();
  for (auto &E : Errors)
    if (E) {
      if (!First)
        First = std::move(*E);
      else
        llvm::consumeError(std::move(*E));
    }
  if (First)
    return First;

  std::vector<std::string> Out(Kernels.size());
  for (size_t I = 0; I < Kernels.size(); ++I)
    Out[I] = Cubins[FirstOf[Keys[I]]];
  if (Stats) {
    Stats->Compiled = NumCompiled;
    Stats->Cached = NumCached;
    Stats->Seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - Start)
            .count();
  }
  return Out;
}

} // namespace solder
