//===- SharedLibraryTest.cpp - Libraries opened on first use --------------===//
#include "codegen/SharedLibrary.h"
#include "codegen/NvrtcApi.h"
#include "gtest/gtest.h"

using namespace solder;

namespace {

TEST(SharedLibraryTest, OpensAndResolves) {
  auto Lib = openSharedLibrary("libm.so.6", {}, "the C math library");
  ASSERT_TRUE(bool(Lib)) << llvm::toString(Lib.takeError());
  double (*Cos)(double) = nullptr;
  ASSERT_FALSE(bool(resolveSymbol(*Lib, "libm.so.6", "cos", Cos)));
  EXPECT_EQ(Cos(0.0), 1.0);
}

TEST(SharedLibraryTest, MissingLibraryOrSymbolIsNamed) {
  auto Lib = openSharedLibrary("libsolder-does-not-exist.so.1",
                               {"/nonexistent"}, "a test");
  ASSERT_FALSE(bool(Lib));
  std::string Msg = llvm::toString(Lib.takeError());
  EXPECT_NE(Msg.find("cannot load libsolder-does-not-exist.so.1 (a test)"),
            std::string::npos)
      << Msg;
  EXPECT_NE(Msg.find("LD_LIBRARY_PATH"), std::string::npos) << Msg;

  auto M = openSharedLibrary("libm.so.6", {}, "the C math library");
  ASSERT_TRUE(bool(M));
  void (*Missing)() = nullptr;
  llvm::Error E = resolveSymbol(*M, "libm.so.6", "solder_no_such_fn", Missing);
  ASSERT_TRUE(bool(E));
  EXPECT_NE(llvm::toString(std::move(E)).find("solder_no_such_fn"),
            std::string::npos);
}

TEST(SharedLibraryTest, NvrtcLoadsOnceWithEveryFunction) {
  auto A = nvrtcApi();
  ASSERT_TRUE(bool(A)) << llvm::toString(A.takeError());
  auto B = nvrtcApi();
  ASSERT_TRUE(bool(B));
  EXPECT_EQ(*A, *B);
  int Major = 0, Minor = 0;
  ASSERT_EQ((*A)->nvrtcVersion(&Major, &Minor), NVRTC_SUCCESS);
  EXPECT_GE(Major, 12);
}

} // namespace
