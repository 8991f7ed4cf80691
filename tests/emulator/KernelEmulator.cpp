//===- KernelEmulator.cpp - Generated kernels run on the CPU --------------===//
#include "KernelEmulator.h"
#include "EmuAbi.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <regex>
#include <sys/mman.h>
#include <thread>
#include <ucontext.h>
#include <unistd.h>
#include <utility>

namespace solder {
namespace emu {

namespace {

llvm::Error emuError(const llvm::Twine &Msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), Msg);
}

/// Threads a kernel may have per block, and the stack each fiber gets (the
/// kernels keep small arrays in registers; 128 KiB is generous).
constexpr unsigned MaxThreads = 1024;
constexpr size_t StackBytes = 128 << 10;
/// Largest value one shuffle moves (a double, a half2, a float4).
constexpr unsigned MaxShuffleBytes = 16;
/// Kernel parameters callEntry can pass.
constexpr size_t MaxArgs = 48;

struct Barrier {
  unsigned Arrived = 0;
  uint64_t Generation = 0;
};

struct Fiber {
  ucontext_t Context;
  SolderEmuThread Thread;
  bool Done = false;
};

/// The block being run on this OS thread, and everything its threads share.
struct BlockRun {
  void *Entry = nullptr;
  llvm::ArrayRef<void *> Args;
  std::vector<Fiber> Fibers;
  ucontext_t Scheduler;
  unsigned Live = 0;                // threads not yet returned
  std::vector<unsigned> LiveInWarp; // per warp
  Barrier BlockBarrier;
  std::vector<Barrier> WarpBarriers;
  std::vector<std::array<unsigned char, MaxShuffleBytes>> Slots;
  /// Bumped by every arrival at a barrier and every return: a round of the
  /// scheduler without it moving is a deadlock.
  uint64_t Progress = 0;
  size_t Current = 0;
  SolderEmuRuntime Runtime;
};

thread_local BlockRun *Run = nullptr;

void yieldToScheduler() {
  swapcontext(&Run->Fibers[Run->Current].Context, &Run->Scheduler);
}

void open(Barrier &B) {
  B.Arrived = 0;
  ++B.Generation;
}

void arrive(Barrier &B, unsigned Expected) {
  ++Run->Progress;
  if (++B.Arrived >= Expected) {
    open(B);
    return;
  }
  uint64_t Gen = B.Generation;
  while (B.Generation == Gen)
    yieldToScheduler();
}

unsigned warpOf(const SolderEmuThread &T) { return T.Linear / 32; }

void syncThreads() { arrive(Run->BlockBarrier, Run->Live); }

void syncWarp() {
  unsigned W = warpOf(*Run->Runtime.Cur);
  arrive(Run->WarpBarriers[W], Run->LiveInWarp[W]);
}

void shuffle(const void *In, void *Out, unsigned Bytes, unsigned SrcLane) {
  unsigned Me = Run->Runtime.Cur->Linear, W = Me / 32;
  std::memcpy(Run->Slots[Me].data(), In, Bytes);
  arrive(Run->WarpBarriers[W], Run->LiveInWarp[W]);
  unsigned Src = W * 32 + SrcLane;
  // A lane past the block's last thread (a partial warp) reads its own.
  if (Src >= Run->Fibers.size())
    Src = Me;
  std::memcpy(Out, Run->Slots[Src].data(), Bytes);
  arrive(Run->WarpBarriers[W], Run->LiveInWarp[W]);
}

template <size_t... I>
void callWith(void *Entry, llvm::ArrayRef<void *> A,
              std::index_sequence<I...>) {
  using Fn = void (*)(decltype((void)I, static_cast<void *>(nullptr))...);
  (void)A; // unused for a kernel without parameters
  reinterpret_cast<Fn>(Entry)(A[I]...);
}

template <size_t... N>
void callEntry(void *Entry, llvm::ArrayRef<void *> A,
               std::index_sequence<N...>) {
  // One instantiation per argument count; the kernel's parameters are all
  // pointers, passed the same way as these.
  ((A.size() == N ? callWith(Entry, A, std::make_index_sequence<N>()) : void()),
   ...);
}

void fiberMain() {
  BlockRun &R = *Run;
  callEntry(R.Entry, R.Args, std::make_index_sequence<MaxArgs + 1>());
  Fiber &F = R.Fibers[R.Current];
  F.Done = true;
  ++R.Progress;
  // A returned thread no longer counts at barriers; the others may be
  // waiting for just it.
  unsigned W = warpOf(F.Thread);
  --R.Live;
  --R.LiveInWarp[W];
  if (R.BlockBarrier.Arrived && R.BlockBarrier.Arrived >= R.Live)
    open(R.BlockBarrier);
  if (R.WarpBarriers[W].Arrived && R.WarpBarriers[W].Arrived >= R.LiveInWarp[W])
    open(R.WarpBarriers[W]);
  // Returning resumes uc_link, the scheduler.
}

/// Points F at fiberMain on Stack; it returns to Scheduler. Apart from the
/// caller, whose locals getcontext's second return would otherwise put at
/// risk (it never returns twice here: makecontext replaces where F goes).
__attribute__((noinline)) void startFiber(Fiber &F, char *Stack,
                                          ucontext_t *Scheduler) {
  getcontext(&F.Context);
  F.Context.uc_stack.ss_sp = Stack;
  F.Context.uc_stack.ss_size = StackBytes;
  F.Context.uc_link = Scheduler;
  makecontext(&F.Context, fiberMain, 0);
}

} // namespace

