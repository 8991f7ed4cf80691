//===- NvrtcApi.cpp - NVRTC, loaded on first use --------------------------===//
#include "codegen/NvrtcApi.h"
#include "codegen/SharedLibrary.h"

namespace solder {

static llvm::Error loadNvrtc(NvrtcApi &Api) {
  const char *Soname = SOLDER_NVRTC_SONAME;
  auto Lib = openSharedLibrary(Soname, {SOLDER_CUDA_LIBRARY_DIR},
                               "NVRTC, the CUDA run-time compiler");
  if (!Lib)
    return Lib.takeError();
#define SOLDER_NVRTC_RESOLVE(Name)                                             \
  if (llvm::Error E = resolveSymbol(*Lib, Soname, #Name, Api.Name))            \
    return E;
  SOLDER_NVRTC_FUNCTIONS(SOLDER_NVRTC_RESOLVE)
#undef SOLDER_NVRTC_RESOLVE
  return llvm::Error::success();
}

llvm::Expected<const NvrtcApi *> nvrtcApi() {
  static SharedLibraryTable<NvrtcApi> Api;
  return Api.get(loadNvrtc);
}

} // namespace solder
