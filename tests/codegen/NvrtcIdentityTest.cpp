//===- NvrtcIdentityTest.cpp - NVRTC's version from the cache's record ----===//
#include "codegen/NvrtcIdentity.h"
#include "codegen/NvrtcCompiler.h"
#include "tests/TestFiles.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/MemoryBuffer.h"
#include <cstdlib>
#include <fstream>
#include <gtest/gtest.h>

using namespace solder;
using solder::testing::TempDir;

namespace {

std::string readAll(const std::string &Path) {
  auto B = llvm::MemoryBuffer::getFile(Path);
  return B ? (*B)->getBuffer().str() : "";
}

void writeAll(const std::string &Path, const std::string &Text) {
  std::ofstream(Path, std::ios::binary | std::ios::trunc) << Text;
}

/// The record's lines: magic, path, stamp, search path, version.
llvm::SmallVector<std::string, 5> recordLines(const std::string &Path) {
  std::string Text = readAll(Path);
  llvm::SmallVector<llvm::StringRef, 6> L;
  llvm::StringRef(Text).split(L, '\n');
  llvm::SmallVector<std::string, 5> Out;
  for (size_t I = 0; I + 1 < L.size(); ++I)
    Out.push_back(L[I].str());
  return Out;
}

std::string joinLines(llvm::ArrayRef<std::string> Lines) {
  std::string S;
  for (const std::string &L : Lines)
    S += L + "\n";
  return S;
}

/// A fresh cache folder and NVRTC's real version; skips without NVRTC.
class NvrtcIdentity : public ::testing::Test {
protected:
  void SetUp() override {
    Real = nvrtcVersionString();
    if (Real == "unavailable")
      GTEST_SKIP() << "NVRTC cannot be loaded here";
  }
  std::string Real;
  TempDir Cache{"solder-nvrtc-identity"};
  std::string Dir{Cache.Path.str()};
  std::string Record = Dir + "/" + NvrtcIdentityFile;
};

} // namespace

TEST_F(NvrtcIdentity, RecordsTheLibraryAndReadsItBack) {
  EXPECT_EQ(nvrtcVersionFor(Dir), Real);
  llvm::SmallVector<std::string, 5> L = recordLines(Record);
  ASSERT_EQ(L.size(), 5u) << readAll(Record);
  EXPECT_NE(L[1].find("libnvrtc"), std::string::npos) << L[1];
  EXPECT_EQ(L[4], Real);
  // While the record describes the library, its version is what counts:
  // a record naming another version is believed.
  L[4] = "99.9";
  writeAll(Record, joinLines(L));
  EXPECT_EQ(nvrtcVersionFor(Dir), "99.9");
  // No cache folder: NVRTC is asked.
  EXPECT_EQ(nvrtcVersionFor(""), Real);
}

// Negative twin: a record whose library stamp, search path or shape no
// longer matches is not believed; NVRTC is asked and the record rewritten.
TEST_F(NvrtcIdentity, StaleOrBrokenRecordsAreReplaced) {
  ASSERT_EQ(nvrtcVersionFor(Dir), Real);
  const llvm::SmallVector<std::string, 5> Good = recordLines(Record);
  ASSERT_EQ(Good.size(), 5u);
  auto Stale = [&](size_t Line, const std::string &Text) {
    llvm::SmallVector<std::string, 5> L = Good;
    L[Line] = Text;
    L[4] = "99.9";
    return joinLines(L);
  };
  const std::string Cases[] = {
      Stale(2, "1 2 3 4.5"),                  // the library file changed
      Stale(3, Good[3] + ":/elsewhere/lib"),  // another search path
      Stale(1, Dir + "/no-such-libnvrtc.so"), // the file is gone
      joinLines({Good[0], Good[1], Good[2], Good[3]}), // no version line
      "not a record\n",
  };
  for (const std::string &Text : Cases) {
    writeAll(Record, Text);
    EXPECT_EQ(nvrtcVersionFor(Dir), Real) << Text;
    EXPECT_EQ(recordLines(Record), Good) << "rewritten after:\n" << Text;
  }
}
