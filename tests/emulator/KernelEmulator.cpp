//===- KernelEmulator.cpp - Generated kernels run on the CPU --------------===//
#include "KernelEmulator.h"
#include "EmuAbi.h"
#include "HostSource.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SHA256.h"
#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
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
/// Kernel parameters callEntry can pass.
constexpr size_t MaxArgs = 48;

struct Barrier {
  unsigned Arrived = 0;
  uint64_t Generation = 0;
};

struct Fiber {
  ucontext_t Context;
  SolderEmuThread Thread;
  unsigned Block = 0; // index into ClusterRun::Blocks
  bool Done = false;
};

/// One block of the cluster being run: its barriers and shared memory.
struct BlockState {
  unsigned Live = 0;                // threads not yet returned
  std::vector<unsigned> LiveInWarp; // per warp
  Barrier Bar;
  std::vector<Barrier> WarpBars;
  std::array<Barrier, 16> Named; // bar.sync's
  std::vector<std::array<unsigned char, SOLDER_EMU_SLOT_BYTES>> Slots;
  unsigned char *Shared = nullptr; // dynamic shared memory, then statics
  size_t Used = 0;                 // bytes of Shared taken
  unsigned Hw = 0;                 // its hardware cluster in the group
  /// The group's block index of each rank of its hardware cluster.
  std::vector<unsigned> HwRanks;
  std::map<std::pair<unsigned, unsigned>, size_t> Sites;
};

/// The blocks of one cluster (one block without clusters), run together
/// on this OS thread, and everything their threads share.
struct ClusterRun {
  void *Entry = nullptr;
  llvm::ArrayRef<void *> Args;
  std::vector<Fiber> Fibers;
  std::vector<BlockState> Blocks;
  ucontext_t Scheduler;
  /// Per hardware cluster of the group: its barrier and live threads.
  std::vector<Barrier> ClusterBars;
  std::vector<unsigned> HwLive;
  size_t SharedBytes = 0;
  /// Bumped by every arrival at a barrier and every return: a round of the
  /// scheduler without it moving is a deadlock.
  uint64_t Progress = 0;
  size_t Current = 0;
  std::string Failure;
  SolderEmuRuntime Runtime;
};

thread_local ClusterRun *Run = nullptr;

Fiber &current() { return Run->Fibers[Run->Current]; }
BlockState &currentBlock() { return Run->Blocks[current().Block]; }

void yieldToScheduler() { swapcontext(&current().Context, &Run->Scheduler); }

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

void syncThreads() {
  BlockState &B = currentBlock();
  arrive(B.Bar, B.Live);
}

void syncWarp() {
  BlockState &B = currentBlock();
  unsigned W = warpOf(current().Thread);
  arrive(B.WarpBars[W], B.LiveInWarp[W]);
}

void syncCluster() {
  unsigned Hw = currentBlock().Hw;
  arrive(Run->ClusterBars[Hw], Run->HwLive[Hw]);
}

void yieldFiber() { yieldToScheduler(); }

void advance() { ++Run->Progress; }

void namedBarrier(unsigned Id, unsigned Count) {
  BlockState &B = currentBlock();
  if (Id >= B.Named.size()) {
    if (Run->Failure.empty())
      Run->Failure = "bar.sync " + std::to_string(Id) + ": no such barrier";
    return;
  }
  arrive(B.Named[Id], Count);
}

const unsigned char *exchange(const void *In, unsigned Bytes) {
  BlockState &B = currentBlock();
  unsigned Me = current().Thread.Linear, W = Me / 32;
  if (Bytes > SOLDER_EMU_SLOT_BYTES)
    Bytes = SOLDER_EMU_SLOT_BYTES;
  std::memcpy(B.Slots[Me].data(), In, Bytes);
  arrive(B.WarpBars[W], B.LiveInWarp[W]);
  return B.Slots[W * 32].data();
}

void exchangeDone() { syncWarp(); }

unsigned char *blockShared(unsigned Rank) {
  BlockState &B = currentBlock();
  if (Rank == ~0u)
    return B.Shared;
  return Run->Blocks[B.HwRanks[Rank % B.HwRanks.size()]].Shared;
}

