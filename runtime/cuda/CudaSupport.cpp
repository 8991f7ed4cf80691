//===- CudaSupport.cpp - CUDA, cuBLASLt and cuDNN error helpers -----------===//
#include "runtime/cuda/CudaSupport.h"
#include "codegen/SharedLibrary.h"
#include "runtime/cuda/CudaLibraries.h"
#include "runtime/cuda/PlanFile.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include <cstdlib>

using namespace llvm;

namespace solder {

bool isStickyCudaError(cudaError_t Status) {
  switch (Status) {
  case cudaErrorIllegalAddress:
  case cudaErrorLaunchFailure:
  case cudaErrorHardwareStackError:
  case cudaErrorIllegalInstruction:
  case cudaErrorMisalignedAddress:
  case cudaErrorInvalidAddressSpace:
  case cudaErrorInvalidPc:
  case cudaErrorAssert:
  case cudaErrorLaunchTimeout:
  case cudaErrorECCUncorrectable:
    return true;
  default:
    return false;
  }
}

Error cudaError(cudaError_t Status, const Twine &What) {
  if (isStickyCudaError(Status))
    return createStringError(
        inconvertibleErrorCode(),
        What + ": " + cudaGetErrorString(Status) +
            " (a sticky error: a kernel faulted, and every later GPU call "
            "in this process fails; asynchronous, so it may surface after "
            "the step that caused it: ExecutionContext::runStepByStep or "
            "`solder compare` names the step)");
  return createStringError(inconvertibleErrorCode(),
                           What + ": " + cudaGetErrorString(Status));
}

Error cublasError(cublasStatus_t Status, const Twine &What) {
  return createStringError(inconvertibleErrorCode(),
                           What + ": cuBLASLt status " + Twine(int(Status)));
}

Error cudnnError(cudnnStatus_t Status, const Twine &What) {
  return createStringError(inconvertibleErrorCode(),
                           What + ": " +
                               cudaLibs().cudnnGetErrorString(Status));
}

Expected<int> requireDevice() {
  int Count = 0;
  cudaError_t S = cudaGetDeviceCount(&Count);
  if (S != cudaSuccess) {
    cudaGetLastError(); // the error is sticky only for this query
    return createStringError(inconvertibleErrorCode(),
                             Twine("no CUDA device: ") + cudaGetErrorString(S));
  }
  if (Count == 0)
    return createStringError(inconvertibleErrorCode(),
                             "no CUDA device: no device found");
  int Dev = 0;
  SOLDER_CUDA_TRY(cudaGetDevice(&Dev), "cudaGetDevice");
  return Dev;
}

Expected<std::string> currentDeviceArch() {
  Expected<int> Dev = requireDevice();
  if (!Dev)
    return Dev.takeError();
  int Major = 0, Minor = 0;
  SOLDER_CUDA_TRY(
      cudaDeviceGetAttribute(&Major, cudaDevAttrComputeCapabilityMajor, *Dev),
      "cudaDeviceGetAttribute");
  SOLDER_CUDA_TRY(
      cudaDeviceGetAttribute(&Minor, cudaDevAttrComputeCapabilityMinor, *Dev),
      "cudaDeviceGetAttribute");
  return "sm_" + std::to_string(Major) + std::to_string(Minor);
}

Expected<std::string> currentDeviceName() {
  Expected<int> Dev = requireDevice();
  if (!Dev)
    return Dev.takeError();
  cudaDeviceProp Prop;
  SOLDER_CUDA_TRY(cudaGetDeviceProperties(&Prop, *Dev),
                  "cudaGetDeviceProperties");
  return std::string(Prop.name);
}

Expected<GpuPeaks> currentGpuPeaks() {
  Expected<int> Dev = requireDevice();
  if (!Dev)
    return Dev.takeError();
  Expected<std::string> Name = currentDeviceName();
  if (!Name)
    return Name.takeError();
  Expected<std::string> Arch = currentDeviceArch();
  if (!Arch)
    return Arch.takeError();
  int SMs = 0, ClockKHz = 0, MemKHz = 0, BusBits = 0;
  SOLDER_CUDA_TRY(
      cudaDeviceGetAttribute(&SMs, cudaDevAttrMultiProcessorCount, *Dev),
      "cudaDeviceGetAttribute");
  SOLDER_CUDA_TRY(cudaDeviceGetAttribute(&ClockKHz, cudaDevAttrClockRate, *Dev),
                  "cudaDeviceGetAttribute");
  SOLDER_CUDA_TRY(
      cudaDeviceGetAttribute(&MemKHz, cudaDevAttrMemoryClockRate, *Dev),
      "cudaDeviceGetAttribute");
  SOLDER_CUDA_TRY(
      cudaDeviceGetAttribute(&BusBits, cudaDevAttrGlobalMemoryBusWidth, *Dev),
      "cudaDeviceGetAttribute");
  GpuPeaks P;
  P.Name = *Name;
  P.Arch = *Arch;
  P.SMs = SMs;
  P.ClockGHz = ClockKHz * 1e-6;
  // Double data rate: two transfers per memory clock.
  P.MemoryGBs = 2.0 * MemKHz * 1e3 * (BusBits / 8.0) * 1e-9;
  // Dense FLOP per clock per SM (an FMA is 2) of the data-center parts:
  // fp32 FMA units, TF32 and fp16 tensor cores (fp32 accumulation).
  struct Rates {
    const char *Arch;
    double Fp32, Tf32, Half;
  };
  static const Rates Table[] = {{"sm_70", 128, 0, 1024},
                                {"sm_80", 128, 1024, 2048},
                                {"sm_90", 256, 2048, 4096},
                                {"sm_100", 256, 4096, 8192}};
  for (const Rates &R : Table)
    if (P.Arch == R.Arch) {
      double Scale = SMs * P.ClockGHz * 1e9 / 1e12;
      P.Fp32Tflops = R.Fp32 * Scale;
      P.Tf32Tflops = R.Tf32 * Scale;
      P.HalfTflops = R.Half * Scale;
    }
  return P;
}

/// NVML's C interface, declared here: the toolkit ships no nvml.h, the
/// library comes with the driver. Results are nvmlReturn_t (0: success).
namespace {
struct Nvml {
  int (*Init)() = nullptr;
  int (*Shutdown)() = nullptr;
  int (*GetCount)(unsigned *) = nullptr;
  int (*GetHandle)(unsigned, void **) = nullptr;
  int (*GetComputeCapability)(void *, int *, int *) = nullptr;
};
} // namespace

static Expected<std::string> archFromNvml() {
  const char *Soname = "libnvidia-ml.so.1";
  auto Lib = openSharedLibrary(Soname, {}, "NVML, to query the GPU");
  if (!Lib)
    return Lib.takeError();
  Nvml N;
  if (Error E = resolveSymbol(*Lib, Soname, "nvmlInit_v2", N.Init))
    return std::move(E);
  if (Error E = resolveSymbol(*Lib, Soname, "nvmlShutdown", N.Shutdown))
    return std::move(E);
  if (Error E =
          resolveSymbol(*Lib, Soname, "nvmlDeviceGetCount_v2", N.GetCount))
    return std::move(E);
  if (Error E = resolveSymbol(*Lib, Soname, "nvmlDeviceGetHandleByIndex_v2",
                              N.GetHandle))
    return std::move(E);
  if (Error E =
          resolveSymbol(*Lib, Soname, "nvmlDeviceGetCudaComputeCapability",
                        N.GetComputeCapability))
    return std::move(E);
  if (N.Init() != 0)
    return createStringError(inconvertibleErrorCode(), "nvmlInit failed");
  std::string Arch;
  unsigned Count = 0;
  bool Ok = N.GetCount(&Count) == 0 && Count > 0;
  for (unsigned I = 0; Ok && I < Count; ++I) {
    void *Dev = nullptr;
    int Major = 0, Minor = 0;
    Ok = N.GetHandle(I, &Dev) == 0 &&
         N.GetComputeCapability(Dev, &Major, &Minor) == 0;
    std::string A = "sm_" + std::to_string(Major) + std::to_string(Minor);
    // GPUs of different archs: which one CUDA calls device 0 is the
    // driver's business.
    Ok = Ok && (Arch.empty() || Arch == A);
    Arch = A;
  }
  N.Shutdown();
  if (!Ok)
    return createStringError(inconvertibleErrorCode(),
                             "NVML cannot tell the GPU's architecture");
  return Arch;
}

std::string driverIdentity(StringRef Root) {
  auto Read = [](const Twine &Path) -> std::string {
    ErrorOr<std::unique_ptr<MemoryBuffer>> B =
        MemoryBuffer::getFileAsStream(Path);
    return B ? (*B)->getBuffer().str() : std::string();
  };
  std::string Id = Read(Root + "/version");
  if (Id.empty())
    return "";
  std::vector<std::string> Gpus;
  std::error_code EC;
  for (sys::fs::directory_iterator It(Root + "/gpus", EC), End;
       !EC && It != End; It.increment(EC))
    Gpus.push_back(Read(It->path() + "/information"));
  if (EC || Gpus.empty())
    return "";
  llvm::sort(Gpus);
  for (const std::string &G : Gpus)
    Id += G;
  return Id;
}

std::string defaultCompileArch(StringRef CacheDir) {
  Expected<std::string> Arch = thisMachineArch(CacheDir);
  if (Arch)
    return *Arch;
  consumeError(Arch.takeError());
  return "sm_90";
}

Expected<std::string> thisMachineArch(StringRef CacheDir, StringRef Driver) {
  const char *Visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (Visible && *Visible)
    return currentDeviceArch();
  // The answer kept beside the kernels, for as long as the driver and its
  // GPUs stay the same: NVML's start (~13 ms) was a third of a compile
  // whose kernels were all cached. The file is the arch, a newline, then
  // the identity it was asked under.
  std::string Id = CacheDir.empty() ? "" : driverIdentity(Driver);
  SmallString<256> Path(CacheDir);
  sys::path::append(Path, "gpu-arch.txt");
  if (!Id.empty())
    if (ErrorOr<std::unique_ptr<MemoryBuffer>> B =
            MemoryBuffer::getFile(Path, /*IsText=*/true)) {
      auto [Arch, Rest] = (*B)->getBuffer().split('\n');
      if (Rest == Id && Arch.startswith("sm_") && Arch.size() <= 8)
        return Arch.str();
    }
  Expected<std::string> Arch = archFromNvml();
  if (!Arch) {
    consumeError(Arch.takeError());
    return currentDeviceArch();
  }
  // Best effort: an unwritable cache only costs the next compile NVML.
  if (!Id.empty() && !sys::fs::create_directories(CacheDir))
    consumeError(writeAtomically(Path, [&](raw_pwrite_stream &OS) {
      OS << *Arch << "\n" << Id;
    }));
  return Arch;
}

} // namespace solder
