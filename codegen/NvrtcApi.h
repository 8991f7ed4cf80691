//===- NvrtcApi.h - NVRTC, loaded on first use ------------------*- C++ -*-===//
//
// The NVRTC functions solder calls, resolved from libnvrtc when first
// needed (see SharedLibrary.h). Call as nvrtcApi()->nvrtcCompileProgram(...).
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_CODEGEN_NVRTCAPI_H
#define SOLDER_CODEGEN_NVRTCAPI_H

#include "llvm/Support/Error.h"
#include <nvrtc.h>

namespace solder {

#define SOLDER_NVRTC_FUNCTIONS(X)                                              \
  X(nvrtcVersion)                                                              \
  X(nvrtcGetErrorString)                                                       \
  X(nvrtcCreateProgram)                                                        \
  X(nvrtcCompileProgram)                                                       \
  X(nvrtcDestroyProgram)                                                       \
  X(nvrtcGetProgramLogSize)                                                    \
  X(nvrtcGetProgramLog)                                                        \
  X(nvrtcGetCUBINSize)                                                         \
  X(nvrtcGetCUBIN)

struct NvrtcApi {
#define SOLDER_NVRTC_POINTER(Name) decltype(&::Name) Name = nullptr;
  SOLDER_NVRTC_FUNCTIONS(SOLDER_NVRTC_POINTER)
#undef SOLDER_NVRTC_POINTER
};

/// Loads NVRTC once per process; later calls return the same table or the
/// same error.
llvm::Expected<const NvrtcApi *> nvrtcApi();

} // namespace solder

#endif
