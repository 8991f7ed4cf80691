//===- TestFiles.h - Temporary folders and listings for tests ---*- C++ -*-===//
#ifndef SOLDER_TESTS_TESTFILES_H
#define SOLDER_TESTS_TESTFILES_H

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "gtest/gtest.h"
#include <algorithm>
#include <string>
#include <vector>

namespace solder {
namespace testing {

/// A fresh temporary folder, removed at the end of the test.
struct TempDir {
  llvm::SmallString<128> Path;
  explicit TempDir(llvm::StringRef Prefix = "solder-test") {
    EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory(Prefix, Path));
  }
  ~TempDir() { llvm::sys::fs::remove_directories(Path); }
};

/// The names of the entries of Dir, sorted.
inline std::vector<std::string> filesIn(llvm::StringRef Dir) {
  std::vector<std::string> Files;
  std::error_code EC;
  for (llvm::sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC;
       It.increment(EC))
    Files.push_back(llvm::sys::path::filename(It->path()).str());
  std::sort(Files.begin(), Files.end());
  return Files;
}

} // namespace testing
} // namespace solder

#endif
