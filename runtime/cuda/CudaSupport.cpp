//===- CudaSupport.cpp - CUDA, cuBLASLt and cuDNN error helpers -----------===//
#include "runtime/cuda/CudaSupport.h"

using namespace llvm;

namespace solder {

Error cudaError(cudaError_t Status, const Twine &What) {
  return createStringError(inconvertibleErrorCode(),
                           What + ": " + cudaGetErrorString(Status));
}

Error cublasError(cublasStatus_t Status, const Twine &What) {
  return createStringError(inconvertibleErrorCode(),
                           What + ": cuBLASLt status " + Twine(int(Status)));
}

Error cudnnError(cudnnStatus_t Status, const Twine &What) {
  return createStringError(inconvertibleErrorCode(),
                           What + ": " + cudnnGetErrorString(Status));
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

} // namespace solder
