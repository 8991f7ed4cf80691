//===- CudaSupport.h - CUDA, cuBLASLt and cuDNN error helpers ---*- C++ -*-===//
//
// Status codes of the three libraries turned into llvm::Error with the call
// that failed, and the device query every GPU entry point starts with. The
// static cudart loads the driver on the first call, so a machine without a
// GPU or driver gets "no CUDA device: <reason>" here rather than a binary
// that fails to start.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_RUNTIME_CUDA_CUDASUPPORT_H
#define SOLDER_RUNTIME_CUDA_CUDASUPPORT_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <string>

namespace solder {

/// "What: <CUDA's text>", plus, for a sticky error, that the process's CUDA
/// context is unusable from now on.
llvm::Error cudaError(cudaError_t Status, const llvm::Twine &What);
/// Errors after which every CUDA call in the process fails (a kernel fault).
bool isStickyCudaError(cudaError_t Status);
llvm::Error cublasError(cublasStatus_t Status, const llvm::Twine &What);
llvm::Error cudnnError(cudnnStatus_t Status, const llvm::Twine &What);

/// Checks a device is usable and returns its index (the current device).
llvm::Expected<int> requireDevice();
/// "sm_90" for the current device.
llvm::Expected<std::string> currentDeviceArch();
/// "NVIDIA H100 80GB HBM3": the current device's model, which library
/// algorithms tuned on it are valid for.
llvm::Expected<std::string> currentDeviceName();
/// The current device's peak rates, for roofline figures: computed from
/// its SM count and clocks (read from the device) and the per-SM rates of
/// its architecture. Rates of an architecture solder has no table for are
/// 0 (unknown); memory bandwidth is always read.
struct GpuPeaks {
  std::string Name, Arch;
  int SMs = 0;
  double ClockGHz = 0;   ///< peak SM clock
  double MemoryGBs = 0;  ///< DRAM bandwidth, GB/s
  double Fp32Tflops = 0; ///< FMA units, no tensor cores
  double Tf32Tflops = 0; ///< dense tensor-core TF32
  double HalfTflops = 0; ///< dense tensor-core fp16/bf16, fp32 accumulate
};
llvm::Expected<GpuPeaks> currentGpuPeaks();
/// The architecture to compile for on this machine, without creating a CUDA
/// context: NVML answers in ~15 ms where the driver's initialization takes
/// ~0.2 s, which would dominate a compile whose kernels are all cached. It
/// falls back to currentDeviceArch() where NVML is missing, the GPUs differ
/// in architecture, or CUDA_VISIBLE_DEVICES reorders them. The answer is
/// kept in CacheDir (the resolved kernel cache folder; empty: not kept)
/// and reused while the driver's /proc identity of itself and its GPUs is
/// unchanged (Driver: that /proc folder, a parameter for tests).
llvm::Expected<std::string>
thisMachineArch(llvm::StringRef CacheDir,
                llvm::StringRef Driver = "/proc/driver/nvidia");
/// The architecture a compile without --arch targets: thisMachineArch, or
/// sm_90 where it cannot tell (no GPU, no driver).
std::string defaultCompileArch(llvm::StringRef CacheDir);
/// What the NVIDIA driver under Driver says it is and which GPUs it drives
/// (its version file, then each GPU's information file: model, UUID, bus),
/// empty without them.
std::string driverIdentity(llvm::StringRef Driver);

} // namespace solder

#define SOLDER_CUDA_TRY(Expr, What)                                            \
  do {                                                                         \
    cudaError_t Status_ = (Expr);                                              \
    if (Status_ != cudaSuccess)                                                \
      return ::solder::cudaError(Status_, What);                               \
  } while (0)
#define SOLDER_CUBLAS_TRY(Expr, What)                                          \
  do {                                                                         \
    cublasStatus_t Status_ = (Expr);                                           \
    if (Status_ != CUBLAS_STATUS_SUCCESS)                                      \
      return ::solder::cublasError(Status_, What);                             \
  } while (0)
#define SOLDER_CUDNN_TRY(Expr, What)                                           \
  do {                                                                         \
    cudnnStatus_t Status_ = (Expr);                                            \
    if (Status_ != CUDNN_STATUS_SUCCESS)                                       \
      return ::solder::cudnnError(Status_, What);                              \
  } while (0)

#endif