unsigned char *sharedVariable(unsigned Site, unsigned Bytes, unsigned Align) {
  BlockState &B = currentBlock();
  auto [It, New] = B.Sites.try_emplace({Site, Bytes}, 0);
  if (New) {
    size_t At = (B.Used + Align - 1) / Align * Align;
    if (At + Bytes > Run->SharedBytes) {
      if (Run->Failure.empty())
        Run->Failure = "shared variables past the emulator's shared memory";
      At = 0;
    } else {
      B.Used = At + Bytes;
    }
    It->second = At;
  }
  return B.Shared + It->second;
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
  ClusterRun &R = *Run;
  callEntry(R.Entry, R.Args, std::make_index_sequence<MaxArgs + 1>());
  Fiber &F = current();
  F.Done = true;
  ++R.Progress;
  // A returned thread no longer counts at barriers; the others may be
  // waiting for just it.
  BlockState &B = R.Blocks[F.Block];
  unsigned W = warpOf(F.Thread);
  --R.HwLive[B.Hw];
  --B.Live;
  --B.LiveInWarp[W];
  if (B.Bar.Arrived && B.Bar.Arrived >= B.Live)
    open(B.Bar);
  if (B.WarpBars[W].Arrived && B.WarpBars[W].Arrived >= B.LiveInWarp[W])
    open(B.WarpBars[W]);
  Barrier &CB = R.ClusterBars[B.Hw];
  if (CB.Arrived && CB.Arrived >= R.HwLive[B.Hw])
    open(CB);
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
  return hostSource(Source).Why;
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
  for (int D = 0; D < 3; ++D)
    if (Grid[D] % Cluster[D])
      return emuError("kernel " + Name + ": the grid is not whole clusters");
  unsigned PerCluster = Cluster[0] * Cluster[1] * Cluster[2];
  unsigned PerHw = HwCluster[0] * HwCluster[1] * HwCluster[2];
  size_t Fibers = size_t(Threads) * PerCluster;
  size_t StackTotal = Fibers * StackBytes;
  void *Stacks = mmap(nullptr, StackTotal, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (Stacks == MAP_FAILED)
    return emuError("kernel " + Name + ": no memory for the fiber stacks");

  ClusterRun R;
  R.Entry = Entry;
  R.Args = Args;
  R.Fibers.resize(Fibers);
  R.Blocks.resize(PerCluster);
  // Each block's shared memory: the dynamic part, then room for statics.
  R.SharedBytes = (size_t(DynamicShared) + 1023) / 1024 * 1024 + (64 << 10);
  std::vector<unsigned char> Shared(R.SharedBytes * PerCluster + 1024);
  unsigned Warps = (Threads + 31) / 32;
  R.Runtime.SyncThreads = syncThreads;
  R.Runtime.SyncWarp = syncWarp;
  R.Runtime.SyncCluster = syncCluster;
  R.Runtime.Exchange = exchange;
  R.Runtime.ExchangeDone = exchangeDone;
  R.Runtime.BlockShared = blockShared;
  R.Runtime.SharedVariable = sharedVariable;
  R.Runtime.Yield = yieldFiber;
  R.Runtime.Advance = advance;
  R.Runtime.NamedBarrier = namedBarrier;
  *Runtime = &R.Runtime;
  Run = &R;
  unsigned char *SharedBase = reinterpret_cast<unsigned char *>(
      (reinterpret_cast<uintptr_t>(Shared.data()) + 1023) & ~uintptr_t(1023));
  for (unsigned CZ = 0; CZ < Grid[2] / Cluster[2] && R.Failure.empty(); ++CZ)
    for (unsigned CY = 0; CY < Grid[1] / Cluster[1] && R.Failure.empty(); ++CY)
      for (unsigned CX = 0; CX < Grid[0] / Cluster[0] && R.Failure.empty();
           ++CX) {
        R.ClusterBars.assign(PerCluster / PerHw, Barrier());
        R.HwLive.assign(PerCluster / PerHw, Threads * PerHw);
        std::fill(Shared.begin(), Shared.end(), 0xFF);
        for (unsigned Rank = 0; Rank < PerCluster; ++Rank) {
          BlockState &B = R.Blocks[Rank];
          B.Live = Threads;
          B.LiveInWarp.assign(Warps, 32);
          if (Threads % 32)
            B.LiveInWarp.back() = Threads % 32;
          B.Bar = Barrier();
          B.WarpBars.assign(Warps, Barrier());
          B.Named.fill(Barrier());
          B.Slots.assign(Threads, {});
          B.Shared = SharedBase + Rank * R.SharedBytes;
          B.Used = DynamicShared;
          B.Sites.clear();
          unsigned RX = Rank % Cluster[0], RY = Rank / Cluster[0] % Cluster[1],
                   RZ = Rank / (Cluster[0] * Cluster[1]);
          // Its hardware cluster: rank inside it, index in the group, and
          // the group index of each of its ranks.
          unsigned HX = RX % HwCluster[0], HY = RY % HwCluster[1],
                   HZ = RZ % HwCluster[2];
          unsigned HwRank =
              HX + HY * HwCluster[0] + HZ * HwCluster[0] * HwCluster[1];
          unsigned GX = Cluster[0] / HwCluster[0],
                   GY = Cluster[1] / HwCluster[1];
          B.Hw = RX / HwCluster[0] + RY / HwCluster[1] * GX +
                 RZ / HwCluster[2] * GX * GY;
          B.HwRanks.assign(PerHw, 0);
          for (unsigned Q = 0; Q < PerHw; ++Q) {
            unsigned QX = RX - HX + Q % HwCluster[0],
                     QY = RY - HY + Q / HwCluster[0] % HwCluster[1],
                     QZ = RZ - HZ + Q / (HwCluster[0] * HwCluster[1]);
            B.HwRanks[Q] = QX + QY * Cluster[0] + QZ * Cluster[0] * Cluster[1];
          }
          uint3 BlockIdx = {CX * Cluster[0] + RX, CY * Cluster[1] + RY,
                            CZ * Cluster[2] + RZ};
          for (unsigned T = 0; T < Threads; ++T) {
            size_t FI = size_t(Rank) * Threads + T;
            Fiber &F = R.Fibers[FI];
            F.Done = false;
            F.Block = Rank;
            F.Thread.ThreadIdx = {T % Block[0], T / Block[0] % Block[1],
                                  T / (Block[0] * Block[1])};
            F.Thread.BlockIdx = BlockIdx;
            F.Thread.BlockDim = dim3(Block[0], Block[1], Block[2]);
            F.Thread.GridDim = dim3(Grid[0], Grid[1], Grid[2]);
            F.Thread.Linear = T;
            F.Thread.ClusterRank = HwRank;
            startFiber(F, static_cast<char *>(Stacks) + FI * StackBytes,
                       &R.Scheduler);
          }
        }
        for (;;) {
          uint64_t Before = R.Progress;
          bool Any = false;
          for (size_t FI = 0; FI < Fibers; ++FI) {
            if (R.Fibers[FI].Done)
              continue;
            Any = true;
            R.Current = FI;
            R.Runtime.Cur = &R.Fibers[FI].Thread;
            swapcontext(&R.Scheduler, &R.Fibers[FI].Context);
          }
          if (!Any)
            break;
          if (R.Progress == Before) {
            R.Failure = "kernel " + Name + ", cluster (" + std::to_string(CX) +
                        "," + std::to_string(CY) + "," + std::to_string(CZ) +
                        "): threads wait at barriers that cannot all open (a "
                        "barrier or warp-wide instruction in divergent code)";
            break;
          }
        }
      }
  Run = nullptr;
  *Runtime = nullptr;
  munmap(Stacks, StackTotal);
  if (!R.Failure.empty())
    return emuError(R.Failure);
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
  // The shim's text is part of every key: a new shim recompiles.
  std::string ShimText;
  for (const char *F : {"/CudaHostShim.h", "/EmuAbi.h"}) {
    auto B = llvm::MemoryBuffer::getFile(SOLDER_EMULATOR_DIR + std::string(F));
    if (!B)
      return emuError("cannot read the emulator's " + std::string(F + 1));
    ShimText += (*B)->getBuffer().str();
  }
  std::vector<std::array<unsigned, 3>> Clusters(Kernels.size()),
      HwClusters(Kernels.size());
  struct Job {
    std::string Object, Source, Temp;
    std::vector<std::string> Argv; // empty: already in the cache
    llvm::sys::ProcessInfo Process;
  };
  std::vector<Job> Jobs(Kernels.size());
  std::string Shim = SOLDER_EMULATOR_DIR "/CudaHostShim.h";
  for (size_t I = 0; I < Kernels.size(); ++I) {
    const auto &[Name, Source] = Kernels[I];
    HostSource HS = hostSource(Source);
    if (!HS.Why.empty())
      return emuError("kernel " + Name + " cannot be emulated: " + HS.Why);
    std::string Text = std::move(HS.Text);
    Clusters[I] = HS.Cluster;
    HwClusters[I] = HS.HwCluster;
    llvm::SHA256 H;
    H.update(Cxx);
    H.update(ShimText);
    H.update(HS.MmaBf16 ? "bf16" : "f16");
    H.update(std::to_string(HS.WgmmaN) + (HS.WgmmaTransB ? "t" : "n"));
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
    if (HS.MmaBf16)
      Argv.insert(Argv.begin() + 1, "-DSOLDER_EMU_MMA_BF16=1");
    if (HS.WgmmaN) {
      Argv.insert(Argv.begin() + 1,
                  "-DSOLDER_EMU_WGMMA_N=" + std::to_string(HS.WgmmaN));
      Argv.insert(Argv.begin() + 1, std::string("-DSOLDER_EMU_WGMMA_TNSPB=") +
                                        (HS.WgmmaTransB ? "1" : "0"));
    }
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
    K->Cluster = Clusters[I];
    K->HwCluster = HwClusters[I];
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