std::string whyNotEmulated(llvm::StringRef Source) {
  if (Source.contains("asm(") || Source.contains("asm volatile"))
    return "inline PTX (tensor cores, clusters or cp.async)";
  if (Source.contains("__cluster_dims__"))
    return "a thread-block cluster";
  return "";
}

std::string hostCompiler() {
  const char *Env = std::getenv("CXX");
  for (const char *Name : {Env, "c++", "g++", "clang++"}) {
    if (!Name || !*Name)
      continue;
    if (llvm::ErrorOr<std::string> P = llvm::sys::findProgramByName(Name))
      return *P;
  }
  return "";
}

EmulatedKernel::~EmulatedKernel() {
  if (Library)
    dlclose(Library);
}

llvm::Error EmulatedKernel::launch(std::array<unsigned, 3> Grid,
                                   std::array<unsigned, 3> Block,
                                   unsigned DynamicShared,
                                   llvm::ArrayRef<void *> Args) const {
  unsigned Threads = Block[0] * Block[1] * Block[2];
  if (Threads == 0 || Threads > MaxThreads)
    return emuError("kernel " + Name + ": " + llvm::Twine(Threads) +
                    " threads per block");
  if (Args.size() > MaxArgs)
    return emuError("kernel " + Name + ": more than " + llvm::Twine(MaxArgs) +
                    " parameters");
  if (Run)
    return emuError("kernel " + Name + ": launched from inside a kernel");
  size_t StackTotal = size_t(Threads) * StackBytes;
  void *Stacks = mmap(nullptr, StackTotal, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (Stacks == MAP_FAILED)
    return emuError("kernel " + Name + ": no memory for the fiber stacks");
  std::vector<unsigned char> Shared(DynamicShared + 16);

  BlockRun R;
  R.Entry = Entry;
  R.Args = Args;
  R.Fibers.resize(Threads);
  R.Slots.resize(Threads);
  unsigned Warps = (Threads + 31) / 32;
  R.Runtime.SyncThreads = syncThreads;
  R.Runtime.SyncWarp = syncWarp;
  R.Runtime.Shuffle = shuffle;
  R.Runtime.DynamicShared = Shared.data();
  *Runtime = &R.Runtime;
  Run = &R;
  std::string Failure;
  for (unsigned BZ = 0; BZ < Grid[2] && Failure.empty(); ++BZ)
    for (unsigned BY = 0; BY < Grid[1] && Failure.empty(); ++BY)
      for (unsigned BX = 0; BX < Grid[0] && Failure.empty(); ++BX) {
        R.Live = Threads;
        R.LiveInWarp.assign(Warps, 32);
        if (Threads % 32)
          R.LiveInWarp.back() = Threads % 32;
        R.BlockBarrier = Barrier();
        R.WarpBarriers.assign(Warps, Barrier());
        for (unsigned T = 0; T < Threads; ++T) {
          Fiber &F = R.Fibers[T];
          F.Done = false;
          F.Thread.ThreadIdx = {T % Block[0], T / Block[0] % Block[1],
                                T / (Block[0] * Block[1])};
          F.Thread.BlockIdx = {BX, BY, BZ};
          F.Thread.BlockDim = dim3(Block[0], Block[1], Block[2]);
          F.Thread.GridDim = dim3(Grid[0], Grid[1], Grid[2]);
          F.Thread.Linear = T;
          startFiber(F, static_cast<char *>(Stacks) + T * StackBytes,
                     &R.Scheduler);
        }
        for (;;) {
          uint64_t Before = R.Progress;
          bool Any = false;
          for (unsigned T = 0; T < Threads; ++T) {
            if (R.Fibers[T].Done)
              continue;
            Any = true;
            R.Current = T;
            R.Runtime.Cur = &R.Fibers[T].Thread;
            swapcontext(&R.Scheduler, &R.Fibers[T].Context);
          }
          if (!Any)
            break;
          if (R.Progress == Before) {
            Failure = "kernel " + Name + ", block (" + std::to_string(BX) +
                      "," + std::to_string(BY) + "," + std::to_string(BZ) +
                      "): threads wait at barriers that cannot all open (a "
                      "barrier or shuffle in divergent code)";
            break;
          }
        }
      }
  Run = nullptr;
  *Runtime = nullptr;
  munmap(Stacks, StackTotal);
  if (!Failure.empty())
    return emuError(Failure);
  return llvm::Error::success();
}

llvm::Expected<std::vector<std::unique_ptr<EmulatedKernel>>>
compileKernels(llvm::ArrayRef<std::pair<std::string, std::string>> Kernels,
               const std::string &CacheDir) {
  std::string Cxx = hostCompiler();
  if (Cxx.empty())
    return emuError("no host C++ compiler ($CXX, c++, g++ or clang++) to "
                    "compile kernels for the emulator");
  if (std::error_code EC = llvm::sys::fs::create_directories(CacheDir))
    return emuError("cannot create '" + CacheDir + "': " + EC.message());
  // A shared __shared__ declaration of dynamic shared memory becomes a
  // pointer to the emulator's buffer.
  static const std::regex DynamicShared(
      R"(extern __shared__ (__align__\(\d+\) )?unsigned char (\w+)\[\];)");
  struct Job {
    std::string Object, Source, Temp;
    std::vector<std::string> Argv; // empty: already in the cache
    llvm::sys::ProcessInfo Process;
  };
  std::vector<Job> Jobs(Kernels.size());
  std::string Shim = SOLDER_EMULATOR_DIR "/CudaHostShim.h";
  for (size_t I = 0; I < Kernels.size(); ++I) {
    const auto &[Name, Source] = Kernels[I];
    std::string Why = whyNotEmulated(Source);
    if (!Why.empty())
      return emuError("kernel " + Name + " cannot be emulated: " + Why);
    std::string Text =
        std::regex_replace(Source, DynamicShared,
                           "unsigned char *$2 = solder_emu_rt->DynamicShared;");
    llvm::SHA256 H;
    H.update(Cxx);
    H.update(Shim);
    H.update(Text);
    std::string Key = llvm::toHex(H.final(), /*LowerCase=*/true);
    Job &J = Jobs[I];
    J.Object = CacheDir + "/" + Key + ".so";
    if (llvm::sys::fs::exists(J.Object))
      continue;
    // Names of this process's own: test processes share the cache.
    std::string Mine = "." + std::to_string(::getpid());
    J.Source = CacheDir + "/" + Key + Mine + ".cu";
    {
      std::error_code EC;
      llvm::raw_fd_ostream OS(J.Source, EC);
      if (EC)
        return emuError("cannot write '" + J.Source + "': " + EC.message());
      OS << Text;
    }
    std::string Temp = J.Object + Mine + ".tmp";
    std::vector<std::string> Argv = {Cxx,
                                     "-std=c++17",
                                     "-O1",
                                     "-w",
                                     "-fPIC",
                                     "-shared",
                                     "-I" SOLDER_CUDA_INCLUDE_DIR,
                                     "-I" SOLDER_EMULATOR_DIR,
                                     "-include",
                                     Shim,
                                     "-x",
                                     "c++",
                                     J.Source,
                                     "-o",
                                     Temp};
    J.Temp = Temp;
    J.Argv = std::move(Argv);
  }
  // As many compilers at once as there are cores.
  unsigned Width = std::max(1u, std::thread::hardware_concurrency());
  std::string Failed;
  auto Finish = [&](size_t I) -> llvm::Error {
    Job &J = Jobs[I];
    std::string Err;
    llvm::sys::ProcessInfo Done =
        llvm::sys::Wait(J.Process, 0, /*WaitUntilTerminates=*/true, &Err);
    if (Done.ReturnCode != 0) {
      if (Failed.empty())
        Failed = "kernel " + Kernels[I].first + " does not compile as host " +
                 "C++ (" + J.Source + "; the compiler's errors are above)";
      return llvm::Error::success();
    }
    llvm::sys::fs::remove(J.Source);
    if (std::error_code EC = llvm::sys::fs::rename(J.Temp, J.Object))
      return emuError("cannot rename to '" + J.Object + "': " + EC.message());
    return llvm::Error::success();
  };
  std::vector<size_t> Running;
  for (size_t I = 0; I < Jobs.size(); ++I) {
    Job &J = Jobs[I];
    if (J.Argv.empty())
      continue;
    if (Running.size() >= Width) {
      if (llvm::Error E = Finish(Running.front()))
        return std::move(E);
      Running.erase(Running.begin());
    }
    std::vector<llvm::StringRef> Refs(J.Argv.begin(), J.Argv.end());
    std::string Err;
    J.Process =
        llvm::sys::ExecuteNoWait(J.Argv[0], Refs, llvm::None, {}, 0, &Err);
    if (J.Process.Pid == llvm::sys::ProcessInfo::InvalidPid)
      return emuError("cannot run " + J.Argv[0] + ": " + Err);
    Running.push_back(I);
  }
  for (size_t I : Running)
    if (llvm::Error E = Finish(I))
      return std::move(E);
  if (!Failed.empty())
    return emuError(Failed);
  std::vector<std::unique_ptr<EmulatedKernel>> Out;
  for (size_t I = 0; I < Kernels.size(); ++I) {
    auto K = std::make_unique<EmulatedKernel>();
    K->Name = Kernels[I].first;
    K->Library = dlopen(Jobs[I].Object.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!K->Library)
      return emuError("cannot load '" + Jobs[I].Object + "': " + dlerror());
    K->Entry = dlsym(K->Library, K->Name.c_str());
    K->Runtime =
        static_cast<SolderEmuRuntime **>(dlsym(K->Library, "solder_emu_rt"));
    if (!K->Entry || !K->Runtime)
      return emuError("'" + Jobs[I].Object + "' has no kernel " + K->Name);
    Out.push_back(std::move(K));
  }
  return std::move(Out);
}

} // namespace emu
} // namespace solder
