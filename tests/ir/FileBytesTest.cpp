//===- FileBytesTest.cpp - Reading and mapping user files -----------------===//
#include "ir/FileBytes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"
#include "gtest/gtest.h"
#include <unistd.h>

using namespace solder;

namespace {

/// A temporary file holding Bytes, removed at the end of the test.
struct TempFile {
  llvm::SmallString<128> Path;
  explicit TempFile(llvm::StringRef Bytes) {
    int FD;
    EXPECT_FALSE(
        llvm::sys::fs::createTemporaryFile("solder-bytes", "bin", FD, Path));
    llvm::raw_fd_ostream OS(FD, /*shouldClose=*/true);
    OS << Bytes;
  }
  ~TempFile() { llvm::sys::fs::remove(Path); }
};

std::string pattern(size_t N) {
  std::string S(N, '\0');
  for (size_t I = 0; I < N; ++I)
    S[I] = char(I * 131 + 7);
  return S;
}

TEST(FileBytes, ReadsAndMapsTheSameBytes) {
  std::string Bytes = pattern(1 << 20);
  TempFile F(Bytes);
  auto Read = readFileBytes(F.Path, "test file");
  ASSERT_TRUE(bool(Read)) << llvm::toString(Read.takeError());
  EXPECT_EQ((*Read)->getBuffer(), Bytes);
  EXPECT_EQ((*Read)->getBufferKind(), llvm::MemoryBuffer::MemoryBuffer_Malloc);
  auto Mapped = readFileBytes(F.Path, "test file", /*MapAbove=*/4096);
  ASSERT_TRUE(bool(Mapped)) << llvm::toString(Mapped.takeError());
  EXPECT_EQ((*Mapped)->getBuffer(), Bytes);
  EXPECT_EQ((*Mapped)->getBufferKind(), llvm::MemoryBuffer::MemoryBuffer_MMap);
}

TEST(FileBytes, AReadFileSurvivesTruncation) {
  // What reading small files buys: a file truncated afterwards (which
  // would raise SIGBUS on a mapping's next access) leaves the bytes intact.
  std::string Bytes = pattern(256 << 10);
  TempFile F(Bytes);
  auto Read = readFileBytes(F.Path, "test file");
  ASSERT_TRUE(bool(Read)) << llvm::toString(Read.takeError());
  ASSERT_EQ(::truncate(F.Path.c_str(), 0), 0);
  EXPECT_EQ((*Read)->getBuffer(), Bytes);
}

TEST(FileBytes, EmptyFileIsEmptyBuffer) {
  TempFile F("");
  auto B = readFileBytes(F.Path, "test file");
  ASSERT_TRUE(bool(B)) << llvm::toString(B.takeError());
  EXPECT_EQ((*B)->getBufferSize(), 0u);
}

TEST(FileBytes, ErrorsNameTheFile) {
  auto Missing = readFileBytes("/nonexistent/model.onnx", "ONNX model");
  ASSERT_FALSE(bool(Missing));
  EXPECT_EQ(llvm::toString(Missing.takeError()),
            "cannot open ONNX model '/nonexistent/model.onnx': No such file "
            "or directory");
  llvm::SmallString<128> Dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("solder-bytes", Dir));
  auto NotFile = readFileBytes(Dir, "plan");
  llvm::sys::fs::remove(Dir);
  ASSERT_FALSE(bool(NotFile));
  EXPECT_EQ(llvm::toString(NotFile.takeError()),
            "'" + Dir.str().str() + "' is not a regular file");
}

} // namespace
