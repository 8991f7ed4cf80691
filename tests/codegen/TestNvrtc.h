//===- TestNvrtc.h - NVRTC options for codegen tests ------------*- C++ -*-===//
//
// Tests that compile emitted kernels target sm_90 (no GPU needed) and cache
// CUBINs in the build tree, so reruns take seconds.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TESTS_CODEGEN_TESTNVRTC_H
#define SOLDER_TESTS_CODEGEN_TESTNVRTC_H

#include "codegen/NvrtcCompiler.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"
#include <cstdlib>
#include <string>

namespace solder {
namespace testing {

/// A cache folder inside the build tree (beside the solder binary), or
/// $SOLDER_TEST_KERNEL_CACHE.
inline std::string testCacheDir() {
  if (const char *E = std::getenv("SOLDER_TEST_KERNEL_CACHE"))
    return E;
  llvm::SmallString<256> Dir(SOLDER_BINARY);
  llvm::sys::path::remove_filename(Dir);
  llvm::sys::path::append(Dir, "..", "codegen-test-cache");
  return std::string(Dir.str());
}

inline NvrtcOptions testNvrtcOptions() {
  NvrtcOptions O;
  O.Arch = "sm_90";
  O.CacheDir = testCacheDir();
  O.Progress = [](unsigned, unsigned) {}; // quiet in test logs
  return O;
}

} // namespace testing
} // namespace solder

#endif
