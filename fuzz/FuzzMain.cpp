//===- FuzzMain.cpp - libFuzzer entry point of one fuzz target ------------===//
//
// Built once per target with SOLDER_FUZZ_TARGET set to its name (see
// fuzz/CMakeLists.txt); a broken invariant aborts so libFuzzer keeps the
// input.
//
//===----------------------------------------------------------------------===//
#include "fuzz/FuzzTargets.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdint>
#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  static const solder::fuzz::FuzzTarget *Target = [] {
    for (const solder::fuzz::FuzzTarget &T : solder::fuzz::fuzzTargets())
      if (llvm::StringRef(T.Name) == SOLDER_FUZZ_TARGET)
        return &T;
    llvm::errs() << "no fuzz target " SOLDER_FUZZ_TARGET " in this build\n";
    std::abort();
  }();
  std::string Broken =
      Target->Run(llvm::StringRef(reinterpret_cast<const char *>(Data), Size));
  if (!Broken.empty()) {
    llvm::errs() << SOLDER_FUZZ_TARGET ": " << Broken << "\n";
    std::abort();
  }
  return 0;
}
