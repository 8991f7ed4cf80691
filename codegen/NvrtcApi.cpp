//===- NvrtcApi.cpp - NVRTC, loaded on first use --------------------------===//
#include "codegen/NvrtcApi.h"
#include "codegen/SharedLibrary.h"
#include <mutex>

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
  static std::once_flag Once;
  static NvrtcApi Api;
  static std::string Failure;
  std::call_once(Once, [] {
    if (llvm::Error E = loadNvrtc(Api))
      Failure = llvm::toString(std::move(E));
  });
  if (!Failure.empty())
    return llvm::createStringError(llvm::inconvertibleErrorCode(), Failure);
  return &Api;
}

} // namespace solder
