//===- CliTestUtils.h - Running the solder binary in tests ------*- C++ -*-===//
//
// Helpers of the end-to-end tests (CliTest.cpp, PlanCacheTest.cpp): the
// built binary run through the shell with its output captured, the bundled
// test models, temporary folders.
//
//===----------------------------------------------------------------------===//
#ifndef SOLDER_TESTS_TOOLS_CLITESTUTILS_H
#define SOLDER_TESTS_TOOLS_CLITESTUTILS_H

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "gtest/gtest.h"
#include <cstdio>
#include <string>
#include <sys/wait.h>
#include <vector>

namespace solder::clitest {

using namespace llvm;

struct CliResult {
  int Code = -1;
  std::string Out, Err;
};

inline std::string dataPath(StringRef Name) {
  SmallString<256> P(SOLDER_TEST_DATA_DIR);
  sys::path::append(P, Name);
  return std::string(P);
}

inline std::string readFile(StringRef Path) {
  auto Buf = MemoryBuffer::getFile(Path, /*IsText=*/false,
                                   /*RequiresNullTerminator=*/false);
  return Buf ? (*Buf)->getBuffer().str() : std::string();
}

/// A temporary folder removed at the end of the test.
class TempDir {
public:
  TempDir() {
    std::error_code EC = sys::fs::createUniqueDirectory("solder-cli", Path);
    EXPECT_FALSE(EC) << EC.message();
  }
  ~TempDir() { sys::fs::remove_directories(Path); }
  std::string path(StringRef Sub = "") const {
    SmallString<256> P(Path);
    if (!Sub.empty())
      sys::path::append(P, Sub);
    return std::string(P);
  }

private:
  SmallString<256> Path;
};

inline std::string quote(StringRef S) {
  std::string Q = "'";
  for (char C : S)
    Q += C == '\'' ? std::string("'\\''") : std::string(1, C);
  return Q + "'";
}

/// Runs `solder Args...`, capturing stdout and stderr.
/// Runs solder with Args. OpensNvrtc: the command loads NVRTC (compile,
/// dump-kernels), whose own C++ runtime allocates its 72,704-byte exception
/// pool once and loses it at exit; LeakSanitizer (ASan builds) would report
/// that as our leak, so leak detection is off for that child only.
/// The shell words of `solder Args...` (see runSolder).
inline std::string solderCommand(const std::vector<std::string> &Args,
                                 bool OpensNvrtc = false) {
  std::string Cmd =
      OpensNvrtc ? "ASAN_OPTIONS=\"${ASAN_OPTIONS}:detect_leaks=0\" " : "";
  Cmd += quote(SOLDER_BINARY);
  for (const std::string &A : Args)
    Cmd += " " + quote(A);
  return Cmd;
}

/// Runs a shell command line, capturing stdout and stderr.
inline CliResult runShell(const std::string &CommandLine) {
  TempDir Tmp;
  std::string ErrFile = Tmp.path("stderr.txt");
  std::string Cmd = "{ " + CommandLine + "; } 2>" + quote(ErrFile);
  CliResult R;
  FILE *P = popen(Cmd.c_str(), "r");
  if (!P)
    return R;
  char Buf[4096];
  size_t N;
  while ((N = fread(Buf, 1, sizeof(Buf), P)) > 0)
    R.Out.append(Buf, N);
  int Status = pclose(P);
  R.Code = WIFEXITED(Status) ? WEXITSTATUS(Status) : -1;
  R.Err = readFile(ErrFile);
  return R;
}

inline CliResult runSolder(const std::vector<std::string> &Args,
                           bool OpensNvrtc = false) {
  return runShell(solderCommand(Args, OpensNvrtc));
}

inline bool contains(StringRef Haystack, StringRef Needle) {
  return Haystack.contains(Needle);
}

inline bool haveGpuCommands() {
  CliResult R = runSolder({"compare", "--help"});
  return R.Code == 0;
}

} // namespace solder::clitest

#endif
