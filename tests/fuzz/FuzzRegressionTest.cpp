//===- FuzzRegressionTest.cpp - Fuzz inputs replayed in every build -------===//
//
// Every input in fuzz/regressions/<target>/ (inputs that once crashed or
// broke an invariant, each fixed since) and fuzz/corpus/<target>/ (the
// seeds) goes through its target's entry function, so the ordinary and
// ASan builds keep them fixed without clang or libFuzzer.
//
//===----------------------------------------------------------------------===//
#include "fuzz/FuzzTargets.h"
#include "tests/TestFiles.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "gtest/gtest.h"
#include <string>
#include <vector>

using namespace solder;

namespace {

/// Replays every file of fuzz/<Kind>/<target>/ and returns how many.
size_t replay(const fuzz::FuzzTarget &T, llvm::StringRef Kind) {
  std::string Dir =
      std::string(SOLDER_SOURCE_DIR) + "/fuzz/" + Kind.str() + "/" + T.Name;
  std::vector<std::string> Files = solder::testing::filesIn(Dir);
  for (const std::string &Name : Files) {
    std::string F = Dir + "/" + Name;
    auto Buf = llvm::MemoryBuffer::getFile(F, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!Buf) {
      ADD_FAILURE() << "cannot read " << F;
      continue;
    }
    EXPECT_EQ(T.Run((*Buf)->getBuffer()), "") << F;
  }
  return Files.size();
}

class FuzzInputs : public ::testing::TestWithParam<fuzz::FuzzTarget> {};

TEST_P(FuzzInputs, RegressionsAndSeedsPass) {
  replay(GetParam(), "regressions");
  EXPECT_GT(replay(GetParam(), "corpus"), 0u)
      << "no seed corpus for " << GetParam().Name;
}

INSTANTIATE_TEST_SUITE_P(
    AllTargets, FuzzInputs, ::testing::ValuesIn(fuzz::fuzzTargets().vec()),
    [](const ::testing::TestParamInfo<fuzz::FuzzTarget> &I) {
      return std::string(I.param.Name);
    });

} // namespace
